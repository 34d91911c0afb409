"""The accuracy gate: the estimator, with its committed constants, against published llama-bench rows it
was not fitted on. Run with `pytest -s` to see the per-family table."""

from __future__ import annotations

import statistics
from collections import defaultdict

from catalog import load_catalog
from estimator.calibration.fit import (
    CONSTANTS_PATH,
    SCORED_ONLY_ENGINES,
    all_rows,
    ape,
    fit_all,
    predicted_tps,
    render_constants,
)
from estimator.calibration.measurements import HOLDOUT_PERCENT, Row, llamacpp_rows

ROWS, SKIPPED = llamacpp_rows(load_catalog())
HOLDOUT = [r for r in ROWS if r.holdout]

DECODE_GATE = 0.10
PREFILL_GATE = 0.20


def _median_ape(rows: list[Row]) -> float:
    return statistics.median(ape(r) for r in rows)


def _table(rows: list[Row]) -> str:
    groups: dict[tuple[str, str], list[float]] = defaultdict(list)
    for r in rows:
        groups[(r.kind, r.family + (" multi-GPU" if r.gpus > 1 else ""))].append(ape(r))
    lines = [f"{'kind':8s} {'GPU family':44s} {'n':>4s} {'median APE':>10s} {'worst':>7s}"]
    for (kind, fam), errs in sorted(groups.items()):
        lines.append(f"{kind:8s} {fam:44s} {len(errs):4d} {statistics.median(errs):10.1%} {max(errs):7.1%}")
    return "\n".join(lines)


def test_enough_rows_match_the_catalog() -> None:
    assert len(ROWS) >= 300
    assert SKIPPED < len(ROWS) / 5
    held = len(HOLDOUT) / len(ROWS)
    assert abs(held - HOLDOUT_PERCENT / 100) < 0.08
    for kind in ("decode", "prefill"):
        assert sum(r.kind == kind for r in HOLDOUT) >= 30


def test_committed_constants_are_what_the_fit_produces() -> None:
    """constants.py is the fit of the non-held-out rows: nothing was tuned by hand, and no hold-out row
    took part (the fit only sees rows with holdout False)."""
    every, _ = all_rows()
    decode, prefill = fit_all(every)
    assert render_constants(decode, prefill) == CONSTANTS_PATH.read_text()
    fitted_rows = sum(f.rows for key, f in decode.items() if key[1:] == ("*", "*"))
    assert fitted_rows == sum(
        1 for r in every
        if r.kind == "decode" and not r.holdout and r.gpus == 1 and r.engine not in SCORED_ONLY_ENGINES
    )


def test_predictions_are_computed_not_looked_up() -> None:
    """A prediction does not move when the measured value does."""
    import dataclasses

    for r in HOLDOUT[:20]:
        fake = dataclasses.replace(r, measured_tps=r.measured_tps * 3)
        assert predicted_tps(fake) == predicted_tps(r)


def test_decode_holdout_gate() -> None:
    rows = [r for r in HOLDOUT if r.kind == "decode"]
    print(f"\nhold-out decode:  n={len(rows)}  median APE {_median_ape(rows):.1%}")
    print(_table(HOLDOUT))
    assert _median_ape(rows) <= DECODE_GATE


def test_prefill_holdout_gate() -> None:
    rows = [r for r in HOLDOUT if r.kind == "prefill"]
    print(f"\nhold-out prefill: n={len(rows)}  median APE {_median_ape(rows):.1%}")
    assert _median_ape(rows) <= PREFILL_GATE


def test_fitted_rows_are_not_much_better_than_holdout() -> None:
    """A fit that explains its own rows far better than the held-out ones is over-fitted."""
    for kind in ("decode", "prefill"):
        fitted = _median_ape([r for r in ROWS if r.kind == kind and not r.holdout])
        held = _median_ape([r for r in HOLDOUT if r.kind == kind])
        assert held <= 2 * fitted + 0.03, f"{kind}: hold-out {held:.1%} vs fitted {fitted:.1%}"


def test_full_table() -> None:
    """The per-family table over every matched row (visible with -s)."""
    text = _table(ROWS)
    print("\nall rows:\n" + text)
    assert "decode" in text and "prefill" in text
