"""A fleet: three bot processes, the shards split three ways, one PostgreSQL database, the loopback Discord.

- Settings saved through one process are what every process sees, also after re-sharding to two.
- A daily trigger sent to all three at once posts each subscription exactly once.
- A process killed in the middle of a delivery has its claim finished by another, still exactly once.
"""

from __future__ import annotations

import asyncio
import json
import os
import signal
import sys
import time
from datetime import UTC, datetime, timedelta
from pathlib import Path
from typing import Any

import aiohttp
import pytest

from bot.sandbox import BotProcess, Sandbox
from bot.sandbox.snowflake import DISCORD_EPOCH_MS, snowflake_at
from bot.sandbox.world import SandboxChannel, SandboxGuild, World
from bot.sharding import shard_for_guild
from bot.web.signing import signed_headers
from tests.pg import PostgresServer

pytestmark = [pytest.mark.e2e, pytest.mark.long]

SECRET = "fleet-webhook-secret"
ADMIN = 1_071_698_660_929 | 0x20
# (id >> 22) is the creation time in ms since Discord's epoch, so guild k lands on shard k % count.
BASE_MS = DISCORD_EPOCH_MS + 6 * 50_000_000_000
GUILDS = tuple(
    SandboxGuild(id=snowflake_at(BASE_MS + k), name=f"Fleet {k}",
                 channels=(SandboxChannel(id=snowflake_at(BASE_MS + 1000 + k), name="daily"),))
    for k in range(6)
)
WORLD = World(guilds=GUILDS)
USER = 5_551_234


def bot_env(url: str, data_dir: Path, name: str, shard_ids: str, shard_count: int) -> dict[str, str]:
    return {
        "RIGCHECK_DATABASE_URL": url, "RIGCHECK_DATA_DIR": str(data_dir), "RIGCHECK_INSTANCE": name,
        "RIGCHECK_SHARD_COUNT": str(shard_count), "RIGCHECK_SHARD_IDS": shard_ids,
        "RIGCHECK_HTTP_PORT": "0", "RIGCHECK_HTTP_HOST": "127.0.0.1", "RIGCHECK_WEBHOOK_SECRET": SECRET,
        "RIGCHECK_RENDER_WORKERS": "0", "RIGCHECK_GUILD_READY_TIMEOUT": "0.2",
        # Short, so the test sees a dead process's claim taken over within seconds.
        "RIGCHECK_DAILY_LEASE_S": "3", "RIGCHECK_DAILY_SWEEP_S": "0.5",
    }


class Node:
    def __init__(self, process: BotProcess, data_dir: Path) -> None:
        self.process = process
        self.data_dir = data_dir

    @property
    def base(self) -> str:
        return f"http://127.0.0.1:{(self.data_dir / 'http.port').read_text().strip()}"

    async def trigger(self, *, signed_at: float | None = None, **payload: Any) -> dict[str, Any]:
        body = json.dumps(payload).encode()
        headers = signed_headers(SECRET, body, time.time() if signed_at is None else signed_at)
        async with aiohttp.ClientSession() as http, http.post(self.base + "/hooks/daily", data=body,
                                                              headers=headers) as resp:
            answer = await resp.json()
        assert resp.status == 202, answer
        return dict(answer)

    async def run(self, started: dict[str, Any], timeout: float = 60.0) -> dict[str, Any]:
        path = started["status_url"]
        deadline = time.monotonic() + timeout
        async with aiohttp.ClientSession() as http:
            while True:
                async with http.get(self.base + path,
                                    headers=signed_headers(SECRET, path.encode(), time.time())) as resp:
                    run = await resp.json()
                assert resp.status == 200, run
                if run["status"] != "running":
                    return dict(run)
                assert time.monotonic() < deadline, run
                await asyncio.sleep(0.1)


async def start_fleet(sb: Sandbox, url: str, root: Path, count: int, tag: str) -> list[Node]:
    dirs = [root / f"{tag}-{i}" for i in range(count)]
    # Started together: the sandbox counts a bot ready once every shard of the count is connected.
    processes = await asyncio.gather(*(
        sb.start_bot([sys.executable, "-m", "bot"], env=bot_env(url, dirs[i], f"{tag}-{i}", str(i), count),
                     ready_timeout=90)
        for i in range(count)))
    nodes = [Node(p, d) for p, d in zip(processes, dirs, strict=True)]
    for node in nodes:
        for _ in range(100):
            if (node.data_dir / "http.port").exists():
                break
            await asyncio.sleep(0.05)
    return nodes


def posts(sb: Sandbox, channel: int, day: str) -> list[Any]:
    found = [sb.state.messages[m] for m in sb.state.channel_messages.get(channel, [])]
    return [m for m in found if not m.interaction_metadata and m.embeds and day in m.embeds[0].get("title", "")]


def channel_of(guild: SandboxGuild) -> int:
    return guild.channels[0].id


