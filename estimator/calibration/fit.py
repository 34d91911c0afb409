"""Fit the estimator's efficiencies to published measurements and write `constants.py`.

    python -m estimator.calibration.fit            # fit, print the error report, rewrite constants.py
    python -m estimator.calibration.fit --check    # print the report for the constants as they are

Decode: for each (engine, backend, kernel family), least squares on relative error of
    t_measured = (bytes_moved / bandwidth) · (1/η) + layers · t_layer
which is linear in the two unknowns 1/η and t_layer. Prefill: for each (engine, backend, compute
precision), the geometric mean over rows of the utilisation u that explains each row exactly. Only
single-GPU rows outside the hold-out set are fitted; the report shows the error on both sets.
"""

from __future__ import annotations

import argparse
import math
import statistics
from collections import defaultdict
from collections.abc import Iterable
from pathlib import Path

from catalog.store import load_catalog
from estimator import speed
from estimator.calibration.measurements import Row, llamacpp_rows, server_rows
from estimator.calibration.model import DecodeFit, PrefillFit
from estimator.engines import compute_class, compute_tflops, forget_fits, prefill_group
from estimator.memory import weight_bytes
from estimator.query import Engine

CONSTANTS_PATH = Path(__file__).with_name("constants.py")
ENGINE: Engine = "llama.cpp"
MIN_ROWS_FOR_TWO_PARAMS = 6
# Streaming reads reach at most about 95 % of a GPU's datasheet bandwidth (device-to-device copies of a
# few GB measure 4.3 TB/s on a 4.8 TB/s H200); a fit that wants more is trading bandwidth for latency.
MAX_EFFICIENCY = 0.95
MIN_GPUS_PER_BACKEND_GROUP = 2
MIN_ROWS_PER_GROUP = 2
# Too few single-stream vLLM rows to fit (two single-GPU decode rows, with a fixed per-request TTFT cost the
# model has no term for): they are scored, and vLLM falls back to llama.cpp's constants.
SCORED_ONLY_ENGINES = frozenset({"vllm"})
# llama.cpp gets faster every few months; the report shows recent builds on their own.
RECENT_FROM = "2025-01"


def all_rows() -> tuple[list[Row], int]:
    """Every measurement the fit and the report use: llama-bench rows, then single-stream engine rows."""
    catalog = load_catalog()
    rows, skipped = llamacpp_rows(catalog)
    others, skipped_others = server_rows(catalog)
    return rows + others, skipped + skipped_others


def decode_context(row: Row) -> int:
    """A tgN test starts at depth d and ends at d + N: on average the cache holds d + N/2 tokens."""
    return row.depth + row.tokens // 2


def backend_of_row(row: Row) -> str:
    return {"nvidia": "cuda", "amd": "rocm", "apple": "metal", "intel": "sycl"}[row.gpu.vendor]


def fit_decode(rows: list[Row]) -> DecodeFit:
    """Weighted 2×2 normal equations for x = (1/η, t_layer); weights make the residuals relative."""
    xs = []
    for r in rows:
        moved = speed.decode_bytes_per_step(r.model, r.quant, decode_context(r), "f16")
        a = moved / (r.gpu.bandwidth_gbs * 1e9)
        t = 1 / r.measured_tps
        xs.append((a / t, r.model.layers / t))
    if len(rows) >= MIN_ROWS_FOR_TWO_PARAMS:
        s11 = sum(a * a for a, _ in xs)
        s12 = sum(a * b for a, b in xs)
        s22 = sum(b * b for _, b in xs)
        r1 = sum(a for a, _ in xs)
        r2 = sum(b for _, b in xs)
        det = s11 * s22 - s12 * s12
        if abs(det) > 1e-12 * s11 * s22:
            inv_eta = (r1 * s22 - r2 * s12) / det
            t_layer = (s11 * r2 - s12 * r1) / det
            if inv_eta > 0 and t_layer >= 0 and 1 / inv_eta <= MAX_EFFICIENCY:
                return DecodeFit(efficiency=1 / inv_eta, per_layer_s=t_layer, rows=len(rows))
            if inv_eta > 0 and 1 / inv_eta > MAX_EFFICIENCY:
                # Pin η at the ceiling and give the rest of each row's time to per-layer latency.
                inv_eta = 1 / MAX_EFFICIENCY
                t_layer = max((r2 - inv_eta * s12) / s22, 0.0)
                return DecodeFit(efficiency=MAX_EFFICIENCY, per_layer_s=t_layer, rows=len(rows))
    # Too few rows (or a negative latency): fit η alone with the latency fixed at zero.
    inv_eta = max(sum(a for a, _ in xs) / sum(a * a for a, _ in xs), 1 / MAX_EFFICIENCY)
    return DecodeFit(efficiency=1 / inv_eta, per_layer_s=0.0, rows=len(rows))


