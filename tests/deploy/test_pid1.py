"""The bot as its container's first process: PID 1 of a fresh PID namespace, as Docker and Kubernetes start
it without an init. Its chart workers must start (they once took "my parent is PID 1" to mean "orphaned"
and quit), a /fit must be answered with its chart, and SIGTERM must end it cleanly."""

from __future__ import annotations

import asyncio
import os
import shutil
import signal
import subprocess
import sys
import time
from pathlib import Path

import pytest

from bot.sandbox import Sandbox

pytestmark = [pytest.mark.e2e, pytest.mark.long]

GRACE_S = 20.0


def _unshare_problem() -> str | None:
    if not sys.platform.startswith("linux"):
        return "PID namespaces are Linux-only"
    unshare = shutil.which("unshare")
    if unshare is None:
        return "util-linux unshare is not installed"
    done = subprocess.run([unshare, "--pid", "--fork", "--mount-proc", "true"], capture_output=True, text=True,
                          timeout=30, check=False)
    if done.returncode != 0:
        return f"this kernel or container does not permit new PID namespaces here: {done.stderr.strip()[:200]}"
    return None


def _children(pid: int) -> list[int]:
    path = Path(f"/proc/{pid}/task/{pid}/children")
    return [int(p) for p in path.read_text().split()] if path.exists() else []


def _ns_pids(pid: int) -> list[int]:
    """The process's pid in each PID namespace it belongs to, outermost first."""
    for line in Path(f"/proc/{pid}/status").read_text().splitlines():
        if line.startswith("NSpid:"):
            return [int(p) for p in line.split()[1:]]
    raise AssertionError(f"no NSpid line for {pid}")


async def test_bot_as_pid_1_answers_and_stops_on_sigterm(tmp_path: Path) -> None:
    problem = _unshare_problem()
    if problem:
        pytest.skip(problem)
    argv = ["unshare", "--pid", "--fork", "--mount-proc", sys.executable, "-m", "bot"]
    env = {"RIGCHECK_DATA_DIR": str(tmp_path), "RIGCHECK_HTTP_ENABLED": "false", "RIGCHECK_RENDER_WORKERS": "2",
           "RIGCHECK_GUILD_READY_TIMEOUT": "0.2"}
    async with Sandbox(reply_timeout_s=30) as sb:
        process = await sb.start_bot(argv, env=env, ready_timeout=90)
        (bot_pid,) = _children(process.pid)
        assert _ns_pids(bot_pid)[-1] == 1, "the bot is not PID 1 of its namespace"
        workers = _children(bot_pid)
        assert len(workers) >= 2, (workers, process.output_tail())

        reply = await sb.invoke("/fit gpu:T4 model:qwen3-8b ctx:16k")
        assert reply.ok and reply.embeds, (reply, process.output_tail())
        assert reply.files and reply.files[0].data.startswith(b"\x89PNG"), "the chart worker did not draw"
        assert sorted(_children(bot_pid)) == sorted(workers), "a chart worker died under PID 1"

        started = time.monotonic()
        os.kill(bot_pid, signal.SIGTERM)
        status = await asyncio.wait_for(process.process.wait(), GRACE_S)
        took = time.monotonic() - started
        await sb.stop_bot(process)
        output = process.output_tail(400)
        assert status == 0, output
        assert took < GRACE_S
        assert "Traceback" not in output, output
        assert "stopping (signal received)" in output
        for worker in workers:
            assert not Path(f"/proc/{worker}").exists() or "zombie" in Path(f"/proc/{worker}/status").read_text()
