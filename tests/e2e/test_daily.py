"""Daily summaries end to end: the real bot process, its HTTP hook, and the loopback Discord.

Each scenario uses its own server in the sandbox world, so a trigger limited to that server (`guild`)
cannot post into another test's channels.
"""

from __future__ import annotations

import asyncio
import json
import os
import signal
import sys
import time
from collections.abc import AsyncIterator
from contextlib import asynccontextmanager
from datetime import UTC, datetime, timedelta
from pathlib import Path
from typing import Any

import aiohttp
import pytest
import pytest_asyncio

from bot.sandbox import BotProcess, Sandbox
from bot.sandbox.snowflake import snowflake_at
from bot.sandbox.state import StoredMessage
from bot.sandbox.world import SandboxChannel, SandboxGuild, World
from bot.web.signing import signed_headers

pytestmark = [pytest.mark.e2e, pytest.mark.asyncio(loop_scope="module")]

SECRET = "e2e-webhook-secret"
MANAGE_GUILD = 0x20
ADMIN_PERMISSIONS = 1_071_698_660_929 | MANAGE_GUILD
BASE_MS = 1_710_000_000_000


def _guild(n: int, name: str, *channels: str, locale: str = "en-US") -> SandboxGuild:
    return SandboxGuild(
        id=snowflake_at(BASE_MS + n), name=name, preferred_locale=locale,
        channels=tuple(SandboxChannel(id=snowflake_at(BASE_MS + 100 * n + i + 1), name=c)
                       for i, c in enumerate(channels)),
    )


GUILDS = {
    "main": _guild(1, "Daily Guild", "general", "daily-a", "daily-b"),
    "hook": _guild(2, "Webhook Guild", "hooked"),
    "flaky": _guild(3, "Flaky Guild", "flaky"),
    "limited": _guild(4, "Limited Guild", "limited"),
    "doomed": _guild(5, "Doomed Guild", "doomed"),
    "zh": _guild(6, "中文服务器", "chat", locale="zh-CN"),
    "crash": _guild(7, "Crash Guild", "crash"),
}
WORLD = World(guilds=tuple(GUILDS.values()))


def channel_id(guild: str, name: str) -> int:
    return next(c.id for c in GUILDS[guild].channels if c.name == name)


def today() -> str:
    return datetime.now(UTC).date().isoformat()


def bot_env(data_dir: Path) -> dict[str, str]:
    return {"RIGCHECK_DATA_DIR": str(data_dir), "RIGCHECK_HTTP_PORT": "0", "RIGCHECK_WEBHOOK_SECRET": SECRET,
            "RIGCHECK_HTTP_HOST": "127.0.0.1"}


class Hook:
    """Signs and posts calls to the bot's HTTP server, found through <data_dir>/http.port."""

    def __init__(self, data_dir: Path) -> None:
        self.data_dir = data_dir

    @property
    def base(self) -> str:
        return f"http://127.0.0.1:{(self.data_dir / 'http.port').read_text().strip()}"

    async def raw(self, body: bytes, headers: dict[str, str], path: str = "/hooks/daily") -> tuple[int, Any]:
        async with aiohttp.ClientSession() as http, http.post(self.base + path, data=body, headers=headers) as resp:
            text = await resp.text()
            return resp.status, json.loads(text)

    async def trigger(self, **payload: Any) -> tuple[int, Any]:
        """Post the hook (answered 202 with a run id), then follow the run to its end."""
        body = json.dumps(payload).encode()
        status, answer = await self.raw(body, signed_headers(SECRET, body, time.time()))
        if status == 202:
            answer = await self.follow(answer)
        return status, answer

    async def follow(self, started: Any, timeout: float = 60.0) -> Any:
        path = started["status_url"]
        deadline = time.monotonic() + timeout
        while True:
            async with aiohttp.ClientSession() as http, http.get(
                    self.base + path, headers=signed_headers(SECRET, path.encode(), time.time())) as resp:
                run = json.loads(await resp.text())
            assert resp.status == 200, run
            if run["status"] != "running":
                assert run["status"] == "done", run
                return run
            assert time.monotonic() < deadline, f"run still running: {run}"
            await asyncio.sleep(0.1)

    async def get(self, path: str) -> tuple[int, str]:
        async with aiohttp.ClientSession() as http, http.get(self.base + path) as resp:
            return resp.status, await resp.text()


