"""The stand-in's HTTP surface, spoken to directly (no bot process)."""

from __future__ import annotations

import json
from collections.abc import AsyncIterator

import aiohttp
import pytest_asyncio

from bot.sandbox import SandboxServer, World


@pytest_asyncio.fixture
async def server() -> AsyncIterator[SandboxServer]:
    async with SandboxServer(World(attachment_size_limit=1024)) as running:
        yield running


def bot_headers(server: SandboxServer) -> dict[str, str]:
    return {"Authorization": f"Bot {server.state.world.token}"}


async def test_json_content_type_is_exact_and_auth_is_checked(server: SandboxServer) -> None:
    async with aiohttp.ClientSession() as http:
        async with http.get(server.state.api_base + "/users/@me", headers=bot_headers(server)) as response:
            assert response.headers["Content-Type"] == "application/json"
            assert (await response.json())["id"] == str(server.state.world.bot_user.id)
        async with http.get(server.state.api_base + "/users/@me") as response:
            assert response.status == 401
    assert [r.status for r in server.state.log.requests] == [200, 401]


async def test_gateway_bot_describes_sharding(server: SandboxServer) -> None:
    async with aiohttp.ClientSession() as http:
        async with http.get(server.state.api_base + "/gateway/bot", headers=bot_headers(server)) as response:
            body = await response.json()
    assert body["url"] == server.state.gateway_url
    assert body["url"].startswith("ws://127.0.0.1:")
    assert body["shards"] == 1
    assert set(body["session_start_limit"]) == {"total", "remaining", "reset_after", "max_concurrency"}


async def test_unknown_channel_is_10003(server: SandboxServer) -> None:
    async with aiohttp.ClientSession() as http:
        async with http.post(
            server.state.api_base + "/channels/123/messages", json={"content": "hi"}, headers=bot_headers(server)
        ) as response:
            assert response.status == 404
            assert (await response.json())["code"] == 10003


async def test_channel_message_rules(server: SandboxServer) -> None:
    channel = server.state.world.default_guild.channels[0].id
    url = f"{server.state.api_base}/channels/{channel}/messages"
    async with aiohttp.ClientSession(headers=bot_headers(server)) as http:
        async with http.post(url, json={"content": "c" * 2001}) as response:
            body = await response.json()
            assert (response.status, body["code"]) == (400, 50035)
            assert body["errors"]["content"]["_errors"][0]["code"] == "BASE_TYPE_MAX_LENGTH"

        form = aiohttp.FormData(quote_fields=False)
        payload = {
            "embeds": [{"image": {"url": "attachment://chart.png"}}],
            "attachments": [{"id": 0, "filename": "chart.png"}],
        }
        form.add_field("payload_json", json.dumps(payload), content_type="application/json")
        form.add_field("files[0]", b"\x89PNG fake", filename="chart.png", content_type="image/png")
        async with http.post(url, data=form) as response:
            assert response.status == 200
            message = await response.json()
        assert message["attachments"][0]["filename"] == "chart.png"

        missing = {"embeds": [{"image": {"url": "attachment://nope.png"}}]}
        async with http.post(url, json=missing) as response:
            assert response.status == 400

        big = aiohttp.FormData(quote_fields=False)
        big.add_field("payload_json", json.dumps({"content": "x"}), content_type="application/json")
        big.add_field("files[0]", b"0" * 2048, filename="big.bin")
        async with http.post(url, data=big) as response:
            assert (response.status, (await response.json())["code"]) == (413, 40005)

    recorded = server.state.log.matching("POST", "/channels/*/messages")[1]
    assert recorded.json_body == payload
    assert recorded.files[0].filename == "chart.png" and recorded.files[0].data == b"\x89PNG fake"
    got = await server.state.wait_for_message(channel, timeout=1)
    assert got.files[0].data == b"\x89PNG fake"


async def test_injected_rate_limit_has_via_and_retry_after(server: SandboxServer) -> None:
    server.state.faults.inject("/users/@me", status=429, times=1, retry_after=0.25)
    async with aiohttp.ClientSession(headers=bot_headers(server)) as http:
        async with http.get(server.state.api_base + "/users/@me") as response:
            assert response.status == 429
            assert response.headers["Via"]
            assert response.headers["Content-Type"] == "application/json"
            assert (await response.json())["retry_after"] == 0.25
        async with http.get(server.state.api_base + "/users/@me") as response:
            assert response.status == 200
    assert [r.fault for r in server.state.log.requests] == [True, False]


async def test_command_sync_is_validated_and_echoed(server: SandboxServer) -> None:
    app = server.state.world.application_id
    url = f"{server.state.api_base}/applications/{app}/commands"
    async with aiohttp.ClientSession(headers=bot_headers(server)) as http:
        async with http.put(url, json=[{"name": "Bad Name", "description": "x"}]) as response:
            assert response.status == 400
        async with http.put(url, json=[{"name": "ping", "description": "Ping", "type": 1}]) as response:
            echoed = await response.json()
    assert echoed[0]["application_id"] == str(app)
    assert {"id", "version"} <= set(echoed[0])
    assert server.state.commands.global_commands[0]["name"] == "ping"
