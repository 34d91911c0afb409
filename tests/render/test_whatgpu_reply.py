"""/whatgpu when nothing meets the limits: one sentence naming the limits that were set, no empty table."""

from __future__ import annotations

import pytest

from bot.render.replies import whatgpu_reply
from bot.requests import WhatGpuRequest
from bot.service import Service


@pytest.fixture(scope="module")
def svc() -> Service:
    return Service()


@pytest.mark.parametrize(("locale", "min_tps", "budget", "says", "not_said"), [
    ("en-US", 5000.0, None, "a lower `min_tps`", "`budget`"),
    ("en-US", None, 1.0, "a larger `budget`", "`min_tps`"),
    ("zh-CN", 5000.0, 1.0, "更低的 `min_tps`、更高的 `budget`", "```"),
])
def test_no_setup_is_one_sentence(svc: Service, locale: str, min_tps: float | None, budget: float | None,
                                  says: str, not_said: str) -> None:
    reply = whatgpu_reply(svc, WhatGpuRequest.of(model="qwen3-8b", ctx=8192, min_tps=min_tps, budget=budget,
                                                 engine="llama.cpp"), locale=locale)
    text = str(reply.embeds[0]["description"])
    assert says in text
    assert not_said not in text.split("\n", 1)[1]
    assert "```" not in text, "no empty code block"


def test_setups_still_come_as_a_table(svc: Service) -> None:
    text = str(whatgpu_reply(svc, WhatGpuRequest.of(model="qwen3-8b", ctx=8192, engine="llama.cpp"),
                             locale="en-US").embeds[0]["description"])
    assert text.count("```") == 2 and "RTX" in text
