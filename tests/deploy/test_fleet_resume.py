"""A fleet on one PostgreSQL database finishes a command whose process died after "thinking…": the dead
process's claim runs out, the survivors race for it, exactly one answers, exactly once."""

from __future__ import annotations

import asyncio
import os
import signal
import sys
import time
from pathlib import Path

import pytest

from bot.sandbox import Sandbox
from bot.sandbox.snowflake import DISCORD_EPOCH_MS, snowflake_at
from bot.sandbox.world import SandboxChannel, SandboxGuild, World
from bot.sharding import shard_for_guild
from tests.pg import PostgresServer

pytestmark = [pytest.mark.e2e, pytest.mark.long]

COUNT = 3
# One guild per shard: (id >> 22) is the creation time in ms since Discord's epoch, the shard that % COUNT.
BASE_MS = DISCORD_EPOCH_MS + 7 * 50_000_000_000
GUILDS = tuple(
    SandboxGuild(id=snowflake_at(BASE_MS + k), name=f"Resume {k}",
                 channels=(SandboxChannel(id=snowflake_at(BASE_MS + 1000 + k), name="general"),))
    for k in range(COUNT)
)


def bot_env(url: str, data_dir: Path, shard: int) -> dict[str, str]:
    return {
        "RIGCHECK_DATABASE_URL": url, "RIGCHECK_DATA_DIR": str(data_dir), "RIGCHECK_INSTANCE": f"node-{shard}",
        "RIGCHECK_SHARD_COUNT": str(COUNT), "RIGCHECK_SHARD_IDS": str(shard), "RIGCHECK_HTTP_ENABLED": "false",
        "RIGCHECK_RENDER_WORKERS": "0", "RIGCHECK_GUILD_READY_TIMEOUT": "0.2",
        # Short, so the survivors see the dead process's claim run out within seconds.
        "RIGCHECK_RESUME_LEASE_S": "2",
    }


async def test_a_survivor_answers_what_a_dead_process_deferred(tmp_path: Path, pg_server: PostgresServer) -> None:
    url = pg_server.create_database()
    victim_guild = GUILDS[0]
    assert sorted(shard_for_guild(g.id, COUNT) for g in GUILDS) == [0, 1, 2]
    doomed = shard_for_guild(victim_guild.id, COUNT)
    async with Sandbox(World(guilds=GUILDS), reply_timeout_s=120) as sb:
        nodes = await asyncio.gather(*(
            sb.start_bot([sys.executable, "-m", "bot"], env=bot_env(url, tmp_path / f"node-{i}", i), ready_timeout=90)
            for i in range(COUNT)))
        victim, survivors = nodes[doomed], [n for i, n in enumerate(nodes) if i != doomed]

        # Discord keeps failing the follow-up, so the answer is still owed when the process dies.
        sb.faults.inject("/webhooks/*", status=500, times=10_000, method="POST")
        asking = asyncio.ensure_future(sb.invoke("/fit gpu:T4 model:qwen3-8b ctx:26k", guild=victim_guild.id,
                                                 timeout=120))
        await sb.wait_for_request("POST", "/webhooks/*", timeout=30)
        record = next(r for r in sb.state.interactions.values() if r.command_text.startswith("/fit"))
        assert record.acknowledged and not asking.done(), "deferred, not yet answered"
        os.kill(victim.pid, signal.SIGKILL)
        await victim.process.wait()
        await sb.stop_bot(victim)
        sb.faults.clear()

        # Neither survivor serves that guild's shard; one of them takes the claim over once its lease ran out.
        started = time.monotonic()
        reply = await asking
        assert reply.error is None and reply.deferred, reply
        assert reply.embeds[0]["title"] == "Qwen3-8B on 1× NVIDIA T4"
        assert reply.files and reply.files[0].filename == "vram.png"
        assert time.monotonic() - started < 60
        await asyncio.sleep(3.0)  # a few more sweeps by both: nobody answers it again
        delivered = [e for e in record.exchanges if e.error is None and e.kind == "followup"]
        assert len(delivered) == 1, "answered exactly once"
        finished = [n for n in survivors if f"(interaction {record.id}) after a restart" in n.output_tail(400)]
        assert len(finished) == 1, [n.output_tail(40) for n in survivors]
        for node in survivors:
            assert await sb.stop_bot(node) == 0, node.output_tail()