async def kill(sb: Sandbox, process: BotProcess) -> None:
    """SIGKILL: what a crash or an OOM kill does; also quicker than a graceful stop when the test is done."""
    os.kill(process.pid, signal.SIGKILL)
    await process.process.wait()
    await sb.stop_bot(process)


async def start(sb: Sandbox, data_dir: Path, *, wait_for_sync: bool = True) -> BotProcess:
    return await sb.start_bot([sys.executable, "-m", "bot"], env=bot_env(data_dir), wait_for_sync=wait_for_sync)


@pytest_asyncio.fixture(loop_scope="module", scope="module")
async def running(tmp_path_factory: pytest.TempPathFactory) -> AsyncIterator[tuple[Sandbox, BotProcess, Hook]]:
    data_dir = tmp_path_factory.mktemp("daily")
    async with Sandbox(WORLD) as sb:
        process = await start(sb, data_dir)
        yield sb, process, Hook(data_dir)
        await kill(sb, process)


async def subscribe(sb: Sandbox, guild: str, options: str) -> None:
    reply = await sb.invoke(f"/daily subscribe {options}", guild=GUILDS[guild].id,
                            member_permissions=ADMIN_PERMISSIONS)
    assert reply.ok and reply.ephemeral, reply
    assert "Subscribed" in (reply.content or "") or "已订阅" in (reply.content or ""), reply.content


def posts(sb: Sandbox, channel: int) -> list[StoredMessage]:
    return [sb.state.messages[m] for m in sb.state.channel_messages.get(channel, [])
            if not sb.state.messages[m].interaction_metadata]


def assert_summary(message: StoredMessage, day: str) -> None:
    (embed,) = message.embeds
    assert day in embed["title"]
    assert embed["image"]["url"] == "attachment://daily.png"
    (png,) = message.files
    assert png.filename == "daily.png" and png.data.startswith(b"\x89PNG\r\n\x1a\n")


async def test_trigger_posts_once_per_subscription_and_force_posts_again(running: Any) -> None:
    sb, _, hook = running
    a, b = channel_id("main", "daily-a"), channel_id("main", "daily-b")
    await subscribe(sb, "main", "channel:daily-a gpus:t4, a30 ctx:32k")
    # Without gpus the subscription takes the server's default GPU from /settings.
    default = await sb.invoke("/settings server gpu:a30", guild=GUILDS["main"].id, member_permissions=ADMIN_PERMISSIONS)
    assert default.ok and "NVIDIA A30" in (default.content or ""), default
    await subscribe(sb, "main", "channel:daily-b")
    # Yesterday's questions: one asked now shows up in tomorrow's summary.
    asked = await sb.invoke("/fit gpu:t4 model:qwen3-8b", guild=GUILDS["main"].id)
    assert asked.ok
    day = (datetime.now(UTC).date() + timedelta(days=1)).isoformat()
    guild = str(GUILDS["main"].id)

    status, answer = await hook.trigger(date=day, guild=guild)
    assert status == 202, answer
    assert sorted(d["status"] for d in answer["deliveries"]) == ["sent", "sent"]
    first_a = await sb.wait_for_message(a)
    await sb.wait_for_message(b)
    assert_summary(first_a, day)
    fields = {f["name"]: f["value"] for f in first_a.embeds[0]["fields"]}
    assert "NVIDIA T4" in fields and "NVIDIA A30" in fields
    assert "1 question" in fields[f"Questions on {today()}"]
    assert "First summary" in fields["Catalog changes"]
    assert first_a.author["id"] == str(sb.world.bot_user.id)

    status, again = await hook.trigger(date=day, guild=guild)
    assert status == 202 and [d["status"] for d in again["deliveries"]] == ["skipped", "skipped"]
    status, dry = await hook.trigger(date=day, guild=guild, dry_run=True)
    assert status == 202 and [d["status"] for d in dry["deliveries"]] == ["would_send", "would_send"]
    await asyncio.sleep(0.3)
    assert len(posts(sb, a)) == 1 and len(posts(sb, b)) == 1

    status, forced = await hook.trigger(date=day, guild=guild, force=True)
    assert status == 202 and [d["status"] for d in forced["deliveries"]] == ["sent", "sent"]
    assert_summary(await sb.wait_for_message(a), day)
    assert len(posts(sb, a)) == 2 and len(posts(sb, b)) == 2

    status, metrics = await hook.get("/metrics")
    assert status == 200 and 'rigcheck_deliveries_total{outcome="sent"}' in metrics


