"""Data-directory problems at start are one line on stderr and exit status 2, never a traceback."""

from __future__ import annotations

import os
import sqlite3
import subprocess
import sys
from pathlib import Path
from typing import Any

import pytest

from bot.client import prepare_data_dir, storage_failure
from bot.store.errors import DataDirError

ROOT = Path(__file__).resolve().parents[2]


def test_a_file_in_the_way_is_named(tmp_path: Path) -> None:
    (tmp_path / "blocked").write_text("x")
    with pytest.raises(DataDirError, match="is not a directory") as raised:
        prepare_data_dir(tmp_path / "blocked" / "data")
    assert "RIGCHECK_DATA_DIR" in str(raised.value)


def test_a_full_disk_is_named(tmp_path: Path, monkeypatch: pytest.MonkeyPatch) -> None:
    import shutil

    real = shutil.disk_usage

    def nearly_full(path: Any) -> Any:
        usage = real(path)
        return type(usage)(usage.total, usage.total - 4096, 4096)

    monkeypatch.setattr(shutil, "disk_usage", nearly_full)
    with pytest.raises(DataDirError, match="has only 4 kB free"):
        prepare_data_dir(tmp_path / "data")


def test_run_time_storage_failures_are_told_apart_from_bugs() -> None:
    assert storage_failure(sqlite3.OperationalError("database or disk is full"))
    assert storage_failure(OSError(28, "No space left on device"))
    assert not storage_failure(KeyError("x")) and not storage_failure(ValueError("bad"))


def test_the_bot_process_exits_with_one_line(tmp_path: Path) -> None:
    (tmp_path / "blocked").write_text("x")
    env = {**os.environ, "DISCORD_TOKEN": "x", "DISCORD_API_BASE": "http://127.0.0.1:9/api/v10",
           "RIGCHECK_DATA_DIR": str(tmp_path / "blocked" / "data"), "RIGCHECK_HTTP_ENABLED": "false"}
    done = subprocess.run([sys.executable, "-m", "bot"], cwd=ROOT, env=env, capture_output=True, text=True,
                          timeout=60, check=False)
    lines = [line for line in done.stderr.splitlines() if line.strip()]
    assert done.returncode == 2, done.stderr
    assert len(lines) == 1 and "data directory" in lines[0] and "Traceback" not in done.stderr, done.stderr


def test_nothing_is_created_by_the_check(tmp_path: Path) -> None:
    prepare_data_dir(tmp_path / "not" / "yet")
    assert not (tmp_path / "not").exists()
    (tmp_path / "ready").mkdir()
    prepare_data_dir(tmp_path / "ready")
    assert list((tmp_path / "ready").iterdir()) == []
