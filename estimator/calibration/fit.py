"""Fit the estimator's coefficients to published measurements, cross-validate them, and write `constants.py`.

    python -m estimator.calibration.fit            # fit, cross-validate, rewrite constants.py, print the report
    python -m estimator.calibration.fit --check    # print the report for the data as it is, write nothing

Model (estimator.speed): each row's time is Σ_p coefficient_p × term_p, with
coefficient_p = prior_p × exp(Σ_levels offset[p, level, group of the row]). The offsets are fitted by
Gauss-Newton on log(estimated / measured) with a ridge penalty on every offset (partial pooling: a group
with few rows stays near its parents). A group gets an offset only with ≥ MIN_GROUP_ROWS rows from
≥ MIN_GROUP_SOURCES sources in which its term matters. Rows are weighted down by age (newest build first)
and by how many rows their source and their GPU contributed, so one long table does not outvote several
sources, nor one much-measured card the others of its die.

The 80 % bands are the 10th/90th percentiles of the cross-validated residuals of each situation:
leave-one-GPU-out for GPUs that own no offsets ("unseen"), leave-one-source-out for those that do ("known").
"""

from __future__ import annotations

import argparse
import importlib
import math
import os
import statistics
from collections import Counter, defaultdict
from collections.abc import Callable, Iterable, Iterator
from contextlib import contextmanager
from dataclasses import dataclass, field, replace
from pathlib import Path

# Thousands of small solves: BLAS worker threads only contend (set before numpy is first imported).
os.environ.setdefault("OPENBLAS_NUM_THREADS", "1")

import numpy as np

from catalog.schema import QuantFormat
from catalog.store import load_catalog
from estimator import speed
from estimator.calibration import constants as fitted
from estimator.calibration.layer_split import LayerSplitGap, fit_layer_split, split_loss_table
from estimator.calibration.measurements import Row, llamacpp_rows, server_rows
from estimator.calibration.model import (
    COVARIATE_LEVELS,
    DECODE_PARAMS,
    DEFAULT_GROUP,
    MIN_GROUP_ROWS,
    MIN_GROUP_SOURCES,
    NO_SPLIT_COST,
    PREFILL_PARAMS,
    PRIOR_LOG_OFFSET,
    Band,
    LayerSplitCost,
    Offset,
    Param,
    arch_group,
    die_group,
    gpu_group,
    memory_group,
    silicon_of,
    situation_groups,
    watts_per_tflops,
)
from estimator.engines import (
    band_for,
    compute_class,
    covariates,
    decode_kernel,
    family,
    floor_of,
    forget_fits,
    memory_family,
    prefill_gemm,
    tensor_parallel,
)
from estimator.memory import weight_bytes
from estimator.query import backend_of

CONSTANTS_PATH = Path(__file__).with_name("constants.py")

# Ridge strength of each level's offsets, in weighted pseudo-rows: the deeper (more specific) the level,
# the more rows it takes to move it away from its parents. The overall scale (×0.05 of one pseudo-row per
# level step) was chosen among ×0.02 … ×2 by leave-one-GPU-out error; the rule that a group needs
# MIN_GROUP_ROWS rows from MIN_GROUP_SOURCES sources does most of the pooling.
RIDGE_SCALE = 0.05
RIDGE: dict[str, float] = {level: RIDGE_SCALE * strength for level, strength in {
    "all": 1.0, "family": 2.0, "engine": 3.0, "backend": 2.0, "wave": 2.0, "launch": 2.0, "memory": 3.0,
    "memfam": 3.0, "arch": 3.0, "gpu": 4.0, "kernel": 2.0, "compute": 2.0, "mmq_unit": 2.0, "die": 3.0, "dp4a": 2.0,
    "power": 3.0, "fa": 2.0, "era": 2.0, "power_per_flop": 4.0, "build_age": 4.0, "blas_library": 3.0, "graphs": 2.0,
    "bytes_per_unit_clock": 4.0,
    # Chosen among 2, 4, 6, 8, 12 and 16 by leave-one-GPU-out decode (medians 7.8-7.9 % throughout; p90 23.8, 24.1,
    # 24.1, 24.3, 24.5 and 24.5 %; without the level 8.0 % and 25.4 %): the strongest pull toward the kernel's and the
    # die's own offsets that keeps the gain; leave-one-source-out 8.5 → 8.4 % (p90 25.8 → 25.7 %) at 8.
    "kernel_die": 8.0,
    # The format's tile unpacking on dot products or matrix fragments (model.situation_groups).
    "kernel_unit": 4.0}.items()}
# A row counts toward a group's size only where the group's term is at least this share of its time.
MATERIAL_SHARE = 0.03
# Row weight halves every this many years of build age (relative to the newest row), down to the floor.
AGE_HALF_LIFE_YEARS = 1.5
AGE_WEIGHT_FLOOR = 0.25
UNDATED_WEIGHT = 0.5
# A source's rows weigh (SOURCE_ROWS_AT_FULL_WEIGHT / its row count)^0.5 each when it has more than that, so that one
# long table cannot outvote the rest. Chosen among 6, 12, 20 and 30 on 1,945 rows by leave-one-GPU-out and
# leave-one-source-out together (decode median/p90, prefill median/p90, %): 6: LOGO 8.0/23.7, 14.7/43.4, LOSO 7.8/24.9,
# 13.3/41.0; 12: 7.9/23.4, 14.6/42.5, 7.8/24.5, 13.4/40.5; 20: 7.9/23.3, 14.6/42.3, 7.8/24.6, 13.3/39.9; 30: 8.0/23.2,
# 14.4/41.8, 7.8/24.6, 13.2/39.7. The curve is flat from 12 on; 20 sits in the middle of it.
SOURCE_ROWS_AT_FULL_WEIGHT = 20
# Likewise per card (its "gpu" group: the silicon, per engine family outside llama.cpp), per kind: a parent's offset is
# what a card never seen is estimated with, so it should stand for the cards under it, not for the few with long
# tables. Chosen among 5, 10, 20 and 40 (and none) by leave-one-GPU-out decode median / p90 (8.22 / 22.8, 7.77 / 22.8,
# 7.95 / 23.3, 8.1 / 23.3 and 8.15 / 23.3 %) and prefill p90 (-, 39.5, 38.9, 38.9 and 39.1 %), counted per silicon in
# a first trial; counted per "gpu" group as committed, decode reads 7.9 / 22.7 % at 10 (one source out: 7.9 / 23.2).
GPU_ROWS_AT_FULL_WEIGHT: dict[str, int] = {"decode": 10, "prefill": 20}
MIN_BAND_RESIDUALS = 20
# An 80 % band would be the 10th–90th percentiles if a left-out GPU's errors looked like the others'; they
# cluster (one card's quirk moves all its rows), so the tail share is chosen, per kind, as the largest that
# holds TARGET_COVERAGE of left-out rows in leave-one-GPU-out (the report re-chooses it without each fold).
BAND_TAILS = (0.10, 0.09, 0.08, 0.07, 0.06, 0.05, 0.04, 0.03, 0.02, 0.01)
TARGET_COVERAGE = 0.80
# Achieved-bandwidth prior: a memory type's ratio is shrunk toward its memory family's (and that toward
# all measured cards') as if the parent contributed this many cards.
BANDWIDTH_PRIOR_CARDS = 2.0
MIN_BANDWIDTH_CARDS = 2
MIN_TENSOR_RATIO_SILICON = 2
GN_ITERATIONS = 40
HUBER_LOG_ERROR = 0.2  # ≈ 22 % off
SMALL_MODEL_MAX_PARAMS_B = 3.5