def fit_prefill(rows: list[Row], decode: dict[tuple[str, str, str], DecodeFit]) -> PrefillFit | None:
    logs = []
    for r in rows:
        d = (decode.get((r.engine, backend_of_row(r), r.quant.kernel)) or decode.get((r.engine, backend_of_row(r), "*"))
             or decode[(ENGINE, "*", "*")])
        t = r.tokens / r.measured_tps
        passes = 1 if r.engine == "vllm" else math.ceil(r.tokens / 512)
        weights_s = passes * weight_bytes(r.model, r.quant) / (r.gpu.bandwidth_gbs * 1e9 * d.efficiency)
        compute_s = t - weights_s
        if compute_s <= 0:
            continue
        peak = compute_tflops(r.engine, r.quant, r.gpu) * 1e12
        logs.append(math.log(speed.prefill_flops(r.model, r.tokens, r.depth) / (peak * compute_s)))
    if not logs:
        return None
    return PrefillFit(utilisation=math.exp(statistics.fmean(logs)), rows=len(logs))


def fit_all(rows: list[Row]) -> tuple[dict[tuple[str, str, str], DecodeFit], dict[tuple[str, str, str], PrefillFit]]:
    train = [r for r in rows if not r.holdout and r.gpus == 1 and r.engine not in SCORED_ONLY_ENGINES]
    decode_groups: dict[tuple[str, str, str], list[Row]] = defaultdict(list)
    for r in train:
        if r.kind == "decode":
            decode_groups[(r.engine, backend_of_row(r), r.quant.kernel)].append(r)
            decode_groups[(r.engine, backend_of_row(r), "*")].append(r)
            decode_groups[(r.engine, "*", "*")].append(r)
    decode = {key: fit_decode(group) for key, group in decode_groups.items()}
    prefill_groups: dict[tuple[str, str, str], list[Row]] = defaultdict(list)
    for r in train:
        if r.kind == "prefill":
            cls = compute_class(r.engine, r.quant, r.gpu)
            prefill_groups[(r.engine, backend_of_row(r), cls)].append(r)
            prefill_groups[(r.engine, prefill_group(r.gpu), cls)].append(r)
            prefill_groups[(r.engine, prefill_group(r.gpu), "*")].append(r)
            prefill_groups[(r.engine, backend_of_row(r), "*")].append(r)
            prefill_groups[(r.engine, "*", "*")].append(r)
    prefill = {key: fit for key, group in prefill_groups.items()
               if _broad_enough(key, group) and (fit := fit_prefill(group, decode))}
    decode = {key: fit for key, fit in decode.items() if _broad_enough(key, decode_groups[key])}
    return decode, prefill


def _broad_enough(key: tuple[str, str, str], rows: list[Row]) -> bool:
    """A backend-wide constant must rest on more than one GPU model, or one card's quirks (an early ROCm
    build on one MI300X, say) would be applied to every card of that vendor. An architecture's own group
    ("rocm/CDNA 3") may rest on one."""
    if len(rows) < MIN_ROWS_PER_GROUP:
        return False
    if "/" in key[1]:
        return True
    return len({r.gpu.id for r in rows}) >= MIN_GPUS_PER_BACKEND_GROUP


def predicted_tps(row: Row) -> float:
    """What the estimator (with whatever constants are loaded) says for this row's test."""
    if row.kind == "decode":
        step = speed.decode_seconds_per_step(
            row.model, row.quant, row.gpu, row.engine, decode_context(row), "f16", row.gpus
        )
        return 1 / step
    return row.tokens / speed.prefill_seconds(
        row.model, row.quant, row.gpu, row.engine, row.tokens, row.gpus, row.depth
    )


def ape(row: Row) -> float:
    return abs(predicted_tps(row) - row.measured_tps) / row.measured_tps


