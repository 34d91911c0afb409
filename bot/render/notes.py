"""What an answer says beside itself about how the question was read, where that differs from what was typed:
one wording for /fit and `rigcheck fit` (light to import: the CLI prints these without loading the charts)."""

from __future__ import annotations

from typing import TYPE_CHECKING

from bot.render.text import format_tokens, t
from estimator.query import DEFAULT_PROMPT_TOKENS, Query

if TYPE_CHECKING:
    from bot.requests import FitRequest
    from bot.service import Service


def prompt_note(q: Query, asked: int, locale: str) -> str | None:
    """A prompt someone asked for that is longer than the context is answered at the context; say so rather than
    change it silently. The default prompt is nobody's request: it just shrinks to a short context."""
    if asked <= q.prompt_tokens or asked == DEFAULT_PROMPT_TOKENS:
        return None
    return t(locale, "prompt.capped", asked=format_tokens(asked), ctx=format_tokens(q.ctx),
             prompt=format_tokens(q.prompt_tokens))


def window_note(q: Query, req: FitRequest, locale: str) -> str | None:
    """A default context (built in or stored) longer than the model's window is answered at the window: say so."""
    if not req.ctx_yields or q.ctx >= q.model.context_as_meant(req.ctx):
        return None
    return t(locale, "ctx.window_default", ctx=format_tokens(q.ctx), model=q.model.name,
             asked=format_tokens(req.ctx))


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
                        tag_format_note(svc, req, locale)) if n]
