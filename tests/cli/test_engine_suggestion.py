"""A format the chosen engine does not run is refused with the engine that does."""

from __future__ import annotations

import pytest

from bot.params import BadValue, parse_engine
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


def test_exl2_on_llama_cpp_suggests_exllamav2() -> None:
    with pytest.raises(BadValue) as err:
        SVC.quant("exl2-4.0bpw", "llama.cpp")
    assert err.value.key == "quant.other_engine" and "try engine:exllamav2" in str(err.value)


@pytest.mark.parametrize(("engine", "fmt"), [("ollama", "q4_k_m"), ("sglang", "awq-int4"), ("exllamav2", "gptq-int4")])
def test_engines_that_load_another_engines_formats_take_them(engine: str, fmt: str) -> None:
    assert SVC.quant(fmt, parse_engine(engine)).id == fmt


def test_gguf_on_sglang_suggests_a_llama_cpp_engine() -> None:
    with pytest.raises(BadValue) as err:
        SVC.quant("q4_k_m", "sglang")
    assert "try engine:llama.cpp" in str(err.value)


def test_ollama_is_estimated_with_its_own_fitted_constants() -> None:
    """Ollama runs llama.cpp with its own defaults; its engine group is fitted on Ollama's published runs."""
    from catalog import load_catalog
    from estimator.engines import decode_coefficients

    cat = load_catalog()
    q, g = cat.quant("q4_k_m"), cat.gpu("nvidia-rtx-4090")
    assert decode_coefficients("ollama", q, g) != decode_coefficients("llama.cpp", q, g)
    assert parse_engine("Ollama") == "ollama" and parse_engine("LM Studio") == "llama.cpp"
