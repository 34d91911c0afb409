"""A bot killed between "thinking…" and its answer finishes the answer after a restart, exactly once."""

from __future__ import annotations

import asyncio
import sys
from pathlib import Path

import pytest

from bot.sandbox import Sandbox

pytestmark = [pytest.mark.e2e, pytest.mark.long]


async def test_the_answer_arrives_after_a_restart(tmp_path: Path) -> None:
    env = {"RIGCHECK_DATA_DIR": str(tmp_path), "RIGCHECK_HTTP_ENABLED": "false", "RIGCHECK_GUILD_READY_TIMEOUT": "0.2"}
    async with Sandbox(reply_timeout_s=120) as sb:
        first = await sb.start_bot([sys.executable, "-m", "bot"], env=env, ready_timeout=60)
        # Discord keeps failing the follow-up, so the answer is still owed when the process dies.
        sb.faults.inject("/webhooks/*", status=500, times=10_000, method="POST")
        asking = asyncio.ensure_future(sb.invoke("/fit gpu:T4 model:qwen3-8b ctx:24k", timeout=120))
        await sb.wait_for_request("POST", "/webhooks/*", timeout=30)
        record = next(r for r in sb.state.interactions.values() if r.command_text.startswith("/fit"))
        assert record.acknowledged and not asking.done(), "deferred, not yet answered"

        first.process.kill()  # no cleanup, no goodbye: as an OOM kill or a power cut
        await first.process.wait()
        await sb.stop_bot(first)
        sb.faults.clear()
        # The commands are unchanged, so the restarted bot does not sync them again.
        await sb.start_bot([sys.executable, "-m", "bot"], env=env, ready_timeout=60, wait_for_sync=False)

        reply = await asking
        assert reply.error is None and reply.deferred
        assert reply.embeds[0]["title"] == "Qwen3-8B on 1× NVIDIA T4"
        assert reply.files and reply.files[0].filename == "vram.png"
        await asyncio.sleep(1.0)  # room for a second, wrong, delivery to show up
        delivered = [e for e in record.exchanges if e.error is None and e.kind == "followup"]
        assert len(delivered) == 1, "answered exactly once"


async def test_an_answer_delivered_before_the_crash_is_not_sent_again(tmp_path: Path) -> None:
    import sqlite3

    env = {"RIGCHECK_DATA_DIR": str(tmp_path), "RIGCHECK_HTTP_ENABLED": "false", "RIGCHECK_GUILD_READY_TIMEOUT": "0.2"}
    async with Sandbox(reply_timeout_s=60) as sb:
        bot = await sb.start_bot([sys.executable, "-m", "bot"], env=env, ready_timeout=60)
        reply = await sb.invoke("/fit gpu:T4 model:qwen3-8b ctx:22k")
        assert reply.error is None and reply.deferred
        await sb.stop_bot(bot)
        record = sb.state.interactions[reply.interaction_id or 0]
        # The record lives in the state database, and the answered row keeps no token.
        with sqlite3.connect(tmp_path / "state.sqlite3") as db:
            assert db.execute("SELECT status, token FROM pending_interactions").fetchall() == [("done", "")]
            # As if the process died after the follow-up but before marking the row answered.
            db.execute("UPDATE pending_interactions SET status = 'pending', token = ?", (record.token,))
        assert not (tmp_path / "pending.sqlite3").exists()
        await sb.start_bot([sys.executable, "-m", "bot"], env=env, ready_timeout=60, wait_for_sync=False)
        # Seen as answered on Discord's side (no longer "thinking…"), and marked so.
        for _ in range(200):
            with sqlite3.connect(tmp_path / "state.sqlite3") as db:
                rows = db.execute("SELECT status, token FROM pending_interactions").fetchall()
            if rows == [("done", "")]:
                break
            await asyncio.sleep(0.1)
        assert rows == [("done", "")]
        await asyncio.sleep(1.0)
        assert len([e for e in record.exchanges if e.error is None and e.kind == "followup"]) == 1
