"""What a GPU setup can run: the largest catalog model at 4-, 8- and 16-bit, and its size class."""

from __future__ import annotations

from pydantic import BaseModel, ConfigDict

from catalog.schema import GPU, Model, QuantFormat
from estimator.memory import memory
from estimator.query import Engine, KVDtype, Query

# Size classes people talk in ("a 14B model"), from the sizes open models are released at.
SIZE_CLASSES_B = (
    0.5,
    1,
    1.5,
    2,
    3,
    4,
    7,
    8,
    9,
    12,
    14,
    20,
    24,
    27,
    32,
    34,
    40,
    70,
    72,
    110,
    120,
    180,
    235,
    405,
    480,
    671,
    1000,
)


def size_class_b(params_b: float) -> float:
    """The nearest released size at or below the parameter count (8.19B → 8B; 7.61B → 7B)."""
    below = [c for c in SIZE_CLASSES_B if c <= params_b * 1.05]
    return below[-1] if below else SIZE_CLASSES_B[0]


class LargestModel(BaseModel):
    model_config = ConfigDict(frozen=True)

    level: str
    quant: QuantFormat
    model: Model | None
    size_class_b: float | None


def largest_that_fits(
    models: tuple[Model, ...],
    fmt: QuantFormat,
    level: str,
    gpu: GPU,
    *,
    gpus: int = 1,
    ctx: int = 8192,
    engine: Engine = "llama.cpp",
    kv: KVDtype = "f16",
) -> LargestModel:
    best: Model | None = None
    for model in sorted(models, key=lambda m: -m.params_b):
        if ctx > model.max_context:
            continue
        q = Query(gpu=gpu, gpus=gpus, model=model, quant=fmt, engine=engine, ctx=ctx, kv=kv)
        if memory(q).verdict != "does_not_fit":
            best = model
            break
    return LargestModel(level=level, quant=fmt, model=best, size_class_b=size_class_b(best.params_b) if best else None)
