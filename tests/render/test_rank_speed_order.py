"""/rank sort:speed: the rows are in the order of a figure each row shows, the one its footer names."""

from __future__ import annotations

import re

import pytest

from bot.render.replies import rank_reply
from bot.requests import RankRequest
from bot.service import Service

SVC = Service()
CELL = re.compile(r"([0-9.]+) [0-9.]+m?s!?")


@pytest.mark.parametrize(("gpu", "engine"), [("4090", "vllm"), ("4090", "llama.cpp"), ("t4", "llama.cpp")])
def test_speed_order_follows_the_fastest_figure_each_row_shows(gpu: str, engine: str) -> None:
    reply = rank_reply(SVC, RankRequest.of(gpu=gpu, engine=engine, sort="speed"), locale="en-US")
    embed = reply.embeds[0]
    rows = [line for line in str(embed["description"]).splitlines() if re.match(r"\s*[0-9]+\*? ", line)]
    assert len(rows) == 10, embed["description"]
    fastest = [max(float(tps) for tps in CELL.findall(row)) for row in rows]
    assert fastest == sorted(fastest, reverse=True), rows
    assert "Order: each model's fastest decode tok/s among its formats" in str(embed["footer"]["text"])


def test_cli_speed_rows_name_the_format_they_are_ranked_by() -> None:
    _, rows = SVC.rank(RankRequest.of(gpu="4090", engine="vllm", sort="speed"))
    speeds = [r.best.speed.decode_tps for r in rows]
    assert speeds == sorted(speeds, reverse=True)
    assert all(r.best.speed.decode_tps == max(f.speed.decode_tps for f in r.fitting) for r in rows)
