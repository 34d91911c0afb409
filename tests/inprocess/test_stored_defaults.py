"""Stored defaults that cannot work together are refused when stored, and a refusal caused by a stored default
says which default it was and how to change it: through the real bot and the loopback Discord."""

from __future__ import annotations

import pytest

from bot.sandbox import Sandbox
from bot.sandbox.models import Reply

pytestmark = pytest.mark.asyncio(loop_scope="module")

MANAGE_GUILD = 1 << 5


def refusal(reply: Reply) -> str:
    assert reply.error is None, reply.error
    assert reply.ephemeral and not reply.deferred, "a refusal is private and comes before any 'thinking…'"
    assert reply.embeds, reply.content
    return str(reply.embeds[0].get("description", ""))


async def test_an_engine_the_stored_gpu_does_not_run_is_not_stored(sb: Sandbox) -> None:
    user = 6101
    saved = await sb.invoke("/settings me gpu:T4", user=user, dm=True)
    assert saved.ephemeral and "NVIDIA T4" in (saved.content or "")
    said = refusal(await sb.invoke("/settings me engine:mlx", user=user, dm=True))
    assert said.startswith("Not saved: MLX") and "NVIDIA T4" in said and "/settings me gpu:… engine:…" in said
    shown = await sb.invoke("/settings me", user=user, dm=True)
    assert "NVIDIA T4" in (shown.content or "") and "mlx" not in (shown.content or "")
    fit = await sb.invoke("/fit model:qwen3-8b", user=user, dm=True)
    assert fit.error is None and not fit.ephemeral


async def test_a_gpu_the_stored_engine_does_not_run_on_is_not_stored(sb: Sandbox) -> None:
    user = 6102
    assert "mlx" in ((await sb.invoke("/settings me engine:mlx", user=user, dm=True)).content or "")
    said = refusal(await sb.invoke("/settings me gpu:T4", user=user, dm=True))
    assert said.startswith("Not saved: MLX") and "NVIDIA T4" in said
    zh = refusal(await sb.invoke("/settings me gpu:T4", user=user, dm=True, locale="zh-CN"))
    assert zh.startswith("未保存：MLX") and "NVIDIA T4" in zh
    both = refusal(await sb.invoke("/settings me gpu:T4 engine:exllamav3", user=user, dm=True))
    assert both.startswith("Not saved: ExLlamaV3 needs an Ampere or newer GPU") and "NVIDIA T4" in both
    apple = await sb.invoke("/settings me gpu:apple-m1-max-64gb", user=user, dm=True)
    assert apple.error is None and "M1 Max" in (apple.content or "") and "mlx" in (apple.content or "")
    # Both given together replace both: a GPU and an engine that do work together are stored.
    switched = await sb.invoke("/settings me gpu:T4 engine:llama.cpp", user=user, dm=True)
    assert "NVIDIA T4" in (switched.content or "") and "llama.cpp" in (switched.content or "")


async def test_a_refusal_caused_by_your_stored_engine_says_so(sb: Sandbox) -> None:
    user = 6103
    await sb.invoke("/settings me engine:mlx", user=user, dm=True)
    said = refusal(await sb.invoke("/fit gpu:T4 model:qwen3-8b", user=user, dm=True))
    assert said.startswith("MLX ") and "NVIDIA T4" in said
    assert "engine mlx is your stored default" in said and "`/settings me engine:…`" in said
    zh = refusal(await sb.invoke("/fit gpu:T4 model:qwen3-8b", user=user, dm=True, locale="zh-CN"))
    assert "引擎 mlx 是你保存的默认值" in zh and "`/settings me engine:…`" in zh
    # Given in the command, the engine is the asker's own: no word about defaults.
    typed = refusal(await sb.invoke("/fit gpu:T4 model:qwen3-8b engine:mlx", user=user, dm=True))
    assert "stored default" not in typed and "/settings" not in typed
    assert (await sb.invoke("/fit gpu:T4 model:qwen3-8b engine:llama.cpp", user=user, dm=True)).error is None


async def test_a_refusal_caused_by_the_servers_stored_gpu_says_so(sb: Sandbox) -> None:
    manager, member = 6104, 6105
    stored = await sb.invoke("/settings server gpu:T4", user=manager, member_permissions=MANAGE_GUILD)
    assert "NVIDIA T4" in (stored.content or "")
    said = refusal(await sb.invoke("/fit model:qwen3-8b engine:mlx", user=member))
    assert "GPU NVIDIA T4 is this server's stored default" in said and "`/settings server gpu:…`" in said
    # Your own engine default over the server's GPU would fail every command the same way: refused.
    mine = refusal(await sb.invoke("/settings me engine:mlx", user=member))
    assert mine.startswith("Not saved: MLX") and "NVIDIA T4" in mine
    await sb.invoke("/settings reset scope:server", user=manager, member_permissions=MANAGE_GUILD)


async def test_a_kv_cache_the_engine_does_not_run_is_refused_with_the_nearest_it_does(sb: Sandbox) -> None:
    user = 6106
    said = refusal(await sb.invoke("/fit gpu:H100 SXM model:llama3.1:8b engine:vllm kv:q8_0", user=user, dm=True))
    assert said.startswith("vLLM has no q8_0 KV cache: try kv:fp8") and "/settings" not in said
    zh = refusal(await sb.invoke("/fit gpu:H100 SXM model:llama3.1:8b engine:vllm kv:q8_0", user=user, dm=True,
                                 locale="zh-CN"))
    assert "请尝试 kv:fp8" in zh
    fp8 = refusal(await sb.invoke("/rank gpu:4090 kv:fp8", user=user, dm=True))
    assert fp8.startswith("llama.cpp has no fp8 KV cache: try kv:q8_0")
    fine = await sb.invoke("/fit gpu:H100 SXM model:llama3.1:8b engine:vllm kv:fp8", user=user, dm=True)
    assert fine.error is None and not fine.ephemeral


