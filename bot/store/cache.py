"""The disposable reply cache: rendered answers keyed by query and data versions, evicted LRU by size.

Anything here may be lost at any time; a damaged file is moved aside and rebuilt rather than
allowed to stop the bot.
"""

from __future__ import annotations

import asyncio
import contextlib
import hashlib
import json
import logging
import math
import sqlite3
import struct
import time
from collections.abc import Callable, Mapping
from datetime import UTC, datetime
from enum import Enum
from pathlib import Path
from typing import Any

import aiosqlite
from pydantic import BaseModel, ConfigDict, Field, ValidationError

from bot.store._sqlite import (
    CACHE_APPLICATION_ID,
    Opening,
    Store,
    connect,
    fetch_one,
    integrity_problems,
    is_corruption,
    sidecar_paths,
    stamp_and_commit,
)

log = logging.getLogger(__name__)

# Part of every key: changing how keys are built must orphan old entries, not collide with them.
KEY_RECIPE = "rigcheck-reply-key/1"
# The on-disk layout of one entry; rows in another layout are dropped as misses.
PAYLOAD_FORMAT = 1
SCHEMA_VERSION = 1
MEMORY = ":memory:"

_SCHEMA = (
    """
    CREATE TABLE IF NOT EXISTS replies (
        key TEXT PRIMARY KEY,
        payload BLOB NOT NULL,
        size_bytes INTEGER NOT NULL,
        created_at REAL NOT NULL,
        last_used_at REAL NOT NULL,
        -- A counter rather than the clock decides LRU order: ties and clock steps cannot reorder it.
        use_seq INTEGER NOT NULL
    )
    """,
    "CREATE INDEX IF NOT EXISTS replies_lru ON replies (use_seq)",
)

_HEADER_LEN = struct.Struct(">I")


class _DamagedFileError(Exception):
    """SQLite opened the file but its integrity check failed."""


class _ForeignFileError(Exception):
    """The file is a sound database that some other program (or the state store) owns."""


class CachedFile(BaseModel):
    """An attachment of a reply, such as a chart PNG."""

    model_config = ConfigDict(frozen=True)

    filename: str
    data: bytes


class CachedReply(BaseModel):
    """Everything needed to send a reply again without recomputing it."""

    content: str | None = None
    embeds: list[dict[str, Any]] = Field(default_factory=list)
    files: list[CachedFile] = Field(default_factory=list)
    components: list[dict[str, Any]] = Field(default_factory=list)
    ephemeral: bool = False
    # What the bot needs to rebuild the reply's buttons (e.g. the page count behind ◀ ▶).
    meta: dict[str, Any] = Field(default_factory=dict)


class CacheStats(BaseModel):
    """Counters since the cache was opened, plus its current size."""

    model_config = ConfigDict(frozen=True)

    hits: int
    misses: int
    puts: int
    evictions: int
    errors: int
    entries: int
    total_bytes: int
    max_bytes: int

    @property
    def hit_ratio(self) -> float:
        lookups = self.hits + self.misses
        return self.hits / lookups if lookups else 0.0


def make_key(parts: Mapping[str, object], catalog_version: str, estimator_version: str) -> str:
    """The sha256 hex of a canonical JSON form of a normalised query and the versions behind its answer.

    Key order, tuples versus lists, set order, integral floats (``32768.0``) and keys whose value
    is None (meaning "the default") do not change the key. Strings are taken as given: resolving
    what people typed into canonical ids is the caller's job.
    """
    document = {
        "recipe": KEY_RECIPE,
        "catalog": catalog_version,
        "estimator": estimator_version,
        "query": _canonical(parts),
    }
    text = json.dumps(document, sort_keys=True, separators=(",", ":"), ensure_ascii=False, allow_nan=False)
    return hashlib.sha256(text.encode()).hexdigest()


def _canonical(value: object) -> object:
    if isinstance(value, Enum):
        return _canonical(value.value)
    if value is None or isinstance(value, bool | str | int):
        return value
    if isinstance(value, float):
        if not math.isfinite(value):
            raise ValueError(f"cannot key a non-finite number: {value!r}")
        return int(value) if value.is_integer() else value
    if isinstance(value, BaseModel):
        return _canonical(value.model_dump(mode="json"))
    if isinstance(value, Mapping):
        out: dict[str, object] = {}
        for name, item in value.items():
            if not isinstance(name, str):
                raise TypeError(f"query keys must be strings, got {name!r}")
            if item is not None:
                out[name] = _canonical(item)
        return out
    if isinstance(value, list | tuple):
        return [_canonical(item) for item in value]
    if isinstance(value, set | frozenset):
        items = [_canonical(item) for item in value]
        return sorted(items, key=lambda item: json.dumps(item, sort_keys=True))
    # Falling back to str() would let two different values share a key.
    raise TypeError(f"cannot key a value of type {type(value).__name__}")


