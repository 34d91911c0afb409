"""The playground's JSON endpoints refuse other sites and bad input with short JSON errors (no bot process)."""

from __future__ import annotations

import json
import logging
from collections.abc import AsyncIterator
from typing import Any

import aiohttp
import pytest
import pytest_asyncio

from bot.render.text import LOCALES as BOT_LOCALES
from bot.sandbox import SandboxServer
from bot.sandbox.playground import LOCALES

MAX_BODY_BYTES = 64 * 1024  # the cap the playground promises

EVIL = "http://evil.example"


@pytest_asyncio.fixture
async def server() -> AsyncIterator[SandboxServer]:
    async with SandboxServer() as running:
        yield running


async def send(
    server: SandboxServer, path: str, body: bytes | str, *, headers: dict[str, str] | None = None,
    method: str = "POST",
) -> tuple[int, Any]:
    sent = {"Content-Type": "application/json", **(headers or {})}
    data = body.encode() if isinstance(body, str) else body
    async with aiohttp.ClientSession() as http, http.request(
        method, server.url + path, data=data, headers=sent
    ) as response:
        text = await response.text()
        assert response.headers["Content-Type"] == "application/json", text
        return response.status, json.loads(text)


SETTINGS = json.dumps({"command": "/settings server gpu:t4", "admin": True})


@pytest.mark.parametrize(
    ("headers", "status"),
    [
        ({"Content-Type": "text/plain", "Origin": EVIL, "Host": "evil.example"}, 403),
        ({"Host": "evil.example"}, 403),
        ({"Host": "evil.example:{port}"}, 403),
        ({"Origin": EVIL}, 403),
        ({"Origin": "null"}, 403),
        ({"Origin": "http://127.0.0.1:1"}, 403),
        ({"Content-Type": "text/plain"}, 415),
        ({"Content-Type": "application/x-www-form-urlencoded"}, 415),
    ],
)
async def test_cross_site_requests_change_nothing(
    server: SandboxServer, headers: dict[str, str], status: int
) -> None:
    headers = {k: v.format(port=server.port) for k, v in headers.items()}
    for path in ("/playground/invoke", "/playground/click", "/playground/autocomplete"):
        got, body = await send(server, path, SETTINGS, headers=headers)
        assert (got, set(body)) == (status, {"error"})
    assert not server.state.interactions


async def test_dns_rebound_reads_are_refused(server: SandboxServer) -> None:
    status, body = await send(server, "/playground/meta", b"", method="GET", headers={"Host": "evil.example"})
    assert status == 403 and "error" in body


@pytest.mark.parametrize("host", ["127.0.0.1", "localhost"])
async def test_the_pages_own_requests_pass(server: SandboxServer, host: str) -> None:
    origin = f"{host}:{server.port}"
    status, body = await send(
        server, "/playground/invoke", json.dumps({"command": "/nothing", "locale": "zh-CN", "guild": ""}),
        headers={"Host": origin, "Origin": f"http://{origin}"},
    )
    assert status == 200 and body["rejected_by_client"]
    status, _ = await send(server, "/playground/meta", b"", method="GET", headers={"Host": origin})
    assert status == 200


@pytest.mark.parametrize(
    ("path", "body", "status"),
    [
        ("/playground/click", "{}", 400),
        ("/playground/click", '{"interaction_id": "abc", "message_id": "1", "custom_id": "x"}', 400),
        ("/playground/click", '{"interaction_id": "1", "message_id": "1", "custom_id": ""}', 400),
        ("/playground/invoke", '{"command": "/fit model:x", "guild": "abc"}', 400),
        ("/playground/invoke", '{"command": "/fit model:x", "guild": "999"}', 400),
        ("/playground/invoke", '{"command": "/fit", "locale": "xx-XX"}', 400),
        ("/playground/invoke", '{"command": 5}', 400),
        ("/playground/invoke", json.dumps({"command": "/" + "a" * 5000}), 400),
        ("/playground/invoke", "[" * 60_000, 400),
        ("/playground/invoke", '{"command": ' + "[" * 60_000 + "}", 400),
        ("/playground/invoke", "[]", 400),
        ("/playground/invoke", b"\xff\xfe", 400),
        ("/playground/invoke", json.dumps({"command": "x" * MAX_BODY_BYTES}), 413),
        ("/playground/autocomplete", '{"text": "/", "guild": "abc"}', 400),
    ],
)
async def test_bad_bodies_get_short_json_errors(
    server: SandboxServer, path: str, body: str | bytes, status: int, caplog: pytest.LogCaptureFixture
) -> None:
    with caplog.at_level(logging.ERROR):
        got, answer = await send(server, path, body)
    assert (got, set(answer)) == (status, {"error"})
    assert len(answer["error"]) < 200
    assert not caplog.records
    assert not server.state.interactions


@pytest.mark.parametrize(("attachment", "status"), [("abc", 400), ("²", 400), ("9" * 30, 400), ("123", 404)])
async def test_bad_file_ids(server: SandboxServer, attachment: str, status: int) -> None:
    got, answer = await send(server, f"/playground/files/{attachment}", b"", method="GET")
    assert (got, set(answer)) == (status, {"error"})


def test_the_bots_locales_are_offered() -> None:
    # The bot's "en" covers Discord's en-US and en-GB.
    for locale in BOT_LOCALES:
        assert any(offered == locale or offered.startswith(locale + "-") for offered in LOCALES), locale
