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


@pytest.fixture
async def state(tmp_path: Path, utc_clock: UtcClock) -> AsyncIterator[StateStore]:
    async with StateStore.open(tmp_path / "state.db", clock=utc_clock) as store:
        yield store


@pytest.fixture
async def cache(tmp_path: Path, epoch_clock: EpochClock) -> AsyncIterator[ReplyCache]:
    async with ReplyCache.open(tmp_path / "cache.db", max_bytes=1_000_000, clock=epoch_clock) as opened:
        yield opened
