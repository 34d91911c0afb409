"""StateStore opening: fresh files, upgrades, and the files it must refuse without touching."""

from __future__ import annotations

import hashlib
import sqlite3
from collections.abc import AsyncIterator
from contextlib import asynccontextmanager
from datetime import UTC, datetime
from pathlib import Path
from typing import Any

import pytest
from store_clocks import UtcClock

from bot.store import state as state_module
from bot.store._sqlite import STATE_APPLICATION_ID
from bot.store.cache import ReplyCache
from bot.store.errors import SchemaTooNewError, StateCorruptError, StateStoreError
from bot.store.migrations import LATEST_VERSION, MIGRATIONS
from bot.store.records import GuildSettings
from bot.store.state import StateStore

# Schema 1 exactly as it was released, written out by hand: upgrades must keep working from it
# even as later steps are added.
SCHEMA_V1 = """
CREATE TABLE settings (
    scope TEXT NOT NULL CHECK (scope IN ('guild', 'user')), subject_id INTEGER NOT NULL,
    data TEXT NOT NULL, updated_at TEXT NOT NULL, PRIMARY KEY (scope, subject_id));
CREATE TABLE subscriptions (
    id INTEGER PRIMARY KEY, guild_id INTEGER NOT NULL, channel_id INTEGER, webhook_url TEXT,
    gpus TEXT NOT NULL, ctx INTEGER NOT NULL CHECK (ctx > 0), locale TEXT NOT NULL,
    active INTEGER NOT NULL DEFAULT 1, disabled_reason TEXT, created_at TEXT NOT NULL, updated_at TEXT NOT NULL,
    CHECK (channel_id IS NOT NULL OR webhook_url IS NOT NULL));
CREATE UNIQUE INDEX subscriptions_target ON subscriptions (guild_id, COALESCE(channel_id, 0));
CREATE TABLE deliveries (
    id INTEGER PRIMARY KEY, subscription_id INTEGER NOT NULL REFERENCES subscriptions (id), day TEXT NOT NULL,
    status TEXT NOT NULL CHECK (status IN ('pending', 'sent', 'failed')), forced INTEGER NOT NULL DEFAULT 0,
    message_id INTEGER, reason TEXT, created_at TEXT NOT NULL, updated_at TEXT NOT NULL);
CREATE UNIQUE INDEX deliveries_one_in_flight ON deliveries (subscription_id, day) WHERE status = 'pending';
CREATE UNIQUE INDEX deliveries_scheduled_once ON deliveries (subscription_id, day)
    WHERE status IN ('pending', 'sent') AND forced = 0;
CREATE INDEX deliveries_day ON deliveries (day);
CREATE TABLE seen_signatures (digest TEXT PRIMARY KEY, seen_at TEXT NOT NULL);
CREATE INDEX seen_signatures_seen_at ON seen_signatures (seen_at);
"""
# Schema 2 as released: schema 1 plus the query log and catalog snapshots.
SCHEMA_V2 = SCHEMA_V1 + """
CREATE TABLE query_log (
    id INTEGER PRIMARY KEY, at TEXT NOT NULL, command TEXT NOT NULL, args TEXT NOT NULL, gpu TEXT, model TEXT,
    guild_id INTEGER, user_id INTEGER, latency_ms REAL NOT NULL, cache_hit INTEGER NOT NULL, outcome TEXT NOT NULL);
CREATE INDEX query_log_guild_at ON query_log (guild_id, at);
CREATE INDEX query_log_at ON query_log (at);
CREATE TABLE catalog_snapshots (
    id INTEGER PRIMARY KEY, version TEXT NOT NULL, gpu_ids TEXT NOT NULL, model_ids TEXT NOT NULL,
    recorded_at TEXT NOT NULL);
CREATE INDEX catalog_snapshots_recorded_at ON catalog_snapshots (recorded_at);
"""
# Schema 3 as released: schema 2 plus delivery claims with leases and daily runs.
SCHEMA_V3 = SCHEMA_V2 + """
ALTER TABLE deliveries ADD COLUMN claimed_by TEXT;
ALTER TABLE deliveries ADD COLUMN lease_until TEXT;
CREATE INDEX deliveries_pending ON deliveries (status, lease_until);
CREATE TABLE daily_runs (
    id TEXT PRIMARY KEY, day TEXT NOT NULL, guild_id INTEGER, dry_run INTEGER NOT NULL, forced INTEGER NOT NULL,
    status TEXT NOT NULL CHECK (status IN ('running', 'done', 'failed')), started_by TEXT NOT NULL, total INTEGER,
    counts TEXT NOT NULL, results TEXT, error TEXT, created_at TEXT NOT NULL, updated_at TEXT NOT NULL);
CREATE INDEX daily_runs_created_at ON daily_runs (created_at);
"""
# Schema 4 as released: schema 3 plus community reports, the secrets they are hashed with, and opt-outs.
SCHEMA_V4 = SCHEMA_V3 + """
CREATE TABLE reports (
    id INTEGER PRIMARY KEY, reporter TEXT NOT NULL, guild_id INTEGER, created_at TEXT NOT NULL,
    gpu_id TEXT NOT NULL, gpu_count INTEGER NOT NULL CHECK (gpu_count > 0), model_id TEXT NOT NULL,
    quant_id TEXT NOT NULL, engine TEXT NOT NULL, build TEXT, ctx INTEGER,
    decode_tps REAL NOT NULL CHECK (decode_tps > 0), prefill_tps REAL CHECK (prefill_tps > 0),
    prompt_tokens INTEGER, generated_tokens INTEGER, source TEXT NOT NULL, notes TEXT,
    estimate_decode_tps REAL, estimate_decode_tps_low REAL, estimate_decode_tps_high REAL,
    estimate_prefill_tps REAL, estimator_version TEXT,
    status TEXT NOT NULL CHECK (status IN ('accepted', 'held', 'hidden')), status_reason TEXT,
    updated_at TEXT NOT NULL);
CREATE INDEX reports_combo ON reports (gpu_id, model_id, quant_id, engine, status);
CREATE INDEX reports_reporter_at ON reports (reporter, created_at);
CREATE INDEX reports_guild_at ON reports (guild_id, created_at);
CREATE TABLE secrets (name TEXT PRIMARY KEY, value TEXT NOT NULL, created_at TEXT NOT NULL);
CREATE TABLE report_opt_outs (guild_id INTEGER PRIMARY KEY, created_at TEXT NOT NULL);
"""
STAMP = "2026-04-01T00:00:00.000000Z"


