"""The advice rules: what to change when a model does not fit, and what a GPU's card says (where the card
is comfortable, how fast bandwidth lets it generate, what it can fine-tune). Replies only word them."""

from __future__ import annotations

from functools import lru_cache
from typing import Literal

from pydantic import BaseModel, ConfigDict

from catalog.schema import GPU, Model, QuantFormat
from catalog.store import Catalog
from estimator import constants as k
from estimator import finetune
from estimator.capability import (
    CHART_CLASSES,
    LargestModel,
    has_matrix_units,
    largest_class_that_fits,
    largest_that_fits,
    reference_models,
    training_precision,
)
from estimator.curve import VramCurves, vram_curves
from estimator.engines import DEFAULT_FORMAT, DEFAULT_LEVELS, family, kv_dtypes, splits_over
from estimator.memory import (
    Verdict,
    at_least,
    max_context,
    memory,
    next_verdict,
    usable_needed_bytes,
    usable_vram_bytes,
)
from estimator.offload import OffloadPlan, expert_offload_plan, offload_plan
from estimator.query import DEFAULT_CTX, MAX_GPUS, Engine, KVDtype, Query
from estimator.speed import speed
from estimator.verdict import FitOption, FitResult, fit

LONG_CONTEXT = 32 * 1024
# A "long context" recommendation is for at least LONG_CONTEXT and this many times the context asked.
LONG_CONTEXT_FACTOR = 4


class ReferenceSpeed(BaseModel):
    model_config = ConfigDict(frozen=True)

    model: Model
    quant: QuantFormat
    decode_tps: float
    decode_tps_low: float  # its 80 % band
    decode_tps_high: float
    fits: bool  # False: the speed the bandwidth would allow if the weights fitted (more GPUs, say)


class Recommendation(BaseModel):
    model_config = ConfigDict(frozen=True)

    comfortable_high_precision: LargestModel  # at 8-bit, at the context asked
    long_context_q4: LargestModel  # at 4-bit, at `long_ctx`
    ctx: int = DEFAULT_CTX
    long_ctx: int = LONG_CONTEXT
    reference_speeds: tuple[ReferenceSpeed, ...]
    bandwidth_bound: bool  # single-stream decode is limited by memory bandwidth


def reference_speed(gpu: GPU, model: Model, fmt: QuantFormat, engine: Engine = "llama.cpp",
                    gpus: int = 1) -> ReferenceSpeed:
    # At /fit's defaults (8k context, decode after a 2k prompt), so the card and /fit quote one figure.
    q = Query(gpu=gpu, gpus=gpus, model=model, quant=fmt, engine=engine)
    s = speed(q)
    return ReferenceSpeed(model=model, quant=fmt, decode_tps=s.decode_tps, decode_tps_low=s.decode_tps_low,
                          decode_tps_high=s.decode_tps_high, fits=memory(q).verdict != "does_not_fit")


def recommend(
    gpu: GPU,
    models: tuple[Model, ...],
    q4: QuantFormat,
    q8: QuantFormat,
    references: tuple[Model, ...],
    engine: Engine = "llama.cpp",
    gpus: int = 1,
    ctx: int = DEFAULT_CTX,
) -> Recommendation:
    """What `gpus` cards of `gpu` are comfortable with at the context asked (and at a longer one), and how fast they
    decode the reference models."""
    long_ctx = max(LONG_CONTEXT, LONG_CONTEXT_FACTOR * ctx)
    return Recommendation(
        # Both are offered as comfortable: only models /fit calls "fits" (not tight) at the stated context.
        comfortable_high_precision=largest_that_fits(models, q8, "int8", gpu, gpus=gpus, ctx=ctx,
                                                     engine=engine, with_headroom=True),
        long_context_q4=largest_that_fits(models, q4, "int4", gpu, gpus=gpus, ctx=long_ctx, engine=engine,
                                          with_headroom=True),
        ctx=ctx,
        long_ctx=long_ctx,
        reference_speeds=tuple(reference_speed(gpu, m, q4, engine, gpus) for m in references),
        # Decode moves every weight per token but does 2 FLOPs per weight: at batch 1 even the slowest
        # tensor cores finish long before the memory does.
        bandwidth_bound=True,
    )


# --- what to change when a model does not fit -----------------------------------------------------------

# Smaller formats tried in turn, largest first, each only if the engine has one at that level.
SMALLER_LEVELS = ("int4", "int3", "int2")
# Below this the largest context that fits is not worth suggesting.
MIN_SUGGESTED_CTX = 1024
# A KV cache the advice offers keeps at least 8 bits (one byte) an element: 4-bit caches cost quality people should
# choose for themselves, so they are never suggested.
MIN_ADVISED_KV_BYTES = 1.0

TipKind = Literal["smaller", "kv", "ctx", "gpus", "need"]


