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


def test_ollama_is_estimated_as_the_llama_server_it_now_runs() -> None:
    """Since v0.30.0 Ollama runs every GGUF model in upstream llama-server: its estimate takes llama.cpp's fitted
    constants (what its own runners' published runs fitted is kept for their rows alone), and it still samples each
    token on the host."""
    from catalog import load_catalog
    from estimator.calibration.model import engine_group
    from estimator.engines import decode_coefficients
    from estimator.speed import decode_seconds_per_step

    cat = load_catalog()
    q, g, m = cat.quant("q4_k_m"), cat.gpu("nvidia-rtx-4090"), cat.model("qwen3-8b")
    assert decode_coefficients("ollama", q, g) == decode_coefficients("llama.cpp", q, g)
    assert decode_seconds_per_step(m, q, g, "ollama", 512, "f16") > decode_seconds_per_step(m, q, g, "llama.cpp", 512,
                                                                                             "f16")
    assert engine_group("ollama") == "llama.cpp" != engine_group("ollama", "2025-09-14")
    assert parse_engine("Ollama") == "ollama" and parse_engine("LM Studio") == "llama.cpp"


@pytest.mark.parametrize(("typed", "engine"), [
    ("TensorRT-LLM", "trt-llm"), ("trtllm", "trt-llm"), ("TRT-LLM", "trt-llm"), ("exl3", "exllamav3"),
    ("ExLlama3", "exllamav3"), ("EXL2", "exllamav2"),
])
def test_engines_as_people_name_them(typed: str, engine: str) -> None:
    assert parse_engine(typed) == engine


def test_exl2_on_exllamav3_suggests_exllamav2_and_exl3_the_reverse() -> None:
    with pytest.raises(BadValue) as err:
        SVC.quant("exl2-4.0bpw", "exllamav3")
    assert "try engine:exllamav2" in str(err.value) and "EXL3 4.0 bpw" in str(err.value)
    with pytest.raises(BadValue) as err:
        SVC.quant("exl3-4.0bpw", "exllamav2")
    assert "try engine:exllamav3" in str(err.value)
    assert SVC.quant("int4", "exllamav3").id == "exl3-4.0bpw"
    assert SVC.quant("fp8", "trt-llm").id == "fp8"


@pytest.mark.parametrize(("gpu", "engine", "words"), [
    ("rtx 4090", "mlx", "MLX runs on Apple GPUs, not on NVIDIA GeForce RTX 4090"),
    ("t4", "exllamav3", "needs an Ampere or newer GPU (compute capability 8.0); NVIDIA T4 is older"),
    ("rx 7900 xtx", "trt-llm", "TensorRT-LLM runs on NVIDIA GPUs, not on AMD Radeon RX 7900 XTX"),
])
def test_rank_refuses_an_engine_the_gpu_does_not_run(gpu: str, engine: str, words: str) -> None:
    from bot.requests import RankRequest

    with pytest.raises(BadValue) as err:
        SVC.rank(RankRequest.of(gpu=gpu, engine=engine))
    assert words in str(err.value)
    assert SVC.rank(RankRequest.of(gpu="rtx 4090", engine="exllamav3"))[1]
