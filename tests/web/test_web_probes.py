"""/livez and /readyz: liveness answers without I/O whatever Discord does; readiness reads, never writes."""

from __future__ import annotations

import asyncio
import sqlite3
from pathlib import Path
from typing import Any

from aiohttp.test_utils import TestClient
from web_fakes import FakeBot

Client = TestClient[Any, Any]


class Shard:
    def __init__(self, closed: bool) -> None:
        self.closed = closed

    def is_closed(self) -> bool:
        return self.closed


async def get(client: Client, path: str) -> tuple[int, Any]:
    response = await client.get(path)
    return response.status, await response.json()


async def test_livez_holds_through_a_gateway_outage_and_closed_databases(client: Client, bot: FakeBot) -> None:
    assert (await get(client, "/livez"))[0] == 200
    bot.ready = False
    bot.shards = {0: Shard(closed=True)}  # type: ignore[attr-defined]
    await bot.state.close()
    await bot.cache.close()
    status, body = await get(client, "/livez")
    assert status == 200 and body["ok"] is True and body["uptime_s"] >= 0


async def test_readyz_fails_on_a_disconnected_shard_and_recovers(client: Client, bot: FakeBot) -> None:
    bot.shards = {0: Shard(closed=False), 1: Shard(closed=True)}  # type: ignore[attr-defined]
    status, body = await get(client, "/readyz")
    assert status == 503 and body["checks"]["gateway"] == "shard 1 disconnected"
    assert body["checks"]["state_db"] == "ok" and body["checks"]["cache_db"] == "ok"
    bot.shards[1].closed = False  # type: ignore[attr-defined]
    status, body = await get(client, "/readyz")
    assert status == 200 and body["ok"] is True


async def test_readyz_reports_a_closed_database(client: Client, bot: FakeBot) -> None:
    await bot.cache.close()
    status, body = await get(client, "/readyz")
    assert status == 503 and body["checks"]["cache_db"] == "closed" and "cache_db" in body["error"]


async def test_concurrent_probes_never_fail_each_other_and_write_nothing(client: Client, bot: FakeBot,
                                                                         tmp_path: Path) -> None:
    # Another connection sees data_version change whenever anyone commits to the file.
    watcher = sqlite3.connect(tmp_path / "state.sqlite3")
    cache_watcher = sqlite3.connect(tmp_path / "cache.sqlite3")
    try:
        before = (watcher.execute("PRAGMA data_version").fetchone()[0],
                  cache_watcher.execute("PRAGMA data_version").fetchone()[0])
        misses = bot.cache.stats().misses
        answers = await asyncio.gather(*(get(client, path) for _ in range(100)
                                         for path in ("/readyz", "/healthz", "/livez")))
        assert [status for status, _ in answers] == [200] * 300, [b for s, b in answers if s != 200][:3]
        after = (watcher.execute("PRAGMA data_version").fetchone()[0],
                 cache_watcher.execute("PRAGMA data_version").fetchone()[0])
        assert after == before, "a probe wrote to a database"
        assert bot.cache.stats().misses == misses, "probes count as cache traffic"
    finally:
        watcher.close()
        cache_watcher.close()
