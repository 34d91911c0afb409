"""Turning what people type into values: `32k` → 32768, `q4_k_m` / `int4` → a format, names → entries."""

from __future__ import annotations

import math
import re
from typing import Any, Self

from pydantic import ValidationError
from pydantic_core import ErrorDetails

from bot.render.text import DEFAULT_LOCALE, Message, t
from estimator.query import ENGINES, KV_DTYPES, Engine, KVDtype

CTX_MAX_TOKENS = 10_000_000
_TOKENS = re.compile(r"^\s*(\d+(?:\.\d+)?)\s*([kKmM]?)\s*$")


class CatalogError(Exception):
    """An error whose sentence is a message-catalog entry: built with `.of(key, **values)`, the reply is
    written in the asker's language (`.text(locale)`); `str()` is the English text (the CLI and logs print
    that)."""

    def __init__(self, message: str, *, key: str | None = None, values: dict[str, Any] | None = None) -> None:
        super().__init__(message)
        self.key = key
        self.values = values or {}

    @classmethod
    def of(cls, key: str, **values: Any) -> Self:
        return cls(t(DEFAULT_LOCALE, key, **values), key=key, values=values)

    def text(self, locale: str | None) -> str:
        return str(self) if self.key is None else t(locale, self.key, **self.values)


class BadValue(CatalogError, ValueError):
    """A value a person typed that we cannot use; the message says what is allowed."""


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


def parse_tokens(text: str | int, *, name: str = "ctx", allow_zero: bool = False) -> int:
    """`16k`, `32K`, `128k`, `1M`, `32768` → tokens. k is 1024 (as engines count context), M is 1024².

    >>> parse_tokens("32k")
    32768
    """
    if isinstance(text, int):
        value = text
    else:
        match = _TOKENS.match(str(text))
        if not match:
            raise BadValue.of("bad.tokens_form", name=name, got=repr(str(text)[:40]))
        number, unit = float(match.group(1)), match.group(2).lower()
        value = round(number * {"": 1, "k": 1024, "m": 1024 * 1024}[unit])
    if value < 0 or (value == 0 and not allow_zero):
        raise BadValue.of("bad.tokens_positive", name=name)
    if value > CTX_MAX_TOKENS:
        raise BadValue.of("bad.tokens_large", name=name, most=CTX_MAX_TOKENS // 1024 // 1024)
    return value


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


def format_tokens(tokens: float) -> str:
    """Context as people say it: 65536 → '64k', 128000 → '128k', 1048576 → '1M', 1536 → '1.5k'.

    Model cards give windows in binary (131072) or decimal (128000) thousands; both read as whole
    numbers. Any other value (a computed maximum) is rounded *down* at the shown precision, so a
    largest context that fits is never overstated: 67072 → '65k', not '65.5k'.

    >>> format_tokens(65536), format_tokens(131072), format_tokens(1000000), format_tokens(67072)
    ('64k', '128k', '1M', '65k')
    """
    tokens = round(tokens)
    if tokens < 1000:
        return str(tokens)
    for unit, binary, decimal in (("M", 1024 * 1024, 1_000_000), ("k", 1024, 1000)):
        if tokens >= decimal:
            # 128000 is both 125 × 1024 and 128 × 1000: people say 128k.
            if tokens % decimal == 0:
                return f"{tokens // decimal}{unit}"
            if tokens % binary == 0:
                return f"{tokens // binary}{unit}"
            value = tokens / binary if tokens >= binary else tokens / decimal
            if value >= 10:
                return f"{math.floor(value)}{unit}"
            return f"{math.floor(value * 10) / 10:g}{unit}"
    return str(tokens)
