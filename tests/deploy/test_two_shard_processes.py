"""Two real bot processes, one shard each, against the loopback Discord: each answers only its own guild."""

from __future__ import annotations

import asyncio
import sqlite3
import sys
from pathlib import Path

import pytest

from bot.sandbox import BotProcess, Sandbox
from bot.sandbox.driver import ReplyTimeout
from bot.sharding import shard_for_guild

pytestmark = [pytest.mark.e2e, pytest.mark.long]

BOT_ARGV = [sys.executable, "-m", "bot"]
COMMAND = "/gpu gpu:RTX 4090"


def bot_env(shard_id: int, data_dir: Path) -> dict[str, str]:
    return {
        "RIGCHECK_SHARD_COUNT": "2",
        "RIGCHECK_SHARD_IDS": str(shard_id),
        "RIGCHECK_DATA_DIR": str(data_dir),
        "RIGCHECK_HTTP_ENABLED": "false",
        "RIGCHECK_LOG_LEVEL": "INFO",
    }


def logged_guilds(data_dir: Path) -> list[int | None]:
    db = sqlite3.connect(f"file:{data_dir / 'state.sqlite3'}?mode=ro", uri=True)
    try:
        return [row[0] for row in db.execute("SELECT guild_id FROM query_log ORDER BY at")]
    finally:
        db.close()


async def settled_log(data_dir: Path, entries: int, timeout: float = 10.0) -> list[int | None]:
    """The query log once it has `entries` rows: the bot writes it after the reply has gone out."""
    deadline = asyncio.get_running_loop().time() + timeout
    while True:
        found = logged_guilds(data_dir)
        if len(found) >= entries or asyncio.get_running_loop().time() > deadline:
            return found
        await asyncio.sleep(0.05)


async def start_pair(sandbox: Sandbox, dirs: list[Path]) -> list[BotProcess]:
    # Started together: the sandbox counts a bot as ready only once every shard of the count is connected,
    # which neither process achieves alone.
    return list(await asyncio.gather(*(
        sandbox.start_bot(BOT_ARGV, env=bot_env(shard, dirs[shard]), ready_timeout=60) for shard in (0, 1)
    )))


async def test_each_process_answers_only_its_own_guild(tmp_path: Path) -> None:
    async with Sandbox(reply_timeout_s=20) as sandbox:
        first, second = sandbox.world.guilds
        assert (shard_for_guild(first.id, 2), shard_for_guild(second.id, 2)) == (0, 1)
        dirs = [tmp_path / "shard-0", tmp_path / "shard-1"]
        processes = await start_pair(sandbox, dirs)
        hub = sandbox.state.hub
        assert sorted(hub.by_shard) == [0, 1]
        assert hub.by_shard[0].guild_ids == [first.id] and hub.by_shard[1].guild_ids == [second.id]

        replies = {}
        for guild in (first, second):
            reply = await sandbox.invoke(COMMAND, guild=guild.id)
            assert reply.ok and reply.embeds, reply
            replies[guild.id] = reply

        def interactions_on(shard: int) -> list[int]:
            return [int(f["d"]["id"]) for f in hub.by_shard[shard].sent if f["t"] == "INTERACTION_CREATE"]

        assert interactions_on(0) == [replies[first.id].interaction_id]
        assert interactions_on(1) == [replies[second.id].interaction_id]
        # Each process's own query log names only the guild its shard owns.
        assert await settled_log(dirs[0], 1) == [first.id]
        assert await settled_log(dirs[1], 1) == [second.id]

        # With shard 1's process gone nobody else picks up its guild, while shard 0 carries on.
        await sandbox.stop_bot(processes[1])
        assert (await sandbox.invoke(COMMAND, guild=first.id)).ok
        with pytest.raises(ReplyTimeout):
            await sandbox.invoke(COMMAND, guild=second.id, timeout=3)
        assert await settled_log(dirs[0], 2) == [first.id, first.id]
        assert logged_guilds(dirs[1]) == [second.id]
        for process in processes:
            assert "command failed" not in process.output_tail(200), process.output_tail()
