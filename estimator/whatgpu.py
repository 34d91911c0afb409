"""`whatgpu`: the GPU setups that run a model — each GPU at the fewest cards that hold it, cheapest first.

Multi-GPU means different things per engine. llama.cpp splits layers across cards: memory adds up but
the cards run one after another, so a second card never makes decoding faster. vLLM runs tensor
parallel: every card streams its slice of each layer, so more cards decode faster (less the
all-reduces), and the attention heads must divide evenly among the cards.
"""

from __future__ import annotations

import math
from collections.abc import Iterable, Sequence

from pydantic import BaseModel, ConfigDict

from catalog.schema import GPU, Model, QuantFormat
from estimator.engines import (
    format_as_run,
    format_runs_on,
    runs_format,
    supports,
    tensor_parallel,
    tensor_parallel_sizes,
)
from estimator.memory import MemoryBreakdown, memory
from estimator.query import DEFAULT_PROMPT_TOKENS, MAX_GPUS, Engine, KVDtype, Query, prompt_for
from estimator.speed import Speed, speed


class Setup(BaseModel):
    model_config = ConfigDict(frozen=True)

    gpu: GPU
    count: int
    quant: QuantFormat
    memory: MemoryBreakdown
    speed: Speed  # the point estimates and their 80 % bands
    headroom_bytes: float
    headroom_fraction: float

    @property
    def decode_tps(self) -> float:
        return self.speed.decode_tps

    @property
    def ttft_s(self) -> float:
        return self.speed.ttft_s

    @property
    def price_usd(self) -> float | None:
        return None if self.gpu.launch_price_usd is None else self.gpu.launch_price_usd * self.count

    @property
    def power_w(self) -> float | None:
        return None if self.gpu.tdp_w is None else self.gpu.tdp_w * self.count

    def sort_key(self) -> tuple[int, float, float, float]:
        price = self.price_usd if self.price_usd is not None else math.inf
        power = self.power_w if self.power_w is not None else math.inf
        return (self.count, price, power, -self.decode_tps)


def _counts(gpu: GPU, model: Model, engine: Engine, max_gpus: int) -> Iterable[int]:
    if gpu.vendor == "apple" or gpu.unified_memory:
        yield 1  # one machine's unified memory; Macs are not pooled
        return
    yield from tensor_parallel_sizes(engine, model, min(max_gpus, MAX_GPUS))


class WhatGpuSetups(BaseModel):
    """The setups that run a model, and how many more would have but were left out under a budget for having
    no known launch price (one that cannot be shown to be within budget is not listed, but it is counted)."""

    model_config = ConfigDict(frozen=True)

    setups: list[Setup]
    unpriced: int = 0


def what_gpu_setups(
    model: Model,
    formats: Sequence[QuantFormat],
    gpus_catalog: Iterable[GPU],
    *,
    ctx: int,
    engine: Engine = "llama.cpp",
    kv: KVDtype = "f16",
    min_tps: float | None = None,
    max_gpus: int = MAX_GPUS,
    budget_usd: float | None = None,
    prompt_tokens: int = DEFAULT_PROMPT_TOKENS,
) -> WhatGpuSetups:
    """For every GPU and format: the fewest cards (1..max_gpus) on which the memory verdict is not
    "does_not_fit" and, for vLLM where more cards decode faster, that also reach `min_tps`.

    Setups slower than `min_tps`, or dearer than `budget_usd` (launch price × count), are dropped; under a
    budget a setup whose price is unknown cannot be shown to be within it, so it is left out and counted in
    `unpriced`. Sorted by (count, price, power, −decode speed).
    """
    out: list[Setup] = []
    unpriced = 0
    for gpu in gpus_catalog:
        if not supports(engine, gpu):
            continue
        for fmt in formats:
            if not runs_format(engine, fmt) or not format_runs_on(fmt, gpu):
                continue
            # Named for what runs on this card (FP8 is W8A16 on Turing and Ampere, W8A8 from Ada on).
            setup = _first_that_fits(model, format_as_run(fmt, gpu), gpu, ctx=ctx, engine=engine, kv=kv,
                                     min_tps=min_tps, max_gpus=max_gpus, prompt_tokens=prompt_tokens)
            if setup is None:
                continue
            if min_tps is not None and setup.decode_tps < min_tps:
                continue
            if budget_usd is not None:
                if setup.price_usd is None:
                    unpriced += 1
                    continue
                if setup.price_usd > budget_usd:
                    continue
            out.append(setup)
    return WhatGpuSetups(setups=sorted(out, key=Setup.sort_key), unpriced=unpriced)


def _first_that_fits(model: Model, fmt: QuantFormat, gpu: GPU, *, ctx: int, engine: Engine, kv: KVDtype,
                     min_tps: float | None, max_gpus: int, prompt_tokens: int) -> Setup | None:
    first: Setup | None = None
    for n in _counts(gpu, model, engine, max_gpus):
        q = Query(gpu=gpu, gpus=n, model=model, quant=fmt, engine=engine, ctx=ctx,
                  prompt_tokens=prompt_for(ctx, prompt_tokens), kv=kv)
        mem = memory(q)
        if mem.verdict == "does_not_fit":
            continue
        s = speed(q)
        setup = Setup(gpu=gpu, count=n, quant=fmt, memory=mem, speed=s, headroom_bytes=mem.headroom_bytes,
                      headroom_fraction=mem.headroom_bytes / mem.usable_bytes)
        if first is None:
            first = setup
        # More llama.cpp cards add memory, not speed: the first fit is the answer. vLLM may need more.
        if not tensor_parallel(engine) or min_tps is None or setup.decode_tps >= min_tps:
            return setup
    return first


__all__ = ["Setup", "WhatGpuSetups", "what_gpu_setups"]
