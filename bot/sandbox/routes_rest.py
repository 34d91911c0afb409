"""Bot-authenticated REST routes: identity, gateway discovery, command sync, channels, guilds."""

from __future__ import annotations

from typing import Any

from aiohttp import web

from bot.sandbox.http_util import (
    PARSED,
    STATE,
    Refusal,
    discord_error,
    invalid_form_body,
    json_response,
    no_content,
)
from bot.sandbox.limits import (
    CHANNEL_MESSAGE_FLAGS,
    check_command_list,
)
from bot.sandbox.messages import apply_edit, new_message, validate_new_message
from bot.sandbox.state import SandboxState, StoredMessage
from bot.sandbox.world import BOT_PERMISSIONS, SandboxGuild

routes = web.RouteTableDef()
P = "/api/v10"


def _state(request: web.Request) -> SandboxState:
    return request.app[STATE]


@routes.get(P + "/users/@me")
async def users_me(request: web.Request) -> web.Response:
    return json_response({**_state(request).world.bot_user.to_json(), "bot": True, "verified": True, "flags": 0})


@routes.get(P + "/oauth2/applications/@me")
@routes.get(P + "/applications/@me")
async def application_me(request: web.Request) -> web.Response:
    world = _state(request).world
    return json_response(
        {
            "id": str(world.application_id),
            "name": world.bot_user.username,
            "icon": None,
            "description": "Loopback sandbox application",
            "rpc_origins": [],
            "bot_public": True,
            "bot_require_code_grant": False,
            "verify_key": "0" * 64,
            "owner": world.owner.to_json(),
            "flags": 0,
            "team": None,
            "summary": "",
            "interactions_endpoint_url": None,
            "approximate_guild_count": len(world.guilds),
        }
    )


@routes.get(P + "/gateway")
async def gateway_info(request: web.Request) -> web.Response:
    return json_response({"url": _state(request).gateway_url})


@routes.get(P + "/gateway/bot")
async def gateway_bot(request: web.Request) -> web.Response:
    state = _state(request)
    return json_response(
        {
            "url": state.gateway_url,
            "shards": state.world.recommended_shards,
            "session_start_limit": {"total": 1000, "remaining": 999, "reset_after": 14_400_000, "max_concurrency": 1},
        }
    )


def _command_scope(request: web.Request) -> int | None:
    state = _state(request)
    if request.match_info["app_id"] != str(state.world.application_id):
        raise Refusal(discord_error(403, 50001, "Missing Access"))
    guild = request.match_info.get("guild_id")
    if guild is None:
        return None
    if state.world.guild(int(guild)) is None:
        raise Refusal(discord_error(403, 50001, "Missing Access"))
    return int(guild)


@routes.get(P + "/applications/{app_id}/commands")
@routes.get(P + "/applications/{app_id}/guilds/{guild_id}/commands")
async def get_commands(request: web.Request) -> web.Response:
    scope = _command_scope(request)
    return json_response(_state(request).commands.listing(scope))


@routes.put(P + "/applications/{app_id}/commands")
@routes.put(P + "/applications/{app_id}/guilds/{guild_id}/commands")
async def put_commands(request: web.Request) -> web.Response:
    scope = _command_scope(request)
    body = request[PARSED].json_body
    if not isinstance(body, list):
        return invalid_form_body(
            {"_errors": [{"code": "LIST_TYPE_CONVERT", "message": "Only iterables may be used in a ListType"}]}
        )
    errors = check_command_list(body, is_global=scope is None)
    if errors:
        return invalid_form_body(errors)
    return json_response(_state(request).commands.put(scope, body))


@routes.get(P + "/applications/{app_id}/entitlements")
async def entitlements(request: web.Request) -> web.Response:
    return json_response([])


@routes.get(P + "/applications/{app_id}/emojis")
async def application_emojis(request: web.Request) -> web.Response:
    return json_response({"items": []})


def _channel_json(state: SandboxState, channel_id: int) -> dict[str, Any] | None:
    found = state.world.channel(channel_id)
    if found is None:
        return None
    guild, channel = found
    return channel.to_json(guild.id)


@routes.get(P + "/channels/{channel_id}")
async def get_channel(request: web.Request) -> web.Response:
    data = _channel_json(_state(request), int(request.match_info["channel_id"]))
    if data is None:
        return discord_error(404, 10003, "Unknown Channel")
    return json_response(data)