def all_rows() -> tuple[list[Row], int]:
    """Every measurement the fit and the report use: llama-bench rows, then single-stream engine rows. Prompts
    timed cold (`Row.cold_prompt`) count as skipped: an estimate is for a warmed-up process."""
    rows, skipped = _matched_rows()
    warm = [r for r in rows if not r.cold_prompt]
    return warm, skipped + len(rows) - len(warm)


def cold_prompt_rows() -> list[Row]:
    """The prompt rates timed on a fresh process's first batched pass, which all_rows leaves out."""
    return [r for r in _matched_rows()[0] if r.cold_prompt]


def _matched_rows() -> tuple[list[Row], int]:
    catalog = load_catalog()
    rows, skipped = llamacpp_rows(catalog)
    others, skipped_others = server_rows(catalog)
    return rows + others, skipped + skipped_others


def decode_context(row: Row) -> int:
    """A tgN test starts at depth d and ends at d + N: on average the cache holds d + N/2 tokens."""
    return row.depth + row.tokens // 2


def measured_seconds(row: Row) -> float:
    return 1 / row.measured_tps if row.kind == "decode" else row.tokens / row.measured_tps


def model_class(row: Row) -> str:
    if row.model.moe is not None:
        return "moe"
    return "≤3B" if row.model.params_b <= SMALL_MODEL_MAX_PARAMS_B else "dense"


def gpu_fold(row: Row) -> str:
    """The leave-one-GPU-out fold of a row: its GPU together with the cards that differ from it only in memory
    capacity (`GPU.silicon`). Rows on one would speak for the other, and the left-out card would not be unseen."""
    return silicon_of(row.gpu)


def gpu_family(row: Row) -> str:
    return arch_group(row.gpu)


def row_gemm(row: Row) -> str | None:
    """The prefill matrix kernel of the row's own build (llama.cpp's choice changed over the years)."""
    if family(row.engine) != "llama.cpp":
        return None
    return prefill_gemm(row.quant, row.gpu, date=row.date, ubatch=row.ubatch,
                        experts=row.model.moe.experts if row.model.moe else 0, sycl_f16=row.sycl_f16, mmq=row.mmq)


def row_groups(row: Row) -> dict[str, str]:
    kernel = decode_kernel(row.engine, row.quant, row.gpu, date=row.date, sycl_reorder=row.sycl_reorder)
    return situation_groups(row.engine, row.gpu, kernel,
                            compute_class(row.engine, row.quant, row.gpu, row_gemm(row)),
                            date=row.date, flash_attn=row.flash_attn, hipblaslt=row.hipblaslt,
                            cuda_graphs=row.cuda_graphs, build=row.build)


# A stated file size within this share of the catalog format's is the same file; beyond the largest, the row's
# quant name and its file disagree and the catalog's figure stands.
FILE_SIZE_SAME = 0.02
FILE_SIZE_MAX_RATIO = 1.35
_ROW_FORMATS: dict[tuple[str, str, float], QuantFormat] = {}


def row_quant(row: Row) -> QuantFormat:
    """The format as the row's own file had it. Per-model recipes (Unsloth's dynamic mixes, files that keep
    more tensors at 8 or 16 bits) weigh up to a quarter more or less than the catalog's typical bits, and every
    weight-streaming term scales with the bytes actually read; the stated file size says by how much."""
    if not row.file_gib:
        return row.quant
    ratio = row.file_gib * 2**30 / weight_bytes(row.model, row.quant)
    if abs(ratio - 1) < FILE_SIZE_SAME or not 1 / FILE_SIZE_MAX_RATIO < ratio < FILE_SIZE_MAX_RATIO:
        return row.quant
    key = (row.model.id, row.quant.id, row.file_gib)
    if key not in _ROW_FORMATS:
        q = row.quant
        _ROW_FORMATS[key] = q.model_copy(update={"bits_per_weight": q.bits_per_weight * ratio,
                                                 "embedding_bits": q.embedding_bits * ratio,
                                                 "output_bits": q.output_bits * ratio})
    return _ROW_FORMATS[key]


def decode_features(row: Row) -> list[float]:
    t = speed.decode_terms(row.model, row_quant(row), row.gpu, row.engine, decode_context(row), "f16",
                           output_head=row.output_every_token)
    weights = t.dense_weights_s + t.expert_weights_s
    values = {"inv_weight_efficiency": weights, "expert_extra": t.expert_weights_s, "inv_kv_efficiency": t.kv_read_s,
              "dequant_ops_per_weight": t.dequant_op_s, "layer_overhead_s": float(t.layers),
              "moe_layer_overhead_s": float(t.moe_layers), "recurrent_layer_overhead_s": float(t.recurrent_layers),
              # A prompt fed one token per micro-batch reads no logits until its last token, so the host prepares the
              # next step while the GPU runs this one: its per-token host work overlaps, where a decode step waits.
              "token_overhead_s": 1.0 if row.output_every_token else 0.0,
              "sampling_s_per_100k_vocab": t.sampled_vocab}
    return [values[p.name] for p in DECODE_PARAMS]


