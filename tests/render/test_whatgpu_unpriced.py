"""/whatgpu under a budget: setups without a known launch price are left out, and the reply says how many."""

from __future__ import annotations

import pytest

from bot.render.replies import whatgpu_reply
from bot.requests import WhatGpuRequest
from bot.service import Service


@pytest.fixture(scope="module")
def svc() -> Service:
    return Service()


@pytest.mark.parametrize(("locale", "note"), [
    ("en-US", "more setups run it but are left out: their launch prices are unknown"),
    ("zh-CN", "种配置能运行但未列出：其发布价格未知"),
])
def test_a_budget_says_how_many_setups_have_no_known_price(svc: Service, locale: str, note: str) -> None:
    req = WhatGpuRequest.of(model="qwen3-14b", budget=600, engine="llama.cpp")
    unpriced = svc.what_gpu(req).unpriced
    assert unpriced > 0
    text = str(whatgpu_reply(svc, req, locale=locale).embeds[0]["description"])
    assert f"{unpriced} " in text and note in text


def test_no_budget_no_note(svc: Service) -> None:
    req = WhatGpuRequest.of(model="qwen3-14b", engine="llama.cpp")
    assert svc.what_gpu(req).unpriced == 0
    text = str(whatgpu_reply(svc, req, locale="en-US").embeds[0]["description"])
    assert "launch price" not in text
