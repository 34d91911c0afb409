"""`rank`: every catalog model that fits a GPU setup at a context, best format first, sorted."""

from __future__ import annotations

from dataclasses import dataclass, replace
from functools import cached_property
from typing import Literal

from catalog.schema import GPU, Model, QuantFormat
from estimator.engines import format_runs_on, released_for, splits_over
from estimator.memory import (
    MemoryBreakdown,
    Verdict,
    context_costs,
    memory_of,
    total_bytes,
    usable_vram_bytes,
    verdict_for,
)
from estimator.query import DEFAULT_CTX, DEFAULT_PROMPT_TOKENS, Engine, KVDtype, prompt_for
from estimator.speed import Speed, decode_tps_of, speed_of

Sort = Literal["quality", "speed", "size"]


@dataclass(frozen=True)
class RankSetup:
    """What every format of one ranking shares."""

    gpu: GPU
    gpus: int
    engine: Engine
    kv: KVDtype


@dataclass(frozen=True)
class RankedFormat:
    """One format of a ranked model that fits. A ranking over the whole catalog keeps hundreds of these and shows a
    page of them, so its memory breakdown and speed are worked out when first read, and a sort by decode speed
    estimates decode alone."""

    quant: QuantFormat
    verdict: Verdict  # `memory.verdict`, known from the total that decided the format fits
    model: Model
    setup: RankSetup
    ctx: int
    prompt_tokens: int
    costs: tuple[float, float]  # `context_costs` at `ctx`

    @cached_property
    def memory(self) -> MemoryBreakdown:
        s = self.setup
        return memory_of(self.model, self.quant, s.gpu, s.gpus, s.engine, self.ctx, s.kv, 1, self.costs)

    @cached_property
    def speed(self) -> Speed:
        s = self.setup
        return speed_of(self.model, self.quant, s.gpu, s.gpus, s.engine, s.kv, self.prompt_tokens)

    @cached_property
    def decode_tps(self) -> float:
        if "speed" in self.__dict__:
            return self.speed.decode_tps
        s = self.setup
        return decode_tps_of(self.model, self.quant, s.gpu, s.gpus, s.engine, s.kv, self.prompt_tokens)


@dataclass(frozen=True)
class RankRow:
    model: Model
    best: RankedFormat  # the format the row stands for (`best_format`: by the sort asked)
    fitting: tuple[RankedFormat, ...]  # every considered format that fits, highest precision first
    # False for the tail of a quality ranking: models no quality signal covers, listed by speed instead.
    ranked: bool = True


def best_format(fitting: list[RankedFormat], sort: Sort = "quality") -> RankedFormat:
    """The format a row stands for. Ranked by speed, the fastest that fits: the order is then by a figure the
    row shows (its largest), never by another column's. Otherwise the stated rule: the highest-precision format
    with comfortable headroom; failing that, the highest-precision one that fits at all ("tight")."""
    if sort == "speed":
        return max(fitting, key=lambda f: (f.decode_tps, f.quant.bits_per_weight))
    comfortable = [f for f in fitting if f.verdict == "fits"]
    pool = comfortable or fitting
    return max(pool, key=lambda f: f.quant.bits_per_weight)


def percentiles(values: dict[str, float]) -> dict[str, float]:
    """Each id's share of the others it beats (1.0 = best, 0.0 = worst); a lone value gets 0.5."""
    if len(values) == 1:
        return dict.fromkeys(values, 0.5)
    ordered = sorted(values, key=lambda i: values[i])
    return {i: pos / (len(ordered) - 1) for pos, i in enumerate(ordered)}


# Every ranking over one catalog asks for its quality order: memoised per set of model entries, keyed on their
# identities (hashing an entry walks every field). The entries are kept beside the value: while they are alive no other
# object can take one of their ids, so a key that matches names these very entries. A handful of keys at most (the
# catalog, with a fetched model or two added).
_QUALITY_MEMO: dict[tuple[int, ...], tuple[tuple[Model, ...], dict[str, float]]] = {}
_QUALITY_MEMO_SIZE = 8


def quality_percentiles(models: tuple[Model, ...]) -> dict[str, float]:
    """One quality figure per model, higher is better. Models the current arena snapshot rated
    (catalog/data/quality) come first, by their percentile there (2 + percentile, so 2.0–3.0); the rest,
    as a fallback, by the older signals of `fallback_percentiles` (0.0–1.0). Two scales are never mixed
    within a tier."""
    key = tuple(map(id, models))
    hit = _QUALITY_MEMO.get(key)
    if hit is None:
        if len(_QUALITY_MEMO) >= _QUALITY_MEMO_SIZE:
            _QUALITY_MEMO.clear()
        hit = _QUALITY_MEMO[key] = (tuple(models), _quality_percentiles(models))
    return dict(hit[1])