def prefill_features(row: Row) -> list[float]:
    t = speed.prefill_terms(row.model, row_quant(row), row.gpu, row.engine, row.tokens, row.depth, ubatch=row.ubatch,
                              date=row.date, flash_attn=row.flash_attn, rocwmma=row.rocwmma, sycl_f16=row.sycl_f16,
                              mmq=row.mmq, fa_matrix=row.fa_matrix)
    values = {"inv_matmul_utilisation": t.matmul_s, "moe_matmul_extra": t.expert_matmul_s,
              "inv_attention_utilisation": t.attention_s, "inv_pass_efficiency": t.weight_passes_s,
              "request_overhead_s": t.request, "tile_dequant_ops_per_weight": t.tile_dequant_s,
              "recurrent_step_s": t.recurrent_token_layers, "prefill_layer_overhead_s": t.layer_passes,
              "inv_kv_reread_efficiency": t.kv_reread_s, "inv_vector_kv_reread_efficiency": t.vector_kv_reread_s,
              "inv_vector_attention_utilisation": t.vector_attention_s, "expert_matmul_launch_s": t.expert_matmuls,
              "inv_score_matrix_efficiency": t.score_matrix_s, "inv_activation_efficiency": t.activation_s}
    return [values[p.name] for p in PREFILL_PARAMS]


@dataclass
class Design:
    """Precomputed terms of every fittable row of one kind (single GPU), shared by every fold."""

    kind: str
    params: tuple[Param, ...]
    rows: list[Row]
    features: np.ndarray  # rows × params
    base_log: np.ndarray  # rows × params: log(prior − floor) + stated prior offsets
    floors: np.ndarray  # rows × params
    log_t: np.ndarray
    weight: np.ndarray
    groups: list[dict[str, str]]
    sources: list[str]
    covariates: list[dict[str, float]]
    material: np.ndarray = field(init=False)  # rows × params

    def __post_init__(self) -> None:
        share = (self.floors + np.exp(self.base_log)) * self.features / np.exp(self.log_t)[:, None]
        self.material = share >= MATERIAL_SHARE


def design(kind: str, rows: list[Row]) -> Design:
    params = DECODE_PARAMS if kind == "decode" else PREFILL_PARAMS
    mine = [r for r in rows if r.kind == kind and r.gpus == 1]
    feats = np.array([decode_features(r) if kind == "decode" else prefill_features(r) for r in mine], dtype=float)
    groups = [row_groups(r) for r in mine]
    floors = np.array([[floor_of(p, r.gpu) for p in params] for r in mine], dtype=float)
    base = np.array([[math.log(p.prior - floors[i, j])
                      + sum(PRIOR_LOG_OFFSET.get((p.name, lv, g[lv]), 0.0) for lv in p.levels)
                      for j, p in enumerate(params)] for i, g in enumerate(groups)], dtype=float)
    return Design(kind=kind, params=params, rows=mine, features=feats.reshape(len(mine), len(params)),
                  base_log=base.reshape(len(mine), len(params)), floors=floors.reshape(len(mine), len(params)),
                  log_t=np.log(np.array([measured_seconds(r) for r in mine], dtype=float)),
                  weight=row_weights(mine), groups=groups, sources=[r.source for r in mine],
                  covariates=[row_covariates(r, newest_date(mine)) for r in mine])


def newest_date(rows: list[Row]) -> str:
    return max((r.date for r in rows if r.date), default="")


def row_covariates(row: Row, newest: str) -> dict[str, float]:
    """The GPU's covariates plus the row's build age in years before the newest row (0 when undated)."""
    age = _years(newest) - _years(row.date) if row.date and newest else 0.0
    return {**covariates(row.gpu), "build_age": age}


def row_weights(rows: list[Row]) -> np.ndarray:
    dated = [r.date for r in rows if r.date]
    newest = max(dated) if dated else ""
    cards = [gpu_group(r.engine, r.gpu) for r in rows]
    per_source = Counter(r.source for r in rows)
    per_card = Counter(cards)
    out = []
    for r, card in zip(rows, cards, strict=True):
        if r.date and newest:
            age = _years(newest) - _years(r.date)
            w = max(AGE_WEIGHT_FLOOR, 0.5 ** (age / AGE_HALF_LIFE_YEARS))
        else:
            w = UNDATED_WEIGHT
        w *= _capped(SOURCE_ROWS_AT_FULL_WEIGHT, per_source[r.source])
        w *= _capped(GPU_ROWS_AT_FULL_WEIGHT[r.kind], per_card[card])
        out.append(w)
    arr = np.array(out, dtype=float)
    return arr / arr.mean() if len(arr) else arr


def _capped(full_weight_rows: int, rows: int) -> float:
    """Each of `rows` rows weighs (full_weight_rows / rows)^½ once they outnumber full_weight_rows."""
    return min(1.0, math.sqrt(full_weight_rows / rows))


def _years(date: str) -> float:
    parts = [int(p) for p in date.split("-")[:2] if p.isdigit()]
    return parts[0] + ((parts[1] - 1) / 12 if len(parts) > 1 else 0.5)


Column = tuple[int, str, str]  # (param index, level, group)


def eligible_columns(d: Design, train: np.ndarray) -> list[Column]:
    """The (param, level, group) offsets the training rows can support: ≥ MIN_GROUP_ROWS rows from
    ≥ MIN_GROUP_SOURCES sources where the param's term matters."""
    found: dict[Column, tuple[int, set[str]]] = {}
    for i in np.flatnonzero(train):
        g = d.groups[i]
        for pi, p in enumerate(d.params):
            if not d.material[i, pi]:
                continue
            for level in p.levels:
                key = (pi, level, g[level])
                n, srcs = found.get(key, (0, set()))
                srcs.add(d.sources[i])
                found[key] = (n + 1, srcs)
    total = {pi: found.get((pi, "all", "all"), (0, set()))[0] for pi in range(len(d.params))}
    return sorted(
        c for c, (n, s) in found.items()
        if n >= MIN_GROUP_ROWS and len(s) >= MIN_GROUP_SOURCES
        # "default" is what a row (and every estimate) gets when a flag is not stated: its parents speak for it.
        and c[2] != DEFAULT_GROUP
        # A group holding every row of its term adds nothing to "all" (a covariate's slope does).
        and (c[1] == "all" or c[1] in COVARIATE_LEVELS or n < total[c[0]])
    )


def membership(d: Design, idx: np.ndarray, cols: list[Column]) -> np.ndarray:
    m = np.zeros((len(idx), len(cols)), dtype=float)
    for j, (_, level, group) in enumerate(cols):
        for a, i in enumerate(idx):
            if d.groups[i][level] == group:
                m[a, j] = d.covariates[i][level] if level in COVARIATE_LEVELS else 1.0
    return m


@dataclass
class Fit:
    cols: list[Column]
    delta: np.ndarray
    counts: dict[Column, tuple[int, int]]


def _param_index(d: Design, cols: list[Column]) -> np.ndarray:
    ind = np.zeros((len(cols), len(d.params)))
    for j, (pi, _, _) in enumerate(cols):
        ind[j, pi] = 1.0
    return ind


