"""Memory against context length, per format: the data behind the VRAM chart."""

from __future__ import annotations

from pydantic import BaseModel, ConfigDict

from catalog.schema import QuantFormat
from estimator.memory import context_window, max_context, total_bytes_at, usable_vram_bytes
from estimator.query import Query

CURVE_START = 1024


def curve_points(max_ctx: int, start: int = CURVE_START) -> list[int]:
    """1k, 2k, 4k … (from `start`) doubling up to the model's maximum, with the maximum itself as the last
    point."""
    points, ctx = [], start
    while ctx < max_ctx:
        points.append(ctx)
        ctx *= 2
    points.append(max_ctx)
    return points


class Curve(BaseModel):
    model_config = ConfigDict(frozen=True)

    quant: QuantFormat
    label: str = ""  # what the chart's legend calls the line; the format name when empty
    ctx: tuple[int, ...]
    total_bytes: tuple[float, ...]
    max_ctx: int


class VramCurves(BaseModel):
    model_config = ConfigDict(frozen=True)

    usable_bytes: float  # all GPUs of the setup together
    usable_per_gpu_bytes: float
    vram_bytes: float
    gpus: int
    curves: tuple[Curve, ...]


def vram_curves(base: Query, formats: list[QuantFormat]) -> VramCurves:
    points = curve_points(context_window(base))
    curves = []
    for fmt in formats:
        q = base.model_copy(update={"quant": fmt})
        curves.append(
            Curve(
                quant=fmt,
                ctx=tuple(points),
                total_bytes=tuple(total_bytes_at(q, c) for c in points),
                max_ctx=max_context(q),
            )
        )
    per_gpu = usable_vram_bytes(base.gpu, base.engine)
    return VramCurves(
        usable_bytes=per_gpu * base.gpus,
        usable_per_gpu_bytes=per_gpu,
        vram_bytes=base.gpu.vram_bytes * base.gpus,
        gpus=base.gpus,
        curves=tuple(curves),
    )
