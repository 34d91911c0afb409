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

from bot.render.text import params_b_text
from catalog.schema import GPU, Model, QuantFormat

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
        tokens.append(f"{params_b_text(model.params_b)}B")
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


def short_format_name(fmt: QuantFormat, width: int) -> str:
    """A format's name in whole words: the note in parentheses goes, then words from the end ('FP8 (W8A8)' →
    'FP8', 'EXL2 4.0 bpw' → 'EXL2 4.0'), never 'FP8 (W8A'."""
    words = _PARENS.sub("", fmt.name).split() or [fmt.name]
    while len(words) > 1 and display_width(" ".join(words)) > width:
        words.pop()
    text = " ".join(words)
    return text if display_width(text) <= width else text[: width - 1] + "…"


_GPU_VENDOR_WORDS = {"nvidia", "geforce", "amd", "intel", "apple", "tesla"}
_MEMORY_PAREN = re.compile(r"\([^()]*?(\d+(?:\.\d+)?)\s*GB(?: unified memory)?\)", re.IGNORECASE)
_CORES_PAREN = re.compile(r"\((\d+)-core GPU[^)]*\)", re.IGNORECASE)


# Words that never tell two boards apart on their own; they go first.
_GENERIC_GPU_WORDS = {"gpu", "edition", "generation", "graphics"}


def _gpu_words(gpu: GPU) -> list[str]:
    """The name's words, vendor words, generic words and notes gone, memory and core counts kept ('M3 Max 40c
    128GB', 'RTX 4060 Laptop')."""
    name = _CORES_PAREN.sub(lambda m: f"{m.group(1)}c", gpu.name)
    name = _MEMORY_PAREN.sub(lambda m: f"{m.group(1)}GB", name)
    name = _PARENS.sub("", name)
    split = name.split()
    return [
        w for i, w in enumerate(split)
        if w.lower() not in _GPU_VENDOR_WORDS | _GENERIC_GPU_WORDS
        # 'Radeon RX 7900 XTX' reads as 'RX 7900 XTX'; a bare 'Radeon 8060S' keeps its brand.
        and not (w.lower() == "radeon" and i + 1 < len(split) and split[i + 1].lower() in ("rx", "instinct", "pro"))
    ] or split


def _has_digit(word: str) -> bool:
    return any(c.isdigit() for c in word)


def _numbered(words: list[str]) -> list[int]:
    return [i for i, w in enumerate(words) if _has_digit(w)]


def _drop_order(words: list[str], siblings: list[set[str]], *, line_first: bool = False) -> list[int]:
    """Which words go first when a name is too wide. Model numbers and memory sizes (R9700, 3090, 144GB) tell
    boards apart, so they go last, the last one first. Before them the product line ahead of the number ('RTX
    PRO', 'Instinct'). First the words behind it, those that tell it from the fewest `siblings` first ('Blackwell'
    of three RTX PRO 6000s before 'Max-Q'), the last one first. `line_first` gives up the product line before
    the words that tell it from the most siblings: 'RTX 6000 Max-Q' where 'RTX PRO 6000' would name three."""
    numbered = _numbered(words)
    first_number = numbered[0] if numbered else len(words)
    behind = [i for i in range(first_number + 1, len(words)) if not _has_digit(words[i])]
    ahead = [i for i in range(first_number) if not _has_digit(words[i])][::-1]

    def telling(i: int) -> int:
        return sum(1 for other in siblings if words[i].lower() not in other)

    behind.sort(key=lambda i: (telling(i), -i))
    if not line_first or not behind:
        return behind + ahead + numbered[::-1]
    most = max(telling(i) for i in behind)
    weak = [i for i in behind if telling(i) < most]
    return weak + ahead + [i for i in behind if i not in weak] + numbered[::-1]


def _shorten(words: list[str], width: int, siblings: list[set[str]], *, line_first: bool = False) -> str:
    kept = list(words)
    for i in _drop_order(words, siblings, line_first=line_first):
        if display_width(" ".join(kept)) <= width or len(kept) == 1:
            break
        kept.remove(words[i])
    return " ".join(kept)


def short_gpu_name(gpu: GPU, width: int = 24, among: Sequence[GPU] = ()) -> str:
    """'RTX 3090', 'M3 Max 40c 128GB', 'Radeon RX 7900 XTX': vendor words and notes go, memory stays. With the
    catalog as `among`, a name no other board there gets: 'RTX PRO 6000 Max-Q' beside 'RTX PRO 6000 Server',
    not 'RTX PRO 6000' three times (see `distinct_gpu_names`)."""
    if among:
        return distinct_gpu_names(tuple(among), width).get(gpu.id) or short_gpu_name(gpu, width)
    return _shorten(_gpu_words(gpu), width, [])


_DISTINCT_MAX = 16
_DISTINCT: dict[tuple[tuple[str, ...], int], dict[str, str]] = {}


def distinct_gpu_names(gpus: tuple[GPU, ...], width: int) -> dict[str, str]:
    """`_distinct_gpu_names`, kept per set of GPU ids: a table asks once per row, and hashing the entries
    themselves (every field of 188 boards) took 100 µs a row."""
    key = (tuple(g.id for g in gpus), width)
    found = _DISTINCT.get(key)
    if found is None:
        if len(_DISTINCT) >= _DISTINCT_MAX:
            _DISTINCT.clear()
        found = _DISTINCT[key] = _distinct_gpu_names(gpus, width)
    return found


def _distinct_gpu_names(gpus: tuple[GPU, ...], width: int) -> dict[str, str]:
    """Each board's short name (GPU id → name), no two alike where the width allows. Boards that still read
    alike get, in turn, their memory size where theirs differ ('MI250X 64GB'), then the words that tell them
    apart kept over their product line ('RTX 6000 Max-Q')."""
    words = {g.id: _gpu_words(g) for g in gpus}
    lowered = {g.id: {w.lower() for w in words[g.id]} for g in gpus}

    def siblings(g: GPU) -> list[set[str]]:
        # The boards of its product line and number: the other RTX PRO 6000s, not the RTX 6000 Ada.
        numbered = _numbered(words[g.id])
        line = {w.lower() for w in words[g.id][: numbered[-1] + 1]} if numbered else lowered[g.id]
        return [lowered[o.id] for o in gpus if o.id != g.id and line <= lowered[o.id]]

    def with_memory(g: GPU) -> list[str]:
        memory = f"{g.vram_gb:g}GB"
        return words[g.id] if memory.lower() in lowered[g.id] else [*words[g.id], memory]

    names = {g.id: _shorten(words[g.id], width, siblings(g)) for g in gpus}
    for name in {n for n in names.values() if list(names.values()).count(n) > 1}:
        alike = [g for g in gpus if names[g.id] == name]
        distinct_memory = len({g.vram_gb for g in alike}) == len(alike)
        tries = [lambda g: _shorten(with_memory(g), width, siblings(g))] if distinct_memory else []
        tries.append(lambda g: _shorten(words[g.id], width, siblings(g), line_first=True))
        for rename in tries:
            renamed = {g.id: rename(g) for g in alike}
            if len(set(renamed.values())) == len(alike):
                names.update(renamed)
                break
    return names


def setup_label(gpu: GPU, count: int, *, short: bool = False, width: int = 24, among: Sequence[GPU] = ()) -> str:
    """'RTX 3090' for one card, '2× RTX 3090' for two (short names distinct `among` those boards, if given)."""
    name = short_gpu_name(gpu, width - (3 if count > 1 else 0), among) if short else gpu.name
    return f"{count}× {name}" if count > 1 else name
