"""Requests are built one way: options as people type them, stored defaults for what was left out, and a
refusal in words (never a pydantic dump) for what cannot be used."""

from __future__ import annotations

from typing import Any

import pytest

from bot.params import BadValue
from bot.requests import (
    CompareRequest,
    DailyRequest,
    FinetuneRequest,
    FitRequest,
    GpuRequest,
    RankRequest,
    ReportAddRequest,
    ReportHideRequest,
    ReportModerateRequest,
    SettingsRequest,
    Stored,
    WhatGpuRequest,
)
from bot.resume import NotResumable, decode_request, encode_request
from bot.service import Service

SVC = Service()
REPORT = {"gpu": "T4", "model": "qwen3-8b", "quant": "Q4_K_M", "engine": "llama.cpp"}


def refusal(kind: Any, **options: Any) -> str:
    with pytest.raises(BadValue) as refused:
        kind.of(**options)
    return refused.value.text("en-US")


def test_options_are_read_as_people_type_them() -> None:
    req = FitRequest.of(gpu="T4", model="qwen3-8b", ctx="32k", engine="LM Studio", kv="q8", prompt="0")
    assert (req.ctx, req.engine, req.kv, req.prompt) == (32768, "llama.cpp", "q8_0", 0)


def test_options_left_out_take_the_defaults_stated_once() -> None:
    req = FitRequest.of(gpu="T4", model="qwen3-8b", quant=None, ctx=None, engine=None, kv=None, gpus=None)
    assert (req.ctx, req.engine, req.kv, req.prompt, req.gpus, req.batch) == (8192, "llama.cpp", "f16", 2048, 1, 1)
    assert FinetuneRequest.of(gpu="T4", model="qwen3-8b").seq == 2048
    assert RankRequest.of(gpu="T4").sort == "quality"


@pytest.mark.parametrize(("kind", "options", "text"), [
    (FitRequest, {"gpu": "T4"}, "model is missing"),
    (FitRequest, {"model": "qwen3-8b"}, "gpu is missing: give `gpu:`"),
    (FitRequest, {"gpu": "T4", "model": "qwen3-8b", "gpus": 0}, "gpus must be between 1 and 8"),
    (FitRequest, {"gpu": "T4", "model": "qwen3-8b", "batch": 2.5}, "batch must be a whole number"),
    (FitRequest, {"gpu": "T4", "model": "qwen3-8b", "ctx": "lots"}, "ctx must be a token count like 8192"),
    (FitRequest, {"gpu": "T4", "model": "qwen3-8b", "engine": "tgi"}, "engine must be one of llama.cpp"),
    (FitRequest, {"gpu": "T4", "model": "qwen3-8b", "kv": "int3"}, "kv must be one of f16"),
    (FitRequest, {"gpu": "T4", "model": "qwen3-8b", "colour": "red"}, "colour is not an option here"),
    (RankRequest, {"gpu": "T4", "sort": "fame"}, "sort must be one of quality, speed, size"),
    (GpuRequest, {"gpu": "T4", "ctx": "-1"}, "ctx must be a token count"),
    (CompareRequest, {"gpu": "T4", "model": "qwen3-8b"}, "give gpu2 (to compare GPUs) or model2"),
    (WhatGpuRequest, {"model": "qwen3-8b", "max_gpus": 9}, "max_gpus must be between 1 and 8 (got 9)"),
    (WhatGpuRequest, {"model": "qwen3-8b", "min_tps": float("nan")}, "min_tps must be a number"),
    (WhatGpuRequest, {"model": "qwen3-8b", "min_tps": 0.0}, "min_tps must be between 0.1 and 10000 (got 0)"),
    (WhatGpuRequest, {"model": "qwen3-8b", "budget": -3.0}, "budget must be between 1 and 10000000 (got -3)"),
    (FinetuneRequest, {"gpu": "T4", "model": "qwen3-8b", "method": "dpo"}, "method must be one of qlora, lora, full"),
    (FinetuneRequest, {"gpu": "T4", "model": "qwen3-8b", "knobs": {"colour": 1}}, "colour is not an option here"),
    (SettingsRequest, {"ctx": "0"}, "ctx must be a positive number of tokens"),
    (DailyRequest, {"gpus": "t4"}, "Give a `channel`, a `webhook_url`, or both."),
    (DailyRequest, {"channel_id": 1}, "Say which GPUs with gpus:"),
    (ReportAddRequest, {**REPORT, "decode_tps": "fast"}, "decode_tps must be"),
    (ReportAddRequest, {**REPORT, "decode_tps": "35", "paste": "eval rate: 35 tokens/s"}, "give either paste or"),
    (ReportAddRequest, REPORT, "give decode_tps (e.g. 35.2) or paste"),
    (ReportAddRequest, {**REPORT, "decode_tps": "35", "notes": "see <@123>"}, "notes"),
    (ReportHideRequest, {"id": 0}, "id must be between 1 and"),
    (ReportModerateRequest, {"action": "ban", "id": 3}, "action must be one of held, accept, hide, remove"),
    (ReportModerateRequest, {"action": "accept"}, "give the report's id"),
])
def test_a_bad_option_is_refused_in_words(kind: Any, options: dict[str, Any], text: str) -> None:
    said = refusal(kind, **options)
    assert said.startswith(text), said
    assert "Input should" not in said and "validation error" not in said


