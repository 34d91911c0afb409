from __future__ import annotations

import asyncio
import json
import time
from datetime import UTC, date, datetime
from pathlib import Path
from typing import Any

import pytest
from aiohttp.test_utils import TestClient, TestServer
from web_fakes import SECRET, FakeBot

import bot.web.app as web_app
from bot.store.cache import ReplyCache
from bot.store.state import StateStore
from bot.web.app import MAX_BODY_BYTES, make_app, parse_trigger, start_web
from bot.web.signing import SignatureError, signature, signed_headers, verify

Client = TestClient[Any, Any]
TRIGGER_DAYS = web_app.trigger_days


@pytest.fixture(autouse=True)
def _june_2025_is_a_day_to_send(monkeypatch: pytest.MonkeyPatch) -> None:
    """These tests post a fixed day; the window of days a trigger may name is tested on its own below."""
    monkeypatch.setattr(web_app, "trigger_days", lambda now: (date(2025, 1, 1), TRIGGER_DAYS(now)[1]))


def test_a_trigger_names_today_tomorrow_or_a_day_up_to_a_week_back() -> None:
    assert TRIGGER_DAYS(datetime(2026, 12, 3, 0, 5, tzinfo=UTC)) == (date(2026, 11, 26), date(2026, 12, 4))
    assert TRIGGER_DAYS(datetime(2026, 12, 3, 23, 55, tzinfo=UTC)) == (date(2026, 11, 26), date(2026, 12, 4))


async def test_a_day_outside_the_window_is_refused(client: Client, monkeypatch: pytest.MonkeyPatch) -> None:
    monkeypatch.setattr(web_app, "trigger_days", lambda now: (date(2026, 11, 26), date(2026, 12, 4)))
    for day in ("0001-01-01", "2026-11-25", "2026-12-05", "2031-01-01"):
        status, answer = await post(client, f'{{"date": "{day}"}}'.encode())
        assert status == 400 and "date must be between 2026-11-26 and 2026-12-04" in answer["error"], day


async def test_a_wrong_method_names_the_ones_allowed(client: Client) -> None:
    response = await client.get("/hooks/daily")
    assert response.status == 405 and response.headers["Allow"] == "POST"
    assert response.content_type == "application/json"


async def post(client: Client, body: bytes, headers: dict[str, str] | None = None) -> tuple[int, Any]:
    headers = signed_headers(SECRET, body, time.time()) if headers is None else headers
    response = await client.post("/hooks/daily", data=body, headers=headers)
    assert response.content_type == "application/json"
    return response.status, await response.json()


async def get_run(client: Client, run_id: str, *, secret: str = SECRET) -> tuple[int, Any]:
    path = f"/runs/{run_id}"
    response = await client.get(path, headers=signed_headers(secret, path.encode(), time.time()))
    return response.status, await response.json()


async def test_signed_call_starts_a_run_and_answers_202(client: Client, bot: FakeBot) -> None:
    status, answer = await post(client, b'{"date": "2025-06-15", "guild": "123", "dry_run": true}')
    assert status == 202 and answer["ok"] and answer["status"] == "running"
    assert answer["status_url"] == f"/runs/{answer['run']}"
    await bot.settle()
    assert bot.cog.job.calls == [{"day": "2025-06-15", "guild": 123, "dry_run": True, "force": False}]
    status, run = await get_run(client, answer["run"])
    assert status == 200 and run["status"] == "done" and run["deliveries"][0]["status"] == "would_send"
    assert (run["date"], run["guild"], run["dry_run"], run["total"], run["counts"]) == (
        "2025-06-15", "123", True, 1, {"would_send": 1})


async def test_run_progress_needs_a_signature_over_its_own_path(client: Client, bot: FakeBot) -> None:
    _, answer = await post(client, b"{}")
    await bot.settle()
    assert (await get_run(client, answer["run"], secret="wrong"))[0] == 401
    other = f"/runs/{'0' * 32}"
    response = await client.get(f"/runs/{answer['run']}", headers=signed_headers(SECRET, other.encode(), time.time()))
    assert response.status == 401
    assert (await client.get(f"/runs/{answer['run']}")).status == 401
    assert (await get_run(client, "0" * 32))[0] == 404


