"""The durable state: settings, subscriptions, deliveries, daily runs, query log, catalog snapshots,
community reports (`bot.store.reports`) and commands deferred but not yet answered (`bot.store.pending`).

One interface over two databases (`bot.store.db`): a SQLite file for one process, or PostgreSQL
(RIGCHECK_DATABASE_URL) shared by a fleet, so a guild's settings do not depend on which process its
shard runs in. Unlike the reply cache, nothing here is given up to recover from a problem: a damaged
file, a database from a newer build, a missing data directory or an unreachable server stops start-up
with an error that says what to do.

Adding a record: a schema step in `bot.store.migrations` (both backends run it), its table in
TABLES there, and methods here that go through `self._reading()` / `self._writing()` with `?`
placeholders in the SQL the two databases share.
"""

from __future__ import annotations

import asyncio
import contextlib
import functools
import hashlib
import json
import logging
import re
from collections.abc import AsyncIterator, Callable, Coroutine, Iterable, Mapping, Sequence
from datetime import date, datetime, timedelta
from pathlib import Path
from typing import Any, ParamSpec, TypeVar

from pydantic import SecretStr

from bot.store._sqlite import Opening, Store, from_db_time, to_db_time, utc_now
from bot.store.db import MARKER_SUFFIX, Connection, Database, Row, open_database
from bot.store.errors import StateStoreError
from bot.store.migrations import LATEST_VERSION, MIGRATIONS, TABLES
from bot.store.pending import PendingRecords
from bot.store.records import (
    CatalogSnapshot,
    DailyRun,
    Delivery,
    GuildSettings,
    PairCount,
    QueryStats,
    Subscription,
    UserSettings,
)
from bot.store.reports import ReportRecords

log = logging.getLogger(__name__)

P = ParamSpec("P")
R = TypeVar("R")
SettingsT = TypeVar("SettingsT", GuildSettings, UserSettings)

_DAY = re.compile(r"\d{4}-\d{2}-\d{2}")
UNSUBSCRIBED = "unsubscribed"


def _shielded(method: Callable[P, Coroutine[Any, Any, R]]) -> Callable[P, Coroutine[Any, Any, R]]:
    """Let a write finish even if its caller is cancelled, so a message that went out is recorded."""

    @functools.wraps(method)
    async def wrapper(*args: P.args, **kwargs: P.kwargs) -> R:
        return await asyncio.shield(method(*args, **kwargs))

    return wrapper


