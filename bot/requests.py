"""What each estimating command asks, in people's words, with every default stated once.

The Discord commands, the CLI, the daily summaries and crash-resume records all build these; `Service`
resolves them (names, ranges and "did you mean" are its job). They are pydantic dataclasses, so a field of
the wrong type is refused on construction, and still dataclasses for the crash-resume records, which
store them field by field.
"""

from __future__ import annotations

from typing import TYPE_CHECKING, Any

from pydantic.dataclasses import dataclass

from estimator.query import DEFAULT_CTX, DEFAULT_ENGINE, DEFAULT_KV, DEFAULT_PROMPT_TOKENS

if TYPE_CHECKING:
    from bot.service import Service

DEFAULT_SORT = "quality"


@dataclass(frozen=True)
class FitRequest:
    """/fit and `rigcheck fit`: one model on one GPU setup."""

    gpu: str
    model: str
    quant: str | None = None
    engine: str = DEFAULT_ENGINE
    ctx: str | int = DEFAULT_CTX
    prompt: str | int = DEFAULT_PROMPT_TOKENS
    kv: str = DEFAULT_KV
    gpus: int = 1
    batch: int = 1

    def cache_key(self, svc: Service) -> dict[str, Any]:
        """The question as resolved: two spellings of one question share one cached answer."""
        q, formats = svc.base_query(self)
        return {
            "gpu": q.gpu.id,
            "gpus": q.gpus,
            "model": q.model.id,
            "quant": [f.id for f in formats],
            "engine": q.engine,
            "ctx": q.ctx,
            "prompt": q.prompt_tokens,
            "kv": q.kv,
            "batch": q.batch,
        }


@dataclass(frozen=True)
class RankRequest:
    """/rank and `rigcheck rank`: the best models that fit a GPU setup."""

    gpu: str
    ctx: str | int = DEFAULT_CTX
    sort: str = DEFAULT_SORT
    kv: str = DEFAULT_KV
    gpus: int = 1
    engine: str = DEFAULT_ENGINE
    quant: str | None = None
    limit: int | None = None

    def cache_key(self, svc: Service) -> dict[str, Any]:
        choice = svc.gpu_choice(self.gpu, self.gpus)
        return {**self.__dict__, "gpu": choice.gpu.id, "gpus": choice.count, "engine": svc.engine(self.engine),
                "kv": svc.kv(self.kv)}

