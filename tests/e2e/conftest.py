"""The real bot process, as `python -m bot` runs in production (charts drawn in worker processes): one per
module, on a fresh data directory. Modules that need no process of their own run the bot in the test process
(tests/inprocess)."""

from __future__ import annotations

import sys
from collections.abc import AsyncIterator

import pytest
import pytest_asyncio

from bot.sandbox import BotProcess, Sandbox


@pytest_asyncio.fixture(loop_scope="module", scope="module")
async def sb(tmp_path_factory: pytest.TempPathFactory) -> AsyncIterator[Sandbox]:
    data_dir = tmp_path_factory.mktemp("botdata")
    async with Sandbox() as sandbox:
        process: BotProcess = await sandbox.start_bot([sys.executable, "-m", "bot"], env={
            "RIGCHECK_DATA_DIR": str(data_dir), "RIGCHECK_HTTP_ENABLED": "false",
            "RIGCHECK_GUILD_READY_TIMEOUT": "0.2",
            # Charts drawn in worker processes, as in production: pickled jobs and PNGs on every answer here.
            "RIGCHECK_RENDER_WORKERS": "2"}, ready_timeout=60)
        assert process is not None
        yield sandbox
