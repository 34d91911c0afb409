"""`rigcheck reports export --json|--csv`: accepted community reports for a person to review."""

from __future__ import annotations

import argparse
import asyncio
import json
import sys
from pathlib import Path
from typing import Any

from bot.cli.common import lang
from bot.render.text import t


async def _load(target: str, everything: bool) -> list[Any]:
    from bot.store.state import StateStore

    async with StateStore.open(target) as store:
        reports = await store.reports_with_status("accepted")
        if everything:
            reports += await store.reports_with_status("held") + await store.reports_with_status("hidden")
    return sorted(reports, key=lambda r: r.id)


def cmd_reports(svc: Any, args: argparse.Namespace) -> int:
    from bot.cli.state import state_target
    from bot.reports.export import rows, to_csv, to_json
    from bot.store.errors import StateStoreError

    loc = lang(args)
    try:
        source = state_target(args.source, default_sqlite=True)
        if not source.startswith(("postgresql:", "postgres:")) and not Path(source).is_file():
            raise ValueError(t(loc, "cli.no_state", where=source))  # exporting must not create one
        data = rows(asyncio.run(_load(source, args.all)), svc.catalog)
        text = to_csv(data) if args.csv else json.dumps(to_json(data), ensure_ascii=False, indent=1) + "\n"
        if args.output in (None, "-"):
            sys.stdout.write(text)
        else:
            Path(args.output).write_text(text, encoding="utf-8")
    except (StateStoreError, ValueError, OSError) as exc:
        print(f"rigcheck: {exc}", file=sys.stderr)
        return 2
    print("rigcheck: " + t(loc, "cli.reports.exported", count=len(data)), file=sys.stderr)
    return 0


def register(sub: Any) -> None:
    p = sub.add_parser("reports", help="export community speed reports for review (never fed to the fit)")
    actions = p.add_subparsers(dest="action", required=True)
    exp = actions.add_parser("export", help="accepted reports in the calibration measurements' shape")
    kind = exp.add_mutually_exclusive_group(required=True)
    kind.add_argument("--json", action="store_true")
    kind.add_argument("--csv", action="store_true")
    exp.add_argument("--all", action="store_true", help="also held and hidden reports (their status says which)")
    exp.add_argument("--from", dest="source", metavar="TARGET",
                     help="SQLite file or postgresql:// URL (default: the bot's own state)")
    exp.add_argument("-o", "--output", metavar="FILE", help="where to write (default: stdout)")
    p.set_defaults(func=cmd_reports)
