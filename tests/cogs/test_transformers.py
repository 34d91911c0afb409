"""In-process: options become catalog entries (or a private refusal in the asker's words) on receipt,
autocomplete is served by the option types, and stored defaults fill what a command left out."""

from __future__ import annotations

import itertools
import json
from collections.abc import AsyncIterator
from typing import Any

import discord
import pytest
from discord.webhook.async_ import async_context

from bot.client import RigBot
from bot.store.records import UserSettings
from bot.store.state import StateStore
from tests.cogs.test_cogs_in_process import (
    DEFERRED,
    USER,
    Captured,
    bot,
    callbacks,
    interaction,
    private_error,
    run,
    slash,
)

__all__ = ["bot"]  # the fixture, shared with the other in-process tests

AUTOCOMPLETE_RESULT = 8
_ids = itertools.count(5_000_000_000_000_000)


def typing(bot: RigBot, name: str, option: str, value: str, **others: Any) -> discord.Interaction:
    """An autocomplete interaction: `option` is the one being typed."""
    typed = [{"name": k, "type": 3, "value": v} for k, v in others.items()]
    typed.append({"name": option, "type": 3, "value": value, "focused": True})
    return interaction(bot, 4, {"id": str(next(_ids)), "name": name, "type": 1, "options": typed})


async def offered(bot: RigBot, interaction: discord.Interaction) -> list[dict[str, Any]]:
    captured = Captured()
    token = async_context.set(captured)
    try:
        await bot.tree._call(interaction)
    finally:
        async_context.reset(token)
    [answer] = callbacks(captured)
    assert answer["type"] == AUTOCOMPLETE_RESULT, answer
    return list(answer["data"]["choices"])


@pytest.fixture
async def stateful(bot: RigBot, tmp_path: Any) -> AsyncIterator[RigBot]:
    bot.state = await StateStore.open(tmp_path / "state.sqlite3")
    yield bot
    await bot.state.close()


async def test_gpu_autocomplete_is_served_by_its_option_type(bot: RigBot) -> None:
    choices = await offered(bot, typing(bot, "fit", "gpu", "rtx 409", model="qwen3-8b"))
    assert choices and len(choices) <= 25
    assert any(c["value"] == "nvidia-rtx-4090" for c in choices), choices


async def test_gpu_autocomplete_keeps_a_typed_count(bot: RigBot) -> None:
    """Picking a choice for "2x 3090" keeps the 2x (it gave "nvidia-rtx-3090", one card); the value is one every
    GPU option reads back as two cards."""
    choices = await offered(bot, typing(bot, "fit", "gpu", "2x 3090", model="qwen3-8b"))
    assert choices[0] == {"name": "2× NVIDIA GeForce RTX 3090", "value": "2x nvidia-rtx-3090"}, choices
    assert all(c["value"].startswith("2x ") and c["name"].startswith("2× ") for c in choices), choices
    setup = bot.service.resolver.gpu_setup(choices[0]["value"])
    assert (setup.gpu.id, setup.count) == ("nvidia-rtx-3090", 2)
    single = await offered(bot, typing(bot, "gpu", "gpu", "3090"))
    assert single[0] == {"name": "NVIDIA GeForce RTX 3090", "value": "nvidia-rtx-3090"}, single


async def test_model_and_quant_autocomplete_are_served_too(bot: RigBot) -> None:
    models = await offered(bot, typing(bot, "fit", "model", "qwen3-8"))
    assert any(c["value"] == "qwen3-8b" for c in models), models
    quants = await offered(bot, typing(bot, "rank", "quant", "q4_k"))
    assert quants and all("q4k" in c["value"].lower().replace("_", "") for c in quants), quants


async def test_an_unknown_model_gets_a_private_did_you_mean(bot: RigBot) -> None:
    embed = private_error(await run(bot, slash(bot, "fit", gpu="T4", model="qwen3-8bb")))
    assert embed["title"] == "Unknown model"
    assert "Qwen3-8B" in json.dumps(embed, ensure_ascii=False)


@pytest.mark.parametrize(("quant", "shown"), [("4-bit", "Q4_K_M"), ("8bit", "Q8_0"), ("16-bit", "F16")])
async def test_a_bit_width_is_read_as_its_level(bot: RigBot, quant: str, shown: str) -> None:
    sent = await run(bot, slash(bot, "fit", gpu="T4", model="qwen3-8b", quant=quant))
    assert [c["type"] for c in callbacks(sent)] == [DEFERRED], callbacks(sent)
    [embed] = next(body for _, path, body, _ in sent.sent if "/webhooks/" in path)["embeds"]
    assert embed["fields"][0]["name"].split(" · ")[0] == shown, embed["fields"]


async def test_a_gguf_repo_named_after_no_model_says_to_ask_for_the_model_or_hf(bot: RigBot) -> None:
    embed = private_error(await run(bot, slash(bot, "fit", gpu="T4", model="unsloth/Foo-9B-GGUF")))
    assert embed["title"] == "Unknown model"
    assert "It looks like a GGUF repository" in embed["description"] and "`hf:`" in embed["description"]


async def test_a_models_filter_nothing_matches_is_answered_privately(bot: RigBot) -> None:
    embed = private_error(await run(bot, slash(bot, "models", family="qwen9")))
    assert embed["title"] == "No models match" and "`Qwen3`" in embed["description"], embed


async def test_an_unknown_second_gpu_in_compare_gets_a_private_did_you_mean(bot: RigBot) -> None:
    embed = private_error(await run(bot, slash(bot, "compare", gpu="T4", model="qwen3-8b", gpu2="a31")))
    assert embed["title"] == "Unknown GPU"