async def test_a_stored_kv_cache_is_checked_against_the_engine(sb: Sandbox) -> None:
    user = 6107
    # Stored together, an engine and a KV cache it does not run are refused, and so is a KV cache the default
    # engine (llama.cpp) does not run; given together, ones that work are stored.
    both = refusal(await sb.invoke("/settings me engine:vllm kv:q8_0", user=user, dm=True))
    assert both.startswith("Not saved: vLLM has no q8_0 KV cache: try kv:fp8") and "engine:… kv:…" in both
    alone = refusal(await sb.invoke("/settings me kv:fp8", user=user, dm=True))
    assert alone.startswith("Not saved: llama.cpp has no fp8 KV cache")
    saved = await sb.invoke("/settings me kv:q8_0", user=user, dm=True)
    assert saved.error is None and "q8_0" in (saved.content or "")
    assert refusal(await sb.invoke("/settings me engine:vllm", user=user, dm=True)).startswith("Not saved: vLLM")
    # A stored KV cache meeting an engine given in the command that lacks it yields to the nearest one the engine
    # keeps, and the note says so; typed in the command, the same KV cache is refused.
    swapped = await sb.invoke("/fit gpu:H100 SXM model:llama3.1:8b engine:vllm", user=user, dm=True)
    assert swapped.error is None and "· KV fp8" in str(swapped.embeds[0]["description"]).splitlines()[0]
    note = str(swapped.embeds[0]["footer"]["text"])
    assert "KV cache fp8 instead of q8_0, which vLLM lacks (yours)" in note, note
    typed = refusal(await sb.invoke("/fit gpu:H100 SXM model:llama3.1:8b engine:vllm kv:q8_0", user=user, dm=True))
    assert typed.startswith("vLLM has no q8_0 KV cache: try kv:fp8")
    switched = await sb.invoke("/settings me engine:vllm kv:fp8", user=user, dm=True)
    assert switched.error is None and "fp8" in (switched.content or "")



async def test_whatgpu_computes_with_the_stored_kv_cache_and_says_so(sb: Sandbox) -> None:
    """/whatgpu once computed at f16 whatever was stored, and its note left the KV cache out."""
    user = 6108
    await sb.invoke("/settings me engine:vllm kv:fp8", user=user, dm=True)
    stored = await sb.invoke("/whatgpu model:qwen3-8b ctx:32k", user=user, dm=True)
    typed = await sb.invoke("/whatgpu model:qwen3-8b ctx:32k engine:vllm kv:fp8", user=user + 100, dm=True)
    assert stored.error is None and typed.error is None
    head = str(stored.embeds[0]["description"]).splitlines()[0]
    assert head.startswith("vLLM · KV fp8 ·"), head
    assert stored.embeds[0]["description"] == typed.embeds[0]["description"]
    note = str(stored.embeds[0]["footer"]["text"])
    assert "engine vllm (yours)" in note and "KV cache fp8 (yours)" in note, note
    # Given in the command, the KV cache is the asker's own and the stored one is not used.
    f16 = await sb.invoke("/whatgpu model:qwen3-8b ctx:32k kv:f16", user=user, dm=True)
    assert str(f16.embeds[0]["description"]).startswith("vLLM · KV f16 ·")
    assert "KV cache" not in str(f16.embeds[0]["footer"]["text"])


async def test_a_gpu_count_is_not_stored_as_one_card(sb: Sandbox) -> None:
    """`/settings me gpu:2x nvidia-rtx-3090` saved one 3090 and the next /fit ran on one card: refused instead."""
    user = 6109
    said = refusal(await sb.invoke("/settings me gpu:2x nvidia-rtx-3090", user=user, dm=True))
    assert said.startswith("Not saved: a default GPU is stored as one card, so the 2× would be lost")
    assert "`/settings me gpu:nvidia-rtx-3090`" in said and "`gpus:2`" in said
    zh = refusal(await sb.invoke("/settings me gpu:2x 3090", user=user, dm=True, locale="zh-CN"))
    assert zh.startswith("未保存：") and "`gpus:2`" in zh
    shown = await sb.invoke("/settings me", user=user, dm=True)
    assert "3090" not in (shown.content or "")


async def test_a_gpu_card_is_for_the_count_typed(sb: Sandbox) -> None:
    reply = await sb.invoke("/gpu gpu:8x nvidia-h100-nvl", user=6110, dm=True)
    assert reply.error is None and reply.embeds[0]["title"] == "8× NVIDIA H100 NVL 94GB"


async def test_a_cached_answer_at_the_window_does_not_lose_why_the_context_is_shorter(sb: Sandbox) -> None:
    """A typed ctx:4k and a default that yields to 4k answer the same figures, but only the second says why:
    one cached answer must not serve both."""
    user = 6111
    for command in ("/whatgpu model:llama2", "/fit gpu:T4 model:llama2", "/compare gpu:T4 model:llama2 gpu2:A30"):
        typed = await sb.invoke(f"{command} ctx:4k", user=user, dm=True)
        default = await sb.invoke(command, user=user, dm=True)
        typed_again = await sb.invoke(f"{command} ctx:4k", user=user, dm=True)
        assert typed.error is None and default.error is None, (typed, default)
        note = "the longest Llama 2 7B takes (the default, 8k, is longer)"
        assert note in str(default.embeds[0]["description"]), command
        assert note not in str(typed.embeds[0]["description"]) and note not in str(typed_again.embeds[0]["description"])