def encode_reply(reply: CachedReply) -> bytes:
    """A length-prefixed JSON header followed by the raw file bytes, so PNGs are not base64-inflated."""
    header = {
        "format": PAYLOAD_FORMAT,
        "reply": reply.model_dump(mode="json", exclude={"files"} | ({"meta"} if not reply.meta else set())),
        "files": [[item.filename, len(item.data)] for item in reply.files],
    }
    head = json.dumps(header, separators=(",", ":"), ensure_ascii=False).encode()
    return b"".join([_HEADER_LEN.pack(len(head)), head, *(item.data for item in reply.files)])


def decode_reply(payload: bytes) -> CachedReply:
    """The inverse of `encode_reply`; raises ValueError for anything it did not write."""
    if len(payload) < _HEADER_LEN.size:
        raise ValueError("payload too short")
    (head_len,) = _HEADER_LEN.unpack_from(payload)
    body_at = _HEADER_LEN.size + head_len
    header = json.loads(payload[_HEADER_LEN.size : body_at])
    if not isinstance(header, dict) or header.get("format") != PAYLOAD_FORMAT:
        raise ValueError("unknown payload format")
    files: list[CachedFile] = []
    at = body_at
    for filename, size in header["files"]:
        end = at + int(size)
        if end > len(payload):
            raise ValueError("payload truncated")
        files.append(CachedFile(filename=filename, data=payload[at:end]))
        at = end
    if at != len(payload):
        raise ValueError("payload has trailing bytes")
    try:
        return CachedReply.model_validate({**header["reply"], "files": files})
    except ValidationError as exc:
        raise ValueError(str(exc)) from exc