def sha(path: Path) -> str:
    return hashlib.sha256(path.read_bytes()).hexdigest()


def pragma(path: Path, name: str) -> int:
    with sqlite3.connect(path) as db:
        return int(db.execute(f"PRAGMA {name}").fetchone()[0])


def build_v1(path: Path, schema: str = SCHEMA_V1, version: int = 1) -> None:
    db = sqlite3.connect(path)
    db.executescript(schema)
    db.execute('INSERT INTO settings VALUES (\'guild\', 7, \'{"engine": "vllm", "ctx": 8192}\', ?)', (STAMP,))
    db.execute(
        "INSERT INTO subscriptions (guild_id, channel_id, gpus, ctx, locale, created_at, updated_at)"
        " VALUES (7, 70, '[\"nvidia-t4-16gb\"]', 32768, 'en', ?, ?)",
        (STAMP, STAMP),
    )
    db.execute(
        "INSERT INTO deliveries (subscription_id, day, status, created_at, updated_at)"
        " VALUES (1, '2026-04-01', 'sent', ?, ?)",
        (STAMP, STAMP),
    )
    if version >= 2:
        db.execute(
            "INSERT INTO query_log (at, command, args, gpu, model, guild_id, user_id, latency_ms, cache_hit, outcome)"
            " VALUES (?, 'fit', '{}', 't4', 'qwen3-8b', 7, 1, 12.5, 0, 'ok')",
            (STAMP,),
        )
    db.execute(f"PRAGMA application_id = {STATE_APPLICATION_ID}")
    db.execute(f"PRAGMA user_version = {version}")
    db.commit()
    db.close()


