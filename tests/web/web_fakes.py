"""A stand-in bot for the HTTP app: real stores, no Discord connection."""

from __future__ import annotations

import asyncio
import time
from pathlib import Path
from typing import Any

from bot.settings import Settings
from bot.store.cache import ReplyCache
from bot.store.state import StateStore
from bot.web.metrics import Metrics

SECRET = "unit-test-secret"


class FakeJob:
    def __init__(self) -> None:
        self.calls: list[dict[str, Any]] = []

    async def run(self, day: str, guild_id: int | None = None, *, dry_run: bool = False, force: bool = False,
                  progress: Any = None, on_total: Any = None) -> list[dict[str, Any]]:
        self.calls.append({"day": day, "guild": guild_id, "dry_run": dry_run, "force": force})
        results = [{"subscription": 1, "status": "would_send" if dry_run else "sent"}]
        if on_total is not None:
            await on_total(len(results))
        for result in results:
            if progress is not None:
                await progress(result)
        return results


class FakeCog:
    def __init__(self) -> None:
        self.job = FakeJob()


class FakeBot:
    def __init__(self, data_dir: Path, state: StateStore, cache: ReplyCache, secret: str | None) -> None:
        self.settings = Settings(_env_file=None, rigcheck_data_dir=data_dir,  # type: ignore[call-arg]
                                 rigcheck_webhook_secret=secret)
        self.state: Any = state
        self.cache: Any = cache
        self.metrics = Metrics()
        self.started_at = time.monotonic()
        self.ready = True
        self.closed = False
        self.cog = FakeCog()
        self.claim_owner = "test#0"
        self.background: set[asyncio.Task[Any]] = set()

    def spawn(self, coro: Any, name: str) -> asyncio.Task[Any]:
        task = asyncio.create_task(coro, name=name)
        self.background.add(task)
        return task

    async def settle(self) -> None:
        """Wait for every run the hook started."""
        await asyncio.gather(*self.background)

    def is_ready(self) -> bool:
        return self.ready

    def is_closed(self) -> bool:
        return self.closed

    async def wait_until_ready(self) -> None:
        return None

    def get_cog(self, name: str) -> FakeCog | None:
        return self.cog if name == "Daily" else None
