"""`rigcheck state export|import`: move the durable state between SQLite and PostgreSQL."""

from __future__ import annotations

import argparse
import asyncio
import json
import sys
from pathlib import Path
from typing import Any

from bot.cli.common import lang
from bot.render.text import t


def state_target(given: str | None, *, default_sqlite: bool) -> str:
    """A SQLite path or a postgresql:// URL; by default the one the bot itself would use."""
    if given:
        return given
    from bot.settings import Settings

    settings = Settings()
    if settings.database_url:
        return settings.database_url
    if default_sqlite:
        return str(Path(settings.rigcheck_data_dir) / "state.sqlite3")
    raise ValueError(t(None, "cli.state.need_target"))


async def _export(target: str) -> dict[str, Any]:
    from bot.store.state import StateStore

    async with StateStore.open(target) as store:
        return await store.export_tables()


async def _import(target: str, data: dict[str, Any]) -> dict[str, int]:
    from bot.store.state import StateStore

    async with StateStore.open(target) as store:
        return await store.import_tables(data)


def cmd_state(_svc: Any, args: argparse.Namespace) -> int:
    from bot.store.db import redacted
    from bot.store.errors import StateStoreError

    loc = lang(args)
    try:
        if args.action == "export":
            source = state_target(args.source, default_sqlite=True)
            if not source.startswith(("postgresql:", "postgres:")) and not Path(source).is_file():
                raise ValueError(t(loc, "cli.no_state", where=source))  # exporting must not create one
            data = asyncio.run(_export(source))
            text = json.dumps(data, ensure_ascii=False)
            if args.output in (None, "-"):
                sys.stdout.write(text + "\n")
            else:
                out = Path(args.output)
                out.write_text(text + "\n", encoding="utf-8")
                out.chmod(0o600)  # webhook URLs and pending interactions carry tokens
            counts = {t: len(v["rows"]) for t, v in data["tables"].items()}
            print("rigcheck: " + t(loc, "cli.state.exported", where=redacted(source), counts=counts), file=sys.stderr)
        else:
            target = state_target(args.target, default_sqlite=False)
            raw = sys.stdin.read() if args.input == "-" else Path(args.input).read_text(encoding="utf-8")
            counts = asyncio.run(_import(target, json.loads(raw)))
            print("rigcheck: " + t(loc, "cli.state.imported", where=redacted(target), counts=counts), file=sys.stderr)
    except (StateStoreError, ValueError, OSError) as exc:
        print(f"rigcheck: {exc}", file=sys.stderr)
        return 2
    return 0


def register(sub: Any) -> None:
    p = sub.add_parser("state", help="export the durable state, or import it into another database",
                       description="Move a single-process SQLite state into PostgreSQL: "
                                   "`rigcheck state export -o state.json` with the bot stopped, then "
                                   "`RIGCHECK_DATABASE_URL=postgresql://… rigcheck state import state.json`.")
    actions = p.add_subparsers(dest="action", required=True)
    exp = actions.add_parser("export", help="write every table as JSON")
    exp.add_argument("--from", dest="source", metavar="TARGET",
                     help="SQLite file or postgresql:// URL (default: RIGCHECK_DATABASE_URL, else "
                          "<RIGCHECK_DATA_DIR>/state.sqlite3)")
    exp.add_argument("-o", "--output", metavar="FILE", help="where to write (default: stdout)")
    imp = actions.add_parser("import", help="load an export into an empty state database")
    imp.add_argument("input", metavar="FILE", help="an export, or - for stdin")
    imp.add_argument("--to", dest="target", metavar="TARGET",
                     help="postgresql:// URL or SQLite file (default: RIGCHECK_DATABASE_URL)")
    p.set_defaults(func=cmd_state)
