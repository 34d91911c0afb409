"""What an answer says beside itself about how the question was read, where that differs from what was typed:
one wording for /fit and `rigcheck fit` (light to import: the CLI prints these without loading the charts)."""

from __future__ import annotations

from typing import TYPE_CHECKING

from bot.render.text import format_tokens, t
from estimator.memory import ollama_default_context
from estimator.query import DEFAULT_PROMPT_TOKENS, Query

if TYPE_CHECKING:
    from bot.requests import FitRequest
    from bot.service import Service
    from catalog.schema import Model


def prompt_note(q: Query, asked: int, locale: str) -> str | None:
    """A prompt someone asked for that is longer than the context is answered at the context; say so rather than
    change it silently. The default prompt is nobody's request: it just shrinks to a short context."""
    if asked <= q.prompt_tokens or asked == DEFAULT_PROMPT_TOKENS:
        return None
    return t(locale, "prompt.capped", asked=format_tokens(asked), ctx=format_tokens(q.ctx),
             prompt=format_tokens(q.prompt_tokens))


def window_note(q: Query, req: FitRequest, locale: str) -> str | None:
    return context_read_note(q.model, q.ctx, req.ctx, req.ctx_yields, locale)


def context_read_note(model: Model, used: int, asked: int, yields: bool, locale: str) -> str | None:
    """Where the context answered is not the one asked, why: a default (built in or stored) past the model's longest
    window yields to it; a typed one a hair past it ("1M" for a 1,010,000 window, 4,200 for 4,096) means it."""
    if used == asked:
        return None
    if yields:
        return t(locale, "ctx.window_default", ctx=format_tokens(used), model=model.name, asked=format_tokens(asked))
    return t(locale, "ctx.window_meant", ctx=format_tokens(used), model=model.name, asked=format_tokens(asked))


def ollama_context_note(q: Query, req: FitRequest, locale: str) -> str | None:
    """Ollama picks its own context when none is set, by the memory of the GPUs: where no context was typed and that
    one differs from the context answered, say what Ollama would load the model at."""
    if q.engine != "ollama" or not req.ctx_yields:
        return None
    ollama = ollama_default_context(q.gpu, q.gpus, q.model)
    if ollama == q.ctx:
        return None
    return t(locale, "ctx.ollama_default", model=q.model.name, ctx=format_tokens(ollama))


def tag_format_note(svc: Service, req: FitRequest, locale: str) -> str | None:
    """A model name whose tag names a format (an Ollama tag's `-q4_K_M`, a GGUF repo's `:Q8_0`) beside a `quant`
    option naming another: the option wins, as an explicit choice should, and the answer says so rather than
    drop the tag silently."""
    if not req.quant:
        return None
    _, tagged = svc.model(req.model)
    asked = svc.quant(req.quant, req.engine)
    if tagged is None or tagged.id == asked.id:
        return None
    return t(locale, "quant.tag_overridden", tagged=tagged.name, asked=asked.name)


def fit_notes(svc: Service, req: FitRequest, q: Query, locale: str) -> list[str]:
    """What /fit and `rigcheck fit` say beside the answer about how the question was read."""
    return [n for n in (window_note(q, req, locale), prompt_note(q, req.prompt, locale),
                        ollama_context_note(q, req, locale), tag_format_note(svc, req, locale)) if n]
