"""Fixtures every test directory can use: one PostgreSQL server per test session, started on first use."""

from __future__ import annotations

from collections.abc import Iterator

import pytest

from tests.pg import PostgresServer, running_server


@pytest.fixture(scope="session")
def pg_server() -> Iterator[PostgresServer]:
    with running_server() as server:
        yield server