class Tip(BaseModel):
    """One change that makes the answer better (see `what_to_change`), each checked with `memory`, never assumed."""

    model_config = ConfigDict(frozen=True)

    kind: TipKind
    quant: QuantFormat  # the format the tip is about
    kv: KVDtype | None = None  # "kv": the KV-cache precision to use, one the engine runs
    ctx: int | None = None  # "ctx": the largest context at which `quant` reaches the better verdict
    gpus: int | None = None  # "gpus": the fewest GPUs of this kind that hold it
    need_bytes: float | None = None  # "need": what one GPU would have to hold


def overall_verdict(result: FitResult) -> Verdict:
    """The answer's headline: fits if any format fits, else tight if any is tight."""
    verdicts = [o.memory.verdict for o in result.options]
    for v in ("fits", "tight"):
        if v in verdicts:
            return v  # type: ignore[return-value]
    return "does_not_fit"


def smallest_option(result: FitResult) -> FitOption:
    return min(result.options, key=lambda o: o.quant.bits_per_weight)


def smaller_kv(engine: Engine, kv: KVDtype) -> KVDtype | None:
    """The KV cache to suggest instead of `kv`: the most precise one `engine` runs that is smaller than `kv` and
    keeps at least MIN_ADVISED_KV_BYTES an element (llama.cpp's q8_0, vLLM's fp8); None where there is none."""
    size = k.KV_BYTES_PER_ELEMENT[kv]
    smaller = [d for d in kv_dtypes(engine) if MIN_ADVISED_KV_BYTES <= k.KV_BYTES_PER_ELEMENT[d] < size]
    return max(smaller, key=lambda d: k.KV_BYTES_PER_ELEMENT[d], default=None)


def what_to_change(result: FitResult, catalog: Catalog) -> list[Tip]:
    """When nothing fits (or it is tight), what would: a smaller format, a smaller KV cache the engine runs, less
    context, more GPUs; when none of those does, the memory one GPU would need. Each tip differs from what was
    asked and reaches a better verdict than the answer's (tight where nothing fits, fits where it is tight)."""
    verdict = overall_verdict(result)
    if verdict == "fits":
        return []
    target = next_verdict(verdict)
    q = result.query
    tips: list[Tip] = []
    lowest_bits = min(o.quant.bits_per_weight for o in result.options)
    for level in SMALLER_LEVELS:
        fmt_id = DEFAULT_FORMAT[q.engine].get(level)
        if fmt_id is None:
            continue
        fmt = catalog.quant(fmt_id)
        if fmt.bits_per_weight >= lowest_bits:
            continue
        if memory(q.model_copy(update={"quant": fmt})).verdict == "fits":
            tips.append(Tip(kind="smaller", quant=fmt))
            break
    smallest = smallest_option(result)
    kv = smaller_kv(q.engine, q.kv)
    if kv is not None and memory(q.model_copy(update={"quant": smallest.quant, "kv": kv})).verdict == "fits":
        tips.append(Tip(kind="kv", quant=smallest.quant, kv=kv))
    # A context past the native window was asked with RoPE scaling, so the largest one it allows is the answer.
    scaled = q.ctx > q.model.max_context and bool(smallest.max_ctx_scaled)
    if target == "tight":  # nothing fits: the option's own largest context is the one that does
        largest_ctx = smallest.max_ctx_scaled if scaled and smallest.max_ctx_scaled else smallest.max_ctx
    else:  # tight: the largest context that leaves the headroom "fits" asks for
        largest_ctx = max_context(q.model_copy(update={"quant": smallest.quant}), with_scaling=scaled, verdict=target)
    if MIN_SUGGESTED_CTX <= largest_ctx < q.ctx:
        tips.append(Tip(kind="ctx", quant=smallest.quant, ctx=largest_ctx))
    if q.gpus < MAX_GPUS and not q.gpu.unified_memory:
        for count in range(q.gpus + 1, MAX_GPUS + 1):
            if not splits_over(q.engine, q.model, count):
                continue  # a tensor-parallel group the heads do not split over is refused, so never offered
            if at_least(memory(q.model_copy(update={"quant": smallest.quant, "gpus": count})).verdict, target):
                tips.append(Tip(kind="gpus", quant=smallest.quant, gpus=count))
                break
    if not tips:
        # What one card would have to hold, with the headroom the better verdict asks for: the setup's total counts
        # every card's runtime buffers.
        one_card = memory(q.model_copy(update={"quant": smallest.quant, "gpus": 1})).total_bytes
        tips.append(Tip(kind="need", quant=smallest.quant, need_bytes=usable_needed_bytes(one_card, target)))
    return tips


def offload_format(result: FitResult) -> QuantFormat:
    """The format a partial offload is planned in: the smallest, the one that leaves the most on the GPU."""
    return smallest_option(result).quant


def partial_offload(result: FitResult) -> OffloadPlan | None:
    """llama.cpp with part of the model in system RAM, for `offload_format`, when no format fits at all: a
    mixture-of-experts model's routed experts first (the KV cache and every layer's attention stay on the GPU, and a
    token reads only its active experts from RAM), else whole layers."""
    if overall_verdict(result) != "does_not_fit" or family(result.query.engine) != "llama.cpp":
        return None
    q = result.query.model_copy(update={"quant": offload_format(result)})
    plan = expert_offload_plan(q) or offload_plan(q)
    # Unified memory: the "system RAM" the CPU layers read is the same memory the GPU's share comes from, so the
    # split helps only while both halves fit in it together (a 16 GB Mac cannot hold 10.7 GiB twice).
    if plan is not None and q.gpu.unified_memory and plan.vram_bytes + plan.ram_bytes > q.gpu.vram_bytes * q.gpus:
        return None
    return plan


