"""Options are parsed once, on receipt, and a request names one cached answer however it is spelled."""

from __future__ import annotations

from typing import Any

import pytest

from bot.cogs.common import TokensTransformer
from bot.params import BadValue
from bot.requests import FitRequest, RankRequest
from bot.service import Service

SVC = Service()
NO_INTERACTION: Any = None  # the transformers read only the value


async def test_ctx_option_becomes_tokens() -> None:
    assert await TokensTransformer("ctx").transform(NO_INTERACTION, "32k") == 32 * 1024
    assert await TokensTransformer("ctx").transform(NO_INTERACTION, "1M") == 1024 * 1024


async def test_a_bad_ctx_is_refused_with_its_name() -> None:
    with pytest.raises(BadValue) as refused:
        await TokensTransformer("ctx").transform(NO_INTERACTION, "32q")
    text = refused.value.text("en-US")
    assert text.startswith("ctx must be a token count") and "'32q'" in text


async def test_prompt_may_be_empty_but_ctx_may_not() -> None:
    assert await TokensTransformer("prompt", allow_zero=True).transform(NO_INTERACTION, "0") == 0
    with pytest.raises(BadValue):
        await TokensTransformer("ctx").transform(NO_INTERACTION, "0")


def test_two_spellings_of_one_fit_share_a_cache_key() -> None:
    typed = FitRequest(gpu="T4", model="Qwen/Qwen3-8B", ctx="8k", quant="q4_k_m")
    canonical = FitRequest(gpu="nvidia-t4", model="qwen3-8b", ctx=8192, quant="Q4_K_M")
    assert typed.cache_key(SVC) == canonical.cache_key(SVC)
    assert typed.cache_key(SVC) != FitRequest(gpu="T4", model="qwen3-8b", ctx="16k", quant="q4_k_m").cache_key(SVC)


def test_rank_cache_key_names_the_resolved_gpu() -> None:
    key = RankRequest(gpu="2x rtx 3090", ctx="32k").cache_key(SVC)
    assert (key["gpu"], key["gpus"], key["engine"], key["kv"]) == ("nvidia-rtx-3090", 2, "llama.cpp", "f16")
