"""Deferred interactions not yet answered, so a crash between "thinking…" and the answer loses nothing.

Before the bot defers a command it records the interaction (id, token, the request to recompute, the
token's deadline); when the answer has been delivered the row is marked done. After a restart the bot
answers every row still pending whose token is valid (15 minutes from the interaction) with a follow-up,
and marks it done. Exactly once: a row is claimed before it is answered, and an interaction whose
original message is no longer "thinking…" on Discord's side is taken as answered.

Its own small SQLite file beside the state database: the rows live for 15 minutes at most, so a damaged
file is moved aside and started afresh (what is lost is only what a crash would have lost before).
Interaction tokens are credentials for 15 minutes; they are stored here and never logged.
"""

from __future__ import annotations

import contextlib
import dataclasses
import json
import logging
import sqlite3
import time
from collections.abc import Callable
from dataclasses import dataclass
from pathlib import Path
from typing import Any

import aiosqlite

from bot.store._sqlite import Opening, is_corruption, sidecar_paths

log = logging.getLogger(__name__)

# Discord accepts follow-ups with an interaction token for 15 minutes after the interaction.
TOKEN_LIFETIME_S = 15 * 60
MAX_ATTEMPTS = 3
_SCHEMA = (
    "CREATE TABLE IF NOT EXISTS pending_interactions ("
    " interaction_id INTEGER PRIMARY KEY,"
    " application_id INTEGER NOT NULL,"
    " token TEXT NOT NULL,"
    " command TEXT NOT NULL,"
    " request_json TEXT NOT NULL,"
    " locale TEXT NOT NULL,"
    " deadline REAL NOT NULL,"
    " attempts INTEGER NOT NULL DEFAULT 0,"
    " done INTEGER NOT NULL DEFAULT 0)"
)


@dataclass(frozen=True)
class Pending:
    interaction_id: int
    application_id: int
    token: str = dataclasses.field(repr=False)
    command: str
    request: dict[str, Any]
    locale: str
    deadline: float
    attempts: int


class PendingInteractions:
    def __init__(self, path: Path, clock: Callable[[], float]) -> None:
        self.path = path
        self._clock = clock
        self._db: aiosqlite.Connection | None = None

    @classmethod
    def open(cls, path: Path | str, *, clock: Callable[[], float] = time.time) -> Opening[PendingInteractions]:
        store = cls(Path(path), clock)

        async def start() -> PendingInteractions:
            await store._start()
            return store

        return Opening(start)

    async def _start(self) -> None:
        try:
            self._db = await self._connect()
        except sqlite3.DatabaseError as exc:
            if not is_corruption(exc):
                raise
            log.warning("pending-interactions file %s is damaged (%s); starting it afresh", self.path, exc)
            stamp = time.strftime("%Y%m%dT%H%M%SZ", time.gmtime(self._clock()))
            for part in sidecar_paths(self.path):
                if part.exists():
                    part.rename(part.with_name(f"{part.name}.corrupt-{stamp}"))
            self._db = await self._connect()

    async def _connect(self) -> aiosqlite.Connection:
        db = await aiosqlite.connect(self.path, isolation_level=None)
        try:
            await db.execute("PRAGMA journal_mode = WAL")
            # The row must survive a power cut as surely as the "thinking…" message does.
            await db.execute("PRAGMA synchronous = FULL")
            await db.execute(_SCHEMA)
        except BaseException:
            await db.close()
            raise
        return db

    async def close(self) -> None:
        if self._db is not None:
            await self._db.close()
            self._db = None

    def _conn(self) -> aiosqlite.Connection:
        if self._db is None:
            raise RuntimeError("pending-interactions store is closed")
        return self._db

    async def record(self, *, interaction_id: int, application_id: int, token: str, command: str,
                     request: dict[str, Any], locale: str, created_at: float) -> None:
        await self._conn().execute(
            "INSERT OR IGNORE INTO pending_interactions (interaction_id, application_id, token, command,"
            " request_json, locale, deadline) VALUES (?, ?, ?, ?, ?, ?, ?)",
            (interaction_id, application_id, token, command, json.dumps(request), locale,
             created_at + TOKEN_LIFETIME_S))

    async def done(self, interaction_id: int) -> None:
        await self._conn().execute("UPDATE pending_interactions SET done = 1 WHERE interaction_id = ?",
                                   (interaction_id,))

    async def due(self) -> list[Pending]:
        """Rows still to answer whose token is valid; expired and finished rows are dropped."""
        db = self._conn()
        now = self._clock()
        await db.execute("DELETE FROM pending_interactions WHERE done = 1 OR deadline <= ?", (now,))
        rows = await db.execute_fetchall(
            "SELECT interaction_id, application_id, token, command, request_json, locale, deadline, attempts"
            " FROM pending_interactions WHERE attempts < ? ORDER BY deadline", (MAX_ATTEMPTS,))
        out = []
        for row in rows:
            with contextlib.suppress(ValueError):
                out.append(Pending(int(row[0]), int(row[1]), str(row[2]), str(row[3]), json.loads(row[4]),
                                   str(row[5]), float(row[6]), int(row[7])))
        return out

    async def claim(self, interaction_id: int) -> bool:
        """Count an attempt before answering, so a row that crashes the bot is not retried forever."""
        cursor = await self._conn().execute(
            "UPDATE pending_interactions SET attempts = attempts + 1"
            " WHERE interaction_id = ? AND done = 0 AND attempts < ?", (interaction_id, MAX_ATTEMPTS))
        return cursor.rowcount == 1


__all__ = ["TOKEN_LIFETIME_S", "Pending", "PendingInteractions"]