def _predict_log(d: Design, idx: np.ndarray, m: np.ndarray, ind: np.ndarray, delta: np.ndarray
                 ) -> tuple[np.ndarray, np.ndarray]:
    excess = np.exp(d.base_log[idx] + (m * delta) @ ind)
    total = ((d.floors[idx] + excess) * d.features[idx]).sum(axis=1)
    # d log(total) / d offset: only the excess over the floor moves with the offsets.
    return np.log(total), excess * d.features[idx] / total[:, None]


def fit_design(d: Design, train: np.ndarray) -> Fit:
    cols = eligible_columns(d, train)
    idx = np.flatnonzero(train)
    counts = _counts(d, idx, cols)
    if not cols:
        return Fit(cols, np.zeros(0), counts)
    m = membership(d, idx, cols)
    ind = _param_index(d, cols)
    pc = np.array([c[0] for c in cols])
    lam = np.array([RIDGE[c[1]] * d.params[c[0]].ridge_at(c[1]) for c in cols])
    w = d.weight[idx]
    y = d.log_t[idx]
    delta = np.zeros(len(cols))

    def objective(dl: np.ndarray) -> float:
        pred, _ = _predict_log(d, idx, m, ind, dl)
        return float(np.sum(w * _huber(pred - y)) + np.sum(lam * dl**2))

    current = objective(delta)
    damping = 1e-3
    for _ in range(GN_ITERATIONS):
        pred, share = _predict_log(d, idx, m, ind, delta)
        r = pred - y
        jac = m * share[:, pc]
        wr = w * _huber_weight(r)
        h = jac.T @ (jac * wr[:, None]) + np.diag(lam)
        grad = jac.T @ (wr * r) + lam * delta
        improved = False
        for _ in range(12):
            step = np.linalg.solve(h + damping * np.diag(np.diag(h)), -grad)
            trial = delta + step
            value = objective(trial)
            if value < current:
                delta, current, improved = trial, value, True
                damping = max(damping / 3, 1e-7)
                break
            damping *= 4
        if not improved or float(np.max(np.abs(step))) < 1e-7:
            break
    return Fit(cols, delta, counts)


def _huber(r: np.ndarray) -> np.ndarray:
    """Squared error near zero, linear beyond HUBER_LOG_ERROR: one build that ran 20× slow (an early ROCm
    port, say) cannot drag every group it belongs to."""
    a = np.abs(r)
    return np.where(a <= HUBER_LOG_ERROR, a**2, 2 * HUBER_LOG_ERROR * a - HUBER_LOG_ERROR**2)


def _huber_weight(r: np.ndarray) -> np.ndarray:
    a = np.abs(r)
    return np.where(a <= HUBER_LOG_ERROR, 1.0, HUBER_LOG_ERROR / np.maximum(a, 1e-12))


def _counts(d: Design, idx: np.ndarray, cols: list[Column]) -> dict[Column, tuple[int, int]]:
    out: dict[Column, tuple[int, int]] = {}
    for c in cols:
        pi, level, group = c
        sel = [i for i in idx if d.material[i, pi] and d.groups[i][level] == group]
        out[c] = (len(sel), len({d.sources[i] for i in sel}))
    return out


def predict_log(d: Design, fit: Fit, idx: np.ndarray) -> np.ndarray:
    if not fit.cols:
        return np.log(((d.floors[idx] + np.exp(d.base_log[idx])) * d.features[idx]).sum(axis=1))
    pred, _ = _predict_log(d, idx, membership(d, idx, fit.cols), _param_index(d, fit.cols), fit.delta)
    return pred


def offsets_of(d: Design, fit: Fit) -> dict[tuple[str, str, str], Offset]:
    out = {}
    for j, c in enumerate(fit.cols):
        pi, level, group = c
        n, s = fit.counts[c]
        out[(d.params[pi].name, level, group)] = Offset(value=round(float(fit.delta[j]), 4), rows=n, sources=s)
    return out


# --- achieved bandwidth prior -------------------------------------------------------------------------


def bandwidth_ratios() -> dict[str, float]:
    """Achieved/datasheet bandwidth by memory type, shrunk toward the memory family and all measured cards."""
    # One card per silicon: its capacity variants share the figure and would otherwise count it several times.
    measured = list({silicon_of(g): g for g in load_catalog().gpus if g.achieved_bandwidth_gbs}.values())
    if not measured:
        return {}
    logs = [(memory_group(g), memory_family(g), math.log(g.achieved_bandwidth_gbs / g.bandwidth_gbs))
            for g in measured if g.achieved_bandwidth_gbs]
    k = BANDWIDTH_PRIOR_CARDS
    if len(logs) < MIN_BANDWIDTH_CARDS:
        return {}
    overall = statistics.fmean(v for _, _, v in logs)
    out = {"all": round(math.exp(overall), 4)}
    fam_log: dict[str, float] = {}
    for fam in sorted({f for _, f, _ in logs}):
        vals = [v for _, f, v in logs if f == fam]
        fam_log[fam] = (sum(vals) + k * overall) / (len(vals) + k)
        if len(vals) >= MIN_BANDWIDTH_CARDS:
            out[f"family:{fam}"] = round(math.exp(fam_log[fam]), 4)
    for typ in sorted({t for t, _, _ in logs}):
        vals = [v for t, _, v in logs if t == typ]
        fam = next(f for t, f, _ in logs if t == typ)
        if len(vals) >= MIN_BANDWIDTH_CARDS:
            out[f"type:{typ}"] = round(math.exp((sum(vals) + k * fam_log[fam]) / (len(vals) + k)), 4)
    return out


def arch_watts_per_tflops() -> dict[str, float]:
    """Median board watts per peak TFLOPS of each architecture's catalog GPUs (the `power_per_flop` reference)."""
    by_arch: dict[str, list[float]] = defaultdict(list)
    for g in load_catalog().gpus:
        w = watts_per_tflops(g)
        if w:
            by_arch[arch_group(g)].append(w)
    return {a: round(statistics.median(v), 4) for a, v in sorted(by_arch.items())}


