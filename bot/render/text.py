"""The message catalog: one TOML file per locale (`templates/<locale>/messages.toml`) holds every string
that code, rather than a template, puts into a reply, a chart, an error or the CLI's output, and the
translations of the slash commands' descriptions. Code asks for a key; this module alone decides which
locale's file answers.

Command and option descriptions are keyed by their English text, as gettext keys by its msgid: Discord
needs the English in the command's definition, so it is not written again in the English file, and every
other locale translates it in its `[commands]` table. `rigcheck --help` texts are keyed the same way, in
`[cli_help]`: argparse's definitions hold the English.
"""

from __future__ import annotations

import math
import tomllib
from collections.abc import Mapping
from dataclasses import dataclass, field
from functools import cache
from pathlib import Path
from typing import Any

TEMPLATES = Path(__file__).resolve().parent.parent / "templates"
DEFAULT_LOCALE = "en"
LOCALES = (DEFAULT_LOCALE, "zh-CN")
# Locales whose text a chart can draw only with a CJK font; without one a chart falls back to English.
CJK_LOCALES = frozenset({"zh-CN"})
COMMANDS_TABLE = "commands"
CLI_HELP_TABLE = "cli_help"
CLI_EPILOG_PREFIX = "cli.epilog."
# The words a format's catalog name describes it with, in parentheses ('Unsloth Dynamic' in
# 'UD-Q4_K_XL (Unsloth Dynamic)'): keyed by their English too, as the catalog's data spells them.
FORMAT_WORDS_TABLE = "format_words"
# Tables keyed by English text rather than by a key (see above).
KEYED_BY_ENGLISH = (COMMANDS_TABLE, CLI_HELP_TABLE, FORMAT_WORDS_TABLE)


@dataclass(frozen=True)
class FormatNames:
    """Format names as one value of a message (the formats an engine loads, in a refusal): listed in the
    message's own locale, each as `format_label` shows it there."""

    names: tuple[str, ...]


@dataclass(frozen=True)
class Message:
    """A catalog key and its values, worded only when a locale is known: a value of another message (a
    reason inside a sentence) is filled in the same locale as the sentence around it."""

    key: str
    values: Mapping[str, Any] = field(default_factory=dict)


def locale_key(locale: str | None) -> str:
    """Discord's 'zh-CN' (and any 'zh…') gets Simplified Chinese; everything else English."""
    return "zh-CN" if (locale or "").lower().startswith("zh") else DEFAULT_LOCALE


def drawable_locale(locale: str | None, *, has_cjk_font: bool) -> str:
    """The catalog for text drawn into an image: the asker's, unless its script has no font here."""
    loc = locale_key(locale)
    return DEFAULT_LOCALE if loc in CJK_LOCALES and not has_cjk_font else loc


@cache
def _document(locale: str) -> dict[str, Any]:
    with (TEMPLATES / locale / "messages.toml").open("rb") as fh:
        return tomllib.load(fh)


@cache
def catalog(locale: str) -> dict[str, str]:
    """The locale's keyed messages (the tables keyed by English apart)."""
    return {str(k): str(v) for k, v in _document(locale).items() if k not in KEYED_BY_ENGLISH}


@cache
def _translations(locale: str, table: str) -> dict[str, str]:
    if locale not in LOCALES:
        return {}
    return {str(k): str(v) for k, v in _document(locale).get(table, {}).items()}


def command_texts(locale: str) -> dict[str, str]:
    """English description → this locale's, for a catalog locale spelled as Discord spells it; others
    (English included) get none, so Discord shows the English of the command's definition."""
    return _translations(locale, COMMANDS_TABLE)


def cli_help_texts(locale: str | None) -> dict[str, str]:
    """English `--help` text → the locale's (none for English: the definitions hold it). Epilogs, pages of text
    rather than a line, are keyed messages (`cli.epilog.<command>`) that a command's definition reads in
    English; they are mapped from that English the same way."""
    loc = locale_key(locale)
    texts = _translations(loc, CLI_HELP_TABLE)
    if loc == DEFAULT_LOCALE:
        return texts
    english = catalog(DEFAULT_LOCALE)
    epilogs = {english[k]: v for k, v in catalog(loc).items() if k.startswith(CLI_EPILOG_PREFIX)}
    return {**texts, **epilogs}


def format_label(name: str, locale: str | None) -> str:
    """A format's catalog name as shown in `locale`: the name proper (UD-Q4_K_XL, Q3_K_XL) as it is, the words in
    parentheses that describe it translated ('Unsloth Dynamic'); technical tags (g128, W8A8) have no
    translation and stay as they are."""
    base, sep, words = name.partition(" (")
    if not sep or not words.endswith(")"):
        return name
    described = words[:-1]
    return f"{base} ({_translations(locale_key(locale), FORMAT_WORDS_TABLE).get(described, described)})"