def test_the_frozen_fixture_is_the_step_before_the_latest() -> None:
    assert LATEST_VERSION == 5, "add a hand-written fixture for the previous schema and upgrade test from it"


@asynccontextmanager
async def upgraded(tmp_path: Path, schema: str, version: int, *changes: tuple[str, tuple[Any, ...]]
                   ) -> AsyncIterator[StateStore]:
    """A database written at schema `version` (with `changes` made to its rows), opened: the store as it
    migrated it. Afterwards the file is at the latest version and a backup keeps the old one."""
    path = tmp_path / "state.db"
    build_v1(path, schema, version=version)
    with sqlite3.connect(path) as db:
        for sql, params in changes:
            db.execute(sql, params)
    db.close()
    async with StateStore.open(path) as store:
        yield store
    assert pragma(path, "user_version") == LATEST_VERSION
    assert pragma(tmp_path / f"state.db.v{version}.bak", "user_version") == version


async def test_upgrades_from_schema_4_keeping_reports_and_adding_unanswered_interactions(tmp_path: Path) -> None:
    async with upgraded(tmp_path, SCHEMA_V4, 4, ("INSERT INTO secrets VALUES ('report_salt', 'pepper', ?)", (STAMP,)),
                        ("INSERT INTO report_opt_outs VALUES (7, ?)", (STAMP,))) as store:
        assert await store.report_salt() == "pepper"
        assert await store.reports_opted_out(7)
        [sub] = await store.list_subscriptions(7)
        assert await store.begin_delivery(sub.id, "2026-04-01") is None
        assert await store.unanswered_interactions() == []


async def test_upgrades_from_schema_3_keeping_deliveries_and_adding_reports(tmp_path: Path) -> None:
    async with upgraded(tmp_path, SCHEMA_V3, 3, ("UPDATE deliveries SET claimed_by = 'pod-0#1'", ())) as store:
        [sub] = await store.list_subscriptions(7)
        assert await store.begin_delivery(sub.id, "2026-04-01") is None  # the old "sent" row still counts
        assert await store.reports_with_status("accepted") == []
        assert not await store.reports_opted_out(7)


async def test_upgrades_from_schema_2_keeping_pending_deliveries_unclaimed(tmp_path: Path) -> None:
    async with upgraded(tmp_path, SCHEMA_V2, 2, ("UPDATE deliveries SET status = 'pending'", ())) as store:
        [pending] = await store.pending_deliveries()
        # A claim from before leases existed has no holder and no lease: any process may take it over.
        assert (pending.claimed_by, pending.lease_until) == (None, None)
        stats = await store.query_stats(7, datetime(2026, 3, 31, tzinfo=UTC), datetime(2026, 4, 2, tzinfo=UTC))
        assert stats.count == 1 and stats.top_pairs[0].gpu == "t4"


async def test_creates_a_missing_file_at_the_latest_version(tmp_path: Path) -> None:
    path = tmp_path / "state.db"
    async with StateStore.open(path) as store:
        assert await store.get_guild_settings(1) == GuildSettings()
    assert pragma(path, "user_version") == LATEST_VERSION
    assert pragma(path, "application_id") == STATE_APPLICATION_ID


async def test_migrates_an_empty_file(tmp_path: Path) -> None:
    path = tmp_path / "state.db"
    path.touch()
    async with StateStore.open(path):
        pass
    assert pragma(path, "user_version") == LATEST_VERSION


async def test_upgrades_from_the_previous_version_keeping_rows_and_a_backup(
    tmp_path: Path, utc_clock: UtcClock
) -> None:
    path = tmp_path / "state.db"
    build_v1(path)
    async with StateStore.open(path, clock=utc_clock) as store:
        assert await store.get_guild_settings(7) == GuildSettings(engine="vllm", ctx=8192)
        [sub] = await store.list_subscriptions(7)
        assert (sub.channel_id, sub.gpus, sub.ctx) == (70, ("nvidia-t4-16gb",), 32768)
        assert await store.begin_delivery(sub.id, "2026-04-01") is None  # the old "sent" row still counts
        await store.log_query("fit", {"gpu": "t4"}, 7, 1, 10.0, False, "ok", utc_clock())
    assert pragma(path, "user_version") == LATEST_VERSION
    backup = tmp_path / "state.db.v1.bak"
    assert pragma(backup, "user_version") == 1
    with sqlite3.connect(backup) as db:
        assert db.execute("SELECT COUNT(*) FROM deliveries").fetchone()[0] == 1


