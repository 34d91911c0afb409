"""Fixtures every test directory can use: one PostgreSQL server per test session, started on first use."""

from __future__ import annotations

import os
from collections.abc import Iterator

# The calibration fit solves thousands of small systems; on a loaded 2-core machine BLAS worker threads spin
# against each other and make it ten times slower. Set before anything imports numpy.
os.environ.setdefault("OPENBLAS_NUM_THREADS", "1")

import pytest

from tests.pg import PostgresServer, running_server


@pytest.fixture(scope="session")
def pg_server() -> Iterator[PostgresServer]:
    with running_server() as server:
        yield server
