"""The sandbox refuses what Discord refuses and accepts what Discord accepts.

Each bad payload goes straight to the sandbox's HTTP surface (no bot) and must come back as Discord
answers it: 400, JSON code 50035 "Invalid Form Body", with the error at the offending field. The rules
come from Discord's OpenAPI spec (vendored in bot/sandbox/spec) and from its documentation where the spec
is silent (bot/sandbox/limits.py).
"""

from __future__ import annotations

import json
import secrets
import time
from collections.abc import AsyncIterator
from typing import Any

import aiohttp
import pytest
import pytest_asyncio

from bot.sandbox import SandboxServer, World
from bot.sandbox.openapi import SPEC_COMMIT, SPEC_PATH, SpecValidator
from bot.sandbox.snowflake import new_snowflake
from bot.sandbox.state import InteractionRecord

FLAG_EPHEMERAL = 1 << 6
FLAG_COMPONENTS_V2 = 1 << 15


@pytest_asyncio.fixture
async def server() -> AsyncIterator[SandboxServer]:
    async with SandboxServer(World()) as running:
        yield running


def open_interaction(server: SandboxServer) -> InteractionRecord:
    world = server.state.world
    record = InteractionRecord(
        id=new_snowflake(), token="sandbox." + secrets.token_urlsafe(16), type=2, guild_id=world.default_guild.id,
        channel_id=world.default_guild.channels[0].id, user=world.tester, payload={},
        dispatched_at=time.monotonic(), attachment_size_limit=world.attachment_size_limit, command_text="/probe")
    server.state.register_interaction(record)
    return record


def error_at(body: dict[str, Any], *path: str) -> str:
    node: Any = body["errors"]
    for key in path:
        assert key in node, f"no error at {'.'.join(path)}: {json.dumps(body)[:600]}"
        node = node[key]
    return str(node["_errors"][0]["code"])


async def send(server: SandboxServer, method: str, route: str, payload: Any, *,
               files: int = 0) -> tuple[int, dict[str, Any]]:
    headers = {"Authorization": f"Bot {server.state.world.token}"}
    kwargs: dict[str, Any] = {"json": payload}
    if files:
        form = aiohttp.FormData(quote_fields=False)
        form.add_field("payload_json", json.dumps(payload), content_type="application/json")
        for i in range(files):
            form.add_field(f"files[{i}]", b"x", filename=f"f{i}.txt", content_type="text/plain")
        kwargs = {"data": form}
    async with aiohttp.ClientSession(headers=headers) as http:
        async with http.request(method, server.state.api_base + route, **kwargs) as response:
            body = await response.json() if response.status != 204 else {}
            return response.status, body


def embed(**fields: Any) -> dict[str, Any]:
    return {"type": 4, "data": {"embeds": [{"title": "t", **fields}]}}


def row(*buttons: dict[str, Any]) -> dict[str, Any]:
    return {"type": 1, "components": list(buttons)}


def button(custom_id: str | None = "a", **extra: Any) -> dict[str, Any]:
    out: dict[str, Any] = {"type": 2, "style": 1, "label": "go", **extra}
    if custom_id is not None:
        out["custom_id"] = custom_id
    return out


CALLBACK_CASES = [
    ("colour out of range", embed(color=0x1000000), ("data", "embeds", "0", "color"), "NUMBER_TYPE_MAX"),
    ("negative colour", embed(color=-1), ("data", "embeds", "0", "color"), "NUMBER_TYPE_MIN"),
    ("title not a string", embed(title=5), ("data", "embeds", "0", "title"), "STRING_TYPE_CONVERT"),
    ("embed url not a url", embed(url="javascript:alert(1)"), ("data", "embeds", "0", "url"), "URL_TYPE_INVALID_URL"),
    ("image url not a url", embed(image={"url": "not a url"}), ("data", "embeds", "0", "image", "url"),
     "URL_TYPE_INVALID_URL"),
    ("timestamp not ISO 8601", embed(timestamp="yesterday"), ("data", "embeds", "0", "timestamp"), "DATE_TYPE_PARSE"),
    ("timestamp in non-ASCII digits", embed(timestamp="٢٠٢٥-01-01T00:00:00Z"), ("data", "embeds", "0", "timestamp"),
     "DATE_TYPE_PARSE"),
    ("allowed_mentions unknown type", {"type": 4, "data": {"content": "x", "allowed_mentions": {"parse": ["all"]}}},
     ("data", "allowed_mentions", "parse", "0"), "BASE_TYPE_CHOICES"),
    ("allowed_mentions parse not a list", {"type": 4, "data": {"content": "x", "allowed_mentions": {"parse": "users"}}},
     ("data", "allowed_mentions", "parse"), "LIST_TYPE_CONVERT"),
    ("link button with custom_id",
     {"type": 4, "data": {"content": "x", "components": [row(button("a", style=5, url="https://example.com"))]}},
     ("data", "components", "0", "components", "0", "custom_id"), "BUTTON_COMPONENT_CUSTOM_ID_NOT_ALLOWED"),
    ("button without custom_id", {"type": 4, "data": {"content": "x", "components": [row(button(None))]}},
     ("data", "components", "0", "components", "0", "custom_id"), "BUTTON_COMPONENT_CUSTOM_ID_REQUIRED"),
    ("duplicate custom_ids", {"type": 4, "data": {"content": "x", "components": [row(button("a"), button("a"))]}},
     ("data", "components", "0", "components", "1", "custom_id"), "COMPONENT_CUSTOM_ID_DUPLICATED"),
    ("empty action row", {"type": 4, "data": {"content": "x", "components": [row()]}},
     ("data", "components", "0", "components"), "BASE_TYPE_MIN_LENGTH"),
    ("six action rows", {"type": 4, "data": {"content": "x", "components": [row(button(f"b{i}")) for i in range(6)]}},
     ("data", "components"), "BASE_TYPE_MAX_LENGTH"),
    ("content not a string", {"type": 4, "data": {"content": ["x"]}}, ("data", "content"), "STRING_TYPE_CONVERT"),
    ("unknown callback type", {"type": 99}, ("type",), "BASE_TYPE_CHOICES"),
]


