"""Deferred interactions not yet answered, in the state database, so a crash between "thinking…" and the
answer loses nothing.

A mixin of `StateStore`, like the report records. Before the bot defers a command it records the
interaction (id, token, the request to recompute, the token's deadline), claimed by the process that
answers it live; when the answer has been delivered the row is marked done and its token emptied. After
a restart, or when a holder's lease runs out in a fleet sharing one PostgreSQL database, a process takes
the claim over with a compare-and-set (exactly one of several wins) and answers with a follow-up.

Interaction tokens are credentials for 15 minutes; they are stored here, never logged, and dropped with
the row once its deadline has passed.
"""

from __future__ import annotations

import asyncio
import dataclasses
import json
from collections.abc import Mapping
from dataclasses import dataclass
from datetime import datetime, timedelta
from typing import Any

from bot.store._sqlite import from_db_time, to_db_time
from bot.store.db import Row, StatePart

# Discord accepts follow-ups with an interaction token for 15 minutes after the interaction.
TOKEN_LIFETIME = timedelta(minutes=15)
# Taken over at most this often, so a request that crashes every process that computes it is given up.
MAX_ATTEMPTS = 3


@dataclass(frozen=True)
class Pending:
    interaction_id: int
    application_id: int
    token: str = dataclasses.field(repr=False)
    command: str
    request: dict[str, Any]
    locale: str
    created_at: datetime
    deadline: datetime
    attempts: int
    claimed_by: str | None
    lease_until: datetime | None


def _pending(row: Row) -> Pending | None:
    try:
        request = json.loads(row["request"])
    except ValueError:
        return None
    lease = row["lease_until"]
    return Pending(
        interaction_id=int(row["interaction_id"]),
        application_id=int(row["application_id"]),
        token=str(row["token"]),
        command=str(row["command"]),
        request=request,
        locale=str(row["locale"]),
        created_at=from_db_time(row["created_at"]),
        deadline=from_db_time(row["deadline"]),
        attempts=int(row["attempts"]),
        claimed_by=row["claimed_by"],
        lease_until=None if lease is None else from_db_time(lease),
    )


class PendingRecords(StatePart):
    """Interactions deferred and not yet answered, for crash resume."""

    async def record_pending(
        self,
        *,
        interaction_id: int,
        application_id: int,
        token: str,
        command: str,
        request: Mapping[str, Any],
        locale: str,
        created_at: datetime,
        owner: str,
        lease: timedelta,
    ) -> bool:
        """Record an interaction about to be deferred, held by `owner`; False if it was recorded before."""
        now = self._clock()
        async with self._writing() as db:
            added = await db.run(
                """
                INSERT INTO pending_interactions
                    (interaction_id, application_id, token, command, request, locale, created_at, deadline,
                     status, attempts, claimed_by, lease_until, updated_at)
                VALUES (?, ?, ?, ?, ?, ?, ?, ?, 'pending', 0, ?, ?, ?)
                ON CONFLICT DO NOTHING
                """,
                (interaction_id, application_id, token, command, json.dumps(dict(request)), locale,
                 to_db_time(created_at), to_db_time(created_at + TOKEN_LIFETIME), owner, to_db_time(now + lease),
                 to_db_time(now)),
            )
        return added == 1

    async def renew_pending(self, interaction_id: int, owner: str, lease: timedelta) -> bool:
        """Extend `owner`'s claim for another `lease` from now, while it is still answering; False when the
        row is answered or no longer `owner`'s (another process took it over)."""
        now = self._clock()
        async with self._writing() as db:
            changed = await db.run(
                "UPDATE pending_interactions SET lease_until = ?, updated_at = ?"
                " WHERE interaction_id = ? AND status = 'pending' AND claimed_by = ?",
                (to_db_time(now + lease), to_db_time(now), interaction_id, owner),
            )
        return changed > 0

    async def finish_pending(self, interaction_id: int) -> bool:
        """Mark an interaction answered (its token is no longer kept); False if it was not pending.

        Shielded: once the answer is out, a cancelled caller must not leave it to be answered again."""
        return await asyncio.shield(self._finish_pending(interaction_id))

    async def _finish_pending(self, interaction_id: int) -> bool:
        async with self._writing() as db:
            changed = await db.run(
                "UPDATE pending_interactions SET status = 'done', token = '', updated_at = ?"
                " WHERE interaction_id = ? AND status = 'pending'",
                (to_db_time(self._clock()), interaction_id),
            )
        return changed > 0

    async def unanswered_interactions(self) -> list[Pending]:
        """Interactions still owed an answer whose token is valid, soonest deadline first; rows answered
        or past their deadline are deleted on the way."""
        now = to_db_time(self._clock())
        async with self._writing() as db:
            await db.run("DELETE FROM pending_interactions WHERE status = 'done' OR deadline <= ?", (now,))
        async with self._reading() as db:
            rows = await db.all(
                "SELECT * FROM pending_interactions WHERE status = 'pending' AND deadline > ? AND attempts < ?"
                " ORDER BY deadline, interaction_id",
                (now, MAX_ATTEMPTS),
            )
        return [p for p in map(_pending, rows) if p is not None]

    async def take_over_pending(self, pending: Pending, owner: str, lease: timedelta) -> Pending | None:
        """Become the holder of an unanswered interaction, if nobody changed its claim since `pending` was
        read: of several processes sweeping at once exactly one wins; the others get None. Counts an
        attempt, so a request that brings its holder down is not retried forever."""
        now = self._clock()
        async with self._writing() as db:
            row = await db.one(
                """
                UPDATE pending_interactions SET claimed_by = ?, lease_until = ?, attempts = attempts + 1,
                    updated_at = ?
                WHERE interaction_id = ? AND status = 'pending' AND deadline > ? AND attempts < ?
                    AND claimed_by IS NOT DISTINCT FROM ? AND lease_until IS NOT DISTINCT FROM ?
                RETURNING *
                """,
                (
                    owner,
                    to_db_time(now + lease),
                    to_db_time(now),
                    pending.interaction_id,
                    to_db_time(now),
                    MAX_ATTEMPTS,
                    pending.claimed_by,
                    None if pending.lease_until is None else to_db_time(pending.lease_until),
                ),
            )
        return None if row is None else _pending(row)


__all__ = ["MAX_ATTEMPTS", "TOKEN_LIFETIME", "Pending", "PendingRecords"]