class ReplyCache(Store):
    """A size-bounded LRU cache of replies in one SQLite file.

    Open with ``await ReplyCache.open(path, max_bytes=...)`` or ``async with ReplyCache.open(...)``.
    All calls share one connection and run one at a time, so any number of tasks may use it.
    Storage errors never escape `get` or `put`: they count as a miss or a skipped write.
    """

    def __init__(self, path: Path | str, *, max_bytes: int, clock: Callable[[], float]) -> None:
        if max_bytes <= 0:
            raise ValueError("max_bytes must be positive")
        self.path = path if path == MEMORY else Path(path)
        self.max_bytes = max_bytes
        self._clock = clock
        self._db: aiosqlite.Connection | None = None
        self._lock = asyncio.Lock()
        self._seq = 0
        self._entries = 0
        self._total_bytes = 0
        self._hits = 0
        self._misses = 0
        self._puts = 0
        self._evictions = 0
        self._errors = 0

    @classmethod
    def open(cls, path: Path | str, *, max_bytes: int, clock: Callable[[], float] = time.time) -> Opening[ReplyCache]:
        """Open (creating, or rebuilding if damaged) the cache at `path`; ":memory:" keeps it in RAM."""
        return cls(path, max_bytes=max_bytes, clock=clock)._opening()

    async def close(self) -> None:
        """Wait for the call in progress, then close; later calls act as an empty cache."""
        async with self._lock:
            if self._db is not None:
                await self._db.close()
                self._db = None

    def stats(self) -> CacheStats:
        return CacheStats(
            hits=self._hits,
            misses=self._misses,
            puts=self._puts,
            evictions=self._evictions,
            errors=self._errors,
            entries=self._entries,
            total_bytes=self._total_bytes,
            max_bytes=self.max_bytes,
        )

    async def ping(self) -> str | None:
        """None when the file answers a read; else why not. Reads only, and counts as neither hit nor miss."""
        async with self._lock:
            if self._db is None:
                return "closed"
            try:
                await fetch_one(self._db, "SELECT 1 FROM replies LIMIT 1")
            except sqlite3.Error as exc:
                return f"{type(exc).__name__}: {str(exc)[:200]}"
        return None

    async def get(self, key: str) -> CachedReply | None:
        """The stored reply for `key`, marking it most recently used; None on a miss."""
        async with self._lock:
            reply = await self._get_locked(key)
        if reply is None:
            self._misses += 1
        else:
            self._hits += 1
        return reply

    async def put(self, key: str, reply: CachedReply) -> bool:
        """Store `reply`, evicting least recently used entries to stay within max_bytes.

        Returns False when nothing was stored: the reply alone exceeds max_bytes, or storage failed.
        """
        payload = encode_reply(reply)
        if len(payload) > self.max_bytes:
            log.debug("reply of %d bytes exceeds the cache size %d; not cached", len(payload), self.max_bytes)
            return False
        # Shielded so a caller cancelled mid-write cannot leave the size counters out of step with the file.
        return await asyncio.shield(self._put(key, payload))

    async def _put(self, key: str, payload: bytes) -> bool:
        async with self._lock:
            stored = await self._put_locked(key, payload)
        if stored:
            self._puts += 1
        return stored

    async def clear(self) -> None:
        """Drop every entry (for example after a catalog reload); counters are kept."""
        async with self._lock:
            if self._db is None:
                return
            try:
                await self._db.execute("DELETE FROM replies")
            except sqlite3.Error as exc:
                await self._storage_failed(exc, "clear")
                return
            self._entries = 0
            self._total_bytes = 0

    async def _get_locked(self, key: str) -> CachedReply | None:
        if self._db is None:
            return None
        try:
            row = await fetch_one(self._db, "SELECT payload FROM replies WHERE key = ?", (key,))
            if row is None:
                return None
            try:
                reply = decode_reply(bytes(row[0]))
            except (ValueError, KeyError, TypeError):
                log.warning("dropping unreadable cache entry %s", key[:12])
                await self._delete_locked(key)
                return None
            self._seq += 1
            await self._db.execute(
                "UPDATE replies SET last_used_at = ?, use_seq = ? WHERE key = ?", (self._clock(), self._seq, key)
            )
            return reply
        except sqlite3.Error as exc:
            await self._storage_failed(exc, "get")
            return None

    async def _put_locked(self, key: str, payload: bytes) -> bool:
        db = self._db
        if db is None:
            return False
        now = self._clock()
        seq = self._seq + 1
        try:
            await db.execute("BEGIN IMMEDIATE")
            try:
                old = await fetch_one(db, "SELECT size_bytes FROM replies WHERE key = ?", (key,))
                await db.execute(
                    """
                    INSERT INTO replies (key, payload, size_bytes, created_at, last_used_at, use_seq)
                    VALUES (?, ?, ?, ?, ?, ?)
                    ON CONFLICT (key) DO UPDATE SET
                        payload = excluded.payload, size_bytes = excluded.size_bytes,
                        created_at = excluded.created_at, last_used_at = excluded.last_used_at,
                        use_seq = excluded.use_seq
                    """,
                    (key, payload, len(payload), now, now, seq),
                )
                entries = self._entries + (1 if old is None else 0)
                total = self._total_bytes - (0 if old is None else int(old[0])) + len(payload)
                evicted, freed = await self._choose_victims(db, total)
                await db.executemany("DELETE FROM replies WHERE key = ?", [(victim,) for victim in evicted])
                await db.execute("COMMIT")
            except BaseException:
                await _rollback(db)
                raise
        except sqlite3.Error as exc:
            await self._storage_failed(exc, "put")
            return False
        self._seq = seq
        self._entries = entries - len(evicted)
        self._total_bytes = total - freed
        self._evictions += len(evicted)
        return True

    async def _choose_victims(self, db: aiosqlite.Connection, total: int) -> tuple[list[str], int]:
        victims: list[str] = []
        freed = 0
        if total <= self.max_bytes:
            return victims, freed
        async with db.execute("SELECT key, size_bytes FROM replies ORDER BY use_seq") as cursor:
            async for key, size in cursor:
                victims.append(str(key))
                freed += int(size)
                if total - freed <= self.max_bytes:
                    break
        return victims, freed

    async def _delete_locked(self, key: str) -> None:
        assert self._db is not None
        row = await fetch_one(self._db, "DELETE FROM replies WHERE key = ? RETURNING size_bytes", (key,))
        if row is not None:
            self._entries -= 1
            self._total_bytes -= int(row[0])

    async def _storage_failed(self, exc: sqlite3.Error, action: str) -> None:
        self._errors += 1
        if is_corruption(exc):
            log.warning("reply cache %s is damaged (%s during %s); rebuilding it", self.path, exc, action)
            await self._rebuild()
        else:
            log.warning("reply cache %s failed during %s: %s", self.path, action, exc)

    async def _start(self) -> None:
        try:
            self._db = await self._connect_checked()
        except (sqlite3.Error, OSError, _ForeignFileError) as exc:
            if self.path == MEMORY:
                raise
            log.error("reply cache %s cannot be opened (%s); caching in memory until restart", self.path, exc)
            self.path = MEMORY
            self._db = await self._connect(MEMORY)
        await self._load_totals()

    async def _rebuild(self) -> None:
        if self._db is not None:
            with contextlib.suppress(sqlite3.Error):
                await self._db.close()
            self._db = None
        self._entries = self._total_bytes = 0
        if isinstance(self.path, Path):
            try:
                self._move_aside(self.path)
            except OSError as exc:
                log.warning("could not move the damaged reply cache aside: %s", exc)
        await self._start()

    async def _connect_checked(self) -> aiosqlite.Connection:
        """Connect to the file, moving it aside first if SQLite cannot trust it."""
        if isinstance(self.path, Path):
            self.path.parent.mkdir(parents=True, exist_ok=True)
        try:
            return await self._connect(self.path, check=True)
        except (sqlite3.Error, _DamagedFileError) as exc:
            if (isinstance(exc, sqlite3.Error) and not is_corruption(exc)) or not isinstance(self.path, Path):
                raise
            log.warning("reply cache %s is damaged (%s); moving it aside and starting empty", self.path, exc)
            self._move_aside(self.path)
            return await self._connect(self.path)

    async def _connect(self, path: Path | str, *, check: bool = False) -> aiosqlite.Connection:
        db = await connect(path, isolation_level=None)
        try:
            if check:
                problems = await integrity_problems(db)
                if problems:
                    raise _DamagedFileError("; ".join(problems[:3]))
                await self._check_ours(db)
            await db.execute("PRAGMA journal_mode = WAL")
            # Losing the last few writes on power loss only costs recomputation.
            await db.execute("PRAGMA synchronous = NORMAL")
            await db.execute("PRAGMA busy_timeout = 5000")
            await db.execute("BEGIN IMMEDIATE")
            row = await fetch_one(db, "PRAGMA user_version")
            version = row[0] if row else 0
            if version not in (0, SCHEMA_VERSION):
                log.info("reply cache %s has layout %s; starting it afresh", path, version)
                await db.execute("DROP TABLE IF EXISTS replies")
            for statement in _SCHEMA:
                await db.execute(statement)
            await stamp_and_commit(db, CACHE_APPLICATION_ID, SCHEMA_VERSION)
        except BaseException:
            await db.close()
            raise
        return db

    async def _check_ours(self, db: aiosqlite.Connection) -> None:
        application_id = await fetch_one(db, "PRAGMA application_id")
        tables = await fetch_one(db, "SELECT COUNT(*) FROM sqlite_master")
        if application_id and application_id[0] != CACHE_APPLICATION_ID and tables and tables[0] > 0:
            raise _ForeignFileError(f"{self.path} holds another program's data (application id {application_id[0]:#x})")

    async def _load_totals(self) -> None:
        assert self._db is not None
        row = await fetch_one(
            self._db, "SELECT COUNT(*), COALESCE(SUM(size_bytes), 0), COALESCE(MAX(use_seq), 0) FROM replies"
        )
        assert row is not None
        self._entries, self._total_bytes, self._seq = (int(value) for value in row)

    def _move_aside(self, path: Path) -> None:
        stamp = datetime.fromtimestamp(self._clock(), UTC).strftime("%Y%m%dT%H%M%SZ")
        suffix = f".corrupt-{stamp}"
        attempt = 1
        while any(p.with_name(p.name + suffix).exists() for p in sidecar_paths(path)):
            attempt += 1
            suffix = f".corrupt-{stamp}-{attempt}"
        for part in sidecar_paths(path):
            # The WAL must go too: SQLite would replay a stale one into the fresh file.
            if part.exists():
                part.rename(part.with_name(part.name + suffix))
        log.warning("moved the damaged reply cache to %s", path.with_name(path.name + suffix))


async def _rollback(db: aiosqlite.Connection) -> None:
    # SQLite may already have rolled back by itself (for example after SQLITE_FULL).
    with contextlib.suppress(sqlite3.Error):
        await db.execute("ROLLBACK")
