"""Community speed reports in the state database: stored, rate-limited, moderated, summarised.

A mixin of `StateStore` (its own file so the report records stay together); every method goes
through the store's `_reading()` / `_writing()` like the rest of the state.
"""

from __future__ import annotations

import secrets
from collections.abc import Sequence
from datetime import datetime, timedelta
from typing import Any, Literal

from pydantic import BaseModel, ConfigDict

from bot.store._sqlite import from_db_time, to_db_time
from bot.store.db import Connection, Row, StatePart

ReportStatus = Literal["accepted", "held", "hidden"]
SALT_NAME = "report_salt"


class ReportDraft(BaseModel):
    """A report as confirmed by its reporter, before it is stored."""

    model_config = ConfigDict(frozen=True)

    gpu_id: str
    gpu_count: int
    model_id: str
    quant_id: str
    engine: str
    build: str | None = None
    ctx: int | None = None
    decode_tps: float
    prefill_tps: float | None = None
    prompt_tokens: int | None = None
    generated_tokens: int | None = None
    source: str
    notes: str | None = None
    estimate_decode_tps: float | None = None
    estimate_decode_tps_low: float | None = None
    estimate_decode_tps_high: float | None = None
    estimate_prefill_tps: float | None = None
    estimator_version: str | None = None


class Report(ReportDraft):
    id: int
    reporter: str
    guild_id: int | None
    created_at: datetime
    updated_at: datetime
    status: ReportStatus
    status_reason: str | None


class RateLimited(Exception):
    """Too many reports in the window, from one person ("user") or one server ("guild")."""

    def __init__(self, scope: Literal["user", "guild"], limit: int) -> None:
        super().__init__(f"{scope} report limit ({limit}) reached")
        self.scope = scope
        self.limit = limit


_DRAFT_FIELDS = tuple(ReportDraft.model_fields)


def _report(row: Row) -> Report:
    data = {name: row[name] for name in (*_DRAFT_FIELDS, "id", "reporter", "guild_id", "status", "status_reason")}
    return Report(**data, created_at=from_db_time(row["created_at"]), updated_at=from_db_time(row["updated_at"]))