def _quality_percentiles(models: tuple[Model, ...]) -> dict[str, float]:
    from catalog.quality import arena_snapshot

    ids = {m.id for m in models}
    arena = {k: v for k, v in arena_snapshot().by_model().items() if k in ids}
    by_arena = {k: 2.0 + p for k, p in (percentiles(arena) if arena else {}).items()}
    fallback = fallback_percentiles(models)
    return {m.id: by_arena[m.id] if m.id in by_arena else fallback[m.id] for m in models
            if m.id in by_arena or m.id in fallback}


def fallback_percentiles(models: tuple[Model, ...]) -> dict[str, float]:
    """One quality figure per model from the two signals the catalog has, neither of which covers it all:
    the Open LLM Leaderboard v2 average (older models; retired March 2025) and the calculator pages'
    own rank (newer ones). Each is turned into a percentile within the models it covers, and a model with
    both gets their mean, so a score on one scale never outranks the other by its units."""
    scored = {m.id: m.quality.score for m in models if m.quality is not None}
    seeded = {m.id: -float(m.seed_rank) for m in models if m.seed_rank is not None}
    by_score, by_seed = percentiles(scored) if scored else {}, percentiles(seeded) if seeded else {}
    out: dict[str, float] = {}
    for m in models:
        signals = [p for p in (by_score.get(m.id), by_seed.get(m.id)) if p is not None]
        if signals:
            out[m.id] = sum(signals) / len(signals)
    return out


def quality_order_key(model: Model, quality: dict[str, float]) -> tuple[float, str, float, str]:
    """Sort key, smaller first: rated models by quality; unrated ones after them, newest and largest first."""
    rated = quality.get(model.id)
    if rated is not None:
        return (-rated, "", -model.params_b, model.id)
    newest_first = "".join(chr(0x10FFFF - ord(c)) for c in (model.release_date or ""))
    return (1.0, newest_first or chr(0x10FFFF), -model.params_b, model.id)  # after every rated model (keys ≤ 0)


def rank(
    models: tuple[Model, ...],
    formats: list[QuantFormat],
    gpu: GPU,
    *,
    gpus: int = 1,
    ctx: int = DEFAULT_CTX,
    engine: Engine = "llama.cpp",
    kv: KVDtype = "f16",
    prompt_tokens: int = DEFAULT_PROMPT_TOKENS,
    sort: Sort = "quality",
) -> list[RankRow]:
    rows: list[RankRow] = []
    capacity = usable_vram_bytes(gpu, engine) * gpus
    runnable = [fmt for fmt in formats if format_runs_on(fmt, gpu)]
    setup = RankSetup(gpu, gpus, engine, kv)
    for model in models:
        # A "1M" window of 1,010,000 tokens is what `ctx:1M` (1,048,576) means for that model.
        meant = model.context_as_meant(ctx)
        if model.past_every_window(meant):
            continue  # a RoPE-scaled window counts
        if not splits_over(engine, model, gpus):
            continue  # its attention heads do not shard over this many cards
        prompt = prompt_for(meant, prompt_tokens)
        costs = context_costs(model, gpu, gpus, engine, meant, kv, 1)
        fitting: list[RankedFormat] = []
        for fmt in runnable:
            if not released_for(fmt, model):
                continue
            total = total_bytes(model, fmt, gpu, engine, meant, kv, 1, gpus, costs)
            if total > capacity:
                continue  # only what fits gets a breakdown and a speed
            fitting.append(RankedFormat(fmt, verdict_for(total, capacity), model, setup, meant, prompt, costs))
        if fitting:
            fitting.sort(key=lambda f: -f.quant.bits_per_weight)
            rows.append(RankRow(model=model, best=best_format(fitting, sort), fitting=tuple(fitting)))
    if sort == "speed":
        rows.sort(key=lambda r: -r.best.decode_tps)
    elif sort == "size":
        rows.sort(key=lambda r: (-r.model.params_b, r.model.id))
    else:
        quality = quality_percentiles(models)
        rated = sorted((r for r in rows if r.model.id in quality), key=lambda r: quality_order_key(r.model, quality))
        tail = sorted((r for r in rows if r.model.id not in quality), key=lambda r: -r.best.decode_tps)
        rows = rated + [replace(r, ranked=False) for r in tail]
    return rows
