from __future__ import annotations

import importlib.util
import sys
from collections.abc import AsyncIterator
from pathlib import Path
from types import ModuleType

import pytest
import pytest_asyncio

from bot.sandbox import BotProcess, Sandbox

MINIBOT_PATH = Path(__file__).resolve().parents[1] / "e2e" / "minibot.py"
ARTIFACTS = Path(__file__).resolve().parents[2] / "artifacts"


def minibot_argv() -> list[str]:
    return [sys.executable, str(MINIBOT_PATH)]


def load_minibot() -> ModuleType:
    spec = importlib.util.spec_from_file_location("minibot", MINIBOT_PATH)
    assert spec is not None and spec.loader is not None
    module = importlib.util.module_from_spec(spec)
    spec.loader.exec_module(module)
    return module


@pytest.fixture(scope="session")
def minibot() -> ModuleType:
    return load_minibot()


@pytest.fixture(scope="session", name="minibot_argv")
def minibot_argv_fixture() -> list[str]:
    return minibot_argv()


@pytest.fixture(scope="session")
def artifacts_dir() -> Path:
    ARTIFACTS.mkdir(exist_ok=True)
    return ARTIFACTS


@pytest_asyncio.fixture(loop_scope="module", scope="module")
async def running() -> AsyncIterator[tuple[Sandbox, BotProcess]]:
    """One sandbox with minibot connected, shared by a module's tests."""
    async with Sandbox() as sandbox:
        process = await sandbox.start_bot(minibot_argv(), ready_timeout=30)
        yield sandbox, process