async def test_three_processes_one_database(tmp_path: Path, pg_server: PostgresServer) -> None:
    url = pg_server.create_database()
    assert sorted(shard_for_guild(g.id, 3) for g in GUILDS) == [0, 0, 1, 1, 2, 2]
    async with Sandbox(WORLD, reply_timeout_s=30) as sb:
        nodes = await start_fleet(sb, url, tmp_path, 3, "three")

        # Settings and subscriptions go in through whichever process owns each guild's shard.
        g1 = GUILDS[1]
        saved = await sb.invoke("/settings server gpu:a30", guild=g1.id, member_permissions=ADMIN)
        assert saved.ok, saved
        mine = await sb.invoke("/settings me gpu:t4", guild=GUILDS[0].id, user=USER)
        assert mine.ok, mine
        for guild in GUILDS:
            reply = await sb.invoke("/daily subscribe channel:daily gpus:t4", guild=guild.id,
                                    member_permissions=ADMIN)
            assert reply.ok and reply.ephemeral, reply
        handled = {shard: len([f for f in sb.state.hub.by_shard[shard].sent if f["t"] == "INTERACTION_CREATE"])
                   for shard in range(3)}
        assert all(n >= 2 for n in handled.values()), handled

        # One trigger to each process at the same moment: six summaries, each posted once. (Each signed
        # afresh: the processes share the replay record, so one signed request is good for one process.)
        # Days a trigger may name (up to a week back), and days no other test posts for.
        today = datetime.now(UTC).date()
        day = (today - timedelta(days=1)).isoformat()
        # Whole seconds apart from one reading of the clock: offsets from three readings could land two requests
        # in the same second, with the same signature.
        now = int(time.time())
        started = await asyncio.gather(*(node.trigger(date=day, signed_at=now - i) for i, node in enumerate(nodes)))
        runs = await asyncio.gather(*(node.run(s) for node, s in zip(nodes, started, strict=True)))
        assert all(r["status"] == "done" for r in runs), runs
        sent = sum(r["counts"].get("sent", 0) for r in runs)
        assert sent == 6 and sum(r["counts"].get("skipped", 0) for r in runs) == 12, runs
        for guild in GUILDS:
            assert len(posts(sb, channel_of(guild), day)) == 1, guild.name
        # Any process reports on any run: the runs live in the shared database.
        assert (await nodes[2].run(started[0]))["counts"] == runs[0]["counts"]

        # A process dies holding a claim: its delivery keeps failing, then it is killed mid-retry.
        victim, doomed = nodes[0], GUILDS[3]
        day2 = (today - timedelta(days=2)).isoformat()
        sb.faults.inject(f"/channels/{channel_of(doomed)}/messages", status=503, times=10_000, method="POST")
        seen = max((r.seq for r in sb.requests), default=0)
        await victim.trigger(date=day2, guild=str(doomed.id))
        await sb.wait_for_request("POST", f"/channels/{channel_of(doomed)}/messages", after_seq=seen, timeout=30)
        os.kill(victim.process.pid, signal.SIGKILL)
        await victim.process.process.wait()
        await sb.stop_bot(victim.process)
        sb.faults.clear()
        # Another process takes the claim over once its lease runs out, and posts it.
        deadline = time.monotonic() + 30
        while not posts(sb, channel_of(doomed), day2):
            assert time.monotonic() < deadline, "".join(n.process.output_tail(60) for n in nodes[1:])
            await asyncio.sleep(0.1)
        await asyncio.sleep(1.5)  # a few more sweeps: nobody posts it again
        assert len(posts(sb, channel_of(doomed), day2)) == 1
        assert "took over daily delivery" in "".join(n.process.output_tail(400) for n in nodes[1:])

        for node in nodes[1:]:
            assert await sb.stop_bot(node.process) == 0, node.process.output_tail()

        # Re-sharded to two processes: the same database, so nothing moves and nothing is lost.
        two = await start_fleet(sb, url, tmp_path, 2, "two")
        assert shard_for_guild(g1.id, 2) == 1 and shard_for_guild(GUILDS[0].id, 2) == 0
        fit = await sb.invoke("/fit model:qwen3-8b", guild=g1.id)
        assert fit.ok and "A30" in fit.embeds[0]["title"], fit.embeds[0]["title"]
        # The user's own default follows them into a guild another process serves.
        own = await sb.invoke("/fit model:qwen3-8b", guild=GUILDS[3].id, user=USER)
        assert own.ok and "T4" in own.embeds[0]["title"], own.embeds[0]["title"]
        again = await two[1].run(await two[1].trigger(date=day))
        assert again["counts"] == {"skipped": 6}, again
        for guild in GUILDS:
            assert len(posts(sb, channel_of(guild), day)) == 1
        for node in two:
            assert "command failed" not in node.process.output_tail(400)
