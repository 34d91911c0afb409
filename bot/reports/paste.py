"""Pasted benchmark output → measured speeds, parsed strictly (anything unexpected is refused).

Two shapes are read:

* `llama-bench`'s markdown table (the default `-o md` output): a header row naming the columns, a
  `---` separator row, one row per test, then an optional `build: <commit> (<number>)` line. The
  `test` column holds `ppN` (prompt processing of N tokens), `tgN` (generation of N tokens), optionally
  with ` @ dN` (at a context depth of N); `t/s` holds "mean ± stddev". Format: the "Markdown" output
  section of https://github.com/ggml-org/llama.cpp/blob/master/tools/llama-bench/README.md (2026-12-01).
* `ollama run --verbose` timings: `prompt eval rate: 83.3 tokens/s` and `eval rate: 24.8 tokens/s`,
  each after its `count: N token(s)` (as printed in https://ai-ollama.github.io/benchmarks.html, 2026-12-01).

Discord's client joins the lines of a pasted text into one, so both shapes are read with or without
their line breaks. Nothing here knows about Discord or the catalog.
"""

from __future__ import annotations

import math
import re
from dataclasses import dataclass
from typing import Literal

from bot.params import BadValue

PASTE_MAX_CHARS = 4000
# Bounds on what a single stream can plausibly do; outside them a number is a typo or a unit mix-up.
DECODE_TPS_MAX = 10_000.0
PREFILL_TPS_MAX = 1_000_000.0
# Below this a rate is a typo or another unit (0.001 tok/s is one token in 17 minutes), not a measurement.
TPS_MIN = 0.01

Source = Literal["manual", "llama-bench", "ollama"]

_NUMBER = r"\d+(?:\.\d+)?"
_RATE = re.compile(rf"^\s*({_NUMBER})\s*(tok/s|t/s|tokens/s|tokens/sec|tps)?\s*$", re.IGNORECASE)
_BENCH_TPS = re.compile(rf"^({_NUMBER})(?:\s*±\s*{_NUMBER})?$")
_BENCH_TEST = re.compile(r"^(pp|tg)(\d+)(?:\s*@\s*d(\d+))?$")
_BUILD = re.compile(r"build:\s*([0-9a-f]{6,40})\s*\((\d+)\)\s*$")
_SEPARATOR_CELL = re.compile(r"^:?-+:?$")
_OLLAMA_RATE = re.compile(r"(?<![a-z])(prompt eval|eval) rate:\s*(\S+)\s*(\S*)", re.IGNORECASE)
_OLLAMA_COUNT = re.compile(r"(?<![a-z])(prompt eval|eval) count:\s*(\d+)\s*token", re.IGNORECASE)


@dataclass(frozen=True)
class Measured:
    """Speeds of one run: decode (generation) and, when measured, prompt processing."""

    source: Source
    decode_tps: float
    prefill_tps: float | None = None
    prompt_tokens: int | None = None
    generated_tokens: int | None = None
    build: str | None = None
    backend: str | None = None


def parse_rate(text: str, name: str, limit: float) -> float:
    """`35.2`, `35.2 tok/s`, `35 t/s`, `35 tokens/s` → 35.2; anything else (negative, zero, 1e9, NaN,
    another unit, beyond `limit`) is refused with the reason."""
    match = _RATE.match(text)
    if match is None:
        raise BadValue.of("report.bad_rate", name=name, value=_shown(text))
    return _bounded(float(match.group(1)), name, limit)


def _bounded(value: float, name: str, limit: float) -> float:
    if not math.isfinite(value) or value <= 0:
        raise BadValue.of("report.rate_positive", name=name)
    if value > limit:
        raise BadValue.of("report.rate_too_high", name=name, limit=f"{limit:g}")
    if value < TPS_MIN:
        raise BadValue.of("report.rate_too_low", name=name, least=f"{TPS_MIN:g}")
    return value


def _shown(text: str) -> str:
    # Only as much of the input as identifies it, and nothing that reads as markup or a mention.
    kept = re.sub(r"[^0-9A-Za-z ./_-]", "?", " ".join(text.split()))[:30]
    return kept or "?"


def parse_paste(text: str) -> Measured:
    """The speeds in pasted llama-bench or Ollama output; BadValue says what is wrong with it."""
    if len(text) > PASTE_MAX_CHARS:
        raise BadValue.of("report.paste_too_long", limit=PASTE_MAX_CHARS)
    if "|" in text:
        return parse_llama_bench(text)
    if re.search(r"eval rate:", text, re.IGNORECASE):
        return parse_ollama(text)
    raise BadValue.of("report.paste_unknown")


