"""Fixtures every test directory can use: one PostgreSQL server per test process, started on first use;
settings every test's bot process inherits; the order modules run in and how many test processes run them."""

from __future__ import annotations

import os
import sys
from collections.abc import Iterator

# The calibration fit solves thousands of small systems; on a loaded 2-core machine BLAS worker threads spin
# against each other and make it ten times slower. Set before anything imports numpy.
os.environ.setdefault("OPENBLAS_NUM_THREADS", "1")
# The suite starts dozens of Python processes (test processes, bots, CLIs): each would otherwise compile the
# project's modules, and rewrite the test modules' asserts, again from source.
os.environ.pop("PYTHONDONTWRITEBYTECODE", None)

import pytest

from bot.settings import available_cpus
from tests.pg import PostgresServer, running_server

sys.dont_write_bytecode = False  # this process's too: the test modules are imported after this file

# Under load the bot posts an answer before its chart and edits the chart in. Tests that read the chart
# from the reply want one message, so their bot waits for the chart; tests/inprocess/test_chart_after_answer.py
# covers the two-step answer.
os.environ.setdefault("RIGCHECK_CHART_WAIT_S", "30")
# Each chart worker process imports the whole bot again (over a second of CPU): dozens of test bot processes
# would spend more on that than on their tests. They draw in threads instead; the bot process of
# tests/e2e/conftest.py and tests/deploy/test_pid1.py keep real worker processes.
os.environ.setdefault("RIGCHECK_RENDER_WORKERS", "0")


@pytest.fixture(scope="session")
def pg_server() -> Iterator[PostgresServer]:
    with running_server() as server:
        yield server


def pytest_collection_modifyitems(config: pytest.Config, items: list[pytest.Item]) -> None:
    """The calibration fit's module first (the longest in one process), then modules that start processes,
    then the rest: the test processes take modules in this order (`--no-loadscope-reorder`), and a long one
    taken last would leave the others idle while it runs. Whole modules move, so a module's shared bot
    process is still started once."""
    tier: dict[str, int] = {}
    for item in items:
        if isinstance(item, pytest.Function):
            rank = 0 if item.get_closest_marker("slow") else 1 if item.get_closest_marker("e2e") else 2
            tier[item.module.__name__] = min(rank, tier.get(item.module.__name__, 2))
    items.sort(key=lambda item: tier.get(item.module.__name__, 2) if isinstance(item, pytest.Function) else 2)


def pytest_xdist_auto_num_workers(config: pytest.Config) -> int:
    """`-n auto`: one test process per CPU this process may use (a container's share, not the host's count).
    More would not finish sooner: the e2e tests wait on bot processes that need the same CPUs, and a bot
    starved of them misses Discord's three-second deadline for answering an interaction."""
    return available_cpus()
