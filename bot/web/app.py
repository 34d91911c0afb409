"""The HTTP server inside the bot process: the signed daily hook, probes (/livez, /readyz) and /metrics.

Every error leaves as JSON (`{"error": …}`); tracebacks stay in the log, under an id the answer names.
"""

from __future__ import annotations

import asyncio
import json
import logging
import os
import re
import time
import uuid
from collections.abc import AsyncIterator, Awaitable, Callable
from datetime import UTC, date, datetime, timedelta
from pathlib import Path
from typing import TYPE_CHECKING, Any

from aiohttp import web
from pydantic import BaseModel, ConfigDict, Field, StrictBool, ValidationError, field_validator

from bot.web import signing
from bot.web.metrics import CONTENT_TYPE, Metrics

if TYPE_CHECKING:
    from bot.client import RigBot
    from bot.daily.delivery import DailyJob

log = logging.getLogger(__name__)

BOT: web.AppKey[RigBot] = web.AppKey("bot")
# Filled in once the socket is bound, which happens after the app is frozen.
BOUND: web.AppKey[dict[str, int]] = web.AppKey("bound", dict)
MAX_BODY_BYTES = 64 * 1024
PORT_FILE = "http.port"
READY_WAIT_S = 10.0
PROBE_TIMEOUT_S = 3.0

# ASCII digits only: `\d` also matches Arabic-Indic and other digits that int() and date() accept.
_DAY = re.compile(r"[0-9]{4}-[0-9]{2}-[0-9]{2}")
_SNOWFLAKE = re.compile(r"[0-9]{1,20}")
# Discord snowflakes are unsigned 64-bit but stored as SQLite INTEGER (signed 64-bit).
SNOWFLAKE_MAX = 2**63 - 1


# A summary may be sent for today or tomorrow (UTC; a scheduler east of UTC posts its local date), or re-sent for a
# missed day up to a week back. A day further ahead would be marked sent long before it comes, and its own trigger
# then skipped; a year-1 day overflowed the composer.
TRIGGER_DAYS_BACK = 7
TRIGGER_DAYS_AHEAD = 1


def trigger_days(now: datetime) -> tuple[date, date]:
    """The first and last day a trigger at `now` (UTC) may name."""
    today = now.astimezone(UTC).date()
    return today - timedelta(days=TRIGGER_DAYS_BACK), today + timedelta(days=TRIGGER_DAYS_AHEAD)


def json_error(status: int, message: str, **extra: Any) -> web.Response:
    return web.json_response({"ok": False, "error": message, **extra}, status=status)


# --- the hook's body -------------------------------------------------------------------------------


class TriggerRequest(BaseModel):
    """What a scheduler posts to /hooks/daily. Unknown keys are refused so a typo cannot go unnoticed."""

    model_config = ConfigDict(extra="forbid")

    date: str = Field(default_factory=lambda: datetime.now(UTC).date().isoformat())
    guild: int | None = Field(default=None, gt=0, le=SNOWFLAKE_MAX)
    dry_run: StrictBool = False
    force: StrictBool = False

    @field_validator("date")
    @classmethod
    def _day(cls, value: str) -> str:
        if not _DAY.fullmatch(value):
            raise ValueError("date must be YYYY-MM-DD")
        day = date.fromisoformat(value)
        earliest, latest = trigger_days(datetime.now(UTC))
        if not earliest <= day <= latest:
            raise ValueError(f"date must be between {earliest.isoformat()} and {latest.isoformat()}")
        return value

    @field_validator("guild", mode="before")
    @classmethod
    def _snowflake(cls, value: Any) -> Any:
        # Snowflakes travel as strings in JSON (they overflow a double), so accept both spellings.
        if isinstance(value, str):
            if not _SNOWFLAKE.fullmatch(value):
                raise ValueError("guild must be a numeric id")
            return int(value)
        if isinstance(value, bool) or not isinstance(value, int | None):
            raise ValueError("guild must be a numeric id")
        return value