@pytest.mark.parametrize(("name", "payload", "path", "code"), CALLBACK_CASES, ids=[c[0] for c in CALLBACK_CASES])
async def test_bad_interaction_responses_are_refused_like_discord(
        server: SandboxServer, name: str, payload: dict[str, Any], path: tuple[str, ...], code: str) -> None:
    record = open_interaction(server)
    status, body = await send(server, "POST", f"/interactions/{record.id}/{record.token}/callback", payload)
    assert (status, body.get("code")) == (400, 50035), body
    assert error_at(body, *path) == code
    assert not record.acknowledged, "a refused response does not acknowledge the interaction"
    assert record.exchanges and record.exchanges[-1].error is not None, "whoever waits for the answer sees the error"


async def test_eleven_files_are_refused_and_ten_accepted(server: SandboxServer) -> None:
    channel = server.state.world.default_guild.channels[0].id
    status, body = await send(server, "POST", f"/channels/{channel}/messages", {"content": "x"}, files=11)
    assert (status, body.get("code")) == (400, 50035) and error_at(body, "files") == "BASE_TYPE_MAX_LENGTH"
    status, _ = await send(server, "POST", f"/channels/{channel}/messages", {"content": "x"}, files=10)
    assert status == 200


async def test_a_channel_message_cannot_be_ephemeral(server: SandboxServer) -> None:
    channel = server.state.world.default_guild.channels[0].id
    status, body = await send(server, "POST", f"/channels/{channel}/messages",
                              {"content": "x", "flags": FLAG_EPHEMERAL})
    assert (status, body.get("code")) == (400, 50035) and error_at(body, "flags") == "MESSAGE_FLAGS_INVALID"
    record = open_interaction(server)
    assert (await send(server, "POST", f"/interactions/{record.id}/{record.token}/callback",
                       {"type": 4, "data": {"content": "x", "flags": FLAG_EPHEMERAL}}))[0] == 200


async def test_webhook_names_may_not_contain_discord(server: SandboxServer) -> None:
    channel = server.state.world.default_guild.channels[0].id
    webhook_id, token = server.state.create_webhook(channel)
    status, body = await send(server, "POST", f"/webhooks/{webhook_id}/{token}?wait=1",
                              {"content": "x", "username": "Official DISCORD news"})
    assert (status, body.get("code")) == (400, 50035) and error_at(body, "username") == "WEBHOOK_INVALID_USERNAME"
    status, _ = await send(server, "POST", f"/webhooks/{webhook_id}/{token}?wait=1",
                           {"content": "x", "username": "LLM"})
    assert status == 200


async def test_components_v2_messages_may_have_more_than_five_top_level_components(server: SandboxServer) -> None:
    record = open_interaction(server)
    texts = [{"type": 10, "content": f"line {i}"} for i in range(8)]
    status, body = await send(server, "POST", f"/interactions/{record.id}/{record.token}/callback",
                              {"type": 4, "data": {"flags": FLAG_COMPONENTS_V2, "components": texts}})
    assert status == 200, body


def command(**fields: Any) -> dict[str, Any]:
    return {"name": "fit", "description": "Does it fit?", "type": 1, **fields}


def string_option(name: str = "gpu", **fields: Any) -> dict[str, Any]:
    return {"name": name, "description": "GPU", "type": 3, **fields}


