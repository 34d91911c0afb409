"""What a GPU cannot run is refused privately, saying why: a serving engine below its hardware floor, a checkpoint
format the card has no kernels for, a tensor-parallel group the attention heads do not split over, a format an
Ollama tag names that the engine does not load, and fine-tuning settings the card cannot do."""

from __future__ import annotations

import pytest

from bot.sandbox import Sandbox
from tests.inprocess.test_hardening import assert_private_and_readable

pytestmark = pytest.mark.asyncio(loop_scope="module")


@pytest.mark.parametrize(("command", "words"), [
    # An Ollama-style tag picks the format; it is checked like quant: is.
    ("/fit gpu:4090 model:qwen3:8b-awq", ["AWQ", "engine:vllm"]),
    ("/fit gpu:4090 model:qwen3:8b-nvfp4", ["NVFP4", "engine:vllm"]),
    # A format name with dashes inside a tag is the format, not ignored.
    ("/fit gpu:4090 model:qwen3:8b-exl2-4.65bpw engine:vllm", ["EXL2", "engine:exllamav2"]),
    ("/fit gpu:4090 model:llama-3.1-8b engine:vllm gpus:3", ["32 query and 8 KV heads", "gpus:2 / 4 / 8"]),
    ("/compare gpu:3x4090 model:llama-3.1-8b gpu2:4090 engine:vllm", ["do not split over 3 GPUs"]),
    ("/fit gpu:gtx 1080 model:llama-3.1-8b engine:vllm", ["compute capability 7.5", "6.1"]),
    ("/rank gpu:p100 engine:vllm", ["compute capability 7.5"]),
    ("/fit gpu:rx 580 model:llama-3.1-8b engine:vllm", ["ROCm builds support", "gfx1100"]),
    ("/fit gpu:gtx 1080 model:llama-3.1-8b engine:trt-llm", ["compute capability 8.0"]),
    ("/fit gpu:rx 7900 xtx model:llama-3.1-8b engine:vllm quant:fp8", ["FP8 matrix units"]),
    ("/rank gpu:rx 7900 xtx engine:vllm quant:nvfp4", ["NVIDIA's format"]),
    ("/finetune gpu:T4 model:llama-3.1-8b precision:bf16", ["no bfloat16", "fp16"]),
    # A ranking over a group almost no model splits over listed one model and said nothing of why.
    ("/rank gpu:L4 gpus:3 engine:vllm", ["split over 3 GPUs", "gpus:2, 4 or 8"]),
])
async def test_what_the_card_cannot_run_is_refused_with_the_reason(sb: Sandbox, command: str,
                                                                   words: list[str]) -> None:
    assert_private_and_readable(await sb.invoke(command, user=7301), *words)


@pytest.mark.parametrize("command", [
    "/fit gpu:4090 model:llama-3.1-8b engine:vllm gpus:4",
    "/fit gpu:T4 model:llama-3.1-8b engine:vllm quant:fp8",  # weight-only FP8 (W8A16 Marlin) from Turing on
    "/fit gpu:mi300x model:llama-3.1-8b engine:vllm quant:fp8",
    "/fit gpu:4090 model:qwen3:8b-q8_0",
    "/rank gpu:L4 gpus:2 engine:vllm",
    "/rank gpu:L4 gpus:3",  # llama.cpp splits layers, not heads
])
async def test_what_the_card_can_run_still_answers(sb: Sandbox, command: str) -> None:
    reply = await sb.invoke(command, user=7302)
    assert reply.error is None and not reply.ephemeral, reply.embeds


async def test_fine_tuning_on_turing_defaults_to_sdpa_not_flash_attention(sb: Sandbox) -> None:
    reply = await sb.invoke("/finetune gpu:T4 model:llama-3.1-8b", user=7303)
    assert reply.error is None and not reply.ephemeral
    settings = reply.embeds[0]["description"]
    assert "amp_fp16" in settings and "flash" not in settings, settings