class ReportRecords(StatePart):
    """Community reports, their salt and the servers that opted out."""

    async def report_salt(self, configured: str | None = None) -> str:
        """The configured salt, else the one generated on first use and kept in the database, so every
        process of a fleet (and every restart) hashes a reporter the same way."""
        if configured:
            return configured
        async with self._writing() as db:
            await db.run(
                "INSERT INTO secrets (name, value, created_at) VALUES (?, ?, ?) ON CONFLICT DO NOTHING",
                (SALT_NAME, secrets.token_hex(32), to_db_time(self._clock())),
            )
            row = await db.one("SELECT value FROM secrets WHERE name = ?", (SALT_NAME,))
        assert row is not None
        return str(row["value"])

    async def report_counts(self, reporter: str, guild_id: int | None, window: timedelta) -> tuple[int, int]:
        """Reports in the last `window` by this reporter, and from this server."""
        since = to_db_time(self._clock() - window)
        async with self._reading() as db:
            return await _counts(db, reporter, guild_id, since)

    async def add_report(
        self,
        draft: ReportDraft,
        *,
        reporter: str,
        guild_id: int | None,
        status: ReportStatus,
        reason: str | None,
        user_limit: int,
        guild_limit: int,
        window: timedelta,
    ) -> Report:
        """Store a report unless its reporter or server is over the limit (raises RateLimited); the
        count and the insert are one transaction, so parallel submissions cannot slip past it."""
        now = self._clock()
        async with self._writing() as db:
            mine, server = await _counts(db, reporter, guild_id, to_db_time(now - window))
            if mine >= user_limit:
                raise RateLimited("user", user_limit)
            if guild_id is not None and server >= guild_limit:
                raise RateLimited("guild", guild_limit)
            values = draft.model_dump()
            columns = [*_DRAFT_FIELDS, "reporter", "guild_id", "status", "status_reason", "created_at", "updated_at"]
            params = [values[name] for name in _DRAFT_FIELDS]
            params += [reporter, guild_id, status, reason, to_db_time(now), to_db_time(now)]
            row = await db.one(
                f"INSERT INTO reports ({', '.join(columns)}) VALUES ({', '.join('?' for _ in columns)}) RETURNING *",  # noqa: S608 - fixed column names
                params,
            )
        assert row is not None
        return _report(row)

    async def get_report(self, report_id: int) -> Report | None:
        async with self._reading() as db:
            row = await db.one("SELECT * FROM reports WHERE id = ?", (report_id,))
        return None if row is None else _report(row)

    async def reports_by(self, reporter: str, limit: int = 25) -> list[Report]:
        async with self._reading() as db:
            rows = await db.all(
                "SELECT * FROM reports WHERE reporter = ? ORDER BY created_at DESC, id DESC LIMIT ?", (reporter, limit)
            )
        return [_report(r) for r in rows]

    async def delete_report(self, report_id: int, reporter: str | None = None) -> bool:
        """Delete a report: one's own (`reporter` given), or any (an owner removing it)."""
        sql, params = "DELETE FROM reports WHERE id = ?", [report_id]
        if reporter is not None:
            sql += " AND reporter = ?"
            params.append(reporter)  # type: ignore[arg-type]
        async with self._writing() as db:
            return await db.run(sql, params) > 0

    async def set_report_status(
        self, report_id: int, status: ReportStatus, reason: str | None, *, guild_id: int | None = None
    ) -> bool:
        """Accept, hold or hide a report; with `guild_id`, only one made in that server."""
        sql = "UPDATE reports SET status = ?, status_reason = ?, updated_at = ? WHERE id = ?"
        params: list[object] = [status, reason, to_db_time(self._clock()), report_id]
        if guild_id is not None:
            sql += " AND guild_id = ?"
            params.append(guild_id)
        async with self._writing() as db:
            return await db.run(sql, params) > 0

    async def reports_with_status(self, status: ReportStatus, limit: int | None = None) -> list[Report]:
        sql = "SELECT * FROM reports WHERE status = ? ORDER BY id"
        params: list[object] = [status]
        if limit is not None:
            sql += " LIMIT ?"
            params.append(limit)
        async with self._reading() as db:
            rows = await db.all(sql, params)
        return [_report(r) for r in rows]

    async def _accepted_speeds(self, match: dict[str, str | int], quant_ids: Sequence[str]) -> list[Any]:
        """Accepted reports whose columns equal `match` (names from this module, never from a request), in
        any of `quant_ids`: model, format and decode speed, oldest first."""
        conditions = " AND ".join(f"{column} = ?" for column in match)
        marks = ", ".join("?" for _ in quant_ids)
        async with self._reading() as db:
            return await db.all(
                f"""
                SELECT model_id, quant_id, decode_tps FROM reports
                WHERE {conditions} AND status = 'accepted' AND quant_id IN ({marks})
                ORDER BY id
                """,  # noqa: S608 - only column names and placeholders are interpolated
                [*match.values(), *quant_ids],
            )

    async def community_values(
        self, gpu_id: str, gpu_count: int, model_id: str, quant_ids: Sequence[str], engine: str
    ) -> dict[str, list[float]]:
        """Accepted decode speeds per format for one GPU setup, model and engine."""
        if not quant_ids:
            return {}
        match: dict[str, str | int] = {"gpu_id": gpu_id, "gpu_count": gpu_count, "model_id": model_id, "engine": engine}
        out: dict[str, list[float]] = {}
        for row in await self._accepted_speeds(match, quant_ids):
            out.setdefault(row["quant_id"], []).append(float(row["decode_tps"]))
        return out

    async def community_on_gpu(
        self, gpu_id: str, gpu_count: int, quant_ids: Sequence[str], engine: str
    ) -> dict[tuple[str, str], list[float]]:
        """Accepted decode speeds per (model, format) for one GPU setup and engine: /rank's field."""
        if not quant_ids:
            return {}
        match: dict[str, str | int] = {"gpu_id": gpu_id, "gpu_count": gpu_count, "engine": engine}
        out: dict[tuple[str, str], list[float]] = {}
        for row in await self._accepted_speeds(match, quant_ids):
            out.setdefault((row["model_id"], row["quant_id"]), []).append(float(row["decode_tps"]))
        return out

    async def set_reports_opt_out(self, guild_id: int, opted_out: bool) -> None:
        async with self._writing() as db:
            if opted_out:
                await db.run(
                    "INSERT INTO report_opt_outs (guild_id, created_at) VALUES (?, ?) ON CONFLICT DO NOTHING",
                    (guild_id, to_db_time(self._clock())),
                )
            else:
                await db.run("DELETE FROM report_opt_outs WHERE guild_id = ?", (guild_id,))

    async def reports_opted_out(self, guild_id: int | None) -> bool:
        if guild_id is None:
            return False
        async with self._reading() as db:
            return await db.one("SELECT 1 FROM report_opt_outs WHERE guild_id = ?", (guild_id,)) is not None


async def _counts(db: Connection, reporter: str, guild_id: int | None, since: str) -> tuple[int, int]:
    mine = await db.one("SELECT COUNT(*) FROM reports WHERE reporter = ? AND created_at >= ?", (reporter, since))
    server = await db.one("SELECT COUNT(*) FROM reports WHERE guild_id = ? AND created_at >= ?", (guild_id, since))
    assert mine is not None and server is not None
    return int(mine[0]), int(server[0])
