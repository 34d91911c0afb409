"""A context nobody typed (the built-in 8k, or a stored default) yields to a model whose window is shorter, and the
answer says so; a typed one past the window is still refused."""

from __future__ import annotations

import pytest

from bot.params import BadValue
from bot.render.replies import compare_reply, fit_reply
from bot.requests import CompareRequest, FitRequest, Stored, WhatGpuRequest
from bot.resume import decode_request, encode_request
from bot.service import Service

SVC = Service()


def description(req: FitRequest) -> str:
    return str(fit_reply(SVC, req, locale="en-US").embeds[0]["description"])


def test_the_built_in_default_is_answered_at_a_shorter_window() -> None:
    req = FitRequest.of(gpu="t4", model="llama2")
    q, _ = SVC.base_query(req)
    assert q.model.max_context == 4096 and q.ctx == 4096
    text = description(req)
    assert "context 4k" in text.splitlines()[0]
    assert "Context 4k: the longest Llama 2 7B takes (the default, 8k, is longer)" in text
    # A model whose window holds the default is answered at the default, with nothing said.
    qwen = FitRequest.of(gpu="t4", model="qwen3-8b")
    assert SVC.base_query(qwen)[0].ctx == 8192 and "whole window" not in description(qwen)


def test_a_typed_context_past_the_window_is_still_refused() -> None:
    with pytest.raises(BadValue) as err:
        SVC.base_query(FitRequest.of(gpu="t4", model="llama2", ctx="8k"))
    assert err.value.key == "ctx.too_long"


def test_a_stored_default_yields_too_and_is_named() -> None:
    built = FitRequest.build(Stored({"ctx": 32768}, {"ctx": "me"}), gpu="t4", model="phi-1")
    q, _ = SVC.base_query(built.request)
    assert q.ctx == q.model.max_context == 2048
    assert "(the default, 32k, is longer)" in description(built.request)
    # Typed in the command, the same 32k is the asker's and is refused.
    with pytest.raises(BadValue):
        SVC.base_query(FitRequest.build(Stored({"ctx": 32768}, {"ctx": "me"}), gpu="t4", model="phi-1",
                                        ctx="32k").request)


def test_whatgpu_and_compare_take_the_shorter_window() -> None:
    model, ctx, _ = SVC.whatgpu_question(WhatGpuRequest.of(model="llama2"))
    assert ctx == model.max_context == 4096
    # Two models: both sides at the shorter window, like for like.
    reply = compare_reply(SVC, CompareRequest.of(gpu="t4", model="llama2", model2="qwen3-8b"), locale="en-US")
    assert "context 4k" in str(reply.embeds[0]["description"]).splitlines()[0]


def test_a_resumed_request_keeps_its_context_unasked() -> None:
    req, _ = decode_request(encode_request(FitRequest.of(gpu="t4", model="llama2"), 1, None))
    assert isinstance(req, FitRequest) and req.ctx_yields and SVC.base_query(req)[0].ctx == 4096


@pytest.mark.parametrize(("gpu", "gpus"), [("M2 Max", 2), ("2x M2 Ultra", 1), ("2x dgx spark", 1)])
def test_unified_memory_machines_do_not_pool(gpu: str, gpus: int) -> None:
    with pytest.raises(BadValue) as err:
        SVC.base_query(FitRequest.of(gpu=gpu, model="qwen3-8b", gpus=gpus))
    assert err.value.key == "gpus.unified"
    assert SVC.gpu_choice(gpu.removeprefix("2x "), 1).count == 1


def test_a_native_1m_window_is_not_starred_as_rope_scaled_in_rank() -> None:
    from bot.render.replies import rank_reply
    from bot.requests import RankRequest

    reply = rank_reply(SVC, RankRequest.of(gpu="h200 sxm", ctx="1M"), locale="en-US")
    table = str(reply.embeds[0]["description"]).split("```")[1]
    row = next(line for line in table.splitlines() if "Qwen2.5-7B-Instruct-1M" in line)
    assert "*" not in row.split("Qwen2.5")[0], row