def parse_trigger(body: bytes) -> TriggerRequest:
    """Raises ValueError with a one-line reason."""
    try:
        data = json.loads(body or b"{}")
    except ValueError as exc:  # also int() past 4,300 digits, which is not a JSONDecodeError
        raise ValueError(f"body is not JSON: {str(exc)[:120]}") from None
    except RecursionError:
        raise ValueError("body is nested too deeply") from None
    if not isinstance(data, dict):
        raise ValueError("body must be a JSON object")
    try:
        return TriggerRequest.model_validate(data)
    except ValidationError as exc:
        reasons = "; ".join(f"{'.'.join(str(p) for p in e['loc']) or 'body'}: {e['msg']}" for e in exc.errors())
        raise ValueError(reasons) from None


async def read_limited(request: web.Request, limit: int = MAX_BODY_BYTES) -> bytes:
    """The raw body, refusing more than `limit` bytes whether or not Content-Length was sent."""
    if request.content_length is not None and request.content_length > limit:
        raise web.HTTPRequestEntityTooLarge(max_size=limit, actual_size=request.content_length)
    # One read returns only what has arrived so far; a signature checked over that fragment fails, and a
    # slow body over the limit would pass as "short". Read until the end or until past the limit.
    body = bytearray()
    while len(body) <= limit:
        chunk = await request.content.read(limit + 1 - len(body))
        if not chunk:
            break
        body += chunk
    if len(body) > limit:
        raise web.HTTPRequestEntityTooLarge(max_size=limit, actual_size=len(body))
    return bytes(body)


# --- handlers --------------------------------------------------------------------------------------


async def hooks_daily(request: web.Request) -> web.Response:
    bot = request.app[BOT]
    secret = bot.settings.rigcheck_webhook_secret
    if secret is None or not secret.get_secret_value():
        return json_error(503, "daily hook disabled: RIGCHECK_WEBHOOK_SECRET is not set")
    body = await read_limited(request)
    now = time.time()
    try:
        sig = signing.verify(secret.get_secret_value(), request.headers.get(signing.TIMESTAMP_HEADER),
                             request.headers.get(signing.SIGNATURE_HEADER), body, now)
    except signing.SignatureError as exc:
        return json_error(401, str(exc))
    if bot.state is None:
        return json_error(503, "state database unavailable")
    if not await bot.state.remember_signature(sig, datetime.fromtimestamp(now, UTC)):
        return json_error(409, "this signature was already used; sign each request afresh")
    try:
        trigger = parse_trigger(body)
    except ValueError as exc:
        return json_error(400, str(exc))
    job = getattr(bot.get_cog("Daily"), "job", None)
    if job is None:
        return json_error(503, "daily summaries are not loaded")
    try:
        await asyncio.wait_for(bot.wait_until_ready(), READY_WAIT_S)
    except TimeoutError:
        return json_error(503, "not connected to Discord yet; try again shortly")
    # Answered at once; the run goes on in the background and its progress is at GET /runs/{id}, from
    # any process that shares the database. A trigger with thousands of subscriptions cannot time out.
    run_id = uuid.uuid4().hex
    await bot.state.create_run(run_id, trigger.date, trigger.guild, dry_run=trigger.dry_run, force=trigger.force,
                               started_by=bot.claim_owner)
    bot.spawn(carry_out(bot, job, run_id, trigger), name=f"daily-run-{run_id[:8]}")
    return web.json_response({"ok": True, "run": run_id, "status": "running", "status_url": f"/runs/{run_id}",
                              "date": trigger.date, "dry_run": trigger.dry_run, "force": trigger.force},
                             status=202)


