"""ReplyCache: counting, LRU eviction by size, round trips, damage recovery and concurrent use."""

from __future__ import annotations

import asyncio
import hashlib
import logging
import sqlite3
from pathlib import Path
from typing import Any

import aiosqlite
import pytest
from store_clocks import EpochClock

from bot.store.cache import CachedFile, CachedReply, ReplyCache, encode_reply, make_key
from bot.store.state import StateStore

PNG = b"\x89PNG\r\n\x1a\n" + bytes(range(256)) * 4


def reply(text: str) -> CachedReply:
    return CachedReply(content=text, embeds=[{"title": text}])


def sha(path: Path) -> str:
    return hashlib.sha256(path.read_bytes()).hexdigest()


async def test_counts_hits_and_misses(cache: ReplyCache) -> None:
    assert await cache.get("k") is None
    assert await cache.put("k", reply("hello"))
    assert await cache.get("k") == reply("hello")
    assert await cache.get("k") == reply("hello")
    assert await cache.get("other") is None
    stats = cache.stats()
    assert (stats.hits, stats.misses, stats.puts, stats.entries) == (2, 2, 1, 1)
    assert stats.hit_ratio == 0.5
    assert stats.total_bytes == len(encode_reply(reply("hello")))


async def test_round_trips_every_field_including_binary_files(cache: ReplyCache) -> None:
    full = CachedReply(
        content="fits",
        embeds=[{"title": "T4", "fields": [{"name": "VRAM", "value": "9.1 GiB", "inline": True}]}],
        files=[CachedFile(filename="chart.png", data=PNG), CachedFile(filename="empty.bin", data=b"")],
        components=[{"type": 1, "components": [{"type": 2, "label": "More", "custom_id": "more"}]}],
        ephemeral=True,
    )
    await cache.put("k", full)
    assert await cache.get("k") == full


async def test_evicts_least_recently_used_first(tmp_path: Path, epoch_clock: EpochClock) -> None:
    size = len(encode_reply(reply("a")))
    async with ReplyCache.open(tmp_path / "c.db", max_bytes=3 * size, clock=epoch_clock) as cache:
        for key in ("a", "b", "c"):
            await cache.put(key, reply(key))
        await cache.get("a")  # now b is the least recently used
        await cache.put("d", reply("d"))
        assert await cache.get("b") is None
        await cache.put("e", reply("e"))  # c is now the oldest untouched entry
        assert await cache.get("c") is None
        for key in ("a", "d", "e"):
            assert await cache.get(key) == reply(key)
        stats = cache.stats()
        assert (stats.evictions, stats.entries, stats.total_bytes) == (2, 3, 3 * size)


async def test_eviction_frees_as_many_entries_as_a_big_reply_needs(tmp_path: Path, epoch_clock: EpochClock) -> None:
    small = len(encode_reply(reply("a")))
    big = CachedReply(content="x" * (2 * small))
    async with ReplyCache.open(tmp_path / "c.db", max_bytes=4 * small, clock=epoch_clock) as cache:
        for key in ("a", "b", "c", "d"):
            await cache.put(key, reply(key))
        await cache.put("big", big)
        assert [await cache.get(key) is not None for key in ("a", "b", "c", "d", "big")] == [
            False, False, False, True, True,
        ]  # fmt: skip
        assert cache.stats().total_bytes <= 4 * small


async def test_lru_order_survives_reopening(tmp_path: Path, epoch_clock: EpochClock) -> None:
    size = len(encode_reply(reply("a")))
    path = tmp_path / "c.db"
    async with ReplyCache.open(path, max_bytes=2 * size, clock=epoch_clock) as cache:
        await cache.put("a", reply("a"))
        await cache.put("b", reply("b"))
        await cache.get("a")
    async with ReplyCache.open(path, max_bytes=2 * size, clock=epoch_clock) as cache:
        assert (cache.stats().entries, cache.stats().total_bytes) == (2, 2 * size)
        await cache.put("c", reply("c"))
        assert await cache.get("b") is None
        assert await cache.get("a") == reply("a")


async def test_replacing_a_key_does_not_double_count(cache: ReplyCache) -> None:
    await cache.put("k", reply("short"))
    await cache.put("k", reply("a much longer reply than before"))
    assert cache.stats().entries == 1
    assert cache.stats().total_bytes == len(encode_reply(reply("a much longer reply than before")))


async def test_reply_larger_than_the_whole_cache_is_not_stored(tmp_path: Path, epoch_clock: EpochClock) -> None:
    async with ReplyCache.open(tmp_path / "c.db", max_bytes=100, clock=epoch_clock) as cache:
        await cache.put("small", CachedReply())
        assert not await cache.put("huge", CachedReply(files=[CachedFile(filename="a.png", data=PNG)]))
        assert await cache.get("small") == CachedReply()


async def test_timestamps_follow_the_injected_clock(tmp_path: Path, epoch_clock: EpochClock) -> None:
    path = tmp_path / "c.db"
    async with ReplyCache.open(path, max_bytes=10_000, clock=epoch_clock) as cache:
        await cache.put("k", reply("k"))
        epoch_clock.advance(60)
        await cache.get("k")
    with sqlite3.connect(path) as db:
        created, used = db.execute("SELECT created_at, last_used_at FROM replies").fetchone()
    assert used - created == 60


