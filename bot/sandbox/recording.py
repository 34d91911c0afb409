"""The request log and an awaitable way to watch it grow."""

from __future__ import annotations

import asyncio
import time
from collections.abc import Callable
from typing import TypeVar

from bot.sandbox.models import RecordedRequest

T = TypeVar("T")


class Notifier:
    """Wakes every waiter whenever something changed; waiters re-check their own condition."""

    def __init__(self) -> None:
        self._event = asyncio.Event()

    def notify(self) -> None:
        self._event.set()
        self._event = asyncio.Event()

    async def wait_until(self, check: Callable[[], T | None], timeout: float) -> T:  # noqa: ASYNC109 - a plain deadline, as in asyncio.wait_for
        """Returns the first non-None result of `check`; raises TimeoutError after `timeout` seconds."""
        deadline = time.monotonic() + timeout
        while True:
            result = check()
            if result is not None:
                return result
            remaining = deadline - time.monotonic()
            if remaining <= 0:
                raise TimeoutError
            event = self._event
            try:
                await asyncio.wait_for(event.wait(), remaining)
            except TimeoutError:
                result = check()
                if result is not None:
                    return result
                raise


class RequestLog:
    def __init__(self) -> None:
        self.requests: list[RecordedRequest] = []
        # Requests by each segment of their path (an interaction's id or token among them): finding one
        # interaction's requests must not read the whole log, which grows with every command of a long run.
        self._by_segment: dict[str, list[RecordedRequest]] = {}
        self.changed = Notifier()

    def add(self, request: RecordedRequest) -> None:
        self.requests.append(request)
        for segment in set(request.path.split("/")):
            self._by_segment.setdefault(segment, []).append(request)
        self.changed.notify()

    def with_segment(self, segment: str) -> list[RecordedRequest]:
        """The requests whose path has `segment` between two slashes (or at its end), in arrival order."""
        return list(self._by_segment.get(segment, ()))

    def next_seq(self) -> int:
        return len(self.requests) + 1

    def finished(self, request: RecordedRequest) -> None:
        self.changed.notify()

    def matching(self, method: str | None = None, route_glob: str | None = None) -> list[RecordedRequest]:
        from fnmatch import fnmatchcase

        return [
            r
            for r in self.requests
            if (method is None or r.method == method.upper())
            and (route_glob is None or fnmatchcase(r.route, route_glob) or fnmatchcase(r.path, route_glob))
        ]

    async def wait_for(
        self,
        method: str | None = None,
        route_glob: str | None = None,
        *,
        after_seq: int = 0,
        answered: bool = True,
        timeout: float = 10.0,  # noqa: ASYNC109 - a plain deadline, as in asyncio.wait_for
    ) -> RecordedRequest:
        """The first request (after `after_seq`) whose method and route match; by default once answered."""

        def check() -> RecordedRequest | None:
            for request in self.matching(method, route_glob):
                if request.seq > after_seq and (not answered or request.status is not None):
                    return request
            return None

        return await self.changed.wait_until(check, timeout)