def tensor_ratios() -> dict[str, float]:
    """The datasheet rules that relate a die's matrix-unit rates to its other figures, read off the catalog GPUs that
    list both, one card per silicon: dense FP16 matrix over FP32 ("fp16:<die>") and int8 over FP16 ("int8:<die>") per
    die, each the median of at least MIN_TENSOR_RATIO_SILICON silicons. Laptop parts and cloud variants (RTX 40/50
    laptop GPUs, the A10G) list only FP32, the RTX PRO Blackwell cards no int8: their siblings' rule gives the rate
    their matrix kernels run at, where FP32 would put a prompt 4x too slow."""
    cards = list({silicon_of(g): g for g in load_catalog().gpus if g.vendor != "apple"}.values())
    pairs: dict[str, list[float]] = defaultdict(list)
    for g in cards:
        if g.fp16_tflops and g.fp32_tflops:
            pairs[f"fp16:{die_group(g)}"].append(g.fp16_tflops / g.fp32_tflops)
        if g.int8_tops and g.fp16_tflops:
            pairs[f"int8:{die_group(g)}"].append(g.int8_tops / g.fp16_tflops)
    return {key: round(statistics.median(v), 4) for key, v in sorted(pairs.items())
            if len(v) >= MIN_TENSOR_RATIO_SILICON}


@contextmanager
def catalog_priors(ratios: dict[str, float], watts: dict[str, float],
                   tensor: dict[str, float] | None = None) -> Iterator[None]:
    """Estimate with these achieved-bandwidth ratios, per-architecture power references and matrix-unit rules while
    fitting (the terms and covariates of every row depend on them)."""
    saved = fitted.ACHIEVED_BANDWIDTH_RATIO, fitted.ARCH_WATTS_PER_TFLOPS, fitted.TENSOR_RATIOS
    fitted.ACHIEVED_BANDWIDTH_RATIO, fitted.ARCH_WATTS_PER_TFLOPS = ratios, watts
    fitted.TENSOR_RATIOS = tensor_ratios() if tensor is None else tensor
    forget_fits()
    try:
        yield
    finally:
        fitted.ACHIEVED_BANDWIDTH_RATIO, fitted.ARCH_WATTS_PER_TFLOPS, fitted.TENSOR_RATIOS = saved
        forget_fits()


# --- cross-validation and bands -----------------------------------------------------------------------

Situation = tuple[str, str, str, str, str]  # kind, engine family, GPU family, known/unseen, dense/moe


@dataclass
class Residual:
    row: Row
    log_error: float  # log(measured / estimated)
    known: bool

    def situation(self) -> Situation:
        return (self.row.kind, family(self.row.engine), gpu_family(self.row), "known" if self.known else "unseen",
                "moe" if self.row.model.moe is not None else "dense")


def cross_validate(d: Design, fold_of: Callable[[Row], str]) -> list[Residual]:
    """Leave each fold out, fit on the rest, estimate the fold. `known`: the row's GPU still owns a GPU offset."""
    keys = np.array([fold_of(r) for r in d.rows])
    return [r for key in sorted(set(keys)) for r in _estimated_apart(d, keys == key)]


def _estimated_apart(d: Design, test: np.ndarray) -> list[Residual]:
    """Fit on the rows outside `test`, estimate those inside. `known`: the row's GPU still owns a GPU offset."""
    fit = fit_design(d, ~test)
    gpus_owned = {c[2] for c in fit.cols if c[1] == "gpu"}
    idx = np.flatnonzero(test)
    pred = predict_log(d, fit, idx)
    return [Residual(d.rows[i], float(pred[a] - d.log_t[i]), gpu_group(d.rows[i].engine, d.rows[i].gpu) in gpus_owned)
            for a, i in enumerate(idx)]


def held_apart_residuals(rows: list[Row], apart: list[Row]) -> list[Residual]:
    """Rows kept out of the fit (`apart`), estimated at their own build and flags by the model fitted on `rows`."""
    mine = [r for r in apart if r.gpus == 1]
    if not mine:
        return []
    with catalog_priors(bandwidth_ratios(), arch_watts_per_tflops(), tensor_ratios()):
        d = design(mine[0].kind, rows + mine)
    return _estimated_apart(d, np.arange(len(d.rows)) >= len(d.rows) - len(mine))


def _cells(s: Situation) -> list[Situation]:
    kind, fam, gfam, known, cls = s
    return [s, (kind, fam, gfam, known, "*"), (kind, fam, "*", known, cls), (kind, fam, "*", known, "*"),
            (kind, fam, "*", "*", "*"), (kind, "*", "*", known, cls), (kind, "*", "*", "*", "*")]


def source_balanced_quantiles(errors: list[tuple[float, str]], levels: np.ndarray) -> np.ndarray:
    """Quantiles of the errors with each source weighing the same, however many rows it has: a source's rows share
    its build, flags and setup, so ten of them say little more about the next user's setup than one does."""
    vals = np.array([e for e, _ in errors])
    counts: dict[str, int] = defaultdict(int)
    for _, src in errors:
        counts[src] += 1
    weights = np.array([1.0 / counts[src] for _, src in errors])
    order = np.argsort(vals, kind="stable")
    vals, weights = vals[order], weights[order]
    # Each value stands at the middle of its own weight (equal weights: (i + ½) / n, Hazen's plotting positions).
    position = (np.cumsum(weights) - weights / 2) / weights.sum()
    return np.interp(levels, position, vals)


def band_table(residuals: Iterable[Residual], tails: dict[str, float]) -> dict[Situation, Band]:
    """Per situation cell, the (tail, 1 − tail) source-balanced percentiles of log(measured / estimated); `tails`
    per kind."""
    cells: dict[Situation, list[tuple[float, str]]] = defaultdict(list)
    for r in residuals:
        for c in _cells(r.situation()):
            cells[c].append((r.log_error, r.row.source))
    out = {}
    for c, vals in cells.items():
        if len(vals) >= MIN_BAND_RESIDUALS:
            tail = tails[c[0]]
            lo, hi = source_balanced_quantiles(vals, np.array([tail, 1 - tail]))
            # A band printed beside an estimate must hold it: where a situation's residuals lean one way (nine in ten
            # left-out RDNA 4 runs are faster than estimated, say) the band reaches back to the estimate itself.
            lo, hi = min(lo, 0.0), max(hi, 0.0)
            out[c] = Band(low=round(float(lo), 4), high=round(float(hi), 4), n=len(vals))
    return out


def _inside_by_fold(residuals: list[Residual], fold_of: Callable[[Row], str], pool: list[Residual]
                    ) -> dict[str, tuple[np.ndarray, int]]:
    """For each fold: how many of its rows fall inside the band built without it, for every candidate tail."""
    levels = np.array([*BAND_TAILS, *(1 - t for t in BAND_TAILS)])
    n = len(BAND_TAILS)
    pool_cells = [(fold_of(r.row), _cells(r.situation()), (r.log_error, r.row.source)) for r in pool]
    by_fold: dict[str, list[Residual]] = defaultdict(list)
    for r in residuals:
        by_fold[fold_of(r.row)].append(r)
    out: dict[str, tuple[np.ndarray, int]] = {}
    for key, mine in sorted(by_fold.items()):
        cells: dict[Situation, list[tuple[float, str]]] = defaultdict(list)
        for fold, cs, err in pool_cells:
            if fold != key:
                for c in cs:
                    cells[c].append(err)
        quantiles: dict[Situation, np.ndarray] = {}
        inside = np.zeros(n)
        total = 0
        for r in mine:
            cell = next((c for c in _cells(r.situation()) if len(cells.get(c, ())) >= MIN_BAND_RESIDUALS), None)
            if cell is None:
                continue
            if cell not in quantiles:
                quantiles[cell] = source_balanced_quantiles(cells[cell], levels)
            q = quantiles[cell]
            total += 1
            inside += (q[:n] <= r.log_error) & (r.log_error <= q[n:])
        out[key] = (inside, total)
    return out


