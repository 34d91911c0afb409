"""The render pool's chart drawing: one drawing per digest, and an honest guess of how long a new chart takes."""

from __future__ import annotations

import asyncio

import pytest

from bot.render import charts
from bot.render.pool import FIRST_DRAW_GUESS_S, RenderPool
from bot.service import Service


def job(title: str) -> charts.ChartJob:
    return charts.ChartJob("rank_chart", ([],), {"title": title})


async def test_a_chart_is_expected_soon_only_when_nothing_is_queued_before_it() -> None:
    pool = RenderPool(Service(), workers=0)
    try:
        assert pool.expected_draw_s([job("a")]) == pytest.approx(FIRST_DRAW_GUESS_S)
        [png] = await pool.draw([job("a")])
        assert charts.png_size(png) == (1200, 675)
        assert pool.expected_draw_s([job("a")]) == 0, "drawn before: served from the digest cache"
        alone = pool.expected_draw_s([job("b")])
        assert alone > 0
        queued = [asyncio.ensure_future(pool.draw([job(f"q{i}")])) for i in range(6)]
        for _ in range(3):  # a few loop turns: each hands its drawing to the executor
            await asyncio.sleep(0)
        # Behind six others on one lane: seven drawings' time (a drawing that finishes meanwhile moves the mean).
        assert pool.expected_draw_s([job("b")]) > 5 * alone
        await asyncio.gather(*queued)
        assert pool.expected_draw_s([job("q3")]) == 0
    finally:
        pool.close()