async def test_summary_in_the_servers_language(running: Any) -> None:
    sb, _, hook = running
    chat = channel_id("zh", "chat")
    await subscribe(sb, "zh", "channel:chat gpus:4090")
    status, answer = await hook.trigger(guild=str(GUILDS["zh"].id))
    assert status == 202 and answer["deliveries"][0]["status"] == "sent"
    message = await sb.wait_for_message(chat)
    assert message.embeds[0]["title"].startswith("每日摘要")


async def test_webhook_url_subscription_is_delivered_by_webhook_execute(running: Any) -> None:
    sb, _, hook = running
    hooked = channel_id("hook", "hooked")
    webhook_id, token = sb.state.create_webhook(hooked)
    bad = await sb.invoke("/daily subscribe webhook_url:https://example.com/api/webhooks/1/abc",
                          guild=GUILDS["hook"].id, member_permissions=ADMIN_PERMISSIONS)
    assert bad.ephemeral and "webhook" in json.dumps(bad.embeds).lower()
    await subscribe(sb, "hook", f"webhook_url:{sb.url}/api/webhooks/{webhook_id}/{token} gpus:t4")
    status, answer = await hook.trigger(guild=str(GUILDS["hook"].id))
    assert status == 202, answer
    (delivery,) = answer["deliveries"]
    assert delivery["status"] == "sent" and delivery["via"] == "webhook"
    assert token not in json.dumps(answer)
    message = await sb.wait_for_message(hooked)
    assert message.webhook_id == webhook_id
    assert_summary(message, today())
    executes = [r for r in sb.requests if r.method == "POST" and r.route.startswith(f"/webhooks/{webhook_id}/")]
    assert len(executes) == 1 and executes[0].query.get("wait") in ("1", "true")


async def test_signature_failures_post_nothing(running: Any) -> None:
    sb, _, hook = running
    before = len(sb.state.messages)
    body = json.dumps({"dry_run": True, "guild": "1"}).encode()
    now = time.time()
    good = signed_headers(SECRET, body, now)

    status, answer = await hook.raw(body, {"Content-Type": "application/json"})
    assert status == 401 and "missing" in answer["error"]
    status, answer = await hook.raw(body, signed_headers("not-the-secret", body, now))
    assert status == 401 and "does not match" in answer["error"]
    status, answer = await hook.raw(body, signed_headers(SECRET, body, now - 600))
    assert status == 401 and "minutes" in answer["error"]
    status, answer = await hook.raw(body + b" ", good)
    assert status == 401
    status, answer = await hook.raw(body, good)
    assert status == 202 and (await hook.follow(answer))["deliveries"] == []
    status, answer = await hook.raw(body, good)
    assert status == 409 and "already used" in answer["error"]
    assert len(sb.state.messages) == before


async def test_oversized_and_malformed_bodies(running: Any) -> None:
    sb, _, hook = running
    before = len(sb.state.messages)
    big = json.dumps({"date": today(), "pad": "x" * 70_000}).encode()
    status, answer = await hook.raw(big, signed_headers(SECRET, big, time.time()))
    assert status == 413 and "64 kB" in answer["error"]
    for body, reason in (
        (b"{not json", "not JSON"),
        (b'{"date": "2025-13-40"}', "date"),
        (b'{"date": "25-1-5"}', "YYYY-MM-DD"),
        (b'{"dry_run": "yes"}', "dry_run"),
        (b'{"guild": "general"}', "guild"),
        (b'{"dryrun": true}', "dryrun"),
        (b"[1, 2]", "object"),
    ):
        status, answer = await hook.raw(body, signed_headers(SECRET, body, time.time()))
        assert status == 400 and reason in answer["error"], (body, answer)
    status, answer = await hook.get("/hooks/nope")
    assert status == 404 and json.loads(answer)["error"]
    assert len(sb.state.messages) == before