def _choose_tail(per_fold: dict[str, tuple[np.ndarray, int]], without: str | None = None) -> int:
    """Index of the largest tail (narrowest band) whose pooled coverage reaches the target."""
    inside = sum((v[0] for k, v in per_fold.items() if k != without), np.zeros(len(BAND_TAILS)))
    total = sum(v[1] for k, v in per_fold.items() if k != without)
    if total == 0:
        return 0
    for i in range(len(BAND_TAILS)):
        if inside[i] / total >= TARGET_COVERAGE:
            return i
    return len(BAND_TAILS) - 1


def choose_tails(logo: list[Residual]) -> dict[str, float]:
    tails = {}
    for kind in ("decode", "prefill"):
        mine = [r for r in logo if r.row.kind == kind]
        tails[kind] = BAND_TAILS[_choose_tail(_inside_by_fold(mine, gpu_fold, mine))]
    return tails


@dataclass
class Result:
    decode: dict[tuple[str, str, str], Offset]
    prefill: dict[tuple[str, str, str], Offset]
    ratios: dict[str, float]
    watts: dict[str, float]
    tensor: dict[str, float]
    bands: dict[Situation, Band]
    tails: dict[str, float]
    known: dict[str, tuple[str, ...]]
    engines: dict[str, tuple[str, ...]]
    logo: list[Residual]
    loso: list[Residual]
    multi_gpu: dict[str, float] = field(default_factory=dict)
    multi_gpu_misses: list[MultiGpuMiss] = field(default_factory=list)
    layer_split: LayerSplitCost = NO_SPLIT_COST
    layer_split_gaps: list[LayerSplitGap] = field(default_factory=list)


def fit_all(rows: list[Row]) -> Result:
    decode_offsets: dict[tuple[str, str, str], Offset] = {}
    prefill_offsets: dict[tuple[str, str, str], Offset] = {}
    known: dict[str, tuple[str, ...]] = {}
    engines: dict[str, tuple[str, ...]] = {}
    logo: list[Residual] = []
    loso: list[Residual] = []
    ratios = bandwidth_ratios()
    watts = arch_watts_per_tflops()
    tensor = tensor_ratios()
    with catalog_priors(ratios, watts, tensor):
        designs = [design(kind, rows) for kind in ("decode", "prefill")]
    for d in designs:
        kind = d.kind
        if not d.rows:
            continue
        full = fit_design(d, np.ones(len(d.rows), dtype=bool))
        (decode_offsets if kind == "decode" else prefill_offsets).update(offsets_of(d, full))
        known[kind] = tuple(sorted({c[2] for c in full.cols if c[1] == "gpu"}))
        engines[kind] = measured_engines(d.rows)
        logo += cross_validate(d, gpu_fold)
        loso += cross_validate(d, lambda r: r.source)
    unseen = [dataclass_replace_known(r, False) for r in logo]
    tails = choose_tails(unseen)
    # "known" bands: rows whose GPU still owned offsets of its own when their source was left out.
    bands = band_table(unseen + [r for r in loso if r.known], tails)
    result = Result(decode_offsets, prefill_offsets, ratios, watts, tensor, bands, tails, known, engines, logo, loso)
    result.layer_split_gaps = layer_split_gaps(rows, result)
    result.layer_split = fit_layer_split(result.layer_split_gaps)
    result.multi_gpu_misses = multi_gpu_misses(rows, result)
    result.multi_gpu = choose_multi_gpu_widening(result.multi_gpu_misses)
    return result


def splits_by_layer(row: Row) -> bool:
    return row.kind == "decode" and row.gpus > 1 and not tensor_parallel(row.engine)


def layer_split_gaps(rows: list[Row], result: Result) -> list[LayerSplitGap]:
    with fitted_result(replace(result, layer_split=NO_SPLIT_COST)):
        return [LayerSplitGap(r.source, 1 / predicted_tps(r), 1 / r.measured_tps, r.gpus - 1)
                for r in rows if splits_by_layer(r)]


# Multi-GPU runs are never fitted (the design holds single-GPU rows), so their misses against this fit's estimate are
# out of sample for what splitting a model adds: hops between cards whose cost runs from nothing (L4s) to milliseconds
# per token (T4s on one host), pipeline bubbles, tensor-parallel all-reduces. A band printed for several GPUs is the
# single-GPU band times the smallest of these factors that holds TARGET_COVERAGE of those runs.
MULTI_GPU_WIDENINGS = tuple(round(1.0 + 0.1 * i, 1) for i in range(41))


@dataclass(frozen=True)
class MultiGpuMiss:
    """A multi-GPU run against this fit's estimate: log(measured / estimated) and its situation's single-GPU band."""

    kind: str
    log_error: float
    low: float
    high: float
    source: str
    # A layer-split decode run's estimate without splitting costs and its measured time (seconds per token), and its
    # card boundaries, so the report can re-price it with costs fitted without its source; 0 boundaries otherwise.
    base_s: float = 0.0
    measured_s: float = 0.0
    boundaries: int = 0

    def with_split(self, cost: LayerSplitCost) -> MultiGpuMiss:
        if not self.boundaries:
            return self
        return replace(self, log_error=math.log((self.base_s + cost.seconds(self.boundaries)) / self.measured_s))


@contextmanager
def fitted_result(result: Result) -> Iterator[None]:
    """Estimate with this fit's offsets and bands in place of the committed ones, bands unwidened."""
    names = ("DECODE_OFFSETS", "PREFILL_OFFSETS", "BANDS", "BAND_TAIL", "KNOWN_GPUS", "MEASURED_ENGINES",
             "MULTI_GPU_BAND_WIDEN", "LAYER_SPLIT_FIXED_S", "LAYER_SPLIT_HOP_S")
    values: tuple[object, ...] = (result.decode, result.prefill, result.bands, result.tails, result.known,
                                  result.engines, {}, result.layer_split.fixed_s, result.layer_split.hop_s)
    saved = [getattr(fitted, n, {}) for n in names]
    with catalog_priors(result.ratios, result.watts, result.tensor):
        for n, v in zip(names, values, strict=True):
            setattr(fitted, n, v)
        forget_fits()
        try:
            yield
        finally:
            for n, v in zip(names, saved, strict=True):
                setattr(fitted, n, v)
            forget_fits()


