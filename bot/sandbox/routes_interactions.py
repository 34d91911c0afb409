"""Interaction callbacks, follow-ups, `@original` edits and webhook executions."""

from __future__ import annotations

import time
from typing import Any

from aiohttp import web

from bot.sandbox.http_util import (
    PARSED,
    RECORDED,
    RESPONSE_JSON,
    STATE,
    Refusal,
    discord_error,
    invalid_form_body,
    json_response,
    no_content,
)
from bot.sandbox.limits import WEBHOOK_MESSAGE_FLAGS, check_autocomplete, check_message, check_webhook_name
from bot.sandbox.messages import apply_edit, new_message, validate_new_message
from bot.sandbox.models import DiscordError
from bot.sandbox.state import (
    CALLBACK_AUTOCOMPLETE,
    CALLBACK_DEFERRED_MESSAGE,
    CALLBACK_DEFERRED_UPDATE,
    CALLBACK_MESSAGE,
    CALLBACK_MODAL,
    CALLBACK_UPDATE_MESSAGE,
    FLAG_EPHEMERAL,
    FLAG_LOADING,
    INTERACTION_TOKEN_LIFETIME_S,
    Exchange,
    InteractionRecord,
    SandboxState,
    StoredMessage,
)

routes = web.RouteTableDef()
P = "/api/v10"

INTERACTION_APPLICATION_COMMAND = 2
INTERACTION_COMPONENT = 3
INTERACTION_AUTOCOMPLETE = 4
MESSAGE_TYPE_CHAT_INPUT_COMMAND = 20


def _state(request: web.Request) -> SandboxState:
    return request.app[STATE]


def _error_of(response: web.Response) -> DiscordError:
    body = response.get(RESPONSE_JSON) or {}
    return DiscordError(
        status=response.status,
        code=int(body.get("code", 0)),
        message=str(body.get("message", "")),
        errors=body.get("errors"),
    )


def _fail(
    state: SandboxState, record: InteractionRecord, request: web.Request, kind: str, response: web.Response
) -> web.Response:
    state.add_exchange(
        record, Exchange(kind=kind, request=request[RECORDED], at=time.monotonic(), error=_error_of(response))
    )
    return response


def _bot_author(state: SandboxState) -> dict[str, Any]:
    return {**state.world.bot_user.to_json(), "bot": True}


def _interaction_metadata(state: SandboxState, record: InteractionRecord) -> dict[str, Any]:
    owners = {"0": str(record.guild_id)} if record.guild_id else {"1": str(record.user.id)}
    return {
        "id": str(record.id),
        "type": record.type,
        "user": record.user.to_json(),
        "authorizing_integration_owners": owners,
    }


def _answer_message(state: SandboxState, request: web.Request, record: InteractionRecord, payload: dict[str, Any],
                    flags: int) -> StoredMessage:
    """A message the bot posts in answer to an interaction (its response or a follow-up), as Discord shows it:
    sent by the application's webhook, carrying the interaction it answers."""
    return new_message(
        state,
        request,
        channel_id=record.channel_id,
        guild_id=record.guild_id,
        payload=payload,
        author=_bot_author(state),
        flags=flags,
        webhook_id=state.world.application_id,
        application_id=state.world.application_id,
        interaction_metadata=_interaction_metadata(state, record),
        type=MESSAGE_TYPE_CHAT_INPUT_COMMAND,
    )


@routes.post(P + "/interactions/{interaction_id}/{token}/callback")
async def interaction_callback(request: web.Request) -> web.Response:
    state = _state(request)
    record = state.interactions.get(int(request.match_info["interaction_id"]))
    if record is None or record.token != request.match_info["token"]:
        return discord_error(404, 10062, "Unknown interaction")
    if record.acknowledged:
        return _fail(
            state, record, request, "callback", discord_error(400, 40060, "Interaction has already been acknowledged.")
        )
    if time.monotonic() - record.dispatched_at > state.response_deadline_s:
        return _fail(state, record, request, "callback", discord_error(404, 10062, "Unknown interaction"))
    body = request[PARSED].json_body or {}
    response_type = int(body.get("type", 0))
    data: dict[str, Any] = body.get("data") or {}
    problem = _check_callback(state, record, request, response_type, data)
    if problem is not None:
        return _fail(state, record, request, "callback", problem)

    record.response_type = response_type
    record.acknowledged_at = time.monotonic()
    record.ack_flags = int(data.get("flags") or 0)
    message: StoredMessage | None = None
    if response_type in (CALLBACK_MESSAGE, CALLBACK_DEFERRED_MESSAGE):
        flags = record.ack_flags | (FLAG_LOADING if response_type == CALLBACK_DEFERRED_MESSAGE else 0)
        message = _answer_message(state, request, record, data if response_type == CALLBACK_MESSAGE else {}, flags)
        record.original_message_id = message.id
    elif response_type == CALLBACK_UPDATE_MESSAGE:
        message = state.messages[record.original_message_id or 0]
        apply_edit(state, request, message, size_limit=record.attachment_size_limit, payload=data)
    exchange = Exchange(
        kind="callback",
        request=request[RECORDED],
        at=time.monotonic(),
        response_type=response_type,
        message=message.to_json() if message is not None else None,
        files=list(message.files) if message is not None and response_type != CALLBACK_DEFERRED_MESSAGE else [],
    )
    if response_type == CALLBACK_UPDATE_MESSAGE and message is not None:
        exchange.files = list(message.files)
    state.add_exchange(record, exchange)

    interaction: dict[str, Any] = {
        "id": str(record.id),
        "type": record.type,
        "response_message_loading": response_type == CALLBACK_DEFERRED_MESSAGE,
        "response_message_ephemeral": bool(record.ack_flags & FLAG_EPHEMERAL),
    }
    resource: dict[str, Any] = {"type": response_type}
    if message is not None:
        interaction["response_message_id"] = str(message.id)
        resource["message"] = message.to_json()
    return json_response({"interaction": interaction, "resource": resource})