async def test_member_without_manage_server_cannot_subscribe(running: Any) -> None:
    sb, _, _ = running
    guild = GUILDS["main"].id
    hidden = await sb.invoke("/daily subscribe channel:general", guild=guild)
    assert hidden.rejected_by_client  # default_permissions hides the command from ordinary members
    # An admin may grant the command to anyone; the stand-in cannot model that override, so the
    # interaction carries no member permissions at all and the bot's own check must refuse. (Without
    # a channel option: a resolved channel needs permissions in its payload.)
    for command in ("/daily subscribe gpus:t4", "/daily unsubscribe"):
        reply = await sb.invoke(command, guild=guild, member_permissions=None)  # type: ignore[arg-type]
        assert reply.ephemeral and reply.embeds[0]["title"] == "Not allowed", command
    status, answer = await running[2].trigger(guild=str(guild), dry_run=True)
    assert status == 202 and all(d["channel"] != str(channel_id("main", "general")) for d in answer["deliveries"])


async def test_unknown_gpu_gets_suggestions(running: Any) -> None:
    sb, _, _ = running
    reply = await sb.invoke("/daily subscribe channel:general gpus:t4, rtx 40900", guild=GUILDS["main"].id,
                            member_permissions=ADMIN_PERMISSIONS)
    assert reply.ephemeral and reply.embeds[0]["title"] == "Unknown GPU"


async def test_preview_is_ephemeral(running: Any) -> None:
    sb, _, _ = running
    reply = await sb.invoke("/daily preview", guild=GUILDS["main"].id, member_permissions=ADMIN_PERMISSIONS)
    assert reply.ok and reply.ephemeral
    assert reply.embeds[0]["title"].startswith("Daily summary") and reply.files[0].filename == "daily.png"


async def test_server_errors_are_retried_into_one_post(running: Any) -> None:
    sb, _, hook = running
    flaky = channel_id("flaky", "flaky")
    await subscribe(sb, "flaky", "channel:flaky gpus:t4")
    # 500 is retried inside discord.py, 503 by the delivery's own backoff.
    sb.faults.inject(f"/channels/{flaky}/messages", status=500, times=1, method="POST")
    sb.faults.inject(f"/channels/{flaky}/messages", status=503, times=1, method="POST")
    status, answer = await hook.trigger(guild=str(GUILDS["flaky"].id))
    assert status == 202 and answer["deliveries"][0]["status"] == "sent", answer
    attempts = [r for r in sb.requests if r.method == "POST" and r.route == f"/channels/{flaky}/messages"]
    assert [r.status for r in attempts] == [500, 503, 200]
    assert len(posts(sb, flaky)) == 1


async def test_rate_limit_waits_then_posts(running: Any) -> None:
    sb, _, hook = running
    limited = channel_id("limited", "limited")
    await subscribe(sb, "limited", "channel:limited gpus:t4")
    sb.faults.inject(f"/channels/{limited}/messages", status=429, retry_after=0.5, method="POST")
    status, answer = await hook.trigger(guild=str(GUILDS["limited"].id))
    assert status == 202 and answer["deliveries"][0]["status"] == "sent", answer
    attempts = [r for r in sb.requests if r.method == "POST" and r.route == f"/channels/{limited}/messages"]
    assert [r.status for r in attempts] == [429, 200]
    assert attempts[1].received_at - attempts[0].received_at >= 0.45
    assert len(posts(sb, limited)) == 1


async def test_deleted_channel_disables_the_subscription(running: Any) -> None:
    sb, _, hook = running
    guild = GUILDS["doomed"]
    await subscribe(sb, "doomed", "channel:doomed gpus:t4")
    # The channel is deleted after subscribing: Discord answers 404 Unknown Channel.
    sb.state.world = sb.world.model_copy(update={"guilds": tuple(
        g.model_copy(update={"channels": ()}) if g.id == guild.id else g for g in sb.world.guilds)})
    status, answer = await hook.trigger(guild=str(guild.id))
    assert status == 202, answer
    (delivery,) = answer["deliveries"]
    assert delivery["status"] == "disabled" and "404" in delivery["reason"]
    status, later = await hook.trigger(guild=str(guild.id), force=True)
    assert status == 202 and later["deliveries"] == []
    _, metrics = await hook.get("/metrics")
    assert 'rigcheck_deliveries_total{outcome="disabled"} 1' in metrics


