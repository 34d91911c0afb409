"""The fine-tuning memory model against published measured peaks, rows held out of the fitting."""

from __future__ import annotations

import importlib.util
import statistics
from pathlib import Path
from types import ModuleType

import pytest

from catalog import load_catalog

BENCH = Path(__file__).resolve().parents[2] / "benchmarks" / "finetune_accuracy.py"
OVERALL_GOAL = 0.15  # median absolute error on held-out measured peaks


def _bench() -> ModuleType:
    spec = importlib.util.spec_from_file_location("finetune_accuracy", BENCH)
    assert spec is not None and spec.loader is not None
    module = importlib.util.module_from_spec(spec)
    spec.loader.exec_module(module)
    return module


@pytest.fixture(scope="module")
def results() -> list[dict[str, object]]:
    bench = _bench()
    models = {m.id: m for m in load_catalog().models}
    return bench.evaluate(bench.load_rows(), models)


def _median(rows: list[dict[str, object]]) -> float:
    return statistics.median(abs(float(r["error"])) for r in rows)  # type: ignore[arg-type]


def test_holdout_rows_exist_for_every_method(results: list[dict[str, object]]) -> None:
    held = {r["method"] for r in results if r["holdout"]}
    assert held == {"full", "lora", "qlora"}


def test_holdout_median_error_meets_the_goal(results: list[dict[str, object]]) -> None:
    held = [r for r in results if r["holdout"]]
    print(f"\nheld-out fine-tuning peaks: n={len(held)} median |error| {_median(held):.1%}")
    assert _median(held) <= OVERALL_GOAL


@pytest.mark.parametrize(("method", "band"), [("full", 0.15), ("lora", 0.15), ("qlora", 0.20)])
def test_per_method_error_bands(results: list[dict[str, object]], method: str, band: float) -> None:
    """Full and LoRA meet the goal; QLoRA is within 20 % (LitGPT's bnb runs measure ~17 % above the
    model, torchtune's 24 % below it, and the model cannot tell trainers apart)."""
    rows = [r for r in results if r["method"] == method]
    assert _median(rows) <= band