async def carry_out(bot: RigBot, job: DailyJob, run_id: str, trigger: TriggerRequest) -> None:
    """Run the daily job for one trigger, writing its progress into the run's record as it goes."""
    state = bot.state
    assert state is not None, "a run is only started once its record is written"
    counts: dict[str, int] = {}
    status = "failed"
    if bot.metrics is not None:
        bot.metrics.run_started()

    async def on_total(total: int) -> None:
        await state.update_run(run_id, counts=counts, total=total)

    async def on_result(result: dict[str, Any]) -> None:
        counts[result["status"]] = counts.get(result["status"], 0) + 1
        await state.update_run(run_id, counts=counts)

    try:
        results = await job.run(trigger.date, trigger.guild, dry_run=trigger.dry_run, force=trigger.force,
                                progress=on_result, on_total=on_total)
        await state.update_run(run_id, counts=counts, status="done", results=results)
        status = "done"
    except asyncio.CancelledError:
        await state.update_run(run_id, counts=counts, status="failed",
                                   error="interrupted: the process was shut down (unfinished claims are taken over)")
        raise
    except Exception as exc:
        error_id = uuid.uuid4().hex[:8]
        log.exception("daily run %s failed [%s]", run_id, error_id)
        await state.update_run(run_id, counts=counts, status="failed",
                                   error=f"{type(exc).__name__} (log id {error_id})")
    finally:
        if bot.metrics is not None:
            bot.metrics.run_finished(status)


def run_view(run: Any) -> dict[str, Any]:
    return {"ok": True, "run": run.id, "status": run.status, "date": run.day,
            "guild": None if run.guild_id is None else str(run.guild_id), "dry_run": run.dry_run,
            "force": run.forced, "total": run.total, "counts": run.counts, "deliveries": run.results or [],
            "error": run.error, "started_by": run.started_by, "created_at": run.created_at.isoformat(),
            "updated_at": run.updated_at.isoformat()}


async def get_run(request: web.Request) -> web.Response:
    """A run's progress; signed like the hook, over the request path (there is no body)."""
    bot = request.app[BOT]
    secret = bot.settings.rigcheck_webhook_secret
    if secret is None or not secret.get_secret_value():
        return json_error(503, "daily hook disabled: RIGCHECK_WEBHOOK_SECRET is not set")
    try:
        signing.verify(secret.get_secret_value(), request.headers.get(signing.TIMESTAMP_HEADER),
                       request.headers.get(signing.SIGNATURE_HEADER), request.path.encode(), time.time())
    except signing.SignatureError as exc:
        return json_error(401, str(exc))
    if bot.state is None:
        return json_error(503, "state database unavailable")
    run = await bot.state.get_run(request.match_info["run_id"])
    if run is None:
        return json_error(404, "no such run")
    return web.json_response(run_view(run))


async def _probe(name: str, check: Callable[[], Awaitable[str | None]]) -> tuple[str, str | None]:
    try:
        return name, await asyncio.wait_for(check(), PROBE_TIMEOUT_S)
    except TimeoutError:
        return name, f"no answer within {PROBE_TIMEOUT_S:.0f}s"
    except Exception as exc:
        return name, f"{type(exc).__name__}: {str(exc)[:200]}"


def gateway_problem(bot: RigBot) -> str | None:
    """Why the bot cannot take interactions right now, or None when every shard is connected."""
    if bot.is_closed():
        return "closed"
    if not bot.is_ready():
        return "not connected"
    shards = getattr(bot, "shards", None) or {}
    down = sorted(shard_id for shard_id, shard in shards.items() if shard.is_closed())
    return f"shard {', '.join(map(str, down))} disconnected" if down else None


async def livez(request: web.Request) -> web.Response:
    """The process and its event loop are alive: answering at all proves it. No I/O, nothing else checked,
    so an outage at Discord or a slow disk never gets a healthy pod restarted."""
    bot = request.app[BOT]
    return web.json_response({"ok": True, "uptime_s": round(time.monotonic() - bot.started_at, 1)})