def big_command(localised: bool) -> dict[str, Any]:
    # 25 options × (10 + 10 + 2 × (20 + 20)) = 2,500 characters; with a 100-character localised description
    # each option counts its longest description, 100, and the command passes 4,000.
    options = []
    for i in range(25):
        option = string_option(f"opt{i:02d}xxxxx", description="d" * 10,
                               choices=[{"name": f"{c}" * 20, "value": f"{c}" * 20} for c in "ab"])
        if localised:
            option["description_localizations"] = {"zh-CN": "描" * 100}
        options.append(option)
    return command(options=options)


COMMAND_CASES = [
    ("unknown locale", [command(description_localizations={"xx-YY": "Passt es?"})],
     ("0", "description_localizations", "xx-YY"), "LOCALE_INVALID"),
    ("invalid localised name", [command(name_localizations={"de": "Passt Es"})],
     ("0", "name_localizations", "de"), "APPLICATION_COMMAND_INVALID_NAME"),
    ("choice value over 100 characters",
     [command(options=[string_option(choices=[{"name": "a", "value": "v" * 101}])])],
     ("0", "options", "0", "choices", "0", "value"), "BASE_TYPE_MAX_LENGTH"),
    ("min_length 7000", [command(options=[string_option(min_length=7000)])],
     ("0", "options", "0", "min_length"), "NUMBER_TYPE_MAX"),
    ("duplicate option names", [command(options=[string_option("gpu"), string_option("gpu")])],
     ("0", "options", "1", "name"), "APPLICATION_COMMAND_OPTION_NAME_ALREADY_EXISTS"),
    ("size rule counts the longest localisation", [big_command(localised=True)], ("0",),
     "APPLICATION_COMMAND_TOO_LARGE"),
    ("name not a string", [command(name=7)], ("0", "name"), "STRING_TYPE_CONVERT"),
]


@pytest.mark.parametrize(("name", "payload", "path", "code"), COMMAND_CASES, ids=[c[0] for c in COMMAND_CASES])
async def test_bad_command_registrations_are_refused_like_discord(
        server: SandboxServer, name: str, payload: list[dict[str, Any]], path: tuple[str, ...], code: str) -> None:
    app = server.state.world.application_id
    status, body = await send(server, "PUT", f"/applications/{app}/commands", payload)
    assert (status, body.get("code")) == (400, 50035), body
    assert error_at(body, *path) == code


async def test_101_guild_commands_are_refused(server: SandboxServer) -> None:
    world = server.state.world
    route = f"/applications/{world.application_id}/guilds/{world.default_guild.id}/commands"
    status, body = await send(server, "PUT", route, [command(name=f"c{i}") for i in range(101)])
    assert (status, body.get("code")) == (400, 50035) and error_at(body, "_root") == "BASE_TYPE_MAX_LENGTH"
    assert (await send(server, "PUT", route, [command(name=f"c{i}") for i in range(100)]))[0] == 200


@pytest.mark.parametrize("name", ["don't", "नमस्ते", "สวัสดี", "模型", "größe"])
async def test_command_names_discord_accepts_are_accepted(server: SandboxServer, name: str) -> None:
    app = server.state.world.application_id
    status, body = await send(server, "PUT", f"/applications/{app}/commands",
                              [command(name=name, name_localizations={"hi": "नमस्ते", "th": "สวัสดี"})])
    assert status == 200, body


async def test_the_size_rule_passes_the_same_command_without_localisations(server: SandboxServer) -> None:
    app = server.state.world.application_id
    assert (await send(server, "PUT", f"/applications/{app}/commands", [big_command(localised=False)]))[0] == 200


def test_the_vendored_spec_names_its_source() -> None:
    readme = (SPEC_PATH.parent / "README.md").read_text()
    assert SPEC_COMMIT in readme and "MIT" in (SPEC_PATH.parent / "LICENSE").read_text()
    spec = SpecValidator()
    assert spec.operation("POST", "/api/v10/interactions/1/t/callback") is not None
    assert spec.operation("PATCH", "/api/v10/webhooks/1/t/messages/@original").operation_id == \
        "update_original_webhook_message"
    assert {"en-US", "zh-CN", "hi", "th"} <= spec.locales


async def test_a_refused_request_from_the_bot_fails_the_test_that_caused_it() -> None:
    from bot.sandbox import Sandbox

    sandbox = Sandbox(playground=False)
    with pytest.raises(AssertionError, match="Discord would refuse"):
        async with sandbox:
            channel = sandbox.world.default_guild.channels[0].id
            headers = {"Authorization": f"Bot {sandbox.world.token}", "User-Agent": "DiscordBot (discord.py 2.7)"}
            async with aiohttp.ClientSession(headers=headers) as http:
                url = f"{sandbox.api_base}/channels/{channel}/messages"
                async with http.post(url, json={"embeds": [{"color": -5}]}) as response:
                    assert response.status == 400