def _table_rows(text: str) -> tuple[list[list[str]], str]:
    """The table's rows as cells, whether its lines arrive separate or joined, and the text after it."""
    start, end = text.find("|"), text.rfind("|")
    body, after = text[start : end + 1], text[end + 1 :]
    if text[:start].strip():
        raise BadValue.of("report.paste_table")
    cells = [c.strip() for c in body.replace("\r", "").split("|")][1:-1]
    # Rows are "| a | b |"; joined, "| a | b | | c | d |" leaves one empty cell (or a newline) between them.
    width = next((i for i, c in enumerate(cells) if not c), len(cells))
    if width < 3 or (len(cells) + 1) % (width + 1) != 0:
        raise BadValue.of("report.paste_table")
    rows = []
    for at in range(0, len(cells), width + 1):
        row = cells[at : at + width]
        gap = cells[at + width] if at + width < len(cells) else ""
        if gap or any(not c for c in row):
            raise BadValue.of("report.paste_table")
        rows.append(row)
    return rows, after


def parse_llama_bench(text: str) -> Measured:
    rows, after = _table_rows(text)
    header = [c.lower() for c in rows[0]]
    if len(rows) < 3 or not all(_SEPARATOR_CELL.match(c) for c in rows[1]):
        raise BadValue.of("report.paste_table")
    for needed in ("model", "test", "t/s"):
        if needed not in header:
            raise BadValue.of("report.paste_column", column=needed)
    col = {name: header.index(name) for name in header}
    models = {r[col["model"]] for r in rows[2:]}
    backends = {r[col["backend"]] for r in rows[2:]} if "backend" in col else set()
    if len(models) > 1 or len(backends) > 1:
        raise BadValue.of("report.paste_one_model")
    decode: tuple[float, int] | None = None
    prefill: tuple[float, int] | None = None
    for row in rows[2:]:
        test, tps = _BENCH_TEST.match(row[col["test"]]), _BENCH_TPS.match(row[col["t/s"]])
        if test is None or tps is None:
            raise BadValue.of("report.paste_row", row=_shown(" ".join(row)))
        if test.group(3) not in (None, "0"):
            continue  # at a context depth: not the empty-context speed the report is about
        kind, tokens, value = test.group(1), int(test.group(2)), float(tps.group(1))
        if kind == "tg" and decode is None:
            decode = (_bounded(value, "decode_tps", DECODE_TPS_MAX), tokens)
        elif kind == "pp" and prefill is None:
            prefill = (_bounded(value, "prefill_tps", PREFILL_TPS_MAX), tokens)
    if decode is None:
        raise BadValue.of("report.paste_no_decode")
    rest = after.strip()
    build = None
    if rest:
        found = _BUILD.fullmatch(rest)
        if found is None:
            raise BadValue.of("report.paste_table")
        build = f"{found.group(1)} ({found.group(2)})"
    return Measured(
        source="llama-bench",
        decode_tps=decode[0],
        generated_tokens=decode[1],
        prefill_tps=None if prefill is None else prefill[0],
        prompt_tokens=None if prefill is None else prefill[1],
        build=build,
        backend=next(iter(backends)) if backends else None,
    )


def parse_ollama(text: str) -> Measured:
    rates: dict[str, float] = {}
    for kind, number, unit in _OLLAMA_RATE.findall(text):
        key = kind.lower()
        if key in rates:
            raise BadValue.of("report.paste_twice", field=f"{key} rate")
        if unit.lower() != "tokens/s" or not re.fullmatch(_NUMBER, number):
            raise BadValue.of("report.paste_row", row=_shown(f"{kind} rate: {number} {unit}"))
        limit = DECODE_TPS_MAX if key == "eval" else PREFILL_TPS_MAX
        rates[key] = _bounded(float(number), "decode_tps" if key == "eval" else "prefill_tps", limit)
    if "eval" not in rates:
        raise BadValue.of("report.paste_no_decode")
    counts = {kind.lower(): int(n) for kind, n in _OLLAMA_COUNT.findall(text)}
    return Measured(
        source="ollama",
        decode_tps=rates["eval"],
        prefill_tps=rates.get("prompt eval"),
        prompt_tokens=counts.get("prompt eval"),
        generated_tokens=counts.get("eval"),
    )