async def readyz(request: web.Request) -> web.Response:
    """Ready for traffic: every shard connected and both databases readable. Reads only; a probe writes
    nothing, so overlapping probes cannot fail each other."""
    bot = request.app[BOT]

    async def gateway() -> str | None:
        return gateway_problem(bot)

    async def state() -> str | None:
        return "not open" if bot.state is None else await bot.state.ping()

    async def cache() -> str | None:
        return "not open" if bot.cache is None else await bot.cache.ping()

    results = dict(await asyncio.gather(_probe("gateway", gateway), _probe("state_db", state),
                                        _probe("cache_db", cache)))
    problems = {k: v for k, v in results.items() if v is not None}
    body = {"ok": not problems, "checks": {k: v or "ok" for k, v in results.items()},
            "uptime_s": round(time.monotonic() - bot.started_at, 1)}
    if problems:
        body["error"] = "; ".join(f"{k}: {v}" for k, v in problems.items())
    return web.json_response(body, status=200 if not problems else 503)


async def metrics(request: web.Request) -> web.Response:
    bot = request.app[BOT]
    text = bot.metrics.render() if bot.metrics is not None else Metrics().render()
    return web.Response(body=text.encode(), headers={"Content-Type": CONTENT_TYPE})


# --- plumbing --------------------------------------------------------------------------------------


@web.middleware
async def error_middleware(
    request: web.Request, handler: Callable[[web.Request], Awaitable[web.StreamResponse]]
) -> web.StreamResponse:
    try:
        return await handler(request)
    except web.HTTPException as exc:
        if exc.status < 400:
            raise
        message = {413: f"body larger than {MAX_BODY_BYTES // 1024} kB"}.get(exc.status, exc.reason)
        response = json_error(exc.status, message)
        if isinstance(exc, web.HTTPMethodNotAllowed):
            # RFC 9110 §15.5.6: a 405 names the methods the resource takes.
            response.headers["Allow"] = ", ".join(sorted(exc.allowed_methods))
        return response
    except asyncio.CancelledError:
        raise
    except Exception:
        error_id = uuid.uuid4().hex[:8]
        log.exception("HTTP %s %s failed [%s]", request.method, request.path, error_id)
        return json_error(500, "internal error", error_id=error_id)


def _port_file(bot: RigBot) -> Path:
    return Path(bot.settings.rigcheck_data_dir) / PORT_FILE


async def _port_file_ctx(app: web.Application) -> AsyncIterator[None]:
    yield
    # A stale port file would send the next caller to whatever takes the port after us.
    path = _port_file(app[BOT])
    try:
        if path.read_text().strip() == str(app[BOUND].get("port")):
            path.unlink()
    except OSError:
        pass


def make_app(bot: RigBot) -> web.Application:
    app = web.Application(middlewares=[error_middleware], client_max_size=MAX_BODY_BYTES)
    app[BOT] = bot
    app[BOUND] = {}
    app.router.add_post("/hooks/daily", hooks_daily)
    app.router.add_get(r"/runs/{run_id:[0-9a-f]{32}}", get_run)
    app.router.add_get("/livez", livez)
    app.router.add_get("/readyz", readyz)
    # The older name, kept for existing monitors: the same read-only check as /readyz.
    app.router.add_get("/healthz", readyz)
    app.router.add_get("/metrics", metrics)
    app.cleanup_ctx.append(_port_file_ctx)
    return app


async def start_web(bot: RigBot) -> web.AppRunner:
    """Serve on RIGCHECK_HTTP_HOST:RIGCHECK_HTTP_PORT (0 = any free port, written to <data_dir>/http.port)."""
    if bot.metrics is None:
        bot.metrics = Metrics()
    app = make_app(bot)
    runner = web.AppRunner(app, access_log=None)
    await runner.setup()
    host, port = bot.settings.rigcheck_http_host, bot.settings.rigcheck_http_port
    site = web.TCPSite(runner, host, port)
    try:
        await site.start()
    except BaseException:
        await runner.cleanup()
        raise
    bound = runner.addresses[0][1]
    app[BOUND]["port"] = bound
    path = _port_file(bot)
    tmp = path.with_name(path.name + ".tmp")
    tmp.write_text(f"{bound}\n")
    os.replace(tmp, path)
    log.info("HTTP listening on %s:%d (daily hook %s)", host, bound,
             "enabled" if bot.settings.rigcheck_webhook_secret else "disabled: no RIGCHECK_WEBHOOK_SECRET")
    return runner
