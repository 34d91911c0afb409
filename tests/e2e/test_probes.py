"""Probes on the real bot process: a Discord outage makes it not ready, never not alive."""

from __future__ import annotations

import asyncio
import sys
import time
from pathlib import Path
from typing import Any

import aiohttp
import pytest

from bot.sandbox import Sandbox

pytestmark = [pytest.mark.e2e, pytest.mark.long]


async def probe(http: aiohttp.ClientSession, base: str, path: str) -> tuple[int, Any]:
    async with http.get(base + path) as response:
        return response.status, await response.json()


async def until(check: Any, timeout: float = 20.0) -> None:
    deadline = time.monotonic() + timeout
    while not await check():
        assert time.monotonic() < deadline, "condition not reached in time"
        await asyncio.sleep(0.1)


async def test_gateway_outage_fails_readiness_not_liveness(tmp_path: Path) -> None:
    env = {"RIGCHECK_DATA_DIR": str(tmp_path), "RIGCHECK_HTTP_PORT": "0", "RIGCHECK_HTTP_HOST": "127.0.0.1",
           "RIGCHECK_RENDER_WORKERS": "0"}
    async with Sandbox() as sb, aiohttp.ClientSession() as http:
        process = await sb.start_bot([sys.executable, "-m", "bot"], env=env, ready_timeout=60)
        base = f"http://127.0.0.1:{(tmp_path / 'http.port').read_text().strip()}"
        assert (await probe(http, base, "/livez"))[0] == 200

        async def ready() -> bool:
            status, body = await probe(http, base, "/readyz")
            return status == 200 and body["checks"] == {"gateway": "ok", "state_db": "ok", "cache_db": "ok"}

        await until(ready)  # READY, then the guilds' wait (RIGCHECK_GUILD_READY_TIMEOUT)

        await sb.gateway_outage()

        async def not_ready() -> bool:
            status, body = await probe(http, base, "/readyz")
            return status == 503 and body["checks"]["gateway"] != "ok"

        await until(not_ready)
        for _ in range(20):  # through the outage, liveness holds
            status, body = await probe(http, base, "/livez")
            assert status == 200 and body["ok"] is True
            await asyncio.sleep(0.05)

        await sb.gateway_outage(down=False)

        await until(ready, timeout=60)
        assert (await sb.invoke("/gpus vendor:amd")).ok
        # discord.py logs its reconnect attempts with tracebacks; the bot itself must not have failed.
        assert "command failed" not in process.output_tail(300)