async def test_a_failing_run_is_reported_failed(client: Client, bot: FakeBot) -> None:
    async def boom(*_: Any, **__: Any) -> Any:
        raise RuntimeError("secret internals")

    bot.cog.job.run = boom  # type: ignore[method-assign]
    status, answer = await post(client, b"{}")
    assert status == 202
    await bot.settle()
    _, run = await get_run(client, answer["run"])
    assert run["status"] == "failed" and "RuntimeError" in run["error"] and "secret internals" not in run["error"]
    assert 'rigcheck_daily_runs_total{status="failed"} 1' in bot.metrics.render()


async def test_empty_body_means_today_for_every_server(client: Client, bot: FakeBot) -> None:
    status, answer = await post(client, b"")
    assert status == 202 and answer["date"] == time.strftime("%Y-%m-%d", time.gmtime())
    await bot.settle()
    assert bot.cog.job.calls[0]["guild"] is None


async def test_missing_wrong_and_stale_signatures_are_401(client: Client, bot: FakeBot) -> None:
    body = b"{}"
    for headers in ({}, signed_headers("wrong", body, time.time()), signed_headers(SECRET, body, time.time() - 301)):
        status, answer = await post(client, body, headers)
        assert status == 401 and answer["ok"] is False and answer["error"]
    assert bot.cog.job.calls == []


async def test_replayed_signature_is_409(client: Client, bot: FakeBot) -> None:
    body = b'{"dry_run": true}'
    headers = signed_headers(SECRET, body, time.time())
    assert (await post(client, body, headers))[0] == 202
    await bot.settle()
    status, answer = await post(client, body, headers)
    assert status == 409 and "already used" in answer["error"]
    assert len(bot.cog.job.calls) == 1


async def test_no_secret_configured_is_503(tmp_path: Path, stores: tuple[StateStore, ReplyCache]) -> None:
    bot = FakeBot(tmp_path, *stores, secret=None)
    async with TestClient(TestServer(make_app(bot), host="127.0.0.1")) as client:
        status, answer = await post(client, b"{}")
    assert status == 503 and "RIGCHECK_WEBHOOK_SECRET" in answer["error"]


async def test_body_over_64_kb_is_413_by_length_or_by_stream(client: Client, bot: FakeBot) -> None:
    big = b'{"date": "2025-06-15", "x": "' + b"a" * MAX_BODY_BYTES + b'"}'
    status, answer = await post(client, big)
    assert status == 413 and "64 kB" in answer["error"]

    async def chunks() -> Any:  # no Content-Length: the limit must hold on what is read
        for i in range(0, len(big), 8192):
            yield big[i: i + 8192]

    response = await client.post("/hooks/daily", data=chunks(), headers=signed_headers(SECRET, big, time.time()))
    assert response.status == 413 and "64 kB" in (await response.json())["error"]
    just_fits = b" " * (MAX_BODY_BYTES - 2) + b"{}"
    assert (await post(client, just_fits))[0] == 202
    await bot.settle()
    assert len(bot.cog.job.calls) == 1


@pytest.mark.parametrize(
    ("body", "reason"),
    [
        (b"{nope", "not JSON"),
        (b"\xff\xfe", "not JSON"),
        (b"[]", "JSON object"),
        (b'{"date": "2025-02-30"}', "date"),
        (b'{"date": "2025-6-1"}', "YYYY-MM-DD"),
        (b'{"date": 20250601}', "date"),
        (b'{"guild": "abc"}', "guild"),
        (b'{"guild": -5}', "guild"),
        (b'{"guild": true}', "guild"),
        (b'{"dry_run": "true"}', "dry_run"),
        (b'{"force": 1}', "force"),
        (b'{"date": "2025-06-15", "extra": 1}', "extra"),
    ],
)
async def test_invalid_json_is_400_with_the_reason(client: Client, bot: FakeBot, body: bytes, reason: str) -> None:
    status, answer = await post(client, body)
    assert status == 400 and reason in answer["error"], answer
    assert bot.cog.job.calls == []


def test_parse_trigger_accepts_numeric_and_string_guilds() -> None:
    assert parse_trigger(b'{"guild": 1216052881006788608}').guild == 1216052881006788608
    assert parse_trigger(b'{"guild": "1216052881006788608", "force": true}').force is True


async def test_healthz_reports_each_check(client: Client, bot: FakeBot) -> None:
    response = await client.get("/healthz")
    body = await response.json()
    assert response.status == 200 and body["ok"] is True
    assert body["checks"] == {"gateway": "ok", "state_db": "ok", "cache_db": "ok"}
    assert await bot.state.get_guild_settings(0) == type(await bot.state.get_guild_settings(0))()

    bot.ready = False
    await bot.state.close()
    response = await client.get("/healthz")
    body = await response.json()
    assert response.status == 503 and body["ok"] is False
    assert body["checks"]["gateway"] == "not connected" and "closed" in body["checks"]["state_db"]
    assert "gateway" in body["error"] and "state_db" in body["error"]


