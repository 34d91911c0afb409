"""/finetune through the real bot and the loopback Discord: framework presets and knobs reach the
estimate, the verdict and what to change are shown, and different knobs are different cached answers."""

from __future__ import annotations

import pytest

from bot.sandbox import Sandbox

pytestmark = pytest.mark.asyncio(loop_scope="module")


def _peak(reply) -> str:
    return reply.embeds[0]["description"].split("peak ")[1].split(" GiB")[0]


async def test_framework_and_knobs_change_the_answer(sb: Sandbox) -> None:
    plain = await sb.invoke("/finetune gpu:h100 sxm model:llama-3.1-8b method:full ctx:4k")
    tt = await sb.invoke("/finetune gpu:h100 sxm model:llama-3.1-8b method:full ctx:4k framework:torchtune")
    assert tt.error is None and plain.error is None
    assert "torchtune" in tt.embeds[0]["description"] and "paged_adamw8bit" in tt.embeds[0]["description"]
    assert float(_peak(tt)) < float(_peak(plain))  # pure bf16, 8-bit state, step in backward
    mine = await sb.invoke(
        "/finetune gpu:h100 sxm model:llama-3.1-8b method:full ctx:4k framework:torchtune optimizer:adamw")
    assert "· adamw ·" in mine.embeds[0]["description"]
    assert float(_peak(mine)) > float(_peak(tt))
    compiled = await sb.invoke(
        "/finetune gpu:h100 sxm model:llama-3.1-8b method:full ctx:4k framework:torchtune compile:true")
    assert compiled.error is None and float(_peak(compiled)) < float(_peak(tt))  # fused loss, fewer saved tensors
    assert tt.files and tt.embeds[0]["image"]["url"] == "attachment://vram.png"


async def test_what_to_change_when_it_does_not_fit(sb: Sandbox) -> None:
    reply = await sb.invoke("/finetune gpu:T4 model:llama-3.1-8b method:lora ctx:4k framework:hf")
    embed = reply.embeds[0]
    assert "Does not fit" in embed["description"]
    advice = next(f for f in embed["fields"] if f["name"] == "What to change")
    assert "method:qlora" in advice["value"]
    zh = await sb.invoke("/finetune gpu:T4 model:llama-3.1-8b method:lora ctx:4k framework:hf", locale="zh-CN")
    assert "调整建议" in {f["name"] for f in zh.embeds[0]["fields"]}


async def test_a_knob_outside_its_choices_is_refused_privately(sb: Sandbox) -> None:
    # Sent as a scripted client would, past Discord's own choice check.
    options = [{"name": "gpu", "type": 3, "value": "t4"}, {"name": "model", "type": 3, "value": "qwen3-8b"},
               {"name": "framework", "type": 3, "value": "megatron"}]
    reply = await sb.driver.invoke_raw("finetune", options)
    assert reply.error is None and reply.ephemeral and not reply.deferred
    assert "framework must be one of" in reply.embeds[0].get("description", "")


async def test_a_sequence_past_the_models_window_is_refused_privately(sb: Sandbox) -> None:
    # /fit refuses a context past every documented window; a training sequence that long is refused too.
    reply = await sb.invoke("/finetune gpu:4090 model:qwen3-8b ctx:1M")
    assert reply.error is None and reply.ephemeral and not reply.deferred
    assert reply.embeds[0]["description"] == (
        "1M is past Qwen3-8B's longest documented context (128k); ask for at most 128k")


def _reserved(reply) -> float:
    return float(reply.embeds[0]["description"].split("reserves up to ")[1].split(" GiB")[0])


async def test_emptying_the_cache_lowers_what_pytorch_reserves_not_what_must_fit(sb: Sandbox) -> None:
    # Unpacked Hugging Face batches vary in shape; a trainer that empties the cache keeps no cache for old shapes.
    ask = "/finetune gpu:l40s model:llama-3.2-3b method:lora ctx:768 batch:4 framework:hf checkpointing:none"
    kept = await sb.invoke(ask)
    emptied = await sb.invoke(ask + " empty_cache_every:10")
    assert kept.error is None and emptied.error is None
    assert "cache emptied every 10 steps" in emptied.embeds[0]["description"]
    assert _peak(emptied) == _peak(kept)
    assert _reserved(emptied) < _reserved(kept)
    zh = await sb.invoke(ask + " empty_cache_every:10", locale="zh-CN")
    assert "每 10 步清空缓存" in zh.embeds[0]["description"]
    # Discord's client refuses 0 (the option's minimum); a scripted client past that check gets a private error.
    assert (await sb.invoke(ask + " empty_cache_every:0")).rejected_by_client
    options = [{"name": "gpu", "type": 3, "value": "l40s"}, {"name": "model", "type": 3, "value": "llama-3.2-3b"},
               {"name": "empty_cache_every", "type": 4, "value": 0}]
    bad = await sb.driver.invoke_raw("finetune", options)
    assert bad.error is None and bad.ephemeral and "empty_cache_every" in bad.embeds[0].get("description", "")


async def test_a_cache_bigger_than_the_card_is_not_promised(sb: Sandbox) -> None:
    # It read "PyTorch reserves up to 17.5 GiB while it has room" on a 16 GB T4 with 15.0 GiB usable.
    reply = await sb.invoke("/finetune gpu:T4 model:llama-3.1-8b")
    text = reply.embeds[0]["description"]
    assert "can take the rest of the card, up to 15.0 GiB" in text and "reserves up to" not in text, text
    zh = await sb.invoke("/finetune gpu:T4 model:llama-3.1-8b", locale="zh-CN")
    assert "PyTorch 的缓存可占满显卡剩余部分，最多 15.0 GiB" in zh.embeds[0]["description"]