@pytest.mark.parametrize(("command", "options", "text"), [
    ("fit", {"gpu": "T4", "model": "qwen3-8b", "quant": "q9_x"}, "unknown quantization 'q9_x'; use a level"),
    ("fit", {"gpu": "T4", "model": "qwen3-8b", "quant": "ud-q4_k_m"},
     "unknown quantization 'ud-q4_k_m'; did you mean UD-Q4_K_XL (Unsloth Dynamic), Q4_K_M? Otherwise"),
    ("fit", {"gpu": "T4", "model": "qwen3-8b", "engine": "tgi"}, "engine must be one of llama.cpp"),
    ("fit", {"gpu": "T4", "model": "qwen3-8b", "kv": "int3"}, "kv must be one of f16"),
    ("fit", {"gpu": "T4", "model": "qwen3-8b", "gpus": 9}, "gpus must be between 1 and 8"),
    # A count written in the text that no setup has is the same mistake, not an unknown GPU, and never one card.
    ("fit", {"gpu": "0x T4", "model": "qwen3-8b"}, "gpus must be between 1 and 8"),
    ("fit", {"gpu": "100x h100 sxm", "model": "qwen3-8b"}, "gpus must be between 1 and 8"),
    ("rank", {"gpu": "T4", "sort": "fame"}, "sort must be one of quality, speed, size"),
    ("rank", {"gpu": "T4", "quant": "exl2-9.9"}, "unknown quantization"),
    ("gpu", {"gpu": "T4", "ctx": "-1"}, "ctx must be a token count"),
    ("compare", {"gpu": "T4", "model": "qwen3-8b"}, "give gpu2 (to compare GPUs) or model2"),
    ("whatgpu", {"model": "qwen3-8b", "engine": "tgi"}, "engine must be one of"),
    ("finetune", {"gpu": "4090", "model": "qwen3-8b", "method": "dpo"}, "method must be one of qlora, lora, full"),
    ("finetune", {"gpu": "4090", "model": "qwen3-8b", "optimizer": "lion"}, "optimizer must be one of adamw"),
    ("models", {"max_params": 0}, "max_params must be between"),
    ("gpus", {"vendor": "qualcomm"}, "vendor must be one of nvidia, amd, apple, intel"),
])
async def test_a_bad_option_gets_a_private_answer_before_any_defer(
    bot: RigBot, command: str, options: dict[str, Any], text: str
) -> None:
    sent = await run(bot, slash(bot, command, **options))
    assert DEFERRED not in [c["type"] for c in callbacks(sent)]
    embed = private_error(sent)
    assert embed["title"] == "That option does not work", embed
    assert embed["description"].startswith(text), embed["description"]
    assert "Input should" not in embed["description"] and "Failed to convert" not in embed["description"]


async def test_a_format_refusal_offers_the_engines_own_near_spellings_in_the_askers_language(bot: RigBot) -> None:
    interaction = slash(bot, "fit", gpu="4090", model="qwen3-8b", engine="vllm", quant="awq-int8")
    interaction.locale = discord.Locale.chinese
    text = private_error(await run(bot, interaction))["description"]
    assert text.startswith("未知的量化格式 'awq-int8'；你是否想找 AWQ"), text
    assert "Q4_K_M" not in text  # a llama.cpp format is not offered to vLLM


async def test_a_refusal_is_in_the_askers_language(bot: RigBot) -> None:
    interaction = slash(bot, "fit", gpu="T4", model="qwen3-8b", kv="int3")
    interaction.locale = discord.Locale.chinese
    embed = private_error(await run(bot, interaction))
    assert embed["description"].startswith("kv 须为"), embed


async def test_stored_defaults_fill_options_left_out_and_the_reply_says_so(stateful: RigBot) -> None:
    assert stateful.state is not None
    await stateful.state.set_user_settings(int(USER["id"]), UserSettings(gpu_ids=("nvidia-t4",), ctx=16384))
    sent = await run(stateful, slash(stateful, "fit", model="qwen3-8b", quant="q4_k_m"))
    bodies = [body for method, path, body, _ in sent.sent if "/webhooks/" in path]
    [embed] = bodies[0]["embeds"]
    assert "T4" in embed["title"], embed["title"]
    assert embed["footer"]["text"].startswith("Defaults used: GPU NVIDIA T4 (yours), context 16k (yours)"), embed


async def test_an_option_given_wins_over_the_stored_default(stateful: RigBot) -> None:
    assert stateful.state is not None
    await stateful.state.set_user_settings(int(USER["id"]), UserSettings(gpu_ids=("nvidia-t4",), ctx=16384))
    sent = await run(stateful, slash(stateful, "gpu", gpu="A30", ctx="8k"))
    bodies = [body for method, path, body, _ in sent.sent if "/webhooks/" in path]
    [embed, *_] = bodies[0]["embeds"]
    assert embed["title"].endswith("A30"), embed["title"]
    assert "Defaults used" not in embed.get("footer", {}).get("text", ""), embed


async def test_unreadable_stored_defaults_fail_only_the_commands_that_need_one(stateful: RigBot) -> None:
    assert stateful.state is not None
    await stateful.state.close()  # a store that can no longer be read, as on a failed disk
    embed = private_error(await run(stateful, slash(stateful, "fit", model="qwen3-8b")))
    assert embed["title"] == "Could not save that right now", embed
    [helped] = callbacks(await run(stateful, slash(stateful, "help")))
    assert helped["data"]["embeds"][0]["title"] != "Could not save that right now", helped
