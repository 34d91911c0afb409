"""The message catalog: one TOML file per locale (`templates/<locale>/messages.toml`) holds every short
string that code, rather than a template, puts into a reply. Code asks for a key; it never branches on
the language."""

from __future__ import annotations

import tomllib
from functools import cache
from typing import Any

from bot.render.embeds import LOCALES, TEMPLATES, locale_key


@cache
def catalog(locale: str) -> dict[str, str]:
    with (TEMPLATES / locale / "messages.toml").open("rb") as fh:
        data = tomllib.load(fh)
    return {str(k): str(v) for k, v in data.items()}


def t(locale: str | None, key: str, **values: Any) -> str:
    """The locale's text for `key` with `values` filled in; English when the locale lacks it."""
    loc = locale_key(locale)
    text = catalog(loc).get(key)
    if text is None:
        text = catalog("en")[key]
    return text.format(**values) if values else text


def missing_keys() -> dict[str, set[str]]:
    """Keys English has and another locale lacks (a test keeps this empty)."""
    en = set(catalog("en"))
    return {loc: en - set(catalog(loc)) for loc in LOCALES if loc != "en"}