def _check_callback(
    state: SandboxState, record: InteractionRecord, request: web.Request, response_type: int, data: dict[str, Any]
) -> web.Response | None:
    def wrong_type() -> web.Response:
        return invalid_form_body(
            {
                "type": {
                    "_errors": [
                        {"code": "INTERACTION_RESPONSE_TYPE_INVALID", "message": "Invalid interaction response type"}
                    ]
                }
            }
        )

    if record.type == INTERACTION_AUTOCOMPLETE:
        if response_type != CALLBACK_AUTOCOMPLETE:
            return wrong_type()
        errors = check_autocomplete(data)
        return invalid_form_body({"data": errors}) if errors else None
    if response_type == CALLBACK_MESSAGE:
        return validate_new_message(state, data, request, size_limit=record.attachment_size_limit, prefix=["data"])
    if response_type in (CALLBACK_DEFERRED_UPDATE, CALLBACK_UPDATE_MESSAGE):
        if record.type != INTERACTION_COMPONENT or record.original_message_id not in state.messages:
            return wrong_type()
        if response_type == CALLBACK_UPDATE_MESSAGE:
            for recorded in request[PARSED].files:
                if recorded.size > record.attachment_size_limit:
                    return discord_error(413, 40005, "Request entity too large")
            message = state.messages[record.original_message_id or 0]
            kept = {a["filename"] for a in message.attachments}
            if "attachments" in data:
                ids = {str(a.get("id")) for a in data.get("attachments") or [] if isinstance(a, dict)}
                kept = {a["filename"] for a in message.attachments if a["id"] in ids}
            errors = check_message(data, {f.filename for f in request[PARSED].files}, retained_filenames=kept)
            return invalid_form_body({"data": errors}) if errors else None
        return None
    if response_type == CALLBACK_DEFERRED_MESSAGE:
        return None
    if response_type == CALLBACK_MODAL:
        if not data.get("custom_id") or not data.get("title") or not data.get("components"):
            return invalid_form_body(
                {"data": {"_errors": [{"code": "BASE_TYPE_REQUIRED", "message": "This field is required"}]}}
            )
        return None
    return wrong_type()


def _interaction_for_webhook(state: SandboxState, request: web.Request) -> InteractionRecord | None:
    if request.match_info["webhook_id"] != str(state.world.application_id):
        return None
    return state.by_token.get(request.match_info["token"])


def _expired(record: InteractionRecord) -> bool:
    return time.monotonic() - record.dispatched_at > INTERACTION_TOKEN_LIFETIME_S


@routes.post(P + "/webhooks/{webhook_id}/{token}")
async def execute_webhook(request: web.Request) -> web.Response:
    state = _state(request)
    record = _interaction_for_webhook(state, request)
    if record is not None:
        return await _followup(state, record, request)
    webhook = state.webhooks.get(int(request.match_info["webhook_id"]))
    if webhook is None or webhook[0] != request.match_info["token"]:
        return discord_error(404, 10015, "Unknown Webhook")
    channel_id = webhook[1]
    found = state.world.channel(channel_id)
    payload = request[PARSED].json_body or {}
    problem = validate_new_message(state, payload, request, size_limit=state.world.attachment_size_limit,
                                   allowed_flags=WEBHOOK_MESSAGE_FLAGS)
    if problem is None and (name_errors := check_webhook_name(payload)):
        problem = invalid_form_body(name_errors)
    if problem is not None:
        return problem
    webhook_id = int(request.match_info["webhook_id"])
    author = {
        "id": str(webhook_id),
        "username": payload.get("username") or "Sandbox Webhook",
        "discriminator": "0000",
        "avatar": None,
        "bot": True,
    }
    message = new_message(
        state,
        request,
        channel_id=channel_id,
        guild_id=found[0].id if found else None,
        payload=payload,
        author=author,
        flags=int(payload.get("flags") or 0),
        webhook_id=webhook_id,
    )
    if request.query.get("wait") in ("1", "true", "True"):
        return json_response(message.to_json())
    return no_content()