def test_headers_name_engines_as_their_projects_do_and_amounts_as_typed() -> None:
    from bot.render.replies import whatgpu_reply

    fit_head = description(FitRequest.of(gpu="h100 sxm", model="qwen3-8b", engine="TensorRT-LLM")).splitlines()[0]
    assert "· TensorRT-LLM ·" in fit_head and "trt-llm" not in fit_head
    reply = whatgpu_reply(SVC, WhatGpuRequest.of(model="qwen3-8b", min_tps=200, budget=2000), locale="en-US")
    head = str(reply.embeds[0]["description"]).splitlines()[0]
    assert "at least 200 tok/s" in head and "budget $2,000" in head
    assert ("1 setup," in head) or ("1 setups" not in head)


def test_compare_and_whatgpu_say_why_the_context_is_shorter() -> None:
    from bot.render.replies import whatgpu_reply

    # The note names the side whose window set it, wherever it stands.
    reply = compare_reply(SVC, CompareRequest.of(gpu="t4", model="qwen3-8b", model2="llama2"), locale="en-US")
    text = str(reply.embeds[0]["description"])
    assert "Context 4k: the longest Llama 2 7B takes (the default, 8k, is longer)" in text
    what = whatgpu_reply(SVC, WhatGpuRequest.of(model="llama2"), locale="en-US")
    assert "Context 4k: the longest Llama 2 7B takes" in str(what.embeds[0]["description"])


def test_a_typed_context_a_hair_past_the_window_says_what_it_was_read_as() -> None:
    text = description(FitRequest.of(gpu="t4", model="llama2", ctx="4200"))
    assert "Context 4k: Llama 2 7B's window, which is what 4,200 means for it" in text


def test_compare_takes_the_one_format_a_tag_names_and_refuses_two() -> None:
    one = compare_reply(SVC, CompareRequest.of(gpu="4090", model="llama3.1:8b-instruct-q5_K_M", gpu2="3090"),
                        locale="en-US")
    assert "Both in Q5_K_M, as asked" in str(one.embeds[0]["description"])
    with pytest.raises(BadValue) as err:
        compare_reply(SVC, CompareRequest.of(gpu="4090", model="llama3.1:8b-instruct-q5_K_M",
                                             model2="llama3.1:8b-instruct-q8_0"), locale="en-US")
    assert err.value.key == "compare.tags_differ"


def test_a_stored_context_within_the_rope_scaled_window_is_kept() -> None:
    built = FitRequest.build(Stored({"ctx": 131072}, {"ctx": "me"}), gpu="4090", model="qwen3-8b")
    assert SVC.base_query(built.request)[0].ctx == 131072


def test_a_socketed_data_center_apu_is_built_several_to_a_node() -> None:
    q, _ = SVC.base_query(FitRequest.of(gpu="4x MI300A", model="llama-3.1-70b", engine="vllm"))
    assert q.gpus == 4 and q.gpu.unified_memory


def test_ollama_answers_say_which_context_ollama_would_load_the_model_at() -> None:
    """Ollama sets its own context when none is given, by the memory of its GPUs (4k, 32k, 256k; at most the model's
    window): an Ollama answer at another context names it, one whose context was typed does not."""
    note = "Ollama itself would load Qwen3-8B at 32k here"
    assert note in description(FitRequest.of(gpu="4090", model="qwen3-8b", engine="ollama"))
    assert note not in description(FitRequest.of(gpu="4090", model="qwen3-8b", engine="ollama", ctx="8k"))
    assert "Ollama itself" not in description(FitRequest.of(gpu="4090", model="qwen3-8b"))
    # 12 GB: Ollama's own 4k.
    assert "load Qwen3-8B at 4k here" in description(FitRequest.of(gpu="rtx 3060", model="qwen3-8b", engine="ollama"))
    llama2 = description(FitRequest.of(gpu="2x 3090", model="llama2", engine="ollama"))
    assert "Ollama itself" not in llama2  # Ollama's 256k yields to Llama 2's 4k window, the context answered
    zh = str(fit_reply(SVC, FitRequest.of(gpu="4090", model="qwen3-8b", engine="ollama"), locale="zh-CN")
             .embeds[0]["description"])
    assert "Ollama 本身会在此配置上以 32k 上下文加载 Qwen3-8B" in zh
