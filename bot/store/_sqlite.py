"""Small pieces both stores share: opening handles, corruption detection, timestamps."""

from __future__ import annotations

import asyncio
import sqlite3
from collections.abc import Callable, Coroutine, Generator, Sequence
from datetime import UTC, datetime
from pathlib import Path
from types import TracebackType
from typing import Any, Generic, Protocol, Self, TypeVar

import aiosqlite

# Stamped into each file's header so neither store adopts a file that belongs to the other.
STATE_APPLICATION_ID = 0x72634B53  # "rcKS"
CACHE_APPLICATION_ID = 0x72634B43  # "rcKC"

_CORRUPTION_CODES = frozenset({sqlite3.SQLITE_CORRUPT, sqlite3.SQLITE_NOTADB})


class _Closable(Protocol):
    async def close(self) -> None: ...


StoreT = TypeVar("StoreT", bound=_Closable)


class Store:
    """The lifecycle both stores share: `open()` hands back an `Opening`, and `async with` closes."""

    async def _start(self) -> None:
        raise NotImplementedError

    async def close(self) -> None:
        raise NotImplementedError

    def _opening(self) -> Opening[Self]:
        async def start() -> Self:
            await self._start()
            return self

        return Opening(start)

    async def __aenter__(self) -> Self:
        return self

    async def __aexit__(
        self, exc_type: type[BaseException] | None, exc: BaseException | None, tb: TracebackType | None
    ) -> None:
        await self.close()


class Opening(Generic[StoreT]):
    """What `open()` returns, so a store can be awaited or used directly in `async with`."""

    __slots__ = ("_factory", "_store")

    def __init__(self, factory: Callable[[], Coroutine[Any, Any, StoreT]]) -> None:
        self._factory = factory
        self._store: StoreT | None = None

    def __await__(self) -> Generator[Any, None, StoreT]:
        return self._factory().__await__()

    async def __aenter__(self) -> StoreT:
        self._store = await self._factory()
        return self._store

    async def __aexit__(
        self, exc_type: type[BaseException] | None, exc: BaseException | None, tb: TracebackType | None
    ) -> None:
        if self._store is not None:
            await self._store.close()


# Rows a cursor fetches per call to the worker thread when iterated (aiosqlite.connect's default).
_ITER_CHUNK_SIZE = 64


async def connect(path: Path | str, **kwargs: Any) -> aiosqlite.Connection:
    """`aiosqlite.connect`, with the file opened before aiosqlite's worker thread exists. When aiosqlite's own
    open fails it stops its worker without waiting for it, and the worker then reports back to the caller's event
    loop; a process that exits on that error has closed the loop by then, and the worker's "Event loop is closed"
    traceback follows the clear error. Opened here, a file that cannot be opened starts no thread at all."""
    # The handle is opened on one thread and used only on aiosqlite's worker thread, one call at a time.
    def open_handle() -> sqlite3.Connection:
        return sqlite3.connect(path, check_same_thread=False, **kwargs)

    handle = await asyncio.to_thread(open_handle)
    return await aiosqlite.Connection(lambda: handle, _ITER_CHUNK_SIZE)


def is_corruption(exc: BaseException) -> bool:
    """True when SQLite says the file itself is bad, as opposed to busy, full or misused."""
    code = getattr(exc, "sqlite_errorcode", None)
    # Extended result codes carry the primary code in their low byte.
    return isinstance(code, int) and (code & 0xFF) in _CORRUPTION_CODES


async def integrity_problems(db: aiosqlite.Connection) -> list[str]:
    """What `PRAGMA integrity_check` reports; empty when the file is sound."""
    rows = await db.execute_fetchall("PRAGMA integrity_check")
    messages = [str(row[0]) for row in rows]
    return [] if messages == ["ok"] else messages


async def fetch_one(db: aiosqlite.Connection, sql: str, params: Sequence[object] = ()) -> Sequence[Any] | None:
    """The first row of a query, or None."""
    async with db.execute(sql, params) as cursor:
        row = await cursor.fetchone()
    return None if row is None else tuple(row)


async def stamp_and_commit(db: aiosqlite.Connection, application_id: int, version: int) -> None:
    """Mark the file as this store's, at this layout, and end the transaction that built it: a later open
    (of this store or the other) reads both before it touches anything."""
    await db.execute(f"PRAGMA application_id = {application_id}")
    await db.execute(f"PRAGMA user_version = {version}")
    await db.execute("COMMIT")


def sidecar_paths(path: Path) -> list[Path]:
    """The database file and the WAL files SQLite keeps next to it."""
    return [path, path.with_name(path.name + "-wal"), path.with_name(path.name + "-shm")]


def to_db_time(moment: datetime) -> str:
    """A fixed-width UTC string, so that SQL string comparison is time order."""
    if moment.tzinfo is None or moment.utcoffset() is None:
        raise ValueError(f"timestamp {moment!r} has no timezone; pass an aware datetime")
    return moment.astimezone(UTC).strftime("%Y-%m-%dT%H:%M:%S.%fZ")


def from_db_time(text: str) -> datetime:
    return datetime.fromisoformat(text)


def utc_now() -> datetime:
    return datetime.now(UTC)
