"""The calibration's own rules: committed constants are the fit's output, every group that owns an offset rests
on enough rows and sources, nothing fitted sits on a bound, and estimates are computed, never looked up.
The accuracy figures themselves are cross-validated in `benchmarks/accuracy.py`, not asserted here."""

from __future__ import annotations

import dataclasses
import math

from catalog import load_catalog
from estimator.calibration import constants as fitted
from estimator.calibration.fit import CONSTANTS_PATH, all_rows, fit_all, predicted_tps, render_constants
from estimator.calibration.measurements import llamacpp_rows
from estimator.calibration.model import DECODE_PARAMS, MIN_GROUP_ROWS, MIN_GROUP_SOURCES, PREFILL_PARAMS
from estimator.engines import (
    achieved_bandwidth_gbs,
    decode_coefficients,
    prefill_coefficients,
    supports,
)
from estimator.query import Engine

ROWS, SKIPPED = llamacpp_rows(load_catalog(), "llamacpp.toml")
EVERY, _ = all_rows()
RESULT = fit_all(EVERY)
# Far beyond any physical spread between groups (e^2 ≈ 7×): an offset this large means the fit ran away.
MAX_ABS_LOG_OFFSET = 2.0


def test_enough_rows_match_the_catalog() -> None:
    """The first curated file matches almost whole; the newer files name GPUs the catalog is still gaining
    (their skipped rows are counted in the fit's report)."""
    assert len(ROWS) >= 300
    assert SKIPPED < len(ROWS) / 5
    for kind in ("decode", "prefill"):
        assert sum(r.kind == kind for r in EVERY) >= 150


def test_committed_constants_are_what_the_fit_produces() -> None:
    """constants.py is the fit of the data files: nothing was tuned by hand."""
    assert render_constants(RESULT) == CONSTANTS_PATH.read_text()


def test_no_group_owns_an_offset_on_too_few_rows_or_sources() -> None:
    for table in (fitted.DECODE_OFFSETS, fitted.PREFILL_OFFSETS):
        for key, offset in table.items():
            assert offset.rows >= MIN_GROUP_ROWS, key
            assert offset.sources >= MIN_GROUP_SOURCES, key


def test_no_fitted_value_runs_to_a_bound() -> None:
    """Offsets are unbounded log-offsets, so none is clamped; none may run away either, and every coefficient
    the estimator can use, on every catalog GPU and engine, is positive and finite."""
    for table in (fitted.DECODE_OFFSETS, fitted.PREFILL_OFFSETS):
        for key, offset in table.items():
            assert abs(offset.value) < MAX_ABS_LOG_OFFSET, key
    cat = load_catalog()
    engines: tuple[Engine, ...] = ("llama.cpp", "vllm", "mlx", "ollama", "sglang", "exllamav2")
    for gpu in cat.gpus:
        for engine in engines:
            if not supports(engine, gpu):
                continue
            for fmt in cat.quants:
                d = decode_coefficients(engine, fmt, gpu)
                p = prefill_coefficients(engine, fmt, gpu)
                for value in (*dataclasses.astuple(d), *dataclasses.astuple(p)):
                    assert math.isfinite(value) and value > 0, (gpu.id, engine, fmt.id)
                # Weights never stream faster than the card's datasheet bandwidth (the coefficient's floor).
                share = achieved_bandwidth_gbs(gpu) / d.inv_weight_efficiency / gpu.bandwidth_gbs
                assert 0.1 < share <= 1.0, (gpu.id, share)


def test_offsets_name_real_parameters_and_levels() -> None:
    names = {p.name: p.levels for p in DECODE_PARAMS + PREFILL_PARAMS}
    for table in (fitted.DECODE_OFFSETS, fitted.PREFILL_OFFSETS):
        for param, level, _ in table:
            assert level in names[param]


def test_predictions_are_computed_not_looked_up() -> None:
    """A prediction does not move when the measured value does."""
    for r in EVERY[::25]:
        fake = dataclasses.replace(r, measured_tps=r.measured_tps * 3)
        assert predicted_tps(fake) == predicted_tps(r)


def test_cross_validation_never_sees_the_left_out_gpu() -> None:
    """A leave-one-GPU-out residual is the same whatever that GPU's measured values are."""
    target = next(r for r in EVERY if r.kind == "decode" and r.gpus == 1)
    changed = [dataclasses.replace(r, measured_tps=r.measured_tps * 2) if r.gpu.id == target.gpu.id else r
               for r in EVERY]
    again = fit_all(changed)
    assert len(again.logo) == len(RESULT.logo)
    for before, after in zip(RESULT.logo, again.logo, strict=True):
        if after.row.gpu.id == target.gpu.id:
            # Twice the measured rate, same estimate: the residual moves by exactly ln 2.
            assert math.isclose(after.log_error, before.log_error + math.log(2), abs_tol=1e-9)


def test_bands_are_ordered_and_rest_on_enough_residuals() -> None:
    assert fitted.BANDS
    for key, band in fitted.BANDS.items():
        assert band.low < band.high, key
        assert band.n >= 20, key