def test_refusals_follow_the_askers_language() -> None:
    with pytest.raises(BadValue) as refused:
        FitRequest.of(gpu="T4", model="qwen3-8b", gpus=9)
    assert refused.value.text("zh-CN") != refused.value.text("en-US")


def test_stored_defaults_fill_only_what_was_left_out_and_say_whose() -> None:
    stored = Stored.layered([("server", {"gpu": "nvidia-a30", "ctx": 32768, "kv": "q8_0"}),
                             ("me", {"ctx": 16384, "engine": None})])
    built = FitRequest.build(stored, model="qwen3-8b", gpu=None, ctx=None, kv="f16")
    assert (built.request.gpu, built.request.ctx, built.request.kv) == ("nvidia-a30", 16384, "f16")
    assert dict(built.used) == {"gpu": "nvidia-a30", "ctx": 16384}
    assert dict(built.sources) == {"gpu": "server", "ctx": "me"}


def test_a_command_takes_only_the_stored_defaults_it_uses() -> None:
    stored = Stored.layered([("me", {"gpu": "nvidia-t4", "ctx": 32768, "kv": "q8_0", "engine": "vllm"})])
    # /whatgpu has no GPU to take, but computes with the stored KV cache as /fit does (it once kept f16).
    whatgpu = WhatGpuRequest.build(stored, model="qwen3-8b")
    assert set(whatgpu.used) == {"ctx", "engine", "kv"}
    # A stored q8_0 meeting a stored vLLM (say the server's engine and a person's cache) is vLLM's nearest, fp8.
    assert whatgpu.request.kv == "fp8" and whatgpu.used["kv"] == "q8_0" and "kv" in whatgpu.shown
    finetune = FinetuneRequest.build(stored, model="qwen3-8b")
    assert set(finetune.used) == {"gpu"} and finetune.request.seq == 2048


def test_the_daily_subscription_defaults_to_the_servers_gpus() -> None:
    req = DailyRequest.for_server({"gpu_ids": ("nvidia-t4", "nvidia-a30"), "ctx": 16384}, channel_id=7)
    assert (req.gpus, req.ctx) == (("nvidia-t4", "nvidia-a30"), 16384)
    given = DailyRequest.for_server({"gpu_ids": ("nvidia-t4",), "ctx": 16384}, channel_id=7, gpus="a30", ctx="8k")
    assert (given.gpus, given.ctx) == (("a30",), 8192)


def test_a_report_reads_typed_and_pasted_speeds_and_is_shown_beside_its_estimate() -> None:
    typed = ReportAddRequest.of(**REPORT, decode_tps="35.2 tok/s", ctx="16k", engine_build=" b4446 ")
    assert (typed.measured().source, typed.measured().decode_tps, typed.engine_build) == ("manual", 35.2, "b4446")
    assert (typed.fit_request().ctx, typed.fit_request().quant) == (16384, "Q4_K_M")
    pasted = ReportAddRequest.of(**REPORT, paste="eval count: 100 token(s) eval rate: 24.8 tokens/s")
    assert (pasted.measured().source, pasted.measured().decode_tps) == ("ollama", 24.8)
    assert ReportAddRequest.of(**REPORT, decode_tps="35").fit_request().ctx == 8192


def test_two_spellings_of_one_comparison_share_a_cache_key() -> None:
    typed = CompareRequest.of(gpu="T4", model="Qwen/Qwen3-8B", gpu2="a30", ctx="8k")
    canonical = CompareRequest.of(gpu="nvidia-t4", model="qwen3-8b", gpu2="nvidia-a30", ctx=8192)
    assert typed.cache_key(SVC) == canonical.cache_key(SVC)
    assert typed.cache_key(SVC)["b"]["gpu"] == "nvidia-a30"


def test_a_request_survives_the_crash_resume_record() -> None:
    req = FinetuneRequest.of(gpu="4090", model="qwen3-8b", seq="4k", knobs={"optimizer": "adamw8bit"})
    back, page = decode_request(encode_request(req, 3, "k"))
    assert back == req and page == 3


