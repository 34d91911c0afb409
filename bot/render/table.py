"""Monospace tables that fit a phone, and the rules that shorten names for them.

Discord wraps a code-block line past roughly 56 characters on a phone, and a wrapped table is
unreadable, so every line a table renders is at most `CODE_BLOCK_MAX` columns wide. Widths count
columns as a terminal would: CJK ideographs and full-width forms take two.
"""

from __future__ import annotations

import re
import unicodedata
from collections.abc import Sequence
from dataclasses import dataclass
from typing import Literal

from catalog.schema import GPU, Model

CODE_BLOCK_MAX = 56

Align = Literal["<", ">"]


def display_width(text: str) -> int:
    """Columns a monospace font gives `text`: wide and full-width characters count two, marks zero."""
    width = 0
    for ch in text:
        if unicodedata.combining(ch):
            continue
        width += 2 if unicodedata.east_asian_width(ch) in ("W", "F") else 1
    return width


def pad(text: str, width: int, align: Align = "<") -> str:
    fill = " " * max(0, width - display_width(text))
    return text + fill if align == "<" else fill + text


@dataclass(frozen=True)
class Column:
    header: str
    width: int
    align: Align = "<"


def render_table(columns: Sequence[Column], rows: Sequence[Sequence[str]]) -> list[str]:
    """Header and rows, one space between columns, trailing blanks removed. Raises if a line would be
    wider than a phone shows: a table that wraps is a bug, not a layout."""
    lines = []
    for cells in [[c.header for c in columns], *rows]:
        line = " ".join(pad(cell, col.width, col.align) for cell, col in zip(cells, columns, strict=True)).rstrip()
        if display_width(line) > CODE_BLOCK_MAX:
            raise ValueError(f"table line of {display_width(line)} columns: {line!r}")
        lines.append(line)
    return lines


# --- names -----------------------------------------------------------------------------------------

_SEPARATORS = re.compile(r"[\s_]+|-(?=\S)")
# 8B, 0.6B, 270M, 30B-A3B (split into 30B and A3B), A22B, E4B, 8x7B, 17B-128E's 128E
_SIZE = re.compile(r"^(\d+(\.\d+)?[BM]|A\d+(\.\d+)?B|E\d+B|\d+x\d+(\.\d+)?B|\d+E)$", re.IGNORECASE)
_VERSION = re.compile(r"^(v\d.*|\d{4}|\d+(\.\d+)+)$", re.IGNORECASE)
_PARENS = re.compile(r"\s*\([^)]*\)")


def _tokens(name: str) -> list[str]:
    return [t for t in _SEPARATORS.split(name) if t]


def _fit_tokens(tokens: list[str], keep: list[bool], optional: list[int], width: int) -> str:
    """Join the kept tokens (in their order); then add optional ones, most telling first, while they fit."""
    def joined() -> str:
        return " ".join(t for t, k in zip(tokens, keep, strict=True) if k)

    for i in optional:
        keep[i] = True
        if display_width(joined()) > width:
            keep[i] = False
    return joined()


def short_model_name(model: Model, width: int) -> str:
    """The name as published when it fits; otherwise family + size, plus whatever other words of the
    name still fit (versions first). Whole words only: never 'RTX 3090 T' or 'Nemotron 3 Nano 3'."""
    for candidate in (model.name, _PARENS.sub("", model.name).strip()):
        if display_width(candidate) <= width:
            return candidate
    tokens = _tokens(_PARENS.sub("", model.name))
    family = {t.lower() for t in _tokens(model.family)}
    is_size = [bool(_SIZE.match(t)) for t in tokens]
    is_family = [t.lower() in family for t in tokens]
    if not any(is_size):
        tokens.append(f"{model.params_b:.3g}B")
        is_size.append(True)
        is_family.append(False)
    keep = [s or f for s, f in zip(is_size, is_family, strict=True)]
    # Too long even so: drop family words from the end of the family, keeping its first word and the size.
    family_at = [i for i, f in enumerate(is_family) if f and not is_size[i]]
    while display_width(" ".join(t for t, k in zip(tokens, keep, strict=True) if k)) > width and len(family_at) > 1:
        keep[family_at.pop()] = False
    rest = [i for i in range(len(tokens)) if not keep[i]]
    versions = [i for i in rest if _VERSION.match(tokens[i])]
    optional = versions + [i for i in rest if i not in versions]
    text = _fit_tokens(tokens, keep, optional, width)
    if display_width(text) <= width:
        return text
    sizes = " ".join(t for t, s in zip(tokens, is_size, strict=True) if s)
    return sizes if display_width(sizes) <= width else sizes.split(" ")[0]


_GPU_VENDOR_WORDS = {"nvidia", "geforce", "amd", "intel", "apple", "tesla"}
_MEMORY_PAREN = re.compile(r"\([^()]*?(\d+(?:\.\d+)?)\s*GB(?: unified memory)?\)", re.IGNORECASE)
_CORES_PAREN = re.compile(r"\((\d+)-core GPU[^)]*\)", re.IGNORECASE)


def short_gpu_name(gpu: GPU, width: int = 24) -> str:
    """'RTX 3090', 'M3 Max 40c 128GB', 'Radeon RX 7900 XTX': vendor words and notes go, memory stays."""
    name = _CORES_PAREN.sub(lambda m: f"{m.group(1)}c", gpu.name)
    name = _MEMORY_PAREN.sub(lambda m: f"{m.group(1)}GB", name)
    name = _PARENS.sub("", name)
    split = name.split()
    words = [
        w for i, w in enumerate(split)
        if w.lower() not in _GPU_VENDOR_WORDS
        # 'Radeon RX 7900 XTX' reads as 'RX 7900 XTX'; a bare 'Radeon 8060S' keeps its brand.
        and not (w.lower() == "radeon" and i + 1 < len(split) and split[i + 1].lower() in ("rx", "instinct", "pro"))
    ] or split
    while display_width(" ".join(words)) > width and len(words) > 1:
        # Model numbers and memory sizes (R9700, 3090, 144GB) tell boards apart, so a plain word goes
        # first, the last one; only then the last word.
        plain = [i for i, w in enumerate(words) if not any(c.isdigit() for c in w)]
        del words[plain[-1] if plain and len(plain) < len(words) else -1]
    return " ".join(words)


def setup_label(gpu: GPU, count: int, *, short: bool = False, width: int = 24) -> str:
    """'RTX 3090' for one card, '2× RTX 3090' for two."""
    name = short_gpu_name(gpu, width - (3 if count > 1 else 0)) if short else gpu.name
    return f"{count}× {name}" if count > 1 else name
