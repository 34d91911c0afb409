"""A trained format (Gemma 3's QAT Q4_0) exists only for the models its publisher released in it: asked for any other
model, /fit, /whatgpu and /compare refuse it with the format it converts to, and /rank lists only the released ones."""

from __future__ import annotations

from collections.abc import Callable

import pytest

from bot.params import BadValue
from bot.render.text import t
from bot.requests import CompareRequest, FitRequest, RankRequest, WhatGpuRequest
from bot.service import Service
from catalog import load_catalog
from estimator.engines import released_for

SVC = Service()
CAT = load_catalog()


def test_only_gemma_3_was_released_in_qat_q4_0() -> None:
    qat = CAT.quant("q4_0-qat")
    released = {m.id for m in CAT.models if released_for(qat, m)}
    assert released and all(CAT.model(m).family == "Gemma 3" for m in released)
    assert "gemma-3-27b" in released and "qwen3-4b" not in released
    # A converted format exists for every model.
    assert all(released_for(CAT.quant("q4_0"), m) for m in CAT.models)


@pytest.mark.parametrize("ask", [
    lambda: SVC.fit(FitRequest.of(gpu="t4", model="qwen3-4b", quant="qat")),
    lambda: SVC.what_gpu(WhatGpuRequest.of(model="qwen3-8b", quant="qat")),
    lambda: CompareRequest.of(gpu="t4", model="gemma3:4b-it-qat", model2="qwen3-4b").cache_key(SVC),
])
def test_a_model_never_released_in_it_is_refused_with_the_converted_format(ask: Callable[[], object]) -> None:
    with pytest.raises(BadValue) as err:
        ask()
    assert err.value.key == "quant.not_released" and err.value.values["suggestion"] == "q4_0"
    said = t("en-US", err.value.key, **err.value.values)
    assert said.startswith("QAT Q4_0 is a release of Gemma 3") and said.endswith("try quant:q4_0"), said
    assert "Gemma 3 的官方发布格式" in t("zh-CN", err.value.key, **err.value.values)


def test_the_released_model_still_runs_in_it() -> None:
    result = SVC.fit(FitRequest.of(gpu="t4", model="gemma-3-4b", quant="qat"))
    assert [o.quant.id for o in result.options] == ["q4_0-qat"]


def test_a_ranking_in_it_lists_only_the_released_models() -> None:
    _, rows = SVC.rank(RankRequest.of(gpu="rtx 4090", quant="qat"))
    assert rows and {CAT.model(r.model.id).family for r in rows} == {"Gemma 3"}


@pytest.mark.parametrize("quant", ["awq", "q4_k_mx"])
def test_a_refusal_lists_the_engine_formats_without_the_trained_ones(quant: str) -> None:
    """The list after a wrong-engine or unknown format is the engine's, for any model: QAT Q4_0 is Gemma 3's alone,
    so it is not offered there (asked for by name, it still resolves, and is refused for other models)."""
    with pytest.raises(BadValue) as err:
        SVC.fit(FitRequest.of(gpu="t4", model="qwen3-8b", quant=quant))
    said = t("en-US", err.value.key, **err.value.values)
    assert "Q4_K_M" in said and "QAT" not in said, said


def test_whatgpu_on_ollama_lists_setups_for_the_one_build_ollama_ships() -> None:
    _, _, formats = SVC.whatgpu_question(WhatGpuRequest.of(model="gpt-oss-120b", engine="ollama"))
    assert [f.id for f in formats] == ["mxfp4"]
    _, _, formats = SVC.whatgpu_question(WhatGpuRequest.of(model="gpt-oss-120b"))
    assert [f.id for f in formats] != ["mxfp4"]  # llama.cpp runs the other GGUF types as well: one level, int4