def multi_gpu_misses(rows: list[Row], result: Result) -> list[MultiGpuMiss]:
    out = []
    with fitted_result(result):
        for r in rows:
            if r.gpus > 1:
                low, high = band_for(r.kind, r.engine, r.gpu, r.model.moe is not None)
                estimate = predicted_tps(r)
                miss = MultiGpuMiss(r.kind, math.log(r.measured_tps / estimate), low, high, r.source)
                if splits_by_layer(r):
                    hops = r.gpus - 1
                    miss = replace(miss, base_s=1 / estimate - result.layer_split.seconds(hops),
                                   measured_s=1 / r.measured_tps, boundaries=hops)
                out.append(miss)
    return out


def _multi_gpu_inside(misses: list[MultiGpuMiss], widen: float) -> int:
    return sum(m.low * widen <= m.log_error <= m.high * widen for m in misses)


def _multi_gpu_coverage(misses: list[MultiGpuMiss], widen: float) -> float:
    return _multi_gpu_inside(misses, widen) / len(misses) if misses else 0.0


def choose_multi_gpu_widening(misses: list[MultiGpuMiss]) -> dict[str, float]:
    out = {}
    for kind in ("decode", "prefill"):
        mine = [m for m in misses if m.kind == kind]
        if mine:
            out[kind] = next((w for w in MULTI_GPU_WIDENINGS if _multi_gpu_coverage(mine, w) >= TARGET_COVERAGE),
                             MULTI_GPU_WIDENINGS[-1])
    return out


def report_multi_gpu(result: Result) -> None:
    """The cost of a layer split, and how close the multi-GPU runs come and how often they fall in the band printed
    for them: as single-GPU bands, widened, and with the split costs and the widening both chosen without each source
    (the figures to quote)."""
    print("== multi-GPU runs (never in the design) against the estimate and the printed band")
    gaps = result.layer_split_gaps
    table = split_loss_table(gaps)
    cost = result.layer_split
    print(f"layer split: {cost.fixed_s * 1e3:.2f} ms per token once, + {cost.hop_s * 1e3:.3f} ms per card boundary "
          f"(fitted on {len(gaps)} decode runs from {len(table.sources)} sources)")
    for kind in ("decode", "prefill"):
        mine = [m for m in result.multi_gpu_misses if m.kind == kind]
        if not mine:
            continue
        sources = sorted({m.source for m in mine})
        inside = 0
        apart: list[MultiGpuMiss] = []  # each source's runs priced with the split costs fitted without it
        for s in sources:
            cost_apart = table.best(without=[s])
            others = [m.with_split(cost_apart) for m in mine if m.source != s]
            chosen = choose_multi_gpu_widening(others).get(kind, MULTI_GPU_WIDENINGS[-1])
            held = [m.with_split(cost_apart) for m in mine if m.source == s]
            inside += _multi_gpu_inside(held, chosen)
            apart += held
        widen = result.multi_gpu.get(kind, 1.0)
        costless = [abs(math.exp(-m.with_split(NO_SPLIT_COST).log_error) - 1) for m in mine]
        errs = [abs(math.exp(-m.log_error) - 1) for m in apart]
        p90 = float(np.quantile(np.array(errs), 0.9))
        p90_costless = float(np.quantile(np.array(costless), 0.9))
        median_costless = statistics.median(costless)
        print(f"{kind:8s} n={len(mine):4d} ({len(sources)} sources)  one source out: median "
              f"{statistics.median(errs):6.1%} p90 {p90:6.1%} (without split costs {median_costless:6.1%} / "
              f"{p90_costless:6.1%});  band holds {_multi_gpu_coverage(mine, 1.0):.0%} as one GPU's, "
              f"{_multi_gpu_coverage(mine, widen):.0%} widened ×{widen:.1f}, {inside / len(mine):.0%} with split costs "
              "and factor chosen without each source")
        for n in sorted({m.boundaries for m in apart if m.boundaries}):
            signed = [m.log_error for m in apart if m.boundaries == n]
            print(f"{'':8s}   layer split over {n + 1} cards: n={len(signed):4d}  median log(measured / estimated) "
                  f"{statistics.median(signed):+.3f}")
    print()


def measured_engines(rows: list[Row]) -> tuple[str, ...]:
    """Engines with enough runs of their own (MIN_GROUP_ROWS from MIN_GROUP_SOURCES sources) that their family's
    cross-validated band speaks for them; any other engine answers with a widened band."""
    runs: dict[str, list[str]] = defaultdict(list)
    for r in rows:
        runs[r.engine].append(r.source)
    return tuple(sorted(e for e, srcs in runs.items()
                        if len(srcs) >= MIN_GROUP_ROWS and len(set(srcs)) >= MIN_GROUP_SOURCES))


def dataclass_replace_known(r: Residual, known: bool) -> Residual:
    return Residual(r.row, r.log_error, known)


# --- the report ---------------------------------------------------------------------------------------


def predicted_tps(row: Row) -> float:
    """What the estimator (with the committed constants) says for this row's test."""
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


def _abs_pct(r: Residual) -> float:
    """|estimated − measured| / measured, as `ape` (log_error is log(measured / estimated))."""
    return abs(math.exp(-r.log_error) - 1)


def _stats(errs: list[float]) -> str:
    s = sorted(errs)
    p90 = float(np.quantile(np.array(s), 0.9)) if s else 0.0
    return f"n={len(s):4d}  median {statistics.median(s):6.1%}  p90 {p90:6.1%}"


def coverage(residuals: list[Residual], fold_of: Callable[[Row], str]) -> float:
    """Share of rows inside the band built from the other folds' residuals, with the tail share itself chosen
    on the other folds: neither the band nor its width has seen the fold it is scored on."""
    per_fold = _inside_by_fold(residuals, fold_of, residuals)
    inside = sum(v[0][_choose_tail(per_fold, without=k)] for k, v in per_fold.items())
    total = sum(v[1] for v in per_fold.values())
    return float(inside / total) if total else float("nan")