class StateStore(Store, ReportRecords, PendingRecords):
    """The bot's long-lived records, migrated forward at open.

    Open with ``await StateStore.open(target)`` or ``async with StateStore.open(target)``, where the
    target is a SQLite file's path or a ``postgresql://`` URL. Each write is its own transaction.
    """

    def __init__(self, target: Path | str, *, clock: Callable[[], datetime]) -> None:
        self.target = target
        self._clock = clock
        self._db: Database | None = None

    @property
    def path(self) -> Path:
        """The SQLite file (for messages and tests); a PostgreSQL store has none."""
        if isinstance(self.target, Path):
            return self.target
        raise AttributeError("a PostgreSQL state store has no file")

    @property
    def dialect(self) -> str:
        return self._database().dialect

    @classmethod
    def open(cls, target: Path | str, *, clock: Callable[[], datetime] = utc_now) -> Opening[StateStore]:
        """Open the database at `target`, creating or migrating it; a SQLite file's directory must exist.

        Raises StateCorruptError, SchemaTooNewError or StateStoreError instead of touching a database
        it cannot safely use.
        """
        from bot.store.db import is_database_url

        return cls(target if is_database_url(target) else Path(target), clock=clock)._opening()

    async def close(self) -> None:
        """Wait for the call in progress, then close. Safe to call twice."""
        if self._db is not None:
            await self._db.close()

    async def ping(self) -> str | None:
        """None when the database answers a read; else why not. Writes nothing (a probe may call it often)."""
        async with self._reading() as db:
            await db.one("SELECT COUNT(*) FROM settings WHERE scope = 'guild' AND subject_id = 0")
        return None

    # --- settings -------------------------------------------------------------------------------

    async def get_guild_settings(self, guild_id: int) -> GuildSettings:
        return await self._get_settings("guild", guild_id, GuildSettings)

    async def set_guild_settings(self, guild_id: int, settings: GuildSettings) -> None:
        await self._set_settings("guild", guild_id, settings)

    async def clear_guild_settings(self, guild_id: int) -> bool:
        return await self._clear_settings("guild", guild_id)

    async def get_user_settings(self, user_id: int) -> UserSettings:
        return await self._get_settings("user", user_id, UserSettings)

    async def set_user_settings(self, user_id: int, settings: UserSettings) -> None:
        await self._set_settings("user", user_id, settings)

    async def clear_user_settings(self, user_id: int) -> bool:
        return await self._clear_settings("user", user_id)

    async def _get_settings(self, scope: str, subject_id: int, model: type[SettingsT]) -> SettingsT:
        async with self._reading() as db:
            row = await db.one("SELECT data FROM settings WHERE scope = ? AND subject_id = ?", (scope, subject_id))
        return model() if row is None else model.model_validate_json(row["data"])

    @_shielded
    async def _set_settings(self, scope: str, subject_id: int, settings: GuildSettings | UserSettings) -> None:
        async with self._writing() as db:
            await db.run(
                """
                INSERT INTO settings (scope, subject_id, data, updated_at) VALUES (?, ?, ?, ?)
                ON CONFLICT (scope, subject_id) DO UPDATE SET data = excluded.data, updated_at = excluded.updated_at
                """,
                (scope, subject_id, settings.model_dump_json(), self._now()),
            )

    @_shielded
    async def _clear_settings(self, scope: str, subject_id: int) -> bool:
        async with self._writing() as db:
            return await db.run("DELETE FROM settings WHERE scope = ? AND subject_id = ?", (scope, subject_id)) > 0

    # --- subscriptions --------------------------------------------------------------------------

    @_shielded
    async def add_subscription(
        self,
        guild_id: int,
        channel_id: int | None,
        webhook_url: str | SecretStr | None,
        gpus: Sequence[str],
        ctx: int,
        locale: str,
    ) -> Subscription:
        """Subscribe a channel (or, with no channel, the guild's webhook); subscribing again updates it."""
        if channel_id is None and webhook_url is None:
            raise ValueError("a subscription needs a channel, a webhook URL, or both")
        if ctx <= 0:
            raise ValueError("ctx must be positive")
        url = webhook_url.get_secret_value() if isinstance(webhook_url, SecretStr) else webhook_url
        now = self._now()
        async with self._writing() as db:
            row = await db.one(
                """
                INSERT INTO subscriptions
                    (guild_id, channel_id, webhook_url, gpus, ctx, locale, active, created_at, updated_at)
                VALUES (?, ?, ?, ?, ?, ?, 1, ?, ?)
                ON CONFLICT (guild_id, COALESCE(channel_id, 0)) DO UPDATE SET
                    webhook_url = excluded.webhook_url, gpus = excluded.gpus, ctx = excluded.ctx,
                    locale = excluded.locale, active = 1, disabled_reason = NULL, updated_at = excluded.updated_at
                RETURNING *
                """,
                (guild_id, channel_id, url, json.dumps(list(gpus)), ctx, locale, now, now),
            )
        assert row is not None
        return _subscription(row)

    @_shielded
    async def remove_subscription(self, guild_id: int, channel_id: int | None = None) -> int:
        """Deactivate the guild's subscription for `channel_id`, or all of them when it is None.

        Rows are kept (marked "unsubscribed") so delivery history stays intact. Returns how many
        active subscriptions were removed.
        """
        sql = ("UPDATE subscriptions SET active = 0, disabled_reason = ?, updated_at = ? "
               "WHERE guild_id = ? AND active = 1")
        params: list[object] = [UNSUBSCRIBED, self._now(), guild_id]
        if channel_id is not None:
            sql += " AND channel_id = ?"
            params.append(channel_id)
        async with self._writing() as db:
            return await db.run(sql, params)

    @_shielded
    async def disable_subscription(self, subscription_id: int, reason: str) -> bool:
        """Stop delivering to a subscription (say, its channel is gone); re-subscribing re-enables it."""
        async with self._writing() as db:
            changed = await db.run(
                "UPDATE subscriptions SET active = 0, disabled_reason = ?, updated_at = ? WHERE id = ? AND active = 1",
                (reason, self._now(), subscription_id),
            )
        return changed > 0

    async def get_subscription(self, subscription_id: int) -> Subscription | None:
        async with self._reading() as db:
            row = await db.one("SELECT * FROM subscriptions WHERE id = ?", (subscription_id,))
        return None if row is None else _subscription(row)

    async def list_subscriptions(self, guild_id: int | None = None, active_only: bool = True) -> list[Subscription]:
        where, params = ["1 = 1"], []
        if guild_id is not None:
            where.append("guild_id = ?")
            params.append(guild_id)
        if active_only:
            where.append("active = 1")
        async with self._reading() as db:
            rows = await db.all(f"SELECT * FROM subscriptions WHERE {' AND '.join(where)} ORDER BY id", params)  # noqa: S608 - fixed fragments
        return [_subscription(row) for row in rows]

    # --- deliveries -----------------------------------------------------------------------------

    async def delivery_status(self, subscription_id: int, day: str) -> set[str]:
        """The statuses of the day's attempts so far: a cheap look before composing a summary."""
        _check_day(day)
        async with self._reading() as db:
            rows = await db.all(
                "SELECT status FROM deliveries WHERE subscription_id = ? AND day = ?", (subscription_id, day)
            )
        return {row["status"] for row in rows}

    @_shielded
    async def begin_delivery(
        self,
        subscription_id: int,
        day: str,
        *,
        force: bool = False,
        owner: str | None = None,
        lease: timedelta | None = None,
    ) -> Delivery | None:
        """Claim the right to post `day`'s summary, recording a pending delivery held by `owner`.

        Returns None when another attempt is pending, or when one was already sent and `force` is
        False. A pending delivery blocks new attempts until it is marked sent or failed; once its
        lease has run out, `take_over_delivery` lets another process finish it (it may in fact have
        been posted, so the taker looks for the post first).
        """
        _check_day(day)
        now = self._clock()
        lease_until = None if lease is None else to_db_time(now + lease)
        async with self._writing() as db:
            if await db.one("SELECT 1 FROM subscriptions WHERE id = ?", (subscription_id,)) is None:
                raise LookupError(f"no subscription {subscription_id}")
            statuses = {
                row["status"]
                for row in await db.all(
                    "SELECT status FROM deliveries WHERE subscription_id = ? AND day = ?", (subscription_id, day)
                )
            }
            if "pending" in statuses or ("sent" in statuses and not force):
                return None
            # The unique indexes are the last word if another process got there first.
            row = await db.one(
                """
                INSERT INTO deliveries
                    (subscription_id, day, status, forced, created_at, updated_at, claimed_by, lease_until)
                VALUES (?, ?, 'pending', ?, ?, ?, ?, ?)
                ON CONFLICT DO NOTHING
                RETURNING *
                """,
                (subscription_id, day, force, to_db_time(now), to_db_time(now), owner, lease_until),
            )
        return None if row is None else _delivery(row)

    @_shielded
    async def take_over_delivery(self, delivery: Delivery, owner: str, lease: timedelta) -> Delivery | None:
        """Become the holder of a pending delivery, if nobody changed it since `delivery` was read.

        A compare-and-set on the holder and lease, so of several processes sweeping at once exactly
        one wins; the others get None.
        """
        now = self._clock()
        async with self._writing() as db:
            row = await db.one(
                """
                UPDATE deliveries SET claimed_by = ?, lease_until = ?, updated_at = ?
                WHERE id = ? AND status = 'pending'
                    AND claimed_by IS NOT DISTINCT FROM ? AND lease_until IS NOT DISTINCT FROM ?
                RETURNING *
                """,
                (
                    owner,
                    to_db_time(now + lease),
                    to_db_time(now),
                    delivery.id,
                    delivery.claimed_by,
                    None if delivery.lease_until is None else to_db_time(delivery.lease_until),
                ),
            )
        return None if row is None else _delivery(row)

    @_shielded
    async def mark_sent(self, delivery_id: int, message_id: int | None) -> bool:
        """Record that a pending delivery was posted; False if it was not pending."""
        return await self._finish_delivery(delivery_id, "sent", message_id, None)

    @_shielded
    async def mark_failed(self, delivery_id: int, reason: str) -> bool:
        """Record that a pending delivery could not be posted; False if it was not pending."""
        return await self._finish_delivery(delivery_id, "failed", None, reason)

    async def _finish_delivery(self, delivery_id: int, status: str, message_id: int | None, reason: str | None) -> bool:
        async with self._writing() as db:
            changed = await db.run(
                """
                UPDATE deliveries SET status = ?, message_id = ?, reason = ?, updated_at = ?
                WHERE id = ? AND status = 'pending'
                """,
                (status, message_id, reason, self._now(), delivery_id),
            )
        return changed > 0

    async def pending_deliveries(self) -> list[Delivery]:
        """Deliveries begun but never marked sent or failed, oldest first: what a restart must resume."""
        async with self._reading() as db:
            rows = await db.all("SELECT * FROM deliveries WHERE status = 'pending' ORDER BY id")
        return [_delivery(row) for row in rows]

    async def deliveries_for(self, day: str) -> list[Delivery]:
        _check_day(day)
        async with self._reading() as db:
            rows = await db.all("SELECT * FROM deliveries WHERE day = ? ORDER BY id", (day,))
        return [_delivery(row) for row in rows]

    # --- daily runs -----------------------------------------------------------------------------

    @_shielded
    async def create_run(
        self, run_id: str, day: str, guild_id: int | None, *, dry_run: bool, force: bool, started_by: str
    ) -> DailyRun:
        _check_day(day)
        now = self._now()
        async with self._writing() as db:
            row = await db.one(
                """
                INSERT INTO daily_runs
                    (id, day, guild_id, dry_run, forced, status, started_by, counts, created_at, updated_at)
                VALUES (?, ?, ?, ?, ?, 'running', ?, '{}', ?, ?)
                RETURNING *
                """,
                (run_id, day, guild_id, dry_run, force, started_by, now, now),
            )
        assert row is not None
        return _run(row)

    @_shielded
    async def update_run(
        self,
        run_id: str,
        *,
        counts: Mapping[str, int],
        total: int | None = None,
        status: str = "running",
        results: Sequence[Mapping[str, Any]] | None = None,
        error: str | None = None,
    ) -> None:
        async with self._writing() as db:
            await db.run(
                """
                UPDATE daily_runs SET counts = ?, total = COALESCE(?, total), status = ?,
                    results = COALESCE(?, results), error = COALESCE(?, error), updated_at = ?
                WHERE id = ?
                """,
                (
                    json.dumps(dict(counts), sort_keys=True),
                    total,
                    status,
                    None if results is None else json.dumps(list(results), default=str),
                    error,
                    self._now(),
                    run_id,
                ),
            )

    async def get_run(self, run_id: str) -> DailyRun | None:
        async with self._reading() as db:
            row = await db.one("SELECT * FROM daily_runs WHERE id = ?", (run_id,))
        return None if row is None else _run(row)

    # --- webhook replay protection --------------------------------------------------------------

    @_shielded
    async def remember_signature(
        self, signature: str, seen_at: datetime, *, keep_for: timedelta = timedelta(days=1)
    ) -> bool:
        """True the first time a signature is seen, False on a replay.

        Signatures older than `keep_for` before `seen_at` are forgotten, so the webhook must reject
        requests whose signed timestamp is older than that.
        """
        digest = hashlib.sha256(signature.encode()).hexdigest()
        async with self._writing() as db:
            await db.run("DELETE FROM seen_signatures WHERE seen_at < ?", (to_db_time(seen_at - keep_for),))
            added = await db.run(
                "INSERT INTO seen_signatures (digest, seen_at) VALUES (?, ?) ON CONFLICT DO NOTHING",
                (digest, to_db_time(seen_at)),
            )
        return added == 1

    # --- query log ------------------------------------------------------------------------------

    @_shielded
    async def log_query(
        self,
        command: str,
        args: Mapping[str, object],
        guild_id: int | None,
        user_id: int | None,
        latency_ms: float,
        cache_hit: bool,
        outcome: str,
        at: datetime,
    ) -> None:
        """Append one answered command; `args["gpu"]` and `args["model"]` (if strings) feed the top pairs."""
        gpu, model = args.get("gpu"), args.get("model")
        async with self._writing() as db:
            await db.run(
                """
                INSERT INTO query_log
                    (at, command, args, gpu, model, guild_id, user_id, latency_ms, cache_hit, outcome)
                VALUES (?, ?, ?, ?, ?, ?, ?, ?, ?, ?)
                """,
                (
                    to_db_time(at),
                    command,
                    json.dumps(dict(args), sort_keys=True, default=str),
                    gpu if isinstance(gpu, str) else None,
                    model if isinstance(model, str) else None,
                    guild_id,
                    user_id,
                    float(latency_ms),
                    cache_hit,
                    outcome,
                ),
            )

    @_shielded
    async def prune_query_log(self, before: datetime) -> int:
        """Delete entries logged before `before`; returns how many."""
        async with self._writing() as db:
            return await db.run("DELETE FROM query_log WHERE at < ?", (to_db_time(before),))

    async def query_stats(self, guild_id: int | None, since: datetime, until: datetime, *, top: int = 10) -> QueryStats:
        """Usage in [since, until) for one guild, or for every guild and DM when `guild_id` is None."""
        where = "at >= ? AND at < ?"
        params: list[object] = [to_db_time(since), to_db_time(until)]
        if guild_id is not None:
            where += " AND guild_id = ?"
            params.append(guild_id)
        # S608: only these fixed fragments are interpolated; every value is a parameter.
        async with self._reading() as db:
            totals = await db.one(f"SELECT COUNT(*), COALESCE(SUM(cache_hit), 0) FROM query_log WHERE {where}", params)  # noqa: S608
            commands = await db.all(f"SELECT command, COUNT(*) FROM query_log WHERE {where} GROUP BY command", params)  # noqa: S608
            outcomes = await db.all(f"SELECT outcome, COUNT(*) FROM query_log WHERE {where} GROUP BY outcome", params)  # noqa: S608
            pairs = await db.all(
                f"""
                SELECT gpu, model, COUNT(*) AS n FROM query_log
                WHERE {where} AND gpu IS NOT NULL AND model IS NOT NULL
                GROUP BY gpu, model ORDER BY n DESC, gpu, model LIMIT ?
                """,  # noqa: S608
                [*params, top],
            )
        assert totals is not None
        return QueryStats(
            count=int(totals[0]),
            cache_hits=int(totals[1]),
            by_command={row[0]: int(row[1]) for row in commands},
            by_outcome={row[0]: int(row[1]) for row in outcomes},
            top_pairs=tuple(PairCount(gpu=row[0], model=row[1], count=int(row[2])) for row in pairs),
        )

    # --- catalog snapshots ----------------------------------------------------------------------

    @_shielded
    async def record_catalog_version(
        self, version: str, gpu_ids: Iterable[str], model_ids: Iterable[str], at: datetime
    ) -> CatalogSnapshot:
        """Remember what a catalog version contained; a restart on the same catalog records nothing new."""
        gpus, models = json.dumps(sorted(set(gpu_ids))), json.dumps(sorted(set(model_ids)))
        async with self._writing() as db:
            latest = await db.one("SELECT * FROM catalog_snapshots ORDER BY recorded_at DESC, id DESC LIMIT 1")
            if latest is not None and (latest["version"], latest["gpu_ids"], latest["model_ids"]) == (
                version,
                gpus,
                models,
            ):
                return _snapshot(latest)
            row = await db.one(
                """
                INSERT INTO catalog_snapshots (version, gpu_ids, model_ids, recorded_at) VALUES (?, ?, ?, ?)
                RETURNING *
                """,
                (version, gpus, models, to_db_time(at)),
            )
        assert row is not None
        return _snapshot(row)

    async def last_catalog_snapshot(self, before: datetime | None = None) -> CatalogSnapshot | None:
        """The newest snapshot, or the newest recorded strictly before `before`."""
        async with self._reading() as db:
            if before is None:
                row = await db.one("SELECT * FROM catalog_snapshots ORDER BY recorded_at DESC, id DESC LIMIT 1")
            else:
                row = await db.one(
                    "SELECT * FROM catalog_snapshots WHERE recorded_at < ? ORDER BY recorded_at DESC, id DESC LIMIT 1",
                    (to_db_time(before),),
                )
        return None if row is None else _snapshot(row)

    # --- moving a state between databases -------------------------------------------------------

    async def export_tables(self) -> dict[str, Any]:
        """Every row of every table, as JSON-ready data that `import_tables` reads back."""
        tables: dict[str, Any] = {}
        async with self._reading() as db:
            for table in TABLES:
                rows = await db.all(f"SELECT * FROM {table} ORDER BY 1")  # noqa: S608 - a fixed table name
                columns = list(rows[0].keys()) if rows else []
                tables[table] = {"columns": columns, "rows": [list(row) for row in rows]}
        return {"format": EXPORT_FORMAT, "schema": LATEST_VERSION, "tables": tables}

    @_shielded
    async def import_tables(self, data: Mapping[str, Any]) -> dict[str, int]:
        """Load an export into this (empty) store in one transaction; returns rows per table."""
        if data.get("format") != EXPORT_FORMAT:
            raise StateStoreError("not a rigcheck state export (no 'format: rigcheck-state')")
        if data.get("schema") != LATEST_VERSION:
            raise StateStoreError(f"the export has schema {data.get('schema')}, this build {LATEST_VERSION}: "
                                  "export and import with the same rigcheck version")
        counts: dict[str, int] = {}
        async with self._writing() as db:
            for table in TABLES:
                if await db.one(f"SELECT 1 FROM {table} LIMIT 1") is not None:  # noqa: S608 - a fixed table name
                    raise StateStoreError(f"the target already has rows in {table}; import only into an empty state")
            for table in TABLES:
                block = data["tables"].get(table) or {"columns": [], "rows": []}
                columns = [str(c) for c in block["columns"]]
                if not all(re.fullmatch(r"[a-z_]+", c) for c in columns):
                    raise StateStoreError(f"unexpected column names in {table}: {columns}")
                marks = ", ".join("?" for _ in columns)
                for values in block["rows"]:
                    await db.run(f"INSERT INTO {table} ({', '.join(columns)}) VALUES ({marks})", values)  # noqa: S608
                counts[table] = len(block["rows"])
                if self.dialect == "postgres" and "id" in columns and table != "daily_runs":
                    # Rows kept their ids; the identity must continue after them.
                    reset = (f"SELECT setval(pg_get_serial_sequence('{table}', 'id'), "  # noqa: S608 - fixed name
                             f"COALESCE((SELECT MAX(id) FROM {table}), 1), (SELECT COUNT(*) > 0 FROM {table}))")
                    await db.run(reset)
        return counts

    # --- plumbing -------------------------------------------------------------------------------

    def _now(self) -> str:
        return to_db_time(self._clock())

    def _database(self) -> Database:
        if self._db is None:
            raise StateStoreError(f"state database {self._describe()} is closed")
        return self._db

    def _describe(self) -> str:
        from bot.store.db import redacted

        return redacted(self.target) if isinstance(self.target, str) else str(self.target)

    @contextlib.asynccontextmanager
    async def _reading(self) -> AsyncIterator[Connection]:
        async with self._database().reading() as db:
            yield db

    @contextlib.asynccontextmanager
    async def _writing(self) -> AsyncIterator[Connection]:
        async with self._database().writing() as db:
            yield db

    async def _start(self) -> None:
        db = await open_database(self.target)
        try:
            # Looked up here, not bound at import, so a test can add a step.
            await db.migrate(MIGRATIONS, LATEST_VERSION)
        except BaseException:
            await db.close()
            raise
        self._db = db


