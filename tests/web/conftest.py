"""Fixtures for the HTTP app tests: opened stores on temporary files and a test client."""

from __future__ import annotations

from collections.abc import AsyncIterator
from pathlib import Path
from typing import Any

import pytest
from aiohttp.test_utils import TestClient, TestServer
from web_fakes import SECRET, FakeBot

from bot.store.cache import ReplyCache
from bot.store.state import StateStore
from bot.web.app import make_app


@pytest.fixture
async def stores(tmp_path: Path) -> AsyncIterator[tuple[StateStore, ReplyCache]]:
    async with StateStore.open(tmp_path / "state.sqlite3") as state, \
            ReplyCache.open(tmp_path / "cache.sqlite3", max_bytes=1 << 20) as cache:
        yield state, cache


@pytest.fixture
def bot(tmp_path: Path, stores: tuple[StateStore, ReplyCache]) -> FakeBot:
    return FakeBot(tmp_path, *stores, secret=SECRET)


@pytest.fixture
async def client(bot: FakeBot) -> AsyncIterator[TestClient[Any, Any]]:
    async with TestClient(TestServer(make_app(bot), host="127.0.0.1")) as test_client:
        yield test_client
