"""Facts behind the recommendation text of a GPU card: where the card is comfortable, and how fast
bandwidth lets it generate."""

from __future__ import annotations

from pydantic import BaseModel, ConfigDict

from catalog.schema import GPU, Model, QuantFormat
from estimator.capability import LargestModel, largest_that_fits
from estimator.memory import memory
from estimator.query import DEFAULT_CTX, Engine, Query
from estimator.speed import speed

LONG_CONTEXT = 32 * 1024


class ReferenceSpeed(BaseModel):
    model_config = ConfigDict(frozen=True)

    model: Model
    quant: QuantFormat
    decode_tps: float
    fits: bool  # False: the speed the bandwidth would allow if the weights fitted (more GPUs, say)


class Recommendation(BaseModel):
    model_config = ConfigDict(frozen=True)

    comfortable_high_precision: LargestModel  # at 8-bit, short context
    long_context_q4: LargestModel  # at 4-bit with 32k of context
    reference_speeds: tuple[ReferenceSpeed, ...]
    bandwidth_bound: bool  # single-stream decode is limited by memory bandwidth


def reference_speed(gpu: GPU, model: Model, fmt: QuantFormat, engine: Engine = "llama.cpp") -> ReferenceSpeed:
    q = Query(gpu=gpu, model=model, quant=fmt, engine=engine, ctx=4096, prompt_tokens=512)
    return ReferenceSpeed(
        model=model, quant=fmt, decode_tps=speed(q).decode_tps, fits=memory(q).verdict != "does_not_fit"
    )


def recommend(
    gpu: GPU,
    models: tuple[Model, ...],
    q4: QuantFormat,
    q8: QuantFormat,
    references: tuple[Model, ...],
    engine: Engine = "llama.cpp",
) -> Recommendation:
    return Recommendation(
        comfortable_high_precision=largest_that_fits(models, q8, "int8", gpu, ctx=DEFAULT_CTX, engine=engine),
        long_context_q4=largest_that_fits(models, q4, "int4", gpu, ctx=LONG_CONTEXT, engine=engine),
        reference_speeds=tuple(reference_speed(gpu, m, q4, engine) for m in references),
        # Decode moves every weight per token but does 2 FLOPs per weight: at batch 1 even the slowest
        # tensor cores finish long before the memory does.
        bandwidth_bound=True,
    )
