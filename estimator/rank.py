"""`rank`: every catalog model that fits a GPU setup at a context, best format first, sorted."""

from __future__ import annotations

from typing import Literal

from pydantic import BaseModel, ConfigDict

from catalog.schema import GPU, Model, QuantFormat
from estimator.memory import MemoryBreakdown, memory, total_bytes, usable_vram_bytes
from estimator.query import Engine, KVDtype, Query
from estimator.speed import Speed, speed

Sort = Literal["quality", "speed", "size"]


class RankedFormat(BaseModel):
    model_config = ConfigDict(frozen=True)

    quant: QuantFormat
    memory: MemoryBreakdown
    speed: Speed


class RankRow(BaseModel):
    model_config = ConfigDict(frozen=True)

    model: Model
    best: RankedFormat
    fitting: tuple[RankedFormat, ...]  # every considered format that fits, highest precision first


def best_format(fitting: list[RankedFormat]) -> RankedFormat:
    """The stated rule: the highest-precision format with comfortable headroom; failing that, the
    highest-precision one that fits at all ("tight")."""
    comfortable = [f for f in fitting if f.memory.verdict == "fits"]
    pool = comfortable or fitting
    return max(pool, key=lambda f: f.quant.bits_per_weight)


def quality_key(model: Model) -> tuple[float, float, float]:
    """Higher is better: a published quality score where the catalog has one, then the seed pages'
    rank (lower rank number is better), then size."""
    score = model.quality.score if model.quality else float("-inf")
    seed = -model.seed_rank if model.seed_rank is not None else float("-inf")
    return (score, seed, model.params_b)


def rank(
    models: tuple[Model, ...],
    formats: list[QuantFormat],
    gpu: GPU,
    *,
    gpus: int = 1,
    ctx: int = 8192,
    engine: Engine = "llama.cpp",
    kv: KVDtype = "f16",
    prompt_tokens: int = 2048,
    sort: Sort = "quality",
) -> list[RankRow]:
    rows: list[RankRow] = []
    if not models or not formats:
        return rows
    capacity = usable_vram_bytes(gpu, engine) * gpus
    base = Query(gpu=gpu, gpus=gpus, model=models[0], quant=formats[0], engine=engine, ctx=ctx, kv=kv,
                 prompt_tokens=min(prompt_tokens, ctx))
    for model in models:
        if ctx > model.max_context:
            continue
        fitting: list[RankedFormat] = []
        for fmt in formats:
            if total_bytes(model, fmt, gpu, engine, ctx, kv, 1, gpus) > capacity:
                continue  # only what fits gets the full breakdown and a speed
            q = base.model_copy(update={"model": model, "quant": fmt})
            mem = memory(q)
            if mem.verdict != "does_not_fit":
                fitting.append(RankedFormat(quant=fmt, memory=mem, speed=speed(q)))
        if fitting:
            fitting.sort(key=lambda f: -f.quant.bits_per_weight)
            rows.append(RankRow(model=model, best=best_format(fitting), fitting=tuple(fitting)))
    if sort == "speed":
        rows.sort(key=lambda r: -r.best.speed.decode_tps)
    elif sort == "size":
        rows.sort(key=lambda r: (-r.model.params_b, r.model.id))
    else:
        rows.sort(key=lambda r: (*tuple(-x for x in quality_key(r.model)), r.model.id))  # type: ignore[operator]
    return rows
