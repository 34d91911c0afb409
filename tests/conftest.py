"""Fixtures every test directory can use: one PostgreSQL server per test session, started on first use;
and settings every test's bot process inherits."""

from __future__ import annotations

import os
from collections.abc import Iterator

# The calibration fit solves thousands of small systems; on a loaded 2-core machine BLAS worker threads spin
# against each other and make it ten times slower. Set before anything imports numpy.
os.environ.setdefault("OPENBLAS_NUM_THREADS", "1")

import pytest

from tests.pg import PostgresServer, running_server

# Under load the bot posts an answer before its chart and edits the chart in. Tests that read the chart
# from the reply want one message, so their bot waits for the chart; tests/e2e/test_chart_after_answer.py
# covers the two-step answer.
os.environ.setdefault("RIGCHECK_CHART_WAIT_S", "30")
# Each chart worker process imports the whole bot again (over a second of CPU): dozens of test bot processes
# would spend more on that than on their tests. They draw in threads instead; the bot process the e2e
# modules share (tests/e2e/conftest.py) and tests/deploy/test_pid1.py keep real worker processes.
os.environ.setdefault("RIGCHECK_RENDER_WORKERS", "0")


@pytest.fixture(scope="session")
def pg_server() -> Iterator[PostgresServer]:
    with running_server() as server:
        yield server