def report_cv(result: Result) -> None:
    for label, residuals, fold_of in (
        ("leave-one-GPU-out", result.logo, gpu_fold),
        ("leave-one-source-out", result.loso, lambda r: r.source),
    ):
        print(f"== {label}")
        for kind in ("decode", "prefill"):
            mine = [r for r in residuals if r.row.kind == kind]
            if not mine:
                continue
            print(f"{kind:8s} all          {_stats([_abs_pct(r) for r in mine])}"
                  f"  80% band coverage {coverage(mine, fold_of):.0%}")
            for title, key in (("engine", lambda r: r.row.engine), ("backend", lambda r: backend_of(r.row.gpu)),
                               ("class", lambda r: model_class(r.row)), ("GPU family", lambda r: gpu_family(r.row))):
                groups: dict[str, list[float]] = defaultdict(list)
                for r in mine:
                    groups[key(r)].append(_abs_pct(r))
                for g, errs in sorted(groups.items()):
                    print(f"  {kind:8s} {title:10s} {g:34s} {_stats(errs)}")
        print()


def report(rows: list[Row]) -> dict[str, float]:
    """In-sample errors of the answer the estimator gives for each row's question (every row, multi-GPU
    included): committed constants, today's build and default flags, the catalog's format. A row measured on
    an older build, with other flags or on a heavier file than the format's typical one differs by design."""
    medians: dict[str, float] = {}
    print("== in-sample, the estimate as answered today (committed constants, current build and defaults; the fit "
          "saw these rows, and rows from older builds or other flags differ by design)")
    for kind in ("decode", "prefill"):
        for multi in (False, True):
            errs = [ape(r) for r in rows if r.kind == kind and (r.gpus > 1) == multi]
            if errs:
                label = "multi-GPU" if multi else "single GPU"
                print(f"{kind:8s} {label:10s} {_stats(errs)}")
                if not multi:
                    medians[kind] = statistics.median(errs)
    return medians


# --- constants.py -------------------------------------------------------------------------------------


def render_constants(result: Result) -> str:
    def table(comment: list[str], head: str, entries: list[str]) -> list[str]:
        return [*(f"# {c}" for c in comment), f"{head} = {{", *(f"    {e}" for e in entries), "}"]

    def offsets(result_offsets: dict[tuple[str, str, str], Offset]) -> list[str]:
        return [f"{k!r}: Offset({o.value:.4f}, {o.rows}, {o.sources})," for k, o in sorted(result_offsets.items())]

    lines = [
        '"""Fitted constants. Rewritten by `python -m estimator.calibration.fit`; do not edit by hand."""',
        "",
        "from estimator.calibration.model import Band, Offset",
        "",
    ]
    lines += table(["Achieved / datasheet memory bandwidth by memory type and family, from published memory",
                    "benchmarks."], "ACHIEVED_BANDWIDTH_RATIO: dict[str, float]",
                   [f"{k!r}: {v:.4f}," for k, v in sorted(result.ratios.items())])
    lines += table(["Median board watts per peak FP16 TFLOPS of each architecture's catalog GPUs."],
                   "ARCH_WATTS_PER_TFLOPS: dict[str, float]",
                   [f"{k!r}: {v:.4f}," for k, v in sorted(result.watts.items())])
    lines += table(["Dense matrix-unit rate over FP32 (fp16:) and int8 over FP16 (int8:) by die, the median of the",
                    "catalog GPUs that list both, one per silicon (see tensor_ratios in fit.py)."],
                   "TENSOR_RATIOS: dict[str, float]",
                   [f"{k!r}: {v:.4f}," for k, v in sorted(result.tensor.items())])
    lines += table(["(coefficient, level, group): fitted log-offset (a slope for a covariate level), with the rows",
                    "and sources it rests on."], "DECODE_OFFSETS: dict[tuple[str, str, str], Offset]",
                   offsets(result.decode))
    lines += table([], "PREFILL_OFFSETS: dict[tuple[str, str, str], Offset]", offsets(result.prefill))
    known: list[str] = []
    for kind, ids in sorted(result.known.items()):
        known += [f"{kind!r}: (", *[f"    {i!r}," for i in ids], "),"]
    lines += table(["GPUs that own offsets of their own, per kind (their estimates use the 'known' bands)."],
                   "KNOWN_GPUS: dict[str, tuple[str, ...]]", known)
    measured: list[str] = [f"{kind!r}: {ids!r}," for kind, ids in sorted(result.engines.items())]
    lines += table(["Engines with enough runs of their own for their family's band, per kind (others get it widened)."],
                   "MEASURED_ENGINES: dict[str, tuple[str, ...]]", measured)
    lines += table(["Tail share of each band (see BAND_TAILS in fit.py), per kind."], "BAND_TAIL: dict[str, float]",
                   [f"{k!r}: {v:.2f}," for k, v in sorted(result.tails.items())])
    lines += ["# Seconds per decoded token a layer split adds: once, and per card boundary (see layer_split.py).",
              f"LAYER_SPLIT_FIXED_S: float = {result.layer_split.fixed_s:.4e}",
              f"LAYER_SPLIT_HOP_S: float = {result.layer_split.hop_s:.4e}"]
    lines += table(["Factor on the band of an estimate for several GPUs, per kind (MULTI_GPU_WIDENINGS in fit.py)."],
                   "MULTI_GPU_BAND_WIDEN: dict[str, float]",
                   [f"{k!r}: {v:.1f}," for k, v in sorted(result.multi_gpu.items())])
    lines += table(["(kind, engine family, GPU family, known/unseen, dense/moe): (tail, 1 − tail) percentiles of",
                    "log(measured / estimated) in cross-validation, and how many residuals."],
                   "BANDS: dict[tuple[str, str, str, str, str], Band]",
                   [f"{k!r}: Band({b.low:.4f}, {b.high:.4f}, {b.n})," for k, b in sorted(result.bands.items())])
    lines += [""]
    return "\n".join(lines)


def rows_line(matched: int, skipped: int) -> str:
    return (f"{matched} rows matched to the catalog ({skipped} skipped: flagged anomalous in their note, GPU/model/"
            f"format not in the catalog, a non-native backend, or a prompt timed cold)\n")


def main(argv: list[str] | None = None) -> None:
    parser = argparse.ArgumentParser(description=__doc__, formatter_class=argparse.RawDescriptionHelpFormatter)
    parser.add_argument("--check", action="store_true", help="report on the data and constants, write nothing")
    args = parser.parse_args(argv)
    rows, skipped = all_rows()
    print(rows_line(len(rows), skipped))
    result = fit_all(rows)
    if not args.check:
        CONSTANTS_PATH.write_text(render_constants(result))
        from estimator.calibration import constants

        importlib.reload(constants)
        forget_fits()
    report_cv(result)
    report_multi_gpu(result)
    report(rows)


if __name__ == "__main__":
    main()