async def _followup(state: SandboxState, record: InteractionRecord, request: web.Request) -> web.Response:
    if not record.acknowledged:
        return _fail(state, record, request, "followup", discord_error(404, 10015, "Unknown Webhook"))
    if _expired(record):
        return _fail(state, record, request, "followup", discord_error(401, 50027, "Invalid Webhook Token"))
    payload = request[PARSED].json_body or {}
    problem = validate_new_message(state, payload, request, size_limit=record.attachment_size_limit)
    if problem is not None:
        return _fail(state, record, request, "followup", problem)
    flags = int(payload.get("flags") or 0)
    original = state.messages.get(record.original_message_id or 0)
    if (record.response_type == CALLBACK_DEFERRED_MESSAGE and original is not None and not original.deleted
            and original.flags & FLAG_LOADING):
        # The first follow-up after a deferral replaces the "is thinking…" message; it keeps the
        # deferral's visibility.
        replacement = {"content": None, "embeds": [], "components": [], "attachments": [], **payload, "flags": flags}
        apply_edit(state, request, original, size_limit=record.attachment_size_limit, payload=replacement)
        message = original
    else:
        message = _answer_message(state, request, record, payload, flags)
    state.add_exchange(
        record,
        Exchange(
            kind="followup",
            request=request[RECORDED],
            at=time.monotonic(),
            message=message.to_json(),
            files=list(message.files),
        ),
    )
    return json_response(message.to_json())


def _webhook_message(
    state: SandboxState, request: web.Request
) -> tuple[InteractionRecord | None, StoredMessage]:
    record = _interaction_for_webhook(state, request)
    if record is None:
        webhook = state.webhooks.get(int(request.match_info["webhook_id"]))
        if webhook is None or webhook[0] != request.match_info["token"]:
            raise Refusal(discord_error(404, 10015, "Unknown Webhook"))
    elif _expired(record):
        raise Refusal(discord_error(401, 50027, "Invalid Webhook Token"))
    raw_id = request.match_info["message_id"]
    if raw_id == "@original":
        message_id = record.original_message_id if record is not None else None
    else:
        message_id = int(raw_id)
    message = state.messages.get(message_id or 0)
    if message is None or message.deleted:
        raise Refusal(discord_error(404, 10008, "Unknown Message"))
    return record, message


@routes.get(P + "/webhooks/{webhook_id}/{token}/messages/{message_id}")
async def get_webhook_message(request: web.Request) -> web.Response:
    _, message = _webhook_message(_state(request), request)
    return json_response(message.to_json())


@routes.patch(P + "/webhooks/{webhook_id}/{token}/messages/{message_id}")
async def edit_webhook_message(request: web.Request) -> web.Response:
    state = _state(request)
    kind = "edit_original" if request.match_info["message_id"] == "@original" else "edit_message"
    try:
        record, message = _webhook_message(state, request)
    except Refusal as refusal:
        record = _interaction_for_webhook(state, request)
        return _fail(state, record, request, kind, refusal.response) if record is not None else refusal.response
    limit = record.attachment_size_limit if record is not None else state.world.attachment_size_limit
    problem = apply_edit(state, request, message, size_limit=limit)
    if problem is not None:
        return _fail(state, record, request, kind, problem) if record is not None else problem
    if record is not None:
        state.add_exchange(
            record,
            Exchange(
                kind=kind,
                request=request[RECORDED],
                at=time.monotonic(),
                message=message.to_json(),
                files=list(message.files),
            ),
        )
    return json_response(message.to_json())


@routes.delete(P + "/webhooks/{webhook_id}/{token}/messages/{message_id}")
async def delete_webhook_message(request: web.Request) -> web.Response:
    state = _state(request)
    record, message = _webhook_message(state, request)
    message.deleted = True
    if record is not None:
        state.add_exchange(record, Exchange(kind="delete_message", request=request[RECORDED], at=time.monotonic()))
    return no_content()


@routes.get(P + "/webhooks/{webhook_id}/{token}")
async def get_webhook(request: web.Request) -> web.Response:
    state = _state(request)
    webhook = state.webhooks.get(int(request.match_info["webhook_id"]))
    if webhook is None or webhook[0] != request.match_info["token"]:
        return discord_error(404, 10015, "Unknown Webhook")
    found = state.world.channel(webhook[1])
    return json_response(
        {
            "id": request.match_info["webhook_id"],
            "type": 1,
            "token": webhook[0],
            "channel_id": str(webhook[1]),
            "guild_id": str(found[0].id) if found else None,
            "name": "Sandbox Webhook",
            "avatar": None,
            "application_id": None,
        }
    )