def t(locale: str | None, key: str, **values: Any) -> str:
    """The locale's text for `key` with `values` filled in (a `Message` or `FormatNames` among them worded in
    the same locale); English when the locale lacks it."""
    loc = locale_key(locale)
    text = catalog(loc).get(key)
    if text is None:
        text = catalog(DEFAULT_LOCALE)[key]
    if not values:
        return text
    filled = {k: _worded(loc, v) for k, v in values.items()}
    return text.format(**filled)


def _worded(locale: str, value: Any) -> Any:
    if isinstance(value, Message):
        return t(locale, value.key, **value.values)
    if isinstance(value, FormatNames):
        # Joined as the levels beside them in the same refusals are (`Service.quant`).
        return ", ".join(format_label(n, locale) for n in value.names)
    return value


def missing_keys() -> dict[str, set[str]]:
    """Keys English has and another locale lacks (a test keeps this empty)."""
    en = set(catalog(DEFAULT_LOCALE))
    return {loc: en - set(catalog(loc)) for loc in LOCALES if loc != DEFAULT_LOCALE}


def tps_text(value: float, like: float | None = None) -> str:
    """Tokens per second as every reply prints them: whole numbers from 10 up, one decimal below, so that a slow
    estimate's range (4.4–5.4) stays a range. A range's ends pass their estimate as `like` and take its precision,
    so "~58 (51–71)" never reads "~58 (50.8–71)"."""
    # Decided on the rounded figure: 9.96 prints "10", not "10.0".
    whole = round(value if like is None else like, 1) >= 10
    return f"{value:,.0f}" if whole else f"{value:.1f}"


# Parameter counts are shown to three significant figures: the catalog's own precision for most models (8.19B,
# 30.5B), and what a count a Hub config adds up to (8,029,990,912) rounds to.
PARAMS_SIGNIFICANT = 3


def params_b_text(params_b: float) -> str:
    """Billions of parameters as every reply, table and CLI line shows them: '8.19', '8.03' (not '8.02999'), '0.6',
    '30.5'; whole digits are never rounded away or written as an exponent ('685', '1026')."""
    if params_b <= 0:
        return f"{params_b:g}"
    decimals = max(0, PARAMS_SIGNIFICANT - 1 - math.floor(math.log10(params_b)))
    text = f"{round(params_b, decimals):.{decimals}f}"
    return text.rstrip("0").rstrip(".") if "." in text else text


TOKEN_UNITS = (("M", 1024 * 1024), ("k", 1024))


def format_tokens(tokens: float) -> str:
    """Token counts as people type them back: k is 1024 and M is 1024², as `bot.params.parse_tokens` reads them, so
    a count that is a whole (or half) number of those units reads as one (65536 → 64k, 1536 → 1.5k, 1048576 → 1M);
    any other count is printed exactly (128,000; 50,000; a largest context of 50,895), so no shown figure is a
    rounding of another, nor a k that means 1000 to one reader and 1024 to the next.

    >>> format_tokens(65536), format_tokens(131072), format_tokens(128000), format_tokens(50000)
    ('64k', '128k', '128,000', '50,000')
    """
    count = max(0, math.floor(tokens))
    if count % 1000 == 0 and count >= 1000:
        return f"{count:,}"  # 128,000 is also 125 × 1024, but a card that says 128,000 means thousands
    for unit, size in TOKEN_UNITS:
        if count >= size and count % (size // 2) == 0:
            return f"{count / size:g}{unit}"
    return f"{count:,}"


def scaled_context_text(native: int, scaled: int | None) -> str:
    """The largest context with RoPE scaling where it says more than the native one, as printed; empty otherwise
    ("623 (623 RoPE-scaled)" told nothing)."""
    if not scaled or format_tokens(scaled) == format_tokens(native):
        return ""
    return format_tokens(scaled)


# Engines as their projects write them (the ids are what options and flags take).
ENGINE_DISPLAY = {"llama.cpp": "llama.cpp", "vllm": "vLLM", "mlx": "MLX", "ollama": "Ollama", "lm studio": "LM Studio",
                  "sglang": "SGLang", "trt-llm": "TensorRT-LLM", "exllamav2": "ExLlamaV2", "exllamav3": "ExLlamaV3"}


def engine_name(engine: str) -> str:
    return ENGINE_DISPLAY.get(engine, engine)
