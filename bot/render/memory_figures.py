"""A memory breakdown as every reply and the CLI print it: parts that add up to the total shown, and by how much
a total that prints as the usable memory misses it. The embed and the terminal table both format through here,
so the two never word one figure two ways."""

from __future__ import annotations

import math
from collections.abc import Sequence
from dataclasses import dataclass

from estimator.finetune import FinetuneMemory, PeakTerm
from estimator.memory import MemoryBreakdown
from estimator.units import GIB, MIB, gib_text

REPLY_DIGITS = 1  # GiB decimals in an embed ("14.3", as `estimator.units.gib_text`)
# Below this many MiB past the usable memory, the overshoot keeps a decimal ("0.4 MiB"), so it never reads "0".
OVER_MIB_DECIMAL_BELOW = 10


def gib_figure(nbytes: float, digits: int = REPLY_DIGITS) -> str:
    return gib_text(nbytes, digits)


def parts_adding_up(parts: Sequence[float], total: float, digits: int = REPLY_DIGITS) -> list[str]:
    """Each part in GiB, rounded so the shown parts add up to the shown total: rounding each on its own printed
    4.4 + 1.2 + 0.6 beside a total of 6.1. Each part is rounded as itself, and the last digits the sum misses or has
    too many go to the largest parts rounded the other way, one each: the KV cache of one context then reads the
    same beside every format, and the weights (different in each anyway) take the difference. No underlying number
    changes."""
    scale = 10**digits
    target = round(round(total / GIB, digits) * scale)  # the total as shown (`gib_figure` rounds the same way)
    exact = [p / GIB * scale for p in parts]
    units = [math.floor(x + 0.5) for x in exact]
    short = target - sum(units)
    # Only a part rounded the other way may move (so each stays within one last digit of its own figure); there are
    # always enough of them, as the sum's miss is made of their rounding.
    movable = [i for i in range(len(parts)) if (units[i] < exact[i] if short > 0 else units[i] > exact[i])]
    for i in sorted(movable, key=lambda i: -parts[i])[: abs(short)]:
        units[i] += 1 if short > 0 else -1
    return [f"{u / scale:,.{digits}f}" for u in units]


def over_mib(total: float, usable: float, digits: int = REPLY_DIGITS) -> str:
    """MiB past the usable memory, for a total that does not fit yet prints as the usable figure ("15.0 of
    15.0"): the verdict then says why. Empty otherwise."""
    over = total - usable
    if over <= 0 or gib_figure(total, digits) != gib_figure(usable, digits):
        return ""
    mib = over / MIB
    return f"{mib:.1f}" if mib < OVER_MIB_DECIMAL_BELOW else f"{mib:.0f}"


@dataclass(frozen=True)
class MemoryFigures:
    weights: str
    kv_cache: str
    overhead: str
    total: str
    usable: str
    over_mib: str  # "" unless the total misses yet prints as `usable` (see `over_mib`)


def memory_figures(memory: MemoryBreakdown, digits: int = REPLY_DIGITS) -> MemoryFigures:
    """The GPU's parts, its total and usable memory as shown at `digits` GiB decimals."""
    weights, kv, overhead = parts_adding_up(
        (memory.weights_bytes, memory.kv_cache_bytes, memory.overhead_bytes), memory.total_bytes, digits)
    return MemoryFigures(weights=weights, kv_cache=kv, overhead=overhead,
                         total=gib_figure(memory.total_bytes, digits), usable=gib_figure(memory.usable_bytes, digits),
                         over_mib=over_mib(memory.total_bytes, memory.usable_bytes, digits))


@dataclass(frozen=True)
class PeakFigures:
    """A fine-tuning peak as shown: the terms it holds, adding up to `total`, and what other moments of the
    step hold beyond it (not part of the peak, so never summed into it)."""

    held: list[tuple[PeakTerm, str]]
    apart: list[tuple[PeakTerm, str]]
    total: str


def peak_figures(memory: FinetuneMemory, digits: int = REPLY_DIGITS) -> PeakFigures:
    # Terms of zero bytes (no sharded gathers, no step temporaries) are left out rather than shown as 0.0;
    # apart terms that print as zero are too: they change nothing a reader could act on.
    held = [(term, size) for term, size in memory.at_peak if size > 0]
    figures = parts_adding_up([size for _, size in held], memory.total, digits)
    apart = [(term, gib_figure(size, digits)) for term, size in memory.apart]
    zero = gib_figure(0.0, digits)
    return PeakFigures(held=[(term, f) for (term, _), f in zip(held, figures, strict=True)],
                       apart=[(term, f) for term, f in apart if f != zero],
                       total=gib_figure(memory.total, digits))