def report(rows: Iterable[Row]) -> dict[tuple[str, bool], float]:
    """Print median absolute percentage error per kind, hold-out vs fitted, and per GPU family."""
    every = list(rows)
    rows = [r for r in every if r.engine == ENGINE]  # the headline figures are llama.cpp's
    medians: dict[tuple[str, bool], float] = {}
    for kind in ("decode", "prefill"):
        for held in (False, True):
            sel = [ape(r) for r in rows if r.kind == kind and r.holdout == held]
            if sel:
                medians[(kind, held)] = statistics.median(sel)
                label = "hold-out" if held else "fitted  "
                print(
                    f"{kind:8s} {label} n={len(sel):4d}  median APE {statistics.median(sel):6.1%}"
                    f"  p90 {sorted(sel)[int(0.9 * (len(sel) - 1))]:6.1%}"
                )
    for engine in sorted({r.engine for r in every} - {ENGINE}):
        for kind in ("decode", "prefill"):
            mine = [ape(r) for r in every if r.engine == engine and r.kind == kind]
            if mine:
                print(f"{engine:9s}{kind:8s} all rows: n={len(mine):4d}  median APE {statistics.median(mine):6.1%}")
    for kind in ("decode", "prefill"):
        recent = [ape(r) for r in rows if r.kind == kind and r.date >= RECENT_FROM]
        if recent:
            median = statistics.median(recent)
            print(f"{kind:8s} builds from {RECENT_FROM} on: n={len(recent):4d}  median APE {median:6.1%}")
    families: dict[tuple[str, str], list[float]] = defaultdict(list)
    for r in rows:
        families[(r.kind, r.family + (" multi-GPU" if r.gpus > 1 else ""))].append(ape(r))
    print("\nper GPU family (all rows):")
    for (kind, fam), errs in sorted(families.items()):
        print(f"  {kind:8s} {fam:32s} n={len(errs):4d}  median APE {statistics.median(errs):6.1%}")
    return medians


def render_constants(
    decode: dict[tuple[str, str, str], DecodeFit], prefill: dict[tuple[str, str, str], PrefillFit]
) -> str:
    lines = [
        '"""Fitted constants. Rewritten by `python -m estimator.calibration.fit`; do not edit by hand."""',
        "",
        "from estimator.calibration.model import DecodeFit, PrefillFit",
        "",
        "DECODE: dict[tuple[str, str, str], DecodeFit] = {",
    ]
    for key, f in sorted(decode.items()):
        lines.append(
            f"    {key!r}: DecodeFit(efficiency={f.efficiency:.4f}, per_layer_s={f.per_layer_s:.3e}, rows={f.rows}),"
        )
    lines += ["}", "PREFILL: dict[tuple[str, str, str], PrefillFit] = {"]
    for key, p in sorted(prefill.items()):
        lines.append(f"    {key!r}: PrefillFit(utilisation={p.utilisation:.4f}, rows={p.rows}),")
    lines += ["}", ""]
    return "\n".join(lines)


def main(argv: list[str] | None = None) -> None:
    parser = argparse.ArgumentParser(description=__doc__, formatter_class=argparse.RawDescriptionHelpFormatter)
    parser.add_argument("--check", action="store_true", help="report on the current constants, write nothing")
    args = parser.parse_args(argv)
    rows, skipped = all_rows()
    print(
        f"{len(rows)} llama.cpp rows matched to the catalog ({skipped} skipped: flagged anomalous in their note, "
        f"or GPU/model/format not in the catalog or a non-native backend)\n"
    )
    if not args.check:
        decode, prefill = fit_all(rows)
        CONSTANTS_PATH.write_text(render_constants(decode, prefill))
        import importlib

        from estimator.calibration import constants

        importlib.reload(constants)
        forget_fits()
        for key, f in sorted(decode.items()):
            print(
                f"decode  {'/'.join(key):28s} η={f.efficiency:.3f} t_layer={f.per_layer_s * 1e6:6.1f} µs  rows={f.rows}"
            )
        for key, p in sorted(prefill.items()):
            print(f"prefill {'/'.join(key):28s} u={p.utilisation:.3f}  rows={p.rows}")
        print()
    report(rows)


if __name__ == "__main__":
    main()
