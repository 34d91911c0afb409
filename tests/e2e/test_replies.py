"""Replies people screenshot, through the real bot process and the loopback Discord: settings that stick,
context as people say it, cached answers that keep their buttons, tables that fit a phone, charts."""

from __future__ import annotations

import sys
from collections.abc import AsyncIterator

import pytest
import pytest_asyncio

from bot.sandbox import BotProcess, Sandbox

pytestmark = [pytest.mark.e2e, pytest.mark.asyncio(loop_scope="module")]

MANAGE_GUILD = 1 << 5


@pytest_asyncio.fixture(loop_scope="module", scope="module")
async def sb(tmp_path_factory: pytest.TempPathFactory) -> AsyncIterator[Sandbox]:
    data_dir = tmp_path_factory.mktemp("botdata")
    async with Sandbox() as sandbox:
        process: BotProcess = await sandbox.start_bot([sys.executable, "-m", "bot"], env={
            "RIGCHECK_DATA_DIR": str(data_dir), "RIGCHECK_HTTP_ENABLED": "false",
            "RIGCHECK_GUILD_READY_TIMEOUT": "0.2"}, ready_timeout=60)
        assert process is not None
        yield sandbox


def buttons(reply) -> list[dict]:
    return [c for row in reply.components for c in row.get("components", [])]


async def test_settings_update_only_the_given_option(sb: Sandbox) -> None:
    user = 5101
    first = await sb.invoke("/settings me gpu:T4", user=user)
    assert first.ephemeral and "NVIDIA T4" in (first.content or "")
    second = await sb.invoke("/settings me ctx:16k", user=user)
    assert "NVIDIA T4" in (second.content or "") and "16k" in (second.content or "")
    shown = await sb.invoke("/settings me", user=user)  # bare: shows, never wipes
    assert "GPU NVIDIA T4" in (shown.content or "") and "context 16k" in (shown.content or "")
    again = await sb.invoke("/settings me", user=user)
    assert again.content == shown.content


async def test_stored_defaults_fill_every_command_and_say_so(sb: Sandbox) -> None:
    user = 5102
    await sb.invoke("/settings me gpu:rtx 3090 ctx:16k kv:q8_0", user=user)
    fit = await sb.invoke("/fit model:qwen3-8b", user=user)
    assert fit.error is None and not fit.ephemeral
    embed = fit.embeds[0]
    assert embed["title"].endswith("NVIDIA GeForce RTX 3090")
    assert "context 16k" in embed["description"] and "KV q8_0" in embed["description"]
    assert embed["footer"]["text"].startswith(
        "Defaults used: GPU NVIDIA GeForce RTX 3090 (yours), context 16k (yours), KV cache q8_0 (yours)")
    # An option given wins over the default, and the note then leaves it out.
    given = await sb.invoke("/fit model:qwen3-8b ctx:8k", user=user)
    assert "context 8k" in given.embeds[0]["description"]
    assert "context 16k" not in given.embeds[0]["footer"]["text"]
    for command in ("/rank", "/gpu", "/finetune model:qwen3-8b", "/compare model:qwen3-8b gpu2:T4"):
        reply = await sb.invoke(command, user=user)
        assert reply.error is None and not reply.ephemeral, command
        assert "RTX 3090" in reply.embeds[0]["footer"]["text"], command
    zh = await sb.invoke("/fit model:qwen3-8b", user=user, locale="zh-CN")
    assert zh.embeds[0]["footer"]["text"].startswith("使用了默认值：显卡 NVIDIA GeForce RTX 3090（你的设置）")


async def test_reset_clears_and_gpu_is_then_required(sb: Sandbox) -> None:
    user = 5103
    await sb.invoke("/settings me gpu:T4", user=user)
    cleared = await sb.invoke("/settings reset", user=user)
    assert cleared.ephemeral and "Cleared" in (cleared.content or "")
    missing = await sb.invoke("/fit model:qwen3-8b", user=user)
    assert missing.ephemeral and "gpu is missing" in missing.embeds[0]["description"]
    zh = await sb.invoke("/fit model:qwen3-8b", user=user, locale="zh-CN")
    assert "缺少显卡" in zh.embeds[0]["description"]


async def test_server_defaults_apply_and_yours_win(sb: Sandbox) -> None:
    denied = await sb.invoke("/settings reset scope:server", user=5104, member_permissions=0)
    assert denied.ephemeral
    await sb.invoke("/settings server gpu:A30 ctx:32k", user=5104, member_permissions=MANAGE_GUILD)
    await sb.invoke("/settings server engine:llama.cpp", user=5104, member_permissions=MANAGE_GUILD)
    shown = await sb.invoke("/settings server", user=5104, member_permissions=MANAGE_GUILD)
    assert "NVIDIA A30" in (shown.content or "") and "32k" in (shown.content or "")
    someone = await sb.invoke("/fit model:qwen3-4b", user=5105)
    assert someone.embeds[0]["title"].endswith("NVIDIA A30")
    footer = someone.embeds[0]["footer"]["text"]
    assert "GPU NVIDIA A30 (server), engine llama.cpp (server), context 32k (server)" in footer
    await sb.invoke("/settings me gpu:T4", user=5105)
    mine = await sb.invoke("/fit model:qwen3-4b", user=5105)
    assert mine.embeds[0]["title"].endswith("NVIDIA T4")
    assert "GPU NVIDIA T4 (yours), engine llama.cpp (server), context 32k (server)" in mine.embeds[0]["footer"]["text"]
    await sb.invoke("/settings reset scope:server", user=5104, member_permissions=MANAGE_GUILD)


async def test_context_reads_as_people_say_it(sb: Sandbox) -> None:
    reply = await sb.invoke("/fit gpu:rtx 4090 model:llama-3.1-8b ctx:65536")
    assert "context 64k" in reply.embeds[0]["description"]
    assert "65.5k" not in str(reply.embeds)


async def test_cached_rank_keeps_working_buttons(sb: Sandbox) -> None:
    first = await sb.invoke("/rank gpu:rtx 3060 ctx:8k", user=5201)
    second = await sb.invoke("/rank gpu:RTX 3060 ctx:8192", user=5202)
    assert first.deferred and not second.deferred  # the second one came from the cache
    assert {b["custom_id"] for b in buttons(second)} == {"rank:prev", "rank:next"}
    assert second.embeds == first.embeds
    page2 = await sb.driver.click(second, "rank:next", user=5202)
    assert "page 2 of" in page2.embeds[0]["description"]
