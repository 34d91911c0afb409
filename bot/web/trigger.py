"""`rigcheck trigger-daily`: sign and send the daily hook call, for cron or a systemd timer."""

from __future__ import annotations

import argparse
import asyncio
import json
import re
import sys
import time
from pathlib import Path
from typing import Any
from urllib.parse import urlsplit, urlunsplit

from bot.params import CatalogError
from bot.render.text import t
from bot.web.signing import signed_headers

# The epilog is the message catalog's, so `--lang` translates it as it does every other help text.
EPILOG_KEY = "cli.epilog.trigger_daily"

_DAY = re.compile(r"\d{4}-\d{2}-\d{2}")
TIMEOUT_S = 120.0
WAIT_S = 1800.0
POLL_S = 1.0


class TriggerError(CatalogError):
    """A one-line reason the call did not succeed, built with `.of(key, …)` from the message catalog."""


def _day(text: str) -> str:
    if not _DAY.fullmatch(text):
        raise argparse.ArgumentTypeError(t(None, "cli.trigger.bad_date"))
    return text


def _snowflake(text: str) -> int:
    if not text.isdigit():
        raise argparse.ArgumentTypeError(t(None, "cli.trigger.bad_guild"))
    return int(text)


def payload_of(args: argparse.Namespace) -> dict[str, Any]:
    body: dict[str, Any] = {"dry_run": bool(args.dry_run), "force": bool(args.force)}
    if args.date:
        body["date"] = args.date
    if args.guild is not None:
        body["guild"] = str(args.guild)
    return body


def read_secret(path: str) -> str:
    try:
        secret = Path(path).read_text(encoding="utf-8").strip()
    except OSError as exc:
        raise TriggerError.of("cli.trigger.unreadable_secret", reason=exc.strerror or exc) from None
    if not secret:
        raise TriggerError.of("cli.trigger.empty_secret", path=path)
    return secret


async def send(url: str, secret: str, body: dict[str, Any], *, timeout: float = TIMEOUT_S) -> tuple[int, Any]:  # noqa: ASYNC109 - a plain deadline for one call
    import aiohttp

    raw = json.dumps(body).encode()
    headers = signed_headers(secret, raw, time.time())
    try:
        async with aiohttp.ClientSession(timeout=aiohttp.ClientTimeout(total=timeout)) as session, \
                session.post(url, data=raw, headers=headers) as response:
            text = await response.text()
            try:
                return response.status, json.loads(text)
            except json.JSONDecodeError:
                return response.status, {"error": text.strip()[:500] or response.reason}
    except aiohttp.InvalidURL:
        raise TriggerError.of("cli.trigger.bad_url", url=url) from None
    except (aiohttp.ClientError, OSError) as exc:
        raise TriggerError.of("cli.trigger.unreachable", url=url, error=exc) from None
    except TimeoutError:
        raise TriggerError.of("cli.trigger.no_answer", url=url, seconds=f"{timeout:.0f}") from None


async def follow(url: str, secret: str, run_id: str, *, wait_s: float = WAIT_S,
                 poll_s: float = POLL_S) -> dict[str, Any]:
    """Poll a run at <base>/runs/<id> until it is no longer running; returns its last answer."""
    import aiohttp

    parts = urlsplit(url)
    path = f"/runs/{run_id}"
    target = urlunsplit((parts.scheme, parts.netloc, path, "", ""))
    deadline = time.monotonic() + wait_s
    async with aiohttp.ClientSession(timeout=aiohttp.ClientTimeout(total=TIMEOUT_S)) as session:
        while True:
            headers = signed_headers(secret, path.encode(), time.time())
            try:
                async with session.get(target, headers=headers) as response:
                    answer = await response.json(content_type=None)
                    if response.status != 200:
                        raise TriggerError.of("cli.trigger.run_http", path=path, status=response.status,
                                              error=answer.get("error"))
            except (aiohttp.ClientError, OSError, json.JSONDecodeError) as exc:
                raise TriggerError.of("cli.trigger.unfollowable", run=run_id, url=target, error=exc) from None
            if answer.get("status") != "running":
                return dict(answer)
            if time.monotonic() > deadline:
                raise TriggerError.of("cli.trigger.still_running", run=run_id, seconds=f"{wait_s:.0f}", url=target)
            await asyncio.sleep(poll_s)


FAILED_DELIVERIES_EXIT = 3


def cmd_trigger_daily(_svc: Any, args: argparse.Namespace) -> int:
    locale = getattr(args, "lang", None)  # rigcheck --lang
    try:
        secret = read_secret(args.secret_file)
        status, answer = asyncio.run(send(args.url, secret, payload_of(args)))
        if status == 202 and isinstance(answer, dict) and answer.get("run") and not args.no_wait:
            answer = asyncio.run(follow(args.url, secret, str(answer["run"]), wait_s=args.wait))
            status = 200 if answer.get("status") == "done" else 500
    except TriggerError as exc:
        print(f"rigcheck: {exc.text(locale)}", file=sys.stderr)
        return 1
    sys.stdout.write(json.dumps(answer, ensure_ascii=False) + "\n")
    if 200 <= status < 300:
        # A finished run whose deliveries failed must reach cron's mail or systemd's journal as a failure.
        failed = (answer.get("counts") or {}).get("failed", 0) if isinstance(answer, dict) else 0
        if failed:
            print(f"rigcheck: {t(locale, 'cli.trigger.failed_deliveries', n=failed)}", file=sys.stderr)
            return FAILED_DELIVERIES_EXIT
        return 0
    reason = answer.get("error") if isinstance(answer, dict) else None
    said = t(locale, "cli.trigger.answered", status=status, reason=reason or t(locale, "cli.trigger.no_reason"))
    print(f"rigcheck: {said}", file=sys.stderr)
    return 1


def register(sub: Any) -> None:
    p = sub.add_parser(
        "trigger-daily", help="ask a running bot to post the daily summaries (for cron / systemd timers)",
        description="Sign and send a call to the bot's /hooks/daily endpoint and print its JSON answer.",
        epilog=t(None, EPILOG_KEY), formatter_class=argparse.RawDescriptionHelpFormatter,
    )
    p.add_argument("--url", default="http://127.0.0.1:8080/hooks/daily", help="the bot's hook URL")
    p.add_argument("--secret-file", required=True, metavar="PATH", help="file holding RIGCHECK_WEBHOOK_SECRET")
    p.add_argument("--date", type=_day, help="summary date, YYYY-MM-DD (default: today, UTC)")
    p.add_argument("--guild", type=_snowflake, metavar="ID", help="only this server's subscriptions")
    p.add_argument("--dry-run", action="store_true", help="compose the summaries but post nothing")
    p.add_argument("--force", action="store_true", help="post again even if today's summary was sent")
    p.add_argument("--no-wait", action="store_true", help="print the run id at once instead of following the run")
    p.add_argument("--wait", type=float, default=WAIT_S, metavar="SECONDS", help="how long to follow the run")
    p.set_defaults(func=cmd_trigger_daily)
