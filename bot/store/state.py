"""The durable state database: settings, subscriptions, deliveries, query log, catalog snapshots.

Unlike the reply cache, nothing here is given up to recover from a problem: a damaged file, a file
from a newer build, or a missing data directory stops start-up with an error that says what to do.
"""

from __future__ import annotations

import asyncio
import contextlib
import functools
import hashlib
import json
import logging
import re
import sqlite3
from collections.abc import AsyncIterator, Callable, Coroutine, Iterable, Mapping, Sequence
from datetime import date, datetime, timedelta
from pathlib import Path
from types import TracebackType
from typing import Any, ParamSpec, TypeVar

import aiosqlite
from pydantic import SecretStr

from bot.store._sqlite import (
    STATE_APPLICATION_ID,
    Opening,
    from_db_time,
    integrity_problems,
    is_corruption,
    to_db_time,
    utc_now,
)
from bot.store.errors import SchemaTooNewError, StateCorruptError, StateStoreError
from bot.store.migrations import LATEST_VERSION, MIGRATIONS
from bot.store.records import (
    CatalogSnapshot,
    Delivery,
    GuildSettings,
    PairCount,
    QueryStats,
    Subscription,
    UserSettings,
)

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


class StateStore:
    """The bot's long-lived records in one SQLite file, migrated forward at open.

    Open with ``await StateStore.open(path)`` or ``async with StateStore.open(path)``. All calls
    share one connection and run one at a time; each write is its own transaction.
    """

    def __init__(self, path: Path, *, clock: Callable[[], datetime]) -> None:
        self.path = path
        self._clock = clock
        self._db: aiosqlite.Connection | None = None
        self._lock = asyncio.Lock()

    @classmethod
    def open(cls, path: Path | str, *, clock: Callable[[], datetime] = utc_now) -> Opening[StateStore]:
        """Open the database at `path`, creating or migrating it; the directory must already exist.

        Raises StateCorruptError, SchemaTooNewError or StateStoreError instead of touching a file
        it cannot safely use.
        """
        store = cls(Path(path), clock=clock)

        async def start() -> StateStore:
            await store._start()
            return store

        return Opening(start)

    async def __aenter__(self) -> StateStore:
        return self

    async def __aexit__(
        self, exc_type: type[BaseException] | None, exc: BaseException | None, tb: TracebackType | None
    ) -> None:
        await self.close()

    async def close(self) -> None:
        """Wait for the call in progress, then close. Safe to call twice."""
        async with self._lock:
            if self._db is not None:
                await self._db.close()
                self._db = None

    async def ping(self) -> str | None:
        """None when the database answers a read; else why not. Writes nothing (a probe may call it often)."""
        async with self._reading() as db:
            await _one(db, "SELECT COUNT(*) FROM settings WHERE scope = 'guild' AND subject_id = 0")
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
            row = await _one(db, "SELECT data FROM settings WHERE scope = ? AND subject_id = ?", (scope, subject_id))
        return model() if row is None else model.model_validate_json(row["data"])

    @_shielded
    async def _set_settings(self, scope: str, subject_id: int, settings: GuildSettings | UserSettings) -> None:
        async with self._writing() as db:
            await db.execute(
                """
                INSERT INTO settings (scope, subject_id, data, updated_at) VALUES (?, ?, ?, ?)
                ON CONFLICT (scope, subject_id) DO UPDATE SET data = excluded.data, updated_at = excluded.updated_at
                """,
                (scope, subject_id, settings.model_dump_json(), self._now()),
            )

    @_shielded
    async def _clear_settings(self, scope: str, subject_id: int) -> bool:
        async with self._writing() as db:
            cursor = await db.execute("DELETE FROM settings WHERE scope = ? AND subject_id = ?", (scope, subject_id))
            return cursor.rowcount > 0

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
            row = await _one(
                db,
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
        async with self._writing() as db:
            cursor = await db.execute(
                """
                UPDATE subscriptions SET active = 0, disabled_reason = ?, updated_at = ?
                WHERE guild_id = ? AND active = 1 AND (? IS NULL OR channel_id = ?)
                """,
                (UNSUBSCRIBED, self._now(), guild_id, channel_id, channel_id),
            )
            return cursor.rowcount

    @_shielded
    async def disable_subscription(self, subscription_id: int, reason: str) -> bool:
        """Stop delivering to a subscription (say, its channel is gone); re-subscribing re-enables it."""
        async with self._writing() as db:
            cursor = await db.execute(
                "UPDATE subscriptions SET active = 0, disabled_reason = ?, updated_at = ? WHERE id = ? AND active = 1",
                (reason, self._now(), subscription_id),
            )
            return cursor.rowcount > 0

    async def get_subscription(self, subscription_id: int) -> Subscription | None:
        async with self._reading() as db:
            row = await _one(db, "SELECT * FROM subscriptions WHERE id = ?", (subscription_id,))
        return None if row is None else _subscription(row)

    async def list_subscriptions(self, guild_id: int | None = None, active_only: bool = True) -> list[Subscription]:
        async with self._reading() as db:
            rows = await _all(
                db,
                """
                SELECT * FROM subscriptions
                WHERE (:guild IS NULL OR guild_id = :guild) AND (NOT :active_only OR active = 1)
                ORDER BY id
                """,
                {"guild": guild_id, "active_only": active_only},
            )
        return [_subscription(row) for row in rows]

    # --- deliveries -----------------------------------------------------------------------------

    @_shielded
    async def begin_delivery(self, subscription_id: int, day: str, *, force: bool = False) -> Delivery | None:
        """Claim the right to post `day`'s summary, recording a pending delivery.

        Returns None when another attempt is pending, or when one was already sent and `force` is
        False. A pending delivery left by a crash blocks new attempts until it is resumed (see
        `pending_deliveries`) or marked failed, since it may in fact have been posted.
        """
        _check_day(day)
        now = self._now()
        async with self._writing() as db:
            if await _one(db, "SELECT 1 FROM subscriptions WHERE id = ?", (subscription_id,)) is None:
                raise LookupError(f"no subscription {subscription_id}")
            statuses = {
                row["status"]
                for row in await _all(
                    db, "SELECT status FROM deliveries WHERE subscription_id = ? AND day = ?", (subscription_id, day)
                )
            }
            if "pending" in statuses or ("sent" in statuses and not force):
                return None
            try:
                row = await _one(
                    db,
                    """
                    INSERT INTO deliveries (subscription_id, day, status, forced, created_at, updated_at)
                    VALUES (?, ?, 'pending', ?, ?, ?)
                    RETURNING *
                    """,
                    (subscription_id, day, force, now, now),
                )
            except sqlite3.IntegrityError:
                # The unique indexes are the last word if another process got there first.
                return None
        assert row is not None
        return _delivery(row)

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
            cursor = await db.execute(
                """
                UPDATE deliveries SET status = ?, message_id = ?, reason = ?, updated_at = ?
                WHERE id = ? AND status = 'pending'
                """,
                (status, message_id, reason, self._now(), delivery_id),
            )
            return cursor.rowcount > 0

    async def pending_deliveries(self) -> list[Delivery]:
        """Deliveries begun but never marked sent or failed, oldest first: what a restart must resume."""
        async with self._reading() as db:
            rows = await _all(db, "SELECT * FROM deliveries WHERE status = 'pending' ORDER BY id")
        return [_delivery(row) for row in rows]

    async def deliveries_for(self, day: str) -> list[Delivery]:
        _check_day(day)
        async with self._reading() as db:
            rows = await _all(db, "SELECT * FROM deliveries WHERE day = ? ORDER BY id", (day,))
        return [_delivery(row) for row in rows]

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
            await db.execute("DELETE FROM seen_signatures WHERE seen_at < ?", (to_db_time(seen_at - keep_for),))
            cursor = await db.execute(
                "INSERT OR IGNORE INTO seen_signatures (digest, seen_at) VALUES (?, ?)", (digest, to_db_time(seen_at))
            )
            return cursor.rowcount == 1

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
        await self._execute_write(
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
                latency_ms,
                cache_hit,
                outcome,
            ),
        )

    @_shielded
    async def prune_query_log(self, before: datetime) -> int:
        """Delete entries logged before `before`; returns how many."""
        return await self._execute_write("DELETE FROM query_log WHERE at < ?", (to_db_time(before),))

    async def query_stats(self, guild_id: int | None, since: datetime, until: datetime, *, top: int = 10) -> QueryStats:
        """Usage in [since, until) for one guild, or for every guild and DM when `guild_id` is None."""
        window = {"guild": guild_id, "since": to_db_time(since), "until": to_db_time(until), "top": top}
        async with self._reading() as db:
            totals = await _one(
                db,
                """
                SELECT COUNT(*), COALESCE(SUM(cache_hit), 0) FROM query_log
                WHERE (:guild IS NULL OR guild_id = :guild) AND at >= :since AND at < :until
                """,
                window,
            )
            commands = await _all(
                db,
                """
                SELECT command, COUNT(*) FROM query_log
                WHERE (:guild IS NULL OR guild_id = :guild) AND at >= :since AND at < :until
                GROUP BY command
                """,
                window,
            )
            outcomes = await _all(
                db,
                """
                SELECT outcome, COUNT(*) FROM query_log
                WHERE (:guild IS NULL OR guild_id = :guild) AND at >= :since AND at < :until
                GROUP BY outcome
                """,
                window,
            )
            pairs = await _all(
                db,
                """
                SELECT gpu, model, COUNT(*) AS n FROM query_log
                WHERE (:guild IS NULL OR guild_id = :guild) AND at >= :since AND at < :until
                    AND gpu IS NOT NULL AND model IS NOT NULL
                GROUP BY gpu, model ORDER BY n DESC, gpu, model LIMIT :top
                """,
                window,
            )
        assert totals is not None
        return QueryStats(
            count=totals[0],
            cache_hits=totals[1],
            by_command={row[0]: row[1] for row in commands},
            by_outcome={row[0]: row[1] for row in outcomes},
            top_pairs=tuple(PairCount(gpu=row[0], model=row[1], count=row[2]) for row in pairs),
        )

    # --- catalog snapshots ----------------------------------------------------------------------

    @_shielded
    async def record_catalog_version(
        self, version: str, gpu_ids: Iterable[str], model_ids: Iterable[str], at: datetime
    ) -> CatalogSnapshot:
        """Remember what a catalog version contained; a restart on the same catalog records nothing new."""
        gpus, models = json.dumps(sorted(set(gpu_ids))), json.dumps(sorted(set(model_ids)))
        async with self._writing() as db:
            latest = await _one(db, "SELECT * FROM catalog_snapshots ORDER BY recorded_at DESC, id DESC LIMIT 1")
            if latest is not None and (latest["version"], latest["gpu_ids"], latest["model_ids"]) == (
                version,
                gpus,
                models,
            ):
                return _snapshot(latest)
            row = await _one(
                db,
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
            row = await _one(
                db,
                """
                SELECT * FROM catalog_snapshots WHERE (:before IS NULL OR recorded_at < :before)
                ORDER BY recorded_at DESC, id DESC LIMIT 1
                """,
                {"before": None if before is None else to_db_time(before)},
            )
        return None if row is None else _snapshot(row)

    # --- plumbing -------------------------------------------------------------------------------

    def _now(self) -> str:
        return to_db_time(self._clock())

    @contextlib.asynccontextmanager
    async def _reading(self) -> AsyncIterator[aiosqlite.Connection]:
        async with self._lock:
            yield self._connection()

    @contextlib.asynccontextmanager
    async def _writing(self) -> AsyncIterator[aiosqlite.Connection]:
        async with self._lock:
            db = self._connection()
            # IMMEDIATE takes the write lock up front, so a check-then-insert cannot race another process.
            await db.execute("BEGIN IMMEDIATE")
            try:
                yield db
            except BaseException:
                await _rollback(db)
                raise
            await db.execute("COMMIT")

    async def _execute_write(self, sql: str, params: Sequence[object]) -> int:
        async with self._writing() as db:
            cursor = await db.execute(sql, params)
            return cursor.rowcount

    def _connection(self) -> aiosqlite.Connection:
        if self._db is None:
            raise StateStoreError(f"state database {self.path} is closed")
        return self._db

    async def _start(self) -> None:
        if not self.path.parent.is_dir():
            # Creating it could hide an unmounted volume behind a fresh, empty database.
            raise StateStoreError(
                f"directory {self.path.parent} for the state database does not exist; create or mount it first"
            )
        self._refuse_lost_state()
        try:
            db = await aiosqlite.connect(self.path, isolation_level=None)
        except sqlite3.Error as exc:
            raise StateStoreError(f"state database {self.path} cannot be opened ({exc}); "
                                  "check the data directory's permissions and free space") from exc
        try:
            db.row_factory = sqlite3.Row
            await db.execute("PRAGMA busy_timeout = 5000")
            # Checked before anything below can write to the file.
            await self._check_sound(db)
            await db.execute("PRAGMA foreign_keys = ON")
            await db.execute("PRAGMA journal_mode = WAL")
            # A lost "sent" mark after a power cut would mean posting a summary twice.
            await db.execute("PRAGMA synchronous = FULL")
            await self._migrate(db)
            await asyncio.to_thread(self._write_marker)
        except sqlite3.OperationalError as exc:
            await db.close()
            if not _environment_problem(exc):
                raise
            raise StateStoreError(f"state database {self.path} cannot be used ({exc}); "
                                  "check the data directory's permissions and free space") from exc
        except BaseException:
            await db.close()
            raise
        self._db = db

    @property
    def marker_path(self) -> Path:
        return self.path.with_name(self.path.name + MARKER_SUFFIX)

    def _refuse_lost_state(self) -> None:
        """A missing or zero-byte file where a state database has existed is a lost volume or a truncated
        file, not a fresh start: adopting it would silently drop every subscription."""
        if not self.marker_path.exists():
            return
        if self.path.exists() and self.path.stat().st_size > 0:
            return
        state = "empty (0 bytes)" if self.path.exists() else "missing"
        raise StateStoreError(
            f"state database {self.path} is {state}, but a state database was created there "
            f"({self.marker_path.read_text().strip() or 'earlier'}). Refusing to start with an empty one: restore "
            f"the file (or a {self.path.name}.v*.bak backup), or delete {self.marker_path.name} to start afresh"
        )

    def _write_marker(self) -> None:
        if not self.marker_path.exists():
            self.marker_path.write_text(f"created {self._clock().isoformat()}\n")

    async def _check_sound(self, db: aiosqlite.Connection) -> None:
        try:
            problems = await integrity_problems(db)
        except sqlite3.DatabaseError as exc:
            if is_corruption(exc):
                raise StateCorruptError(self.path, str(exc)) from exc
            raise
        if problems:
            raise StateCorruptError(self.path, "; ".join(problems[:3]))

    async def _migrate(self, db: aiosqlite.Connection) -> None:
        found = await _pragma_int(db, "user_version")
        await self._check_ours(db, found)
        if found > LATEST_VERSION:
            raise SchemaTooNewError(self.path, found, LATEST_VERSION)
        if found == LATEST_VERSION:
            return
        if found > 0:
            await self._backup(db, found)
        await db.execute("BEGIN IMMEDIATE")
        try:
            # Another process may have migrated while this one waited for the lock.
            current = await _pragma_int(db, "user_version")
            if current > LATEST_VERSION:
                raise SchemaTooNewError(self.path, current, LATEST_VERSION)
            for steps in MIGRATIONS[current:]:
                for statement in steps:
                    await db.execute(statement)
            await db.execute(f"PRAGMA application_id = {STATE_APPLICATION_ID}")
            await db.execute(f"PRAGMA user_version = {LATEST_VERSION}")
            await db.execute("COMMIT")
        except BaseException:
            await _rollback(db)
            raise
        log.info("state database %s migrated from schema %d to %d", self.path, current, LATEST_VERSION)

    async def _check_ours(self, db: aiosqlite.Connection, version: int) -> None:
        """Refuse a file some other program (or the reply cache) wrote, rather than migrate into it."""
        application_id = await _pragma_int(db, "application_id")
        if application_id == STATE_APPLICATION_ID:
            return
        tables = await _one(db, "SELECT COUNT(*) FROM sqlite_master")
        if application_id == 0 and version == 0 and tables is not None and tables[0] == 0:
            return
        raise StateStoreError(
            f"{self.path} is not a rigcheck state database (application id {application_id:#x}); "
            "check the configured path"
        )

    async def _backup(self, db: aiosqlite.Connection, version: int) -> None:
        target = self.path.with_name(f"{self.path.name}.v{version}.bak")
        attempt = 1
        while target.exists():
            attempt += 1
            target = self.path.with_name(f"{self.path.name}.v{version}-{attempt}.bak")
        await db.execute("VACUUM INTO ?", (str(target),))
        log.info("state database %s backed up to %s before migrating", self.path, target)


_Params = Sequence[object] | Mapping[str, object]
# Written beside the database once it exists, so that a later empty or missing file is noticed.
MARKER_SUFFIX = ".created"


async def _one(db: aiosqlite.Connection, sql: str, params: _Params = ()) -> sqlite3.Row | None:
    async with db.execute(sql, params) as cursor:
        return await cursor.fetchone()


async def _all(db: aiosqlite.Connection, sql: str, params: _Params = ()) -> list[sqlite3.Row]:
    return list(await db.execute_fetchall(sql, params))


async def _pragma_int(db: aiosqlite.Connection, name: str) -> int:
    row = await _one(db, f"PRAGMA {name}")
    assert row is not None
    return int(row[0])


async def _rollback(db: aiosqlite.Connection) -> None:
    # SQLite may already have rolled back by itself (for example after SQLITE_FULL).
    with contextlib.suppress(sqlite3.Error):
        await db.execute("ROLLBACK")


_ENVIRONMENT_CODES = frozenset({sqlite3.SQLITE_PERM, sqlite3.SQLITE_READONLY, sqlite3.SQLITE_IOERR,
                                sqlite3.SQLITE_FULL, sqlite3.SQLITE_CANTOPEN})


def _environment_problem(exc: sqlite3.Error) -> bool:
    """The disk or its permissions, as opposed to the database or the code."""
    code = getattr(exc, "sqlite_errorcode", None)
    return isinstance(code, int) and (code & 0xFF) in _ENVIRONMENT_CODES


def _check_day(day: str) -> None:
    # One spelling per day, or "2025-1-5" and "2025-01-05" would be two days to the unique indexes.
    if not _DAY.fullmatch(day):
        raise ValueError(f"day must be YYYY-MM-DD, got {day!r}")
    date.fromisoformat(day)


def _subscription(row: sqlite3.Row) -> Subscription:
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


def _delivery(row: sqlite3.Row) -> Delivery:
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
    )


def _snapshot(row: sqlite3.Row) -> CatalogSnapshot:
    return CatalogSnapshot(
        id=row["id"],
        version=row["version"],
        gpu_ids=tuple(json.loads(row["gpu_ids"])),
        model_ids=tuple(json.loads(row["model_ids"])),
        recorded_at=from_db_time(row["recorded_at"]),
    )