def test_a_record_from_an_older_build_is_not_resumed() -> None:
    with pytest.raises(NotResumable):
        decode_request({"job": "fit", "args": [], "key": None})


def test_the_cli_and_a_command_ask_the_same_question_the_same_way() -> None:
    from bot.cli.common import fit_request
    from bot.cli.finetune import finetune_request

    typed = fit_request({"gpu": "T4", "model": "qwen3-8b", "ctx": "32k", "kv": None, "gpus": "2"})
    assert typed == FitRequest.build(gpu="T4", model="qwen3-8b", ctx=32768, kv=None, gpus=2).request
    assert typed.kv == "f16" and typed.gpus == 2
    tuned = finetune_request({"gpu": "4090", "model": "qwen3-8b", "seq": "4k", "optimizer": "adamw8bit", "rank": None})
    assert tuned == FinetuneRequest.of(gpu="4090", model="qwen3-8b", seq=4096, knobs={"optimizer": "adamw8bit"})


def test_a_prompt_cut_to_the_context_keeps_its_own_cached_answer() -> None:
    """ctx:1k cuts an asked 4k prompt to 1k and says so; the default 2k one shrinks to half the window, leaving room
    for the reply. The two replies differ and may not share a cached answer, nor may an asked 1k prompt's."""
    default = FitRequest.of(gpu="t4", model="qwen3-8b", ctx="1k")
    asked = FitRequest.of(gpu="t4", model="qwen3-8b", ctx="1k", prompt="4k")
    whole = FitRequest.of(gpu="t4", model="qwen3-8b", ctx="1k", prompt="1k")
    assert default.cache_key(SVC)["prompt"] == 512
    assert asked.cache_key(SVC)["prompt"] == whole.cache_key(SVC)["prompt"] == 1024
    assert default.cache_key(SVC) != asked.cache_key(SVC) != whole.cache_key(SVC)


def _key_refusal(req: Any) -> str:
    with pytest.raises(BadValue) as refused:
        req.cache_key(SVC)
    return refused.value.text("en-US")


def test_the_daily_gpus_are_counted_once_resolved() -> None:
    """One GPU named five times is one GPU, not five (it was refused with "At most 4 GPUs"); a typed count is
    kept as the setup the summary ranks for; five distinct GPUs are still refused."""
    def gpus(text: str) -> list[str]:
        return list(DailyRequest.of(channel_id=1, gpus=text).cache_key(SVC)["gpus"])

    assert gpus("t4,t4,t4,t4,t4") == ["nvidia-t4"]
    assert gpus("t4, T4, nvidia-t4, a30, l4, a10") == ["nvidia-t4", "nvidia-a30", "nvidia-l4", "nvidia-a10"]
    assert gpus("t4, 2x a30") == ["nvidia-t4", "2x nvidia-a30"]
    assert gpus("a30, 2x a30") == ["nvidia-a30", "2x nvidia-a30"]
    said = _key_refusal(DailyRequest.of(channel_id=1, gpus="t4, a30, l4, a10, h100 sxm"))
    assert said == "At most 4 GPUs."


def test_whatgpu_refuses_a_context_past_the_models_window_as_fit_does() -> None:
    fit = _key_refusal(FitRequest.of(gpu="rtx 4090", model="llama-2-7b", ctx="64k"))
    whatgpu = _key_refusal(WhatGpuRequest.of(model="llama-2-7b", ctx="64k"))
    assert whatgpu == fit == "64k is past Llama 2 7B's longest documented context (4k); ask for at most 4k"
    # A "1M" asked of a model whose "1M" window is 1,010,000 tokens is that window, as for /fit.
    meant = WhatGpuRequest.of(model="llama-2-7b", ctx="4k").cache_key(SVC)
    assert meant["ctx"] == 4096


def test_whatgpu_asks_with_the_kv_cache_in_its_key() -> None:
    f16 = WhatGpuRequest.of(model="qwen3-8b", engine="vllm").cache_key(SVC)
    fp8 = WhatGpuRequest.of(model="qwen3-8b", engine="vllm", kv="fp8").cache_key(SVC)
    assert (f16["kv"], fp8["kv"]) == ("f16", "fp8") and f16 != fp8


def test_a_gpu_card_keeps_the_count_typed_with_the_gpu() -> None:
    assert GpuRequest.of(gpu="8x nvidia-h100-nvl").cache_key(SVC) == {"gpu": "nvidia-h100-nvl", "gpus": 8,
                                                                        "ctx": 8192}
    assert GpuRequest.of(gpu="8x h100 nvl", gpus=8).cache_key(SVC)["gpus"] == 8
    said = _key_refusal(GpuRequest.of(gpu="8x h100 nvl", gpus=2))
    assert said.startswith("“8x h100 nvl” says 8 GPUs but `gpus:` says 2")