class FitAnswer(BaseModel):
    """Everything a fit answer states, computed in one call: the fit of each format, the headline verdict,
    what would make it fit, the partial offload where nothing does, and VRAM against context."""

    model_config = ConfigDict(frozen=True)

    result: FitResult
    verdict: Verdict
    changes: tuple[Tip, ...]
    offload: OffloadPlan | None
    offload_quant: QuantFormat | None  # the format `offload` is planned in
    curves: VramCurves


def fit_answer(q: Query, formats: list[QuantFormat], catalog: Catalog) -> FitAnswer:
    result = fit(q, formats)
    offload = partial_offload(result)
    return FitAnswer(result=result, verdict=overall_verdict(result), changes=tuple(what_to_change(result, catalog)),
                     offload=offload, offload_quant=offload_format(result) if offload else None,
                     curves=vram_curves(q, formats))


# --- a GPU's card -----------------------------------------------------------------------------------------

# The models whose speeds a card quotes, when the catalog has them.
REFERENCE_SPEED_MODELS = ("llama-3.1-8b", "llama-3.3-70b")


class LevelCapability(BaseModel):
    model_config = ConfigDict(frozen=True)

    largest: LargestModel
    reference_class: tuple[str, Model] | None  # the largest reference class that fits at this level


class ClassCurve(BaseModel):
    model_config = ConfigDict(frozen=True)

    label: str  # "8B"
    model: Model
    curves: VramCurves


class GpuCard(BaseModel):
    """What `/gpu` and `rigcheck gpu` say about one GPU setup."""

    model_config = ConfigDict(frozen=True)

    gpu: GPU
    gpus: int
    ctx: int
    usable_bytes: float  # one GPU's
    levels: tuple[LevelCapability, ...]  # int4, int8, fp16
    finetune: dict[finetune.Method, Model | None]  # largest trainable per method, per-GPU peak against one GPU's memory
    precision: str  # the 16-bit format a trainer uses on it
    matrix_units: bool  # FP16 matrix units: the catalog's FP16 figure is their rate, else the vector rate
    recommendation: Recommendation


@lru_cache(maxsize=1024)
def _largest_trainable_on(catalog: Catalog, gpu: GPU, gpus: int) -> tuple[tuple[finetune.Method, Model | None], ...]:
    # The same for every context a card is asked at, and tens of milliseconds of peak estimates on a
    # small card (most of the catalog is tried before one fits): worked out once per GPU setup.
    settings = finetune.settings_on(gpu, method="qlora", gpus=gpus)
    return tuple(finetune.largest_trainable(catalog.models, settings, usable_vram_bytes(gpu)).items())


def gpu_card(catalog: Catalog, gpu: GPU, *, ctx: int = DEFAULT_CTX, gpus: int = 1,
             engine: Engine = "llama.cpp") -> GpuCard:
    models = catalog.models
    levels = []
    for level in DEFAULT_LEVELS:
        fmt = catalog.quant(DEFAULT_FORMAT[engine][level])
        largest = largest_that_fits(models, fmt, level, gpu, gpus=gpus, ctx=ctx, engine=engine)
        ref = largest_class_that_fits(models, fmt, gpu, gpus=gpus, ctx=ctx, engine=engine)
        levels.append(LevelCapability(largest=largest, reference_class=ref))
    usable = usable_vram_bytes(gpu)
    best = dict(_largest_trainable_on(catalog, gpu, gpus))
    q4 = catalog.quant(DEFAULT_FORMAT[engine]["int4"])
    q8 = catalog.quant(DEFAULT_FORMAT[engine]["int8"])
    refs = tuple(m for i in REFERENCE_SPEED_MODELS for m in models if m.id == i)
    return GpuCard(gpu=gpu, gpus=gpus, ctx=ctx, usable_bytes=usable, levels=tuple(levels), finetune=best,
                   precision=training_precision(gpu), matrix_units=has_matrix_units(gpu),
                   recommendation=recommend(gpu, models, q4, q8, refs, engine, gpus, ctx))


def class_curves(catalog: Catalog, gpu: GPU, *, ctx: int = DEFAULT_CTX, gpus: int = 1,
                 engine: Engine = "llama.cpp") -> list[ClassCurve]:
    """VRAM against context of the chart's reference classes at the engine's 4-bit format."""
    q4 = catalog.quant(DEFAULT_FORMAT[engine]["int4"])
    return [
        ClassCurve(label=label, model=model,
                   curves=vram_curves(Query(gpu=gpu, gpus=gpus, model=model, quant=q4, engine=engine, ctx=ctx), [q4]))
        for label, model in reference_models(catalog.models, CHART_CLASSES)
    ]