async def test_unreadable_entry_is_a_miss_and_is_dropped(tmp_path: Path, epoch_clock: EpochClock) -> None:
    path = tmp_path / "c.db"
    async with ReplyCache.open(path, max_bytes=10_000, clock=epoch_clock) as cache:
        await cache.put("k", reply("k"))
    with sqlite3.connect(path) as db:
        db.execute("UPDATE replies SET payload = x'0000ffff7b7d'")
    async with ReplyCache.open(path, max_bytes=10_000, clock=epoch_clock) as cache:
        assert await cache.get("k") is None
        assert cache.stats().entries == 0


async def test_file_that_is_not_a_database_is_moved_aside(
    tmp_path: Path, epoch_clock: EpochClock, caplog: pytest.LogCaptureFixture
) -> None:
    path = tmp_path / "cache.db"
    path.write_bytes(b"this is not sqlite at all " * 200)
    with caplog.at_level(logging.WARNING, logger="bot.store.cache"):
        async with ReplyCache.open(path, max_bytes=10_000, clock=epoch_clock) as cache:
            assert await cache.put("k", reply("k"))
            assert await cache.get("k") == reply("k")
    moved = list(tmp_path.glob("cache.db.corrupt-*"))
    assert len(moved) == 1
    assert moved[0].read_bytes().startswith(b"this is not sqlite")
    assert "damaged" in caplog.text


async def test_database_with_damaged_pages_is_moved_aside(tmp_path: Path, epoch_clock: EpochClock) -> None:
    path = tmp_path / "cache.db"
    async with ReplyCache.open(path, max_bytes=10_000_000, clock=epoch_clock) as cache:
        for n in range(50):
            await cache.put(make_key({"n": n}, "c", "e"), reply(str(n) * 200))
    raw = bytearray(path.read_bytes())
    page = int.from_bytes(raw[16:18], "big")
    raw[page:] = b"\xa5" * (len(raw) - page)  # keep the header, wreck every other page
    path.write_bytes(bytes(raw))
    async with ReplyCache.open(path, max_bytes=10_000, clock=epoch_clock) as cache:
        assert cache.stats().entries == 0
        assert await cache.put("k", reply("k"))
    assert len(list(tmp_path.glob("cache.db.corrupt-*"))) == 1


async def test_never_adopts_the_state_database(tmp_path: Path, epoch_clock: EpochClock) -> None:
    path = tmp_path / "state.db"
    async with StateStore.open(path):
        pass
    before = sha(path)
    async with ReplyCache.open(path, max_bytes=10_000, clock=epoch_clock) as cache:
        assert cache.path == ":memory:"
        await cache.put("k", reply("k"))
        assert await cache.get("k") == reply("k")
    assert sha(path) == before
    assert not list(tmp_path.glob("*.corrupt-*"))


async def test_awaitable_open_and_close(tmp_path: Path) -> None:
    cache = await ReplyCache.open(tmp_path / "sub" / "dir" / "c.db", max_bytes=10_000)
    await cache.put("k", reply("k"))
    await cache.close()
    await cache.close()
    assert await cache.get("k") is None
    assert not await cache.put("k", reply("k"))


async def test_many_concurrent_gets_and_puts(cache: ReplyCache) -> None:
    keys = [make_key({"n": n % 50}, "c", "e") for n in range(200)]

    async def worker(n: int) -> CachedReply | None:
        if n % 2:
            await cache.put(keys[n], reply(str(n % 50)))
            return None
        return await cache.get(keys[n])

    results = await asyncio.gather(*(worker(n) for n in range(200)))
    for n, got in enumerate(results):
        assert got is None or got == reply(str(n % 50))
    stats = cache.stats()
    assert stats.hits + stats.misses == 100
    assert stats.puts == 100
    assert stats.errors == 0
    assert stats.entries == 25  # odd n only: 25 distinct values of n % 50
    for n in range(1, 200, 2):
        assert await cache.get(keys[n]) == reply(str(n % 50))


class _FailingOnce:
    """Wraps the cache's connection so the next statement fails the way a damaged file does."""

    def __init__(self, db: aiosqlite.Connection) -> None:
        self._db = db
        self.armed = True

    def __getattr__(self, name: str) -> object:
        return getattr(self._db, name)

    def execute(self, *args: Any) -> object:
        if self.armed:
            self.armed = False
            error = sqlite3.DatabaseError("database disk image is malformed")
            error.sqlite_errorcode = sqlite3.SQLITE_CORRUPT
            raise error
        return self._db.execute(*args)


async def test_damage_found_while_running_rebuilds_instead_of_raising(tmp_path: Path, epoch_clock: EpochClock) -> None:
    path = tmp_path / "cache.db"
    async with ReplyCache.open(path, max_bytes=10_000, clock=epoch_clock) as cache:
        await cache.put("k", reply("k"))
        cache._db = _FailingOnce(cache._db)  # type: ignore[arg-type, assignment]
        assert await cache.get("k") is None
        assert cache.stats().errors == 1
        assert cache.stats().entries == 0
        assert await cache.put("k2", reply("k2"))
        assert await cache.get("k2") == reply("k2")
    assert len(list(tmp_path.glob("cache.db.corrupt-*"))) == 1
