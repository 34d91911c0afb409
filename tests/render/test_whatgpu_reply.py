"""/whatgpu when nothing meets the limits: one sentence naming the limits that were set, no empty table."""

from __future__ import annotations

import pytest

from bot.render.replies import whatgpu_reply
from bot.render.table import CODE_BLOCK_MAX, display_width
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


@pytest.mark.parametrize(("locale", "none", "count"), [
    ("en-US", "No Mac in the catalog meets that", "setups"), ("zh-CN", "目录中没有能满足要求的 Mac", "种配置"),
])
def test_nothing_to_list_has_no_count_page_or_order(svc: Service, locale: str, none: str, count: str) -> None:
    # It read "0 setups, fewest GPUs first · page 1 of 1" under "Ordered by GPU count…", and named GPU counts to MLX.
    reply = whatgpu_reply(svc, WhatGpuRequest.of(model="kimi-k2", engine="mlx", quant="mlx-8bit"), locale=locale)
    embed = reply.embeds[0]
    text = str(embed["description"])
    assert none in text and count not in text and "1–8" not in text
    assert "footer" not in embed


def test_setups_still_come_as_a_table(svc: Service) -> None:
    text = str(whatgpu_reply(svc, WhatGpuRequest.of(model="qwen3-8b", ctx=8192, engine="llama.cpp"),
                             locale="en-US").embeds[0]["description"])
    assert text.count("```") == 2 and "RTX" in text


def rows(reply_text: str) -> list[str]:
    return [line for line in reply_text.split("```")[1].splitlines() if line.strip()][1:]


def test_every_row_names_its_board_and_format_in_whole_words(svc: Service) -> None:
    # Three RTX PRO 6000 editions read "RTX PRO 6000" three times, and the format column "FP8 (W8A".
    reply = whatgpu_reply(svc, WhatGpuRequest.of(model="llama-3.1-70b", engine="vllm", quant="fp8"),
                          locale="en-US")
    lines = rows(str(reply.embeds[0]["description"]))
    fmt_at = str(reply.embeds[0]["description"]).split("```")[1].strip("\n").splitlines()[0].index("format")
    setups = [line[:fmt_at].rstrip() for line in lines]
    assert len(set(setups)) == len(setups), setups
    assert {"RTX PRO 6000 Max-Q", "RTX PRO 6000 Server"} <= set(setups), setups
    assert all(line[fmt_at:].split()[0] == "FP8" and "(W8A" not in line for line in lines), lines


@pytest.mark.parametrize("locale", ["en-US", "zh-CN"])
def test_the_table_still_fits_a_phone(svc: Service, locale: str) -> None:
    for req in (WhatGpuRequest.of(model="llama-3.1-70b", engine="vllm", quant="fp8"),
                WhatGpuRequest.of(model="qwen3-8b", engine="exllamav2", quant="exl2-4.0bpw")):
        text = str(whatgpu_reply(svc, req, locale=locale).embeds[0]["description"])
        assert all(display_width(line) <= CODE_BLOCK_MAX for line in text.split("```")[1].splitlines()), text


def test_the_kv_cache_asked_is_the_one_computed_and_named(svc: Service) -> None:
    """kv (typed, or a stored default) reaches the estimate and the reply says which: it was computed at f16."""
    def first_rows(kv: str) -> tuple[str, list[str]]:
        text = str(whatgpu_reply(svc, WhatGpuRequest.of(model="qwen3-8b", ctx="32k", engine="vllm", kv=kv),
                                 locale="en-US").embeds[0]["description"])
        return text.splitlines()[0], rows(text)

    f16_head, f16 = first_rows("f16")
    fp8_head, fp8 = first_rows("fp8")
    assert "· KV f16 ·" in f16_head and "· KV fp8 ·" in fp8_head
    assert f16 != fp8, "an fp8 cache leaves more memory free than an f16 one"


def test_a_context_past_the_models_window_is_refused_not_listed(svc: Service) -> None:
    from bot.params import BadValue

    with pytest.raises(BadValue) as refused:
        whatgpu_reply(svc, WhatGpuRequest.of(model="llama-2-7b", ctx="64k"), locale="en-US")
    assert refused.value.text("en-US").startswith("64k is past Llama 2 7B's longest documented context (4k)")
