"""Does this model run on these GPUs, in which formats, how fast, with how much context: one option per
format, each with its memory verdict, speed and largest context."""

from __future__ import annotations

from pydantic import BaseModel, ConfigDict

from catalog.schema import QuantFormat
from catalog.store import Catalog
from estimator.engines import DEFAULT_FORMAT, DEFAULT_LEVELS
from estimator.memory import MemoryBreakdown, max_context, memory
from estimator.query import Engine, Query
from estimator.speed import Speed, speed


class FitOption(BaseModel):
    model_config = ConfigDict(frozen=True)

    quant: QuantFormat
    memory: MemoryBreakdown
    speed: Speed
    max_ctx: int  # within the native window, whatever context was asked
    max_ctx_scaled: int | None = None  # within the documented RoPE-scaled window; None when the model has none

    @property
    def fits(self) -> bool:
        return self.memory.verdict != "does_not_fit"


class FitResult(BaseModel):
    model_config = ConfigDict(frozen=True)

    query: Query
    options: tuple[FitOption, ...]

    @property
    def best(self) -> FitOption | None:
        """The highest-precision option that fits (the seed pages' rule: quality first)."""
        fitting = [o for o in self.options if o.fits]
        return max(fitting, key=lambda o: o.quant.bits_per_weight) if fitting else None


def default_formats(catalog: Catalog, engine: Engine, levels: tuple[str, ...] = DEFAULT_LEVELS) -> list[QuantFormat]:
    return [catalog.quant(DEFAULT_FORMAT[engine][lvl]) for lvl in levels if lvl in DEFAULT_FORMAT[engine]]


def fit_option(q: Query) -> FitOption:
    has_extension = q.model.context_limit(with_scaling=True) > q.model.max_context
    scaled = max_context(q, with_scaling=True) if has_extension else None
    return FitOption(quant=q.quant, memory=memory(q), speed=speed(q), max_ctx=max_context(q, with_scaling=False),
                     max_ctx_scaled=scaled)


def fit(base: Query, formats: list[QuantFormat]) -> FitResult:
    """One option per format, all under the same GPUs, engine and workload as `base`."""
    options = tuple(fit_option(base.model_copy(update={"quant": f})) for f in formats)
    return FitResult(query=base, options=options)


def shared_format(results: list[FitResult]) -> QuantFormat:
    """Like for like: the highest-precision format that fits every setup compared; when none fits all of
    them, the smallest format (the one most likely to fit), so both sides are still read in one format.
    Every result must have been computed over the same formats."""
    formats = [o.quant for o in results[0].options]
    for fmt in sorted(formats, key=lambda f: -f.bits_per_weight):
        if all(any(o.quant.id == fmt.id and o.fits for o in r.options) for r in results):
            return fmt
    return min(formats, key=lambda f: f.bits_per_weight)
