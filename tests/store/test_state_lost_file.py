"""A state database that has existed is never silently replaced by an empty one."""

from __future__ import annotations

import asyncio
import sqlite3
import threading
from pathlib import Path

import pytest

from bot.store.errors import StateStoreError
from bot.store.records import GuildSettings
from bot.store.state import MARKER_SUFFIX, StateStore


async def test_a_zero_byte_file_where_a_state_existed_is_refused(tmp_path: Path) -> None:
    path = tmp_path / "state.sqlite3"
    async with StateStore.open(path) as store:
        await store.set_guild_settings(42, GuildSettings(ctx=32768))
    assert (tmp_path / ("state.sqlite3" + MARKER_SUFFIX)).exists()
    path.write_bytes(b"")  # a truncated file, or a volume that came back empty
    for suffix in ("-wal", "-shm"):
        path.with_name(path.name + suffix).unlink(missing_ok=True)
    with pytest.raises(StateStoreError, match=r"is empty \(0 bytes\).*Refusing to start") as raised:
        await StateStore.open(path)
    assert "\n" not in str(raised.value)
    assert path.stat().st_size == 0, "the refused file is left as it was"


async def test_a_missing_file_where_a_state_existed_is_refused(tmp_path: Path) -> None:
    path = tmp_path / "state.sqlite3"
    async with StateStore.open(path):
        pass
    for part in tmp_path.glob("state.sqlite3*"):
        if not part.name.endswith(MARKER_SUFFIX):
            part.unlink()
    with pytest.raises(StateStoreError, match="is missing"):
        await StateStore.open(path)
    assert not path.exists()


async def test_a_fresh_empty_file_is_adopted_and_the_marker_can_be_removed_to_start_afresh(tmp_path: Path) -> None:
    path = tmp_path / "state.sqlite3"
    path.write_bytes(b"")  # e.g. created by an installer; no state has ever been kept here
    async with StateStore.open(path) as store:
        assert await store.get_guild_settings(1) == GuildSettings()
    path.unlink()
    (tmp_path / ("state.sqlite3" + MARKER_SUFFIX)).unlink()
    async with StateStore.open(path):
        pass


async def test_an_unwritable_state_file_is_one_clear_error(tmp_path: Path) -> None:
    path = tmp_path / "state.sqlite3"
    path.mkdir()  # a directory where the file should be: SQLite cannot open it
    with pytest.raises(StateStoreError, match="cannot be"):
        await StateStore.open(path)
    with pytest.raises(sqlite3.Error):
        sqlite3.connect(path).execute("SELECT 1")


def test_a_state_file_that_cannot_be_opened_leaves_nothing_to_report_into_a_closed_loop(
    tmp_path: Path, monkeypatch: pytest.MonkeyPatch
) -> None:
    """The bot exits on this error, closing its event loop: no thread may then raise "Event loop is closed"
    under the clear message. Each attempt runs in its own loop, closed as the process's would be."""
    path = tmp_path / "state.sqlite3"
    path.mkdir()
    thread_errors: list[threading.ExceptHookArgs] = []
    monkeypatch.setattr(threading, "excepthook", thread_errors.append)
    before = set(threading.enumerate())

    async def attempt() -> None:
        await StateStore.open(path)

    for _ in range(5):
        loop = asyncio.new_event_loop()
        try:
            with pytest.raises(StateStoreError, match="cannot be"):
                loop.run_until_complete(attempt())
        finally:
            loop.close()  # at once, as an exiting process does (asyncio.run would first wait for its executor)
    for thread in set(threading.enumerate()) - before:
        thread.join(timeout=5)
    assert [str(e.exc_value) for e in thread_errors] == []
