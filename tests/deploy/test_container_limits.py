"""Inside a container the bot sizes itself by what the container may use, and treats a database outage
as a storage problem to tell people about, not as a bug."""

from __future__ import annotations

import os
from pathlib import Path

import asyncpg
import pytest

from bot.client import storage_failure
from bot.settings import available_cpus


def _affinity() -> int:
    return len(os.sched_getaffinity(0)) if hasattr(os, "sched_getaffinity") else (os.cpu_count() or 1)


@pytest.mark.parametrize(("cpu_max", "limit"), [("150000 100000\n", 2), ("50000 100000\n", 1),
                                                ("100000 100000\n", 1), ("max 100000\n", None)])
def test_render_workers_follow_the_cgroup_cpu_limit(tmp_path: Path, cpu_max: str, limit: int | None) -> None:
    path = tmp_path / "cpu.max"
    path.write_text(cpu_max)
    expected = _affinity() if limit is None else min(_affinity(), limit)
    assert available_cpus(path) == expected
    assert available_cpus(tmp_path / "no-cgroup-here") == _affinity()


def test_a_postgres_outage_is_a_storage_failure() -> None:
    assert storage_failure(asyncpg.ConnectionDoesNotExistError("connection was closed in the middle of operation"))
    assert storage_failure(asyncpg.InterfaceError("pool is closed"))
    assert storage_failure(ConnectionResetError())
    assert not storage_failure(asyncpg.UniqueViolationError("duplicate key"))
    assert not storage_failure(ValueError("a bug"))
