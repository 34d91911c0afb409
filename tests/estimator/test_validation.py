"""The calibration's own rules: committed constants are the fit's output, every group that owns an offset rests
on enough rows and sources, nothing fitted sits on a bound, and estimates are computed, never looked up.
The accuracy figures themselves are cross-validated in `benchmarks/accuracy.py`, not asserted here."""

from __future__ import annotations

import dataclasses
import math

import pytest

from catalog import load_catalog
from estimator.calibration import constants as fitted
from estimator.calibration.fit import (
    CONSTANTS_PATH,
    Residual,
    Result,
    all_rows,
    arch_watts_per_tflops,
    band_table,
    bandwidth_ratios,
    catalog_priors,
    cross_validate,
    design,
    fit_all,
    predicted_tps,
    render_constants,
    report_cv,
)
from estimator.calibration.measurements import Row, llamacpp_rows
from estimator.calibration.model import DECODE_PARAMS, MIN_GROUP_ROWS, MIN_GROUP_SOURCES, PREFILL_PARAMS
from estimator.engines import (
    achieved_bandwidth_gbs,
    decode_coefficients,
    prefill_coefficients,
    supports,
)
from estimator.query import Engine

pytestmark = pytest.mark.slow

# Far beyond any physical spread between groups (e^2 ≈ 7×): an offset this large means the fit ran away.
MAX_ABS_LOG_OFFSET = 2.0




# Fixtures, not module constants: the fit takes seconds, and a module's top level runs in every test process
# that collects it, whether or not it runs these tests.
@pytest.fixture(scope="module")
def every() -> list[Row]:
    return all_rows()[0]


@pytest.fixture(scope="module")
def result(every: list[Row]) -> Result:
    return fit_all(every)


def test_enough_rows_match_the_catalog(every: list[Row]) -> None:
    """The first curated file matches almost whole; the newer files name GPUs the catalog is still gaining
    (their skipped rows are counted in the fit's report)."""
    rows, skipped = llamacpp_rows(load_catalog(), "llamacpp.toml")
    assert len(rows) >= 300
    assert skipped < len(rows) / 5
    for kind in ("decode", "prefill"):
        assert sum(r.kind == kind for r in every) >= 150


def test_committed_constants_are_what_the_fit_produces(result: Result) -> None:
    """constants.py is the fit of the data files: nothing was tuned by hand."""
    assert render_constants(result) == CONSTANTS_PATH.read_text()


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


def test_predictions_are_computed_not_looked_up(every: list[Row]) -> None:
    """A prediction does not move when the measured value does."""
    for r in every[::25]:
        fake = dataclasses.replace(r, measured_tps=r.measured_tps * 3)
        assert predicted_tps(fake) == predicted_tps(r)


def test_cross_validation_never_sees_the_left_out_gpu(every: list[Row], result: Result) -> None:
    """A leave-one-GPU-out residual is the same whatever that GPU's measured values are.

    Only the fold that matters is refitted on the changed data: the target GPU against all the others in one
    fold, which trains on exactly the rows the fit's own leave-one-GPU-out fold for that GPU trains on."""
    target = next(r for r in every if r.kind == "decode" and r.gpus == 1)
    changed = [dataclasses.replace(r, measured_tps=r.measured_tps * 2) if r.gpu.id == target.gpu.id else r
               for r in every]
    with catalog_priors(bandwidth_ratios(), arch_watts_per_tflops()):
        designs = [design(kind, changed) for kind in ("decode", "prefill")]
    again = [r for d in designs for r in cross_validate(d, lambda r: "target" if r.gpu.id == target.gpu.id else "")
             if r.row.gpu.id == target.gpu.id]
    before = [r for r in result.logo if r.row.gpu.id == target.gpu.id]
    assert before and len(again) == len(before)
    for old, new in zip(before, again, strict=True):
        assert (new.row.kind, new.row.model.id, new.row.quant.id) == (old.row.kind, old.row.model.id, old.row.quant.id)
        # Twice the measured rate, same estimate: the residual moves by exactly ln 2.
        assert math.isclose(new.log_error, old.log_error + math.log(2), abs_tol=1e-9)


def test_bands_are_ordered_and_rest_on_enough_residuals() -> None:
    assert fitted.BANDS
    for key, band in fitted.BANDS.items():
        assert band.low < band.high, key
        assert band.low <= 0 <= band.high, key
        assert band.n >= 20, key


def test_a_band_reaches_back_to_its_estimate_where_residuals_lean_one_way(every: list[Row]) -> None:
    """Every residual positive (log 1.05 to 1.5): the 10th percentile is above zero, but the band printed beside the
    estimate starts at the estimate; a two-sided set keeps its own percentiles."""
    row = every[0]
    one_sided = [Residual(row, math.log(1.05 + i * 0.01), True) for i in range(46)]
    band = band_table(one_sided, {row.kind: 0.1})[(row.kind, "*", "*", "*", "*")]
    assert band.low == 0 and band.high > math.log(1.4)
    two_sided = [Residual(row, (i - 20) * 0.01, True) for i in range(41)]
    band = band_table(two_sided, {row.kind: 0.1})[(row.kind, "*", "*", "*", "*")]
    # 41 values −0.20 … 0.20 at positions (i + ½) / 41: the 10th percentile lies at i = 3.6, i.e. −0.164.
    assert band.low == pytest.approx(-0.164) and band.high == pytest.approx(0.164)


def test_a_band_weighs_each_source_once_however_many_rows_it_has(every: list[Row]) -> None:
    """Twenty rows of one source, all 1.02× off, and five single-row sources spread ±40 %: a row-weighted 80 % band
    would be the big source's, a few per cent wide; weighing sources equally, the spread of the five decides it."""
    big = [Residual(dataclasses.replace(every[0], source="one big sweep"), math.log(1.02), True) for _ in range(20)]
    spread = [Residual(dataclasses.replace(every[0], source=f"post {i}"), math.log(f), True)
              for i, f in enumerate((0.6, 0.8, 1.0, 1.2, 1.4))]
    band = band_table(big + spread, {every[0].kind: 0.1})[(every[0].kind, "*", "*", "*", "*")]
    assert band.low < math.log(0.85) and band.high > math.log(1.2)



def test_the_report_breaks_each_kind_down_by_backend(result: Result, capsys: pytest.CaptureFixture[str]) -> None:
    """The README quotes leave-one-GPU-out error per backend; the report prints it, and its rows add up."""
    import re

    report_cv(result)
    logo = capsys.readouterr().out.split("== leave-one-source-out")[0]
    for kind in ("decode", "prefill"):
        whole = re.search(rf"^{kind}\s+all\s+n=\s*(\d+)", logo, re.M)
        assert whole is not None
        total = int(whole.group(1))
        per_backend = {m.group(1): int(m.group(2))
                       for m in re.finditer(rf"^\s+{kind}\s+backend\s+(\S+)\s+n=\s*(\d+)", logo, re.M)}
        assert {"cuda", "metal", "rocm"} <= set(per_backend)
        assert sum(per_backend.values()) == total
