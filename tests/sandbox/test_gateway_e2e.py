"""Gateway behaviour that needs its own bot process: reconnects, sharding, guild-scoped sync."""

from __future__ import annotations

import pytest

from bot.sandbox import Sandbox
from bot.sandbox.snowflake import shard_of

pytestmark = pytest.mark.e2e


async def test_dropped_gateway_resumes_and_replays(minibot_argv: list[str]) -> None:
    async with Sandbox() as sandbox:
        await sandbox.start_bot(minibot_argv)
        session = sandbox.state.hub.by_shard[0]
        assert await sandbox.drop_gateway() == [0]
        # Dispatched while the socket is down: kept, then replayed after RESUME.
        during = await sandbox.driver.invoke("/ping", timeout=10)
        assert during.content == "pong from shard 0"
        await sandbox.wait_for_resume(0, timeout=10)
        assert sandbox.state.hub.by_shard[0] is session and session.resumes == 1
        assert sandbox.state.hub.identifies == 1
        assert session.events[-1] != "READY" and "RESUMED" in session.events
        after = await sandbox.driver.invoke("/echo text:still here")
        assert after.embeds[0]["description"] == "still here"


async def test_auto_sharded_bot_gets_only_its_guilds(minibot_argv: list[str]) -> None:
    async with Sandbox() as sandbox:
        first, second = sandbox.world.guilds
        assert (shard_of(first.id, 2), shard_of(second.id, 2)) == (0, 1)
        await sandbox.start_bot(minibot_argv, env={"MINIBOT_SHARDS": "2"})
        hub = sandbox.state.hub
        assert sorted(hub.by_shard) == [0, 1]
        assert hub.by_shard[0].guild_ids == [first.id] and hub.by_shard[1].guild_ids == [second.id]
        assert hub.by_shard[1].events[:2] == ["READY", "GUILD_CREATE"]
        ready = hub.by_shard[1].sent[0]["d"]
        assert ready["shard"] == [1, 2] and ready["guilds"] == [{"id": str(second.id), "unavailable": True}]
        assert (await sandbox.driver.invoke("/ping", guild=first.id)).content == "pong from shard 0"
        assert (await sandbox.driver.invoke("/ping", guild=second.id)).content == "pong from shard 1"


async def test_gateway_bot_recommendation_drives_auto_sharding(minibot_argv: list[str]) -> None:
    from bot.sandbox import World

    async with Sandbox(World(recommended_shards=2)) as sandbox:
        await sandbox.start_bot(minibot_argv, env={"MINIBOT_SHARDS": "auto"})
        assert sandbox.state.log.matching("GET", "/gateway/bot")
        assert sorted(sandbox.state.hub.by_shard) == [0, 1]


async def test_guild_synced_commands_carry_data_guild_id(minibot_argv: list[str]) -> None:
    async with Sandbox() as sandbox:
        first, second = sandbox.world.guilds
        await sandbox.start_bot(minibot_argv, env={"MINIBOT_GUILD": str(first.id)})
        assert sandbox.state.commands.global_commands == []
        reply = await sandbox.driver.invoke("/ping", guild=first.id)
        assert reply.content == "pong from shard 0"
        record = sandbox.state.interactions[reply.interaction_id or 0]
        assert record.payload["data"]["guild_id"] == str(first.id)
        elsewhere = await sandbox.driver.invoke("/ping", guild=second.id)
        assert elsewhere.rejected_by_client and elsewhere.reason == "unknown command /ping"


async def test_start_failure_shows_the_bot_output() -> None:
    import sys

    from bot.sandbox import BotStartError

    async with Sandbox() as sandbox:
        with pytest.raises(BotStartError) as caught:
            await sandbox.start_bot([sys.executable, "-c", "import sys; print('no token for me'); sys.exit(3)"])
        assert "exited with status 3" in str(caught.value) and "no token for me" in str(caught.value)
