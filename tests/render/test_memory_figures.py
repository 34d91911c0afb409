"""A memory breakdown as replies and the CLI print it: parts that add up to the total beside them, each within one
last digit of its own figure, and by how many MiB a total that prints as the usable memory misses it."""

from __future__ import annotations

import pytest
from hypothesis import given
from hypothesis import strategies as st

from bot.render.memory_figures import gib_figure, over_mib, parts_adding_up
from estimator.units import GIB, MIB


def test_parts_rounded_on_their_own_that_miss_the_total_are_brought_to_it() -> None:
    parts = [4.36 * GIB, 1.16 * GIB, 0.56 * GIB]  # 6.08: each alone rounds to 4.4 + 1.2 + 0.6 = 6.2, total 6.1
    assert [gib_figure(p) for p in parts] == ["4.4", "1.2", "0.6"] and gib_figure(sum(parts)) == "6.1"
    shown = parts_adding_up(parts, sum(parts))
    assert shown == ["4.3", "1.2", "0.6"]  # the largest part (the weights) gives back the tenth, the KV cache keeps it


@given(st.lists(st.floats(min_value=0, max_value=200 * GIB), min_size=1, max_size=8), st.sampled_from([1, 2]))
def test_shown_parts_always_add_up_and_stay_within_a_digit(parts: list[float], digits: int) -> None:
    total = sum(parts)
    shown = parts_adding_up(parts, total, digits)
    unit = 10**digits

    def value(figure: str) -> float:  # thousands are grouped ("1,024.5"), as every count is
        return float(figure.replace(",", ""))

    assert sum(round(value(s) * unit) for s in shown) == round(value(gib_figure(total, digits)) * unit)
    assert all(abs(value(s) - p / GIB) < 1 / unit + 1e-9 for s, p in zip(shown, parts, strict=True))


@pytest.mark.parametrize(("over_bytes", "digits", "said"), [
    (0.4 * MIB, 1, "0.4"),
    (12 * MIB, 1, "12"),
    (-1.0, 1, ""),  # fits
    (12 * MIB, 2, ""),  # 15.01 / 15.00 already reads as more
])
def test_over_by_is_said_only_where_the_shown_figures_are_equal(over_bytes: float, digits: int, said: str) -> None:
    usable = 15 * GIB
    assert over_mib(usable + over_bytes, usable, digits) == said


@pytest.mark.parametrize(("gpu", "model", "ctx"), [("h100 sxm", "deepseek-r1", "8k"),
                                                   ("4090", "ERNIE-4.5-0.3B", "32k")])
def test_one_kv_cache_reads_the_same_beside_every_format(gpu: str, model: str, ctx: str) -> None:
    from bot.render.memory_figures import memory_figures
    from bot.requests import FitRequest
    from bot.service import Service

    result = Service().fit(FitRequest.of(gpu=gpu, model=model, ctx=ctx))
    assert len({o.memory.kv_cache_bytes for o in result.options}) == 1
    assert len({memory_figures(o.memory).kv_cache for o in result.options}) == 1
