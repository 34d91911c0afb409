"""`rigcheck state export|import`: a single-process SQLite state moved into PostgreSQL from the command line."""

from __future__ import annotations

import asyncio
import json
import os
import subprocess
import sys
from pathlib import Path

from bot.store.records import GuildSettings
from bot.store.state import StateStore
from tests.pg import PostgresServer

ROOT = Path(__file__).resolve().parents[2]


def rigcheck(*args: str, env: dict[str, str] | None = None) -> subprocess.CompletedProcess[str]:
    base = {k: v for k, v in os.environ.items() if not k.startswith("RIGCHECK_")}
    return subprocess.run([sys.executable, "-m", "bot.cli", *args], cwd=ROOT, capture_output=True, text=True,
                          timeout=120, check=False, env={**base, "PYTHONPATH": str(ROOT), **(env or {})})


def test_export_then_import_into_postgres(tmp_path: Path, pg_server: PostgresServer) -> None:
    source = tmp_path / "state.sqlite3"

    async def fill() -> None:
        async with StateStore.open(source) as store:
            await store.set_guild_settings(42, GuildSettings(ctx=16384))
            await store.add_subscription(42, 4200, None, ["nvidia-t4-16gb"], 8192, "en-US")

    asyncio.run(fill())
    dump = tmp_path / "dump.json"
    done = rigcheck("state", "export", "--from", str(source), "-o", str(dump))
    assert done.returncode == 0, done.stderr
    assert json.loads(dump.read_text())["tables"]["subscriptions"]["rows"]
    assert dump.stat().st_mode & 0o077 == 0

    url = pg_server.create_database()
    done = rigcheck("state", "import", str(dump), env={"RIGCHECK_DATABASE_URL": url})
    assert done.returncode == 0, done.stderr
    assert "'subscriptions': 1" in done.stderr

    async def read() -> tuple[GuildSettings, int]:
        async with StateStore.open(url) as store:
            return await store.get_guild_settings(42), len(await store.list_subscriptions(42))

    assert asyncio.run(read()) == (GuildSettings(ctx=16384), 1)
    again = rigcheck("state", "import", str(dump), "--to", url)
    assert again.returncode == 2 and "empty" in again.stderr and len(again.stderr.strip().splitlines()) == 1


def test_export_of_a_missing_file_creates_nothing(tmp_path: Path) -> None:
    done = rigcheck("state", "export", "--from", str(tmp_path / "nope.sqlite3"))
    assert done.returncode == 2 and "no state database" in done.stderr
    assert list(tmp_path.iterdir()) == []
