"""Clocks the store tests move by hand."""

from __future__ import annotations

from datetime import UTC, datetime, timedelta

T0 = datetime(2026, 5, 1, 12, 0, tzinfo=UTC)


class EpochClock:
    """Stands in for time.time: moves only when a test says so."""

    def __init__(self, start: float = 1_770_000_000.0) -> None:
        self.now = start

    def __call__(self) -> float:
        return self.now

    def advance(self, seconds: float = 1.0) -> None:
        self.now += seconds


class UtcClock:
    """Stands in for datetime.now(UTC)."""

    def __init__(self, start: datetime = T0) -> None:
        self.now = start

    def __call__(self) -> datetime:
        return self.now

    def advance(self, delta: timedelta) -> None:
        self.now += delta
