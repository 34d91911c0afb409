"""Turning what people type into values: `32k` → 32768, `q4_k_m` / `int4` → a format, names → entries."""

from __future__ import annotations

import re

CTX_MAX_TOKENS = 10_000_000
_TOKENS = re.compile(r"^\s*(\d+(?:\.\d+)?)\s*([kKmM]?)\s*$")


class BadValue(ValueError):
    """A value a person typed that we cannot use; the message says what is allowed."""


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
            raise BadValue(f"{name} must be a token count like 8192, 32k or 1M (got {str(text)[:40]!r})")
        number, unit = float(match.group(1)), match.group(2).lower()
        value = round(number * {"": 1, "k": 1024, "m": 1024 * 1024}[unit])
    if value < 0 or (value == 0 and not allow_zero):
        raise BadValue(f"{name} must be a positive number of tokens")
    if value > CTX_MAX_TOKENS:
        raise BadValue(f"{name} is too large: at most {CTX_MAX_TOKENS // 1024 // 1024}M tokens")
    return value


def format_tokens(tokens: int) -> str:
    """32768 → '32k'; 1048576 → '1M'; 40960 → '40k'; 1000 → '1000'."""
    if tokens >= 1024 * 1024 and tokens % (1024 * 1024) == 0:
        return f"{tokens // (1024 * 1024)}M"
    if tokens >= 1024 and tokens % 1024 == 0:
        return f"{tokens // 1024}k"
    if tokens >= 1024:
        return f"{tokens / 1024:.1f}k"
    return str(tokens)
