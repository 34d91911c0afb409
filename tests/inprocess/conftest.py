"""One loopback Discord and the real bot in this test process (tests/inprocess/local_bot.py), per module."""

from __future__ import annotations

from collections.abc import AsyncIterator

import pytest
import pytest_asyncio

from bot.sandbox import Sandbox
from tests.inprocess.local_bot import bot_in_this_process


@pytest_asyncio.fixture(loop_scope="module", scope="module")
async def sb(tmp_path_factory: pytest.TempPathFactory) -> AsyncIterator[Sandbox]:
    """One loopback Discord and one bot on a fresh data directory, shared by a module's tests."""
    async with Sandbox() as sandbox, bot_in_this_process(sandbox, tmp_path_factory.mktemp("botdata")):
        yield sandbox