async def test_health_and_metrics(running: Any) -> None:
    sb, _, hook = running
    status, text = await hook.get("/healthz")
    body = json.loads(text)
    assert status == 200 and body["ok"] is True and body["checks"] == {
        "gateway": "ok", "state_db": "ok", "cache_db": "ok"}
    await sb.invoke("/rank gpu:t4")
    status, metrics = await hook.get("/metrics")
    assert status == 200
    assert 'rigcheck_commands_total{command="rank",outcome="ok"}' in metrics
    assert 'rigcheck_command_latency_seconds_count{command="rank"}' in metrics
    assert "# TYPE rigcheck_command_latency_seconds histogram" in metrics
    assert "rigcheck_cache_misses_total " in metrics


@asynccontextmanager
async def subscribed_crash_guild(data_dir: Path) -> AsyncIterator[tuple[Sandbox, BotProcess, Hook]]:
    """A fresh bot on `data_dir` whose Crash Guild has a daily summary subscribed to #crash."""
    async with Sandbox(WORLD) as sb:
        process = await start(sb, data_dir)
        await subscribe(sb, "crash", "channel:crash gpus:t4")
        yield sb, process, Hook(data_dir)


@pytest.mark.long
async def test_killed_mid_delivery_posts_exactly_once_after_restart(tmp_path: Path) -> None:
    crash = channel_id("crash", "crash")
    guild = str(GUILDS["crash"].id)
    async with subscribed_crash_guild(tmp_path) as (sb, process, hook):
        # Every post fails for now, so the delivery is claimed but cannot be marked sent.
        sb.faults.inject(f"/channels/{crash}/messages", status=503, times=1000, method="POST")
        call = asyncio.create_task(hook.trigger(guild=guild))
        await sb.wait_for_request("POST", f"/channels/{crash}/messages", timeout=15)
        await kill(sb, process)
        with pytest.raises(aiohttp.ClientError):
            await call
        assert posts(sb, crash) == []

        sb.faults.clear()
        (tmp_path / "http.port").unlink()
        process = await start(sb, tmp_path, wait_for_sync=False)
        message = await sb.wait_for_message(crash, timeout=15)
        assert_summary(message, today())
        status, answer = await hook.trigger(guild=guild)
        assert status == 202 and answer["deliveries"][0]["status"] == "skipped"
        await asyncio.sleep(0.3)
        assert len(posts(sb, crash)) == 1
        await kill(sb, process)


@pytest.mark.long
async def test_restart_finds_a_post_made_just_before_the_kill(tmp_path: Path) -> None:
    """The process died after Discord accepted the post but before it was recorded as sent."""
    crash = channel_id("crash", "crash")
    guild = str(GUILDS["crash"].id)
    async with subscribed_crash_guild(tmp_path) as (sb, process, hook):
        status, answer = await hook.trigger(guild=guild)
        assert status == 202 and answer["deliveries"][0]["status"] == "sent", (answer, process.output_tail())
        await sb.wait_for_message(crash)
        await kill(sb, process)
        # Roll the record back to "pending", as if the kill landed between the post and mark_sent.
        import sqlite3

        with sqlite3.connect(tmp_path / "state.sqlite3") as db:
            db.execute("UPDATE deliveries SET status = 'pending', message_id = NULL")
        db.close()
        process = await start(sb, tmp_path, wait_for_sync=False)
        deadline = time.monotonic() + 10
        while time.monotonic() < deadline:
            with sqlite3.connect(tmp_path / "state.sqlite3") as db:
                statuses = [row[0] for row in db.execute("SELECT status FROM deliveries")]
            db.close()
            if statuses == ["sent"]:
                break
            await asyncio.sleep(0.1)
        assert statuses == ["sent"]
        assert len(posts(sb, crash)) == 1
        await kill(sb, process)