async def test_a_failing_step_leaves_the_database_at_its_old_version(
    tmp_path: Path, monkeypatch: pytest.MonkeyPatch
) -> None:
    path = tmp_path / "state.db"
    build_v1(path)
    monkeypatch.setattr(state_module, "MIGRATIONS", (*MIGRATIONS, ("CREATE TABLE half_done (a)", "NOT VALID SQL")))
    monkeypatch.setattr(state_module, "LATEST_VERSION", LATEST_VERSION + 1)
    with pytest.raises(sqlite3.OperationalError):
        await StateStore.open(path)
    assert pragma(path, "user_version") == 1
    with sqlite3.connect(path) as db:
        tables = {row[0] for row in db.execute("SELECT name FROM sqlite_master WHERE type = 'table'")}
    assert "half_done" not in tables
    assert "query_log" not in tables


async def test_refuses_a_database_from_a_newer_build(tmp_path: Path) -> None:
    path = tmp_path / "state.db"
    async with StateStore.open(path):
        pass
    with sqlite3.connect(path) as db:
        db.execute(f"PRAGMA user_version = {LATEST_VERSION + 1}")
    before = sha(path)
    with pytest.raises(SchemaTooNewError, match=f"schema version {LATEST_VERSION + 1}") as raised:
        await StateStore.open(path)
    assert str(path) in str(raised.value)
    assert sha(path) == before


async def test_refuses_a_file_that_is_not_a_database_and_leaves_it_alone(tmp_path: Path) -> None:
    path = tmp_path / "state.db"
    path.write_bytes(b"definitely not sqlite " * 300)
    before = sha(path)
    with pytest.raises(StateCorruptError) as raised:
        await StateStore.open(path)
    message = str(raised.value)
    assert str(path) in message
    assert "backup" in message
    assert sha(path) == before
    assert sorted(p.name for p in tmp_path.iterdir()) == ["state.db"]


async def test_refuses_a_database_with_damaged_pages_and_leaves_it_alone(tmp_path: Path, utc_clock: UtcClock) -> None:
    path = tmp_path / "state.db"
    async with StateStore.open(path, clock=utc_clock) as store:
        for n in range(200):
            await store.log_query("fit", {"gpu": f"g{n}", "model": "m" * 100}, n, n, 1.0, False, "ok", utc_clock())
    raw = bytearray(path.read_bytes())
    page = int.from_bytes(raw[16:18], "big")
    raw[page:] = b"\xa5" * (len(raw) - page)
    path.write_bytes(bytes(raw))
    before = sha(path)
    with pytest.raises(StateCorruptError, match="backup"):
        await StateStore.open(path)
    assert sha(path) == before


async def test_refuses_a_file_that_belongs_to_the_reply_cache(tmp_path: Path) -> None:
    path = tmp_path / "cache.db"
    async with ReplyCache.open(path, max_bytes=1000):
        pass
    before = sha(path)
    with pytest.raises(StateStoreError, match="not a rigcheck state database"):
        await StateStore.open(path)
    assert sha(path) == before


async def test_refuses_to_invent_a_missing_data_directory(tmp_path: Path) -> None:
    with pytest.raises(StateStoreError, match="does not exist"):
        await StateStore.open(tmp_path / "unmounted" / "state.db")
    assert not (tmp_path / "unmounted").exists()


async def test_closed_store_says_so(tmp_path: Path) -> None:
    store = await StateStore.open(tmp_path / "state.db")
    await store.close()
    await store.close()
    with pytest.raises(StateStoreError, match="closed"):
        await store.get_user_settings(1)
