"""Fixtures for the store tests: controllable clocks and opened stores on temporary files."""

from __future__ import annotations

from collections.abc import AsyncIterator
from pathlib import Path

import pytest
from store_clocks import EpochClock, UtcClock

from bot.store.cache import ReplyCache
from bot.store.state import StateStore


@pytest.fixture
def epoch_clock() -> EpochClock:
    return EpochClock()


@pytest.fixture
def utc_clock() -> UtcClock:
    return UtcClock()


@pytest.fixture(params=["sqlite", "postgres"])
def state_target(request: pytest.FixtureRequest, tmp_path: Path) -> Path | str:
    """Where a state store lives: a SQLite file, or a fresh database on the test PostgreSQL server."""
    if request.param == "sqlite":
        return tmp_path / "state.db"
    return str(request.getfixturevalue("pg_server").create_database())


@pytest.fixture
async def state(state_target: Path | str, utc_clock: UtcClock) -> AsyncIterator[StateStore]:
    async with StateStore.open(state_target, clock=utc_clock) as store:
        yield store


@pytest.fixture
async def cache(tmp_path: Path, epoch_clock: EpochClock) -> AsyncIterator[ReplyCache]:
    async with ReplyCache.open(tmp_path / "cache.db", max_bytes=1_000_000, clock=epoch_clock) as opened:
        yield opened
