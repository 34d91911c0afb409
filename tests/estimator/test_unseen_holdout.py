"""The held-out measurements in benchmarks/data stay held out: no source of theirs feeds the fit, every entry is
dated and sourced, and the catalog places nearly all of them (benchmarks/unseen.py scores only what it places)."""

from __future__ import annotations

import tomllib
from pathlib import Path

from catalog import load_catalog
from estimator.calibration.measurements import DATA_DIR, llamacpp_rows, server_rows, unplaced_entries

HOLDOUT = sorted((Path(__file__).resolve().parents[2] / "benchmarks" / "data").glob("unseen_*.toml"))


def _entries(paths: list[Path]) -> list[dict[str, object]]:
    return [m for p in paths for m in tomllib.loads(p.read_text()).get("measurement", [])]


def test_no_held_out_source_is_in_the_calibration_data() -> None:
    fitted = {str(m["source"]) for m in _entries(sorted(DATA_DIR.glob("*.toml"))) if "source" in m}
    held = {str(m["source"]) for m in _entries(HOLDOUT)}
    assert HOLDOUT and held
    assert not held & fitted
    # A folder source (one published run's result files) must not cover a file the fit reads either.
    assert not [f for f in fitted for h in held if f.startswith(h + "/")]


def test_every_held_out_entry_is_dated_and_sourced() -> None:
    for m in _entries(HOLDOUT):
        assert str(m.get("source", "")).startswith("https://"), m
        assert str(m.get("date", ""))[:4] in ("2025", "2026"), m
        assert m.get("gpu_count", 1) == 1, m


def test_the_catalog_places_the_held_out_rows() -> None:
    catalog = load_catalog()
    rows = llamacpp_rows(catalog, paths=HOLDOUT)[0] + server_rows(catalog, paths=HOLDOUT)[0]
    unplaced = unplaced_entries(catalog, HOLDOUT)
    assert len(rows) >= 200
    assert len(unplaced) <= 0.02 * len(_entries(HOLDOUT)), unplaced


def test_held_out_fine_tuning_peaks_are_not_fitted() -> None:
    """The held-out fine-tuning peaks share no source with the rows the fine-tuning constants are fitted on, and are
    all marked held out."""
    root = Path(__file__).resolve().parents[2]
    held = tomllib.loads((root / "benchmarks" / "data" / "unseen_finetune_peaks.toml").read_text())["peak"]
    fitted = tomllib.loads((DATA_DIR.parent / "finetune_peaks.toml").read_text())["peak"]
    assert len(held) >= 30 and all(p["holdout"] for p in held)
    assert not {p["source"] for p in held} & {p["source"] for p in fitted}
