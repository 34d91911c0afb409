"""Failures a test can ask for: rate limits and server errors on chosen routes."""

from __future__ import annotations

from dataclasses import dataclass, field
from fnmatch import fnmatchcase


@dataclass
class Fault:
    route_pattern: str
    status: int
    times: int
    retry_after: float
    method: str | None
    is_global: bool
    hits: int = field(default=0)

    def matches(self, method: str, route: str) -> bool:
        if self.method is not None and self.method != method:
            return False
        return fnmatchcase(route, self.route_pattern)

    @property
    def exhausted(self) -> bool:
        return self.hits >= self.times


class FaultInjector:
    """Route patterns are globs over the path without `/api/v10`, e.g. `/interactions/*/callback`."""

    def __init__(self) -> None:
        self._faults: list[Fault] = []

    def inject(
        self,
        route_pattern: str,
        *,
        status: int = 429,
        times: int = 1,
        retry_after: float = 0.1,
        method: str | None = None,
        is_global: bool = False,
    ) -> Fault:
        if status not in (429, 500, 502, 503, 504):
            raise ValueError(f"unsupported fault status {status}")
        pattern = route_pattern.removeprefix("/api/v10")
        fault = Fault(pattern, status, times, retry_after, method.upper() if method else None, is_global)
        self._faults.append(fault)
        return fault

    def take(self, method: str, route: str) -> Fault | None:
        for fault in self._faults:
            if not fault.exhausted and fault.matches(method, route):
                fault.hits += 1
                return fault
        return None

    def clear(self) -> None:
        self._faults.clear()

    @property
    def pending(self) -> list[Fault]:
        return [f for f in self._faults if not f.exhausted]