async def test_metrics_endpoint(client: Client, bot: FakeBot) -> None:
    bot.metrics.command("fit", "ok")
    response = await client.get("/metrics")
    assert response.status == 200
    assert response.headers["Content-Type"] == "text/plain; version=0.0.4; charset=utf-8"
    assert 'rigcheck_commands_total{command="fit",outcome="ok"} 1' in await response.text()


async def test_unknown_route_and_crash_are_json_without_traceback(client: Client, bot: FakeBot) -> None:
    response = await client.get("/nowhere")
    assert response.status == 404 and (await response.json())["error"]

    async def boom(*_: Any, **__: Any) -> Any:
        raise RuntimeError("secret internals")

    bot.state.create_run = boom  # type: ignore[method-assign]
    status, answer = await post(client, b"{}")
    assert status == 500 and answer["error"] == "internal error" and answer["error_id"]
    assert "secret internals" not in json.dumps(answer) and "Traceback" not in json.dumps(answer)


async def test_start_web_binds_a_free_port_and_writes_it(tmp_path: Path, stores: tuple[StateStore, ReplyCache]) -> None:
    bot = FakeBot(tmp_path, *stores, secret=SECRET)
    bot.settings.rigcheck_http_port = 0
    bot.metrics = None  # type: ignore[assignment]
    runner = await start_web(bot)
    try:
        port = int((tmp_path / "http.port").read_text())
        assert port > 0 and runner.addresses[0][1] == port
        assert bot.metrics is not None
    finally:
        await runner.cleanup()
    assert not (tmp_path / "http.port").exists()


async def test_a_signed_body_arriving_in_several_reads_is_verified_over_all_of_it(
        client: Client, bot: FakeBot) -> None:
    body = b'{"date": "2025-06-15", "dry_run": true}' + b" " * 20_000

    async def slow_chunks() -> Any:  # each chunk lands in its own read on the server
        for i in range(0, len(body), 4096):
            yield body[i: i + 4096]
            await asyncio.sleep(0.005)

    response = await client.post("/hooks/daily", data=slow_chunks(), headers=signed_headers(SECRET, body, time.time()))
    assert response.status == 202, await response.text()
    await bot.settle()
    assert bot.cog.job.calls[0]["day"] == "2025-06-15"


async def test_a_slow_chunked_body_over_64_kb_is_413_not_401(client: Client, bot: FakeBot) -> None:
    big = b'{"x": "' + b"a" * (MAX_BODY_BYTES + 10) + b'"}'

    async def slow_chunks() -> Any:
        for i in range(0, len(big), 8192):
            yield big[i: i + 8192]
            await asyncio.sleep(0.005)

    response = await client.post("/hooks/daily", data=slow_chunks(), headers=signed_headers(SECRET, big, time.time()))
    assert response.status == 413 and "64 kB" in (await response.json())["error"]
    assert bot.cog.job.calls == []


@pytest.mark.parametrize(
    "body",
    [
        b'{"x": ' + b"[" * 30_000 + b"]" * 30_000 + b"}",
        b'{"guild": ' + b"9" * 30 + b"}",
        b'{"guild": "' + b"9" * 30 + b'"}',
        b'{"guild": 18446744073709551616}',
        b'{"guild": ' + b"1" * 5000 + b"}",
        '{"guild": "١٢٣"}'.encode(),
        '{"date": "٢٠٢٥-06-15"}'.encode(),
    ],
)
async def test_malformed_signed_bodies_are_400(client: Client, bot: FakeBot, body: bytes) -> None:
    status, answer = await post(client, body)
    assert status == 400 and answer["ok"] is False and answer["error"], answer
    assert bot.cog.job.calls == []


async def test_a_timestamp_in_non_ascii_digits_is_refused(client: Client, bot: FakeBot) -> None:
    body = b"{}"
    headers = signed_headers(SECRET, body, time.time())
    arabic = headers["X-Rigcheck-Timestamp"].translate(str.maketrans("0123456789", "٠١٢٣٤٥٦٧٨٩"))
    with pytest.raises(SignatureError, match="unix seconds"):
        verify(SECRET, arabic, signature(SECRET, arabic, body), body, time.time())
