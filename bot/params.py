"""Turning what people type into values: `32k` → 32768, `q4_k_m` / `int4` → a format, names → entries."""

from __future__ import annotations

import json
import math
import re
from collections.abc import Mapping
from typing import Any, Self

from pydantic import ValidationError
from pydantic_core import ErrorDetails

from bot.render.text import DEFAULT_LOCALE, Message, format_tokens, t
from estimator.query import ENGINES, KV_DTYPES, Engine, KVDtype

CTX_MAX_TOKENS = 10_000_000
# A count as replies print it (128,000 with thousands separators) reads back as the same count.
_TOKENS = re.compile(r"^\s*(\d{1,3}(?:,\d{3})+|\d+(?:\.\d+)?)\s*([kKmM]?)\s*$")

ECHO_MAX_CHARS = 40
# What Discord's markdown reads anywhere in a line: emphasis, code, spoilers, masked links, and '<' (mentions,
# channels, timestamps) and ':' (a URL's scheme, so no link forms). A backslash shows the bare character. An
# underscore between two letters or digits ('q4_k_m') starts no emphasis there, so it is left as typed.
_MARKUP = re.compile(r"([\\*~`|\[<:]|(?<![^\W_])_|_(?![^\W_]))")
# ... and what it reads only at the start of a line: a heading, quote, subtext or list item ('-', '+', '1.').
_LINE_MARK = re.compile(r"^(?=(?:#{1,3}|>{1,3}|-#|[-+])\s)")
_LIST_NUMBER = re.compile(r"^(\d+)\.(?=\s)")
_EVERYONE = re.compile(r"@(everyone|here)", re.IGNORECASE)


def echo(text: str, limit: int = ECHO_MAX_CHARS) -> str:
    """User text shown back where markdown renders (a Discord reply): bounded, on one line, every markdown
    character escaped and mentions made inert, so nothing typed can format, link, ping or break out of the
    sentence around it. The one way any reply repeats what a person typed."""
    clipped = " ".join(text.split())
    clipped = clipped[:limit] + ("…" if len(clipped) > limit else "")
    escaped = _MARKUP.sub(r"\\\1", clipped)
    escaped = _LIST_NUMBER.sub(r"\1\\.", _LINE_MARK.sub(r"\\", escaped))
    return _EVERYONE.sub("@\u200b\\1", escaped)


class Typed(str):
    """A message value that is text a person typed: a terminal prints it as typed, a Discord reply `echo`es
    it (CatalogError.text with markdown=True)."""


def _for_markdown(values: Mapping[str, Any]) -> dict[str, Any]:
    """Message values with each `Typed` one echoed, in a reason worded inside the sentence too."""
    return {k: echo(v, len(v)) if isinstance(v, Typed)
            else Message(v.key, _for_markdown(v.values)) if isinstance(v, Message) else v
            for k, v in values.items()}


class CatalogError(Exception):
    """An error whose sentence is a message-catalog entry: built with `.of(key, **values)`, the reply is
    written in the asker's language (`.text(locale)`); `str()` is the English text (the CLI and logs print
    that). Values a person typed are passed as `Typed`."""

    def __init__(self, message: str, *, key: str | None = None, values: dict[str, Any] | None = None) -> None:
        super().__init__(message)
        self.key = key
        self.values = values or {}

    @classmethod
    def of(cls, key: str, **values: Any) -> Self:
        return cls(t(DEFAULT_LOCALE, key, **values), key=key, values=values)

    def text(self, locale: str | None, *, markdown: bool = False) -> str:
        """The sentence in `locale`; with `markdown` (a Discord reply) what the person typed is `echo`ed."""
        if self.key is None:
            return str(self)
        return t(locale, self.key, **(_for_markdown(self.values) if markdown else self.values))


class BadValue(CatalogError, ValueError):
    """A value a person typed that we cannot use; the message says what is allowed."""


class NotAllowed(CatalogError):
    """A command the asker may not use (a bot owner's, say): answered "Not allowed" with the sentence that says
    who may, never as an option that does not work."""


# A bound a field states (pydantic's `ge`, `gt`, `le`, `lt`) as the catalog's sentence that says it.
BOUND_KEYS = {"ge": "bad.at_least", "gt": "bad.above", "le": "bad.at_most", "lt": "bad.below"}


def validation_message(error: ErrorDetails) -> Message:
    """What pydantic found wrong with one value, in the catalog's words: the bound it broke, or that the
    field does not take that value (pydantic's own sentence is never shown)."""
    name = ".".join(str(p) for p in error["loc"]) or "value"
    bound = next(((k, v) for k, v in (error.get("ctx") or {}).items() if k in BOUND_KEYS), None)
    if bound is not None:
        return Message(BOUND_KEYS[bound[0]], {"name": name, "limit": f"{bound[1]:g}"})
    return Message("bad.value", {"name": name})