@routes.post(P + "/channels/{channel_id}/typing")
async def typing(request: web.Request) -> web.Response:
    if _channel_json(_state(request), int(request.match_info["channel_id"])) is None:
        return discord_error(404, 10003, "Unknown Channel")
    return no_content()


@routes.post(P + "/channels/{channel_id}/messages")
async def create_channel_message(request: web.Request) -> web.Response:
    state = _state(request)
    channel_id = int(request.match_info["channel_id"])
    found = state.world.channel(channel_id)
    if found is None:
        return discord_error(404, 10003, "Unknown Channel")
    payload = request[PARSED].json_body or {}
    # A channel message cannot be ephemeral: only interaction responses and follow-ups can.
    problem = validate_new_message(state, payload, request, size_limit=state.world.attachment_size_limit,
                                   allowed_flags=CHANNEL_MESSAGE_FLAGS)
    if problem is not None:
        return problem
    author = {**state.world.bot_user.to_json(), "bot": True}
    message = new_message(
        state,
        request,
        channel_id=channel_id,
        guild_id=found[0].id,
        payload=payload,
        author=author,
        flags=int(payload.get("flags") or 0),
    )
    return json_response(message.to_json())


@routes.get(P + "/channels/{channel_id}/messages")
async def list_channel_messages(request: web.Request) -> web.Response:
    state = _state(request)
    channel_id = int(request.match_info["channel_id"])
    if state.world.channel(channel_id) is None:
        return discord_error(404, 10003, "Unknown Channel")
    limit = int(request.query.get("limit", "50"))
    messages = [m for m in reversed(state.channel_messages_json(channel_id))]
    return json_response(messages[:limit])


def _channel_message(state: SandboxState, request: web.Request) -> StoredMessage:
    channel_id = int(request.match_info["channel_id"])
    if state.world.channel(channel_id) is None:
        raise Refusal(discord_error(404, 10003, "Unknown Channel"))
    message = state.messages.get(int(request.match_info["message_id"]))
    if message is None or message.deleted or message.channel_id != channel_id:
        raise Refusal(discord_error(404, 10008, "Unknown Message"))
    return message


@routes.get(P + "/channels/{channel_id}/messages/{message_id}")
async def get_channel_message(request: web.Request) -> web.Response:
    return json_response(_channel_message(_state(request), request).to_json())


@routes.delete(P + "/channels/{channel_id}/messages/{message_id}")
async def delete_channel_message(request: web.Request) -> web.Response:
    _channel_message(_state(request), request).deleted = True
    return no_content()


@routes.patch(P + "/channels/{channel_id}/messages/{message_id}")
async def edit_channel_message(request: web.Request) -> web.Response:
    state = _state(request)
    message = _channel_message(state, request)
    problem = apply_edit(state, request, message, size_limit=state.world.attachment_size_limit)
    return problem or json_response(message.to_json())


def _path_guild(state: SandboxState, request: web.Request) -> SandboxGuild:
    guild = state.world.guild(int(request.match_info["guild_id"]))
    if guild is None:
        raise Refusal(discord_error(404, 10004, "Unknown Guild"))
    return guild


@routes.get(P + "/guilds/{guild_id}")
async def get_guild(request: web.Request) -> web.Response:
    state = _state(request)
    data = state.world.guild_create_json(_path_guild(state, request))
    for key in ("members", "channels", "threads", "presences", "voice_states", "joined_at", "large", "member_count"):
        data.pop(key, None)
    return json_response(data)


@routes.get(P + "/guilds/{guild_id}/channels")
async def get_guild_channels(request: web.Request) -> web.Response:
    guild = _path_guild(_state(request), request)
    return json_response([c.to_json(guild.id, permissions=BOT_PERMISSIONS) for c in guild.channels])


@routes.get("/attachments/{attachment_id}/{filename}")
async def get_attachment(request: web.Request) -> web.Response:
    recorded = _state(request).attachments.get(int(request.match_info["attachment_id"]))
    if recorded is None:
        raise web.HTTPNotFound()
    return web.Response(body=recorded.data, content_type=recorded.content_type or "application/octet-stream")
