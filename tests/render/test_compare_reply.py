"""/compare names the one format both sides are read in, and says so truthfully when it does not fit both."""

from __future__ import annotations

import pytest

from bot.params import BadValue
from bot.render.replies import compare_reply
from bot.requests import CompareRequest
from bot.service import Service

SVC = Service()


def embed(locale: str = "en-US", **options: str) -> dict:
    return compare_reply(SVC, CompareRequest.of(**options), locale=locale).embeds[0]


@pytest.mark.parametrize("options", [
    {"gpu": "t4", "model": "qwen3-8b", "model2": "llama-3.1-70b"},  # one side does not fit
    {"gpu": "rtx 4090", "model": "llama-3.1-70b", "gpu2": "rtx 3090"},  # neither does
])
def test_no_format_fitting_both_is_not_called_one_that_fits(options: dict[str, str]) -> None:
    en = embed(**options)
    said = "None of the 4-, 8- and 16-bit formats fits both; both shown in Q4_K_M, the smallest of them"
    assert said in en["description"]
    assert "the highest precision that fits both" not in en["description"]
    zh = embed("zh-CN", **options)
    assert "4/8/16 位格式都无法两边同时放下；两边都按其中最小的 Q4_K_M 显示" in zh["description"]
    assert "两者都放得下的最高精度" not in zh["description"]
    # The rest of the answer stays: both sides, each with its verdict.
    assert len(en["fields"]) == 2 and any("does not fit" in f["value"] for f in en["fields"])


def test_a_format_that_fits_both_is_still_said_to() -> None:
    en = embed(gpu="rtx 4090", model="qwen3-8b", gpu2="rtx 3090")
    assert "Both in F16: the highest precision that fits both" in en["description"]


def test_the_side_that_does_not_fit_quotes_no_speed() -> None:
    sides = {f["name"]: f["value"] for f in embed(gpu="t4", model="qwen3-8b", model2="llama-3.1-70b")["fields"]}
    big = sides["Llama 3.1 70B · NVIDIA T4"]
    assert "Speed —: it does not fit in VRAM" in big and "tok/s" not in big and "TTFT" not in big
    assert "tok/s" in sides["Qwen3-8B · NVIDIA T4"]


@pytest.mark.parametrize(("options", "said"), [
    ({"gpu": "4090", "gpu2": "3090", "model": "qwen3-8b", "model2": "qwen3-14b"},
     "gpu2 and model2 together change both the GPU and the model, so neither difference could be read from the "
     "figures: compare two GPUs for one model (gpu2) or two models on one GPU (model2)"),
    ({"gpu": "4090", "gpu2": "rtx 4090", "model": "qwen3-8b"},
     "both sides are Qwen3-8B on NVIDIA GeForce RTX 4090: give a different gpu2 (to compare GPUs) or model2 (to "
     "compare models)"),
    ({"gpu": "4090", "model": "qwen3-8b", "model2": "Qwen/Qwen3-8B"},
     "both sides are Qwen3-8B on NVIDIA GeForce RTX 4090: give a different gpu2 (to compare GPUs) or model2 (to "
     "compare models)"),
])
def test_sides_that_are_not_like_for_like_are_refused_before_any_answer(options: dict[str, str], said: str) -> None:
    # The footer says "like for like": one thing, the GPU or the model, differs between the sides.
    with pytest.raises(BadValue) as refused:
        CompareRequest.of(**options).check(SVC)
    assert str(refused.value) == said
    assert refused.value.text("zh-CN").startswith(("同时给出 gpu2 和 model2", "两边都是"))


@pytest.mark.parametrize("options", [
    {"gpu": "4090", "gpu2": "4090", "model": "qwen3-8b", "model2": "qwen3-14b"},  # gpu2 restating the GPU
    {"gpu": "4090", "gpu2": "3090", "model": "qwen3-8b", "model2": "qwen3-8b"},  # model2 restating the model
    {"gpu": "4090", "gpu2": "2x 4090", "model": "qwen3-8b"},  # one card against two
])
def test_sides_differing_in_one_thing_are_compared(options: dict[str, str]) -> None:
    CompareRequest.of(**options).check(SVC)
