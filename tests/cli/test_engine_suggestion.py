"""A format the chosen engine does not run is refused with the engine that does."""

from __future__ import annotations

import pytest

from bot.params import BadValue
from bot.service import Service

SVC = Service()


def test_awq_on_llama_cpp_suggests_vllm() -> None:
    with pytest.raises(BadValue) as err:
        SVC.quant("awq-int4", "llama.cpp")
    assert err.value.key == "quant.other_engine"
    assert "try engine:vllm" in str(err.value)
    assert "vLLM/SGLang" in err.value.text("en") and "engine:vllm" in err.value.text("zh-CN")


def test_gguf_on_vllm_suggests_llama_cpp() -> None:
    with pytest.raises(BadValue) as err:
        SVC.quant("q4_k_m", "vllm")
    assert "try engine:llama.cpp" in str(err.value)


def test_a_format_only_an_unestimated_engine_runs_says_so() -> None:
    with pytest.raises(BadValue) as err:
        SVC.quant("exl2-4.0bpw", "llama.cpp")
    assert err.value.key == "quant.no_engine" and "ExLlamaV2" in str(err.value)