EXPORT_FORMAT = "rigcheck-state"
__all__ = ["MARKER_SUFFIX", "UNSUBSCRIBED", "StateStore"]


def _check_day(day: str) -> None:
    # One spelling per day, or "2025-1-5" and "2025-01-05" would be two days to the unique indexes.
    if not _DAY.fullmatch(day):
        raise ValueError(f"day must be YYYY-MM-DD, got {day!r}")
    date.fromisoformat(day)


def _subscription(row: Row) -> Subscription:
    return Subscription(
        id=row["id"],
        guild_id=row["guild_id"],
        channel_id=row["channel_id"],
        webhook_url=row["webhook_url"],
        gpus=tuple(json.loads(row["gpus"])),
        ctx=row["ctx"],
        locale=row["locale"],
        active=bool(row["active"]),
        disabled_reason=row["disabled_reason"],
        created_at=from_db_time(row["created_at"]),
        updated_at=from_db_time(row["updated_at"]),
    )


def _delivery(row: Row) -> Delivery:
    lease = row["lease_until"]
    return Delivery(
        id=row["id"],
        subscription_id=row["subscription_id"],
        day=row["day"],
        status=row["status"],
        forced=bool(row["forced"]),
        message_id=row["message_id"],
        reason=row["reason"],
        created_at=from_db_time(row["created_at"]),
        updated_at=from_db_time(row["updated_at"]),
        claimed_by=row["claimed_by"],
        lease_until=None if lease is None else from_db_time(lease),
    )


def _run(row: Row) -> DailyRun:
    return DailyRun(
        id=row["id"],
        day=row["day"],
        guild_id=row["guild_id"],
        dry_run=bool(row["dry_run"]),
        forced=bool(row["forced"]),
        status=row["status"],
        started_by=row["started_by"],
        total=row["total"],
        counts=json.loads(row["counts"]),
        results=None if row["results"] is None else json.loads(row["results"]),
        error=row["error"],
        created_at=from_db_time(row["created_at"]),
        updated_at=from_db_time(row["updated_at"]),
    )


def _snapshot(row: Row) -> CatalogSnapshot:
    return CatalogSnapshot(
        id=row["id"],
        version=row["version"],
        gpu_ids=tuple(json.loads(row["gpu_ids"])),
        model_ids=tuple(json.loads(row["model_ids"])),
        recorded_at=from_db_time(row["recorded_at"]),
    )