def people_text(exc: Exception, locale: str | None = None) -> str:
    """One readable line for a value error; a pydantic error says its first problem in catalog words."""
    if isinstance(exc, CatalogError):
        return exc.text(locale)[:1500]
    if isinstance(exc, ValidationError):
        first = validation_message(exc.errors()[0])
        return t(locale, first.key, **first.values)
    return str(exc)[:1500]


def parse_tokens(text: Any, *, name: str = "ctx", allow_zero: bool = False) -> int:
    """`16k`, `32K`, `128k`, `1M`, `32768`, `128,000` → tokens. k is 1024 (as engines count context), M is 1024².

    A count without a unit is whole: `1.5k` is 1536 tokens, but `1.5` (a flag, a JSON number) names no count
    and is refused, as is JSON's `true`, which Python would otherwise take for 1.

    >>> parse_tokens("32k")
    32768
    """
    if isinstance(text, bool) or not isinstance(text, int | float | str):
        raise BadValue.of("bad.tokens_form", name=name, got=as_typed(text))
    if isinstance(text, int):
        value = text  # as it is: a 400-digit JSON integer has no float
    else:
        if isinstance(text, str):
            match = _TOKENS.match(text)
            if not match:
                raise BadValue.of("bad.tokens_form", name=name, got=as_typed(text))
            number, unit = float(match.group(1).replace(",", "")), match.group(2).lower()
        else:
            number, unit = text, ""
        if not unit and not (math.isfinite(number) and number.is_integer()):
            raise BadValue.of("bad.tokens_whole", name=name, got=as_typed(text))
        value = round(number * {"": 1, "k": 1024, "m": 1024 * 1024}[unit])
    if value < 0 or (value == 0 and not allow_zero):
        raise BadValue.of("bad.tokens_positive", name=name)
    if value > CTX_MAX_TOKENS:
        raise BadValue.of("bad.tokens_large", name=name, most=format_tokens(CTX_MAX_TOKENS))
    return value


def as_typed(value: Any) -> Typed:
    """A value as the person wrote it, for a refusal: quoted text, or JSON's spelling (`true`, `["x"]`) for what
    came as JSON, never a Python repr."""
    if isinstance(value, str):
        return Typed(repr(value[:40]))
    try:
        return Typed(json.dumps(value)[:40])
    except (TypeError, ValueError):
        return Typed(type(value).__name__)


# A bit width as people write it ('4bit', '4-bit', '8 bit', '16-bit'): the level of that width that `int4` and
# `q4` already name, integer below 16 bits, the 16-bit float format at 16.
_BIT_WIDTH = re.compile(r"^(\d{1,2})[\s_-]?bits?$")
FLOAT_BITS = 16


def level_alias(key: str) -> str:
    """`key` (lower case) with a spelled-out bit width read as its level ('4-bit' → 'int4', '16bit' → 'fp16');
    any other text as it is, for the level and format names to match."""
    m = _BIT_WIDTH.match(key.strip())
    if m is None:
        return key
    bits = int(m.group(1))
    return "fp16" if bits == FLOAT_BITS else f"int{bits}"


ENGINE_ALIASES = {"tensorrt-llm": "trt-llm", "tensorrt": "trt-llm", "trtllm": "trt-llm", "trt": "trt-llm",
                  "exl2": "exllamav2", "exl3": "exllamav3"}


def parse_engine(text: str) -> Engine:
    """An engine as people name it: `llamacpp`, `LM Studio` (which runs llama.cpp), `exllama2`, `TensorRT-LLM`."""
    value = text.strip().lower().replace("llamacpp", "llama.cpp").replace("exllama2", "exllamav2")
    value = value.replace("exllama3", "exllamav3")
    value = ENGINE_ALIASES.get(value, value)
    value = value.replace("lm studio", "llama.cpp").replace("lmstudio", "llama.cpp")
    if value not in ENGINES:
        raise BadValue.of("bad.engine", engines=", ".join(ENGINES))
    return value  # type: ignore[return-value]


def parse_kv(text: str) -> KVDtype:
    """A KV cache precision: `fp16` is f16, `q8` is q8_0, `q4` is q4_0."""
    value = text.strip().lower().replace("fp16", "f16").replace("q8", "q8_0").replace("q8_0_0", "q8_0")
    value = value.replace("q4", "q4_0").replace("q4_0_0", "q4_0")
    if value not in KV_DTYPES:
        raise BadValue.of("bad.kv", kinds=", ".join(KV_DTYPES))
    return value  # type: ignore[return-value]
