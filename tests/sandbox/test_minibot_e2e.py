"""minibot (unmodified discord.py, its own process) against the sandbox: one shared bot per module."""

from __future__ import annotations

import hashlib
from types import ModuleType

import aiohttp
import pytest

from bot.sandbox import BotProcess, Sandbox

pytestmark = [pytest.mark.e2e, pytest.mark.asyncio(loop_scope="module")]

Running = tuple[Sandbox, BotProcess]
SYNC_ADDED_KEYS = {"id", "application_id", "version", "guild_id"}


async def test_startup_sync_matches_the_tree(running: Running, minibot: ModuleType) -> None:
    sandbox, _ = running
    bot = minibot.make_bot()
    expected = sorted((c.to_dict(bot.tree) for c in bot.tree.get_commands()), key=lambda c: c["name"])
    synced = [{k: v for k, v in c.items() if k not in SYNC_ADDED_KEYS} for c in sandbox.state.commands.global_commands]
    assert sorted(synced, key=lambda c: c["name"]) == expected
    assert [c["name"] for c in sandbox.driver.commands] == [c["name"] for c in sandbox.state.commands.global_commands]
    first = [r.route for r in sandbox.requests[:3]]
    assert first == ["/users/@me", "/oauth2/applications/@me", f"/applications/{sandbox.world.application_id}/commands"]


async def test_ping(running: Running) -> None:
    sandbox, _ = running
    reply = await sandbox.driver.invoke("/ping")
    assert reply.ok and reply.content == "pong from shard 0"
    assert not reply.ephemeral and not reply.deferred
    assert reply.latency_ms is not None and reply.latency_ms < 1000
    assert [r.route.split("/")[1] for r in reply.requests] == ["interactions"]


async def test_embed_and_png_are_captured(running: Running, minibot: ModuleType) -> None:
    sandbox, _ = running
    reply = await sandbox.driver.invoke("/echo text:hello world count:2")
    embed = reply.embeds[0]
    assert embed["title"] == "Echo" and embed["description"] == "hello world hello world"
    assert embed["image"]["url"] == "attachment://echo.png"
    assert embed["fields"] == [{"name": "count", "value": "2", "inline": True}]
    (png,) = reply.files
    assert png.filename == "echo.png" and png.data.startswith(b"\x89PNG\r\n\x1a\n")
    assert png.sha256 == hashlib.sha256(minibot.ECHO_PNG).hexdigest() and png.bytes == len(minibot.ECHO_PNG)
    assert png.url is not None
    async with aiohttp.ClientSession() as http, http.get(png.url) as served:
        assert await served.read() == minibot.ECHO_PNG


async def test_ephemeral_flag(running: Running) -> None:
    sandbox, _ = running
    reply = await sandbox.driver.invoke("/secret")
    assert reply.ephemeral and reply.flags & 64 and reply.content == "for your eyes only"


async def test_autocomplete(running: Running) -> None:
    sandbox, _ = running
    choices = await sandbox.driver.autocomplete("/model", "name", "qwen3")
    assert [c["value"] for c in choices][:2] == ["qwen3-0.6b", "qwen3-1.7b"] and len(choices) == 6
    overflow = await sandbox.driver.autocomplete_reply("/model", "name", "overflow")
    assert overflow.error is not None and overflow.error.code == 50035
    assert overflow.error.paths() == ["data.choices"]


async def test_button_click_updates_the_message(running: Running) -> None:
    sandbox, _ = running
    reply = await sandbox.driver.invoke("/vote")
    assert reply.custom_ids() == ["vote:yes", "vote:later"]
    clicked = await sandbox.driver.click(reply, "vote:yes")
    assert clicked.response_type == 7 and clicked.content == "tester voted yes"
    assert clicked.message_id == reply.message_id and clicked.components == []
    later = await sandbox.driver.click(reply, "vote:later")
    assert later.rejected_by_client  # the view was removed by the first click
    again = await sandbox.driver.click(await sandbox.driver.invoke("/vote"), "vote:later")
    assert again.ephemeral and again.content == "asked again later"


async def test_deferred_reply_ends_with_the_followup(running: Running) -> None:
    sandbox, _ = running
    reply = await sandbox.driver.invoke("/slow")
    assert reply.deferred and reply.response_type == 5
    assert reply.content == "done thinking" and reply.files[0].filename == "slow.png"
    assert reply.latency_ms is not None and reply.latency_ms >= 300
    assert [r.method for r in reply.requests] == ["POST", "POST"]


async def test_client_side_rejections_send_nothing(running: Running) -> None:
    sandbox, _ = running
    before = len(sandbox.state.interactions)
    typo = await sandbox.driver.invoke("/echo txt:hi")
    assert typo.rejected_by_client and typo.reason == "unknown option 'txt' (did you mean 'text'?)"
    out_of_range = await sandbox.driver.invoke("/echo text:hi count:6")
    assert out_of_range.rejected_by_client and out_of_range.reason == "'count' must be at most 5"
    wrong = await sandbox.driver.invoke("/pick size:medium ratio:0.5")
    assert wrong.rejected_by_client and "not a choice" in (wrong.reason or "")
    assert len(sandbox.state.interactions) == before


async def test_typed_options_reach_the_bot(running: Running) -> None:
    sandbox, _ = running
    reply = await sandbox.driver.invoke("/pick size:large ratio:0.25 loud:true")
    assert reply.content == "SIZE=LARGE RATIO=0.25 LOUD=TRUE"


async def test_subcommand_with_channel_posts_there(running: Running) -> None:
    sandbox, _ = running
    channel = sandbox.world.default_guild.channels[0]
    reply = await sandbox.driver.invoke(f"/daily subscribe channel:{channel.id}")
    assert reply.ephemeral and reply.content == f"subscribed <#{channel.id}>"
    posted = await sandbox.wait_for_message(channel.id, timeout=5)
    assert posted.content == "daily summary: all GPUs still too small"
    group = await sandbox.driver.invoke("/daily admin reset confirm:false")
    assert group.content == "reset confirmed=False"


async def test_three_second_deadline(running: Running) -> None:
    sandbox, _ = running
    reply = await sandbox.driver.invoke("/late")
    assert reply.error is not None and (reply.error.status, reply.error.code) == (404, 10062)
    assert reply.latency_ms is not None and reply.latency_ms >= 3000


async def test_embed_over_limit_is_400_50035(running: Running) -> None:
    sandbox, _ = running
    reply = await sandbox.driver.invoke("/huge")
    assert reply.error is not None and (reply.error.status, reply.error.code) == (400, 50035)
    assert reply.error.paths() == ["data.embeds.0.description"]


async def test_rate_limit_is_retried_by_discord_py(running: Running) -> None:
    sandbox, _ = running
    sandbox.faults.inject("/interactions/*/callback", status=429, times=1, retry_after=0.2)
    reply = await sandbox.driver.invoke("/ping")
    assert reply.ok and reply.content == "pong from shard 0"
    assert [r.status for r in reply.requests] == [429, 200]
    assert reply.latency_ms is not None and reply.latency_ms >= 200


async def test_server_error_is_retried_by_discord_py(running: Running) -> None:
    sandbox, _ = running
    sandbox.faults.inject("/interactions/*/callback", status=500, times=1)
    reply = await sandbox.driver.invoke("/secret")
    assert reply.ephemeral and reply.content == "for your eyes only"
    assert [r.status for r in reply.requests] == [500, 200]
