"""A throwaway PostgreSQL server for the tests: initdb into a temporary directory, listen on a unix socket
in it (no TCP port at all), one fresh database per test. The server refuses to run as root, so under root
it runs as the `postgres` system user that Debian's package creates.

Without the server binaries the PostgreSQL tests skip, except in CI (CI=true), where .ci/run installs
them and a missing server is a failure rather than a silently skipped backend.
"""

from __future__ import annotations

import contextlib
import glob
import os
import pwd
import shutil
import subprocess
import tempfile
import uuid
from collections.abc import Iterator
from pathlib import Path

import pytest

START_TIMEOUT_S = 60


def _bindir() -> Path | None:
    found = shutil.which("initdb")
    if found:
        return Path(os.path.realpath(found)).parent
    # Debian keeps the server binaries off PATH, one directory per major version.
    candidates = sorted(glob.glob("/usr/lib/postgresql/*/bin/initdb"), key=lambda p: int(p.split("/")[4]))
    return Path(candidates[-1]).parent if candidates else None


def _unavailable(reason: str) -> None:
    if os.environ.get("CI"):
        pytest.fail(f"PostgreSQL is required in CI: {reason}")
    pytest.skip(reason)


class PostgresServer:
    def __init__(self, bindir: Path, user: str | None) -> None:
        self.bindir = bindir
        self.user = user
        self.root = Path(tempfile.mkdtemp(prefix="rcpg-"))
        self.data = self.root / "data"
        self.log = self.root / "server.log"

    def _run(self, *argv: str) -> subprocess.CompletedProcess[str]:
        return subprocess.run([str(self.bindir / argv[0]), *argv[1:]], user=self.user, capture_output=True,
                              text=True, timeout=START_TIMEOUT_S, check=False, cwd=self.root)

    def start(self) -> None:
        if self.user is not None:
            entry = pwd.getpwnam(self.user)
            os.chown(self.root, entry.pw_uid, entry.pw_gid)
        self.root.chmod(0o700)
        done = self._run("initdb", "-D", str(self.data), "-U", "postgres", "--auth=trust", "-E", "UTF8",
                         "--no-sync", "--no-instructions")
        if done.returncode != 0:
            raise RuntimeError(f"initdb failed: {done.stderr[-1500:]}")
        options = (f"-k {self.root} -c listen_addresses='' -c fsync=off -c synchronous_commit=off "
                   "-c full_page_writes=off -c max_connections=100")
        done = self._run("pg_ctl", "-D", str(self.data), "-o", options, "-l", str(self.log), "-w",
                         "-t", str(START_TIMEOUT_S), "start")
        if done.returncode != 0:
            log = self.log.read_text() if self.log.exists() else ""
            raise RuntimeError(f"PostgreSQL did not start: {done.stderr[-800:]} {log[-1500:]}")

    def stop(self) -> None:
        with contextlib.suppress(Exception):
            self._run("pg_ctl", "-D", str(self.data), "-m", "immediate", "-w", "stop")
        shutil.rmtree(self.root, ignore_errors=True)

    def url(self, database: str = "postgres") -> str:
        return f"postgresql://postgres@/{database}?host={self.root}"

    def create_database(self, name: str | None = None) -> str:
        """A new empty database; returns its URL."""
        name = name or f"t_{uuid.uuid4().hex[:12]}"
        done = self._run("psql", "-h", str(self.root), "-U", "postgres", "-d", "postgres", "-v", "ON_ERROR_STOP=1",
                         "-c", f'CREATE DATABASE "{name}"')
        if done.returncode != 0:
            raise RuntimeError(f"CREATE DATABASE failed: {done.stderr}")
        return self.url(name)


def start_server() -> PostgresServer | str:
    """A started server, or why there cannot be one here."""
    bindir = _bindir()
    if bindir is None:
        return "PostgreSQL server binaries are not installed (apt-get install postgresql)"
    user: str | None = None
    if os.geteuid() == 0:
        try:
            pwd.getpwnam("postgres")
        except KeyError:
            return "running as root and there is no `postgres` user to run the server as"
        user = "postgres"
    server = PostgresServer(bindir, user)
    try:
        server.start()
    except (RuntimeError, OSError, subprocess.SubprocessError) as exc:
        server.stop()
        return str(exc)
    return server


@contextlib.contextmanager
def running_server() -> Iterator[PostgresServer]:
    server = start_server()
    if isinstance(server, str):
        _unavailable(server)
        raise AssertionError("unreachable")
    try:
        yield server
    finally:
        server.stop()
