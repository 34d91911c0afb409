"""Messages the bot creates and edits, checked as Discord checks them: channel posts, interaction answers,
follow-ups and webhook messages all go through here."""

from __future__ import annotations

from typing import Any

from aiohttp import web

from bot.sandbox.http_util import PARSED, RECORDED, discord_error, invalid_form_body
from bot.sandbox.limits import (
    INTERACTION_MESSAGE_FLAGS,
    check_file_count,
    check_flags,
    check_message,
    is_empty_message,
)
from bot.sandbox.snowflake import new_snowflake
from bot.sandbox.state import FLAG_EPHEMERAL, FLAG_LOADING, SandboxState, StoredMessage, iso_now


def too_large() -> web.Response:
    return discord_error(413, 40005, "Request entity too large")


def nested(errors: dict[str, Any], prefix: list[str] | None) -> dict[str, Any]:
    """Form errors under the keys of the payload they were found in (`data.embeds…` for a callback)."""
    for key in reversed(prefix or []):
        errors = {key: errors}
    return errors


def validate_new_message(
    state: SandboxState,
    payload: dict[str, Any],
    request: web.Request,
    *,
    size_limit: int,
    prefix: list[str] | None = None,
    allowed_flags: int = INTERACTION_MESSAGE_FLAGS,
) -> web.Response | None:
    files = request[PARSED].files
    if any(recorded.size > size_limit for recorded in files):
        return too_large()
    errors = check_message(payload, {f.filename for f in files} | _described_filenames(payload))
    errors.update(check_file_count(len(files)))
    errors.update(check_flags(payload, allowed_flags))
    if errors:
        return invalid_form_body(nested(errors, prefix))
    if is_empty_message(payload, len(files)):
        return discord_error(400, 50006, "Cannot send an empty message")
    return None


def _described_filenames(payload: dict[str, Any]) -> set[str]:
    # `attachments: [{"id": 0, "filename": "x.png"}]` renames the uploaded files[0].
    return {a["filename"] for a in payload.get("attachments") or [] if isinstance(a, dict) and "filename" in a}


def new_message(
    state: SandboxState,
    request: web.Request,
    *,
    channel_id: int,
    guild_id: int | None,
    payload: dict[str, Any],
    author: dict[str, Any],
    flags: int = 0,
    message_id: int | None = None,
    **extra: Any,
) -> StoredMessage:
    pairs = state.build_attachments(payload, request[PARSED].files)
    message = StoredMessage(
        id=message_id or new_snowflake(),
        channel_id=channel_id,
        guild_id=guild_id,
        author=author,
        content=payload.get("content") or "",
        embeds=list(payload.get("embeds") or []),
        components=list(payload.get("components") or []),
        attachments=[a for a, _ in pairs],
        files=[f for _, f in pairs],
        flags=flags,
        timestamp=iso_now(),
        request_seq=request[RECORDED].seq,
        **extra,
    )
    state.store_message(message)
    return message


def apply_edit(
    state: SandboxState,
    request: web.Request,
    message: StoredMessage,
    *,
    size_limit: int,
    payload: dict[str, Any] | None = None,
    prefix: list[str] | None = None,
) -> web.Response | None:
    """Edits in place the fields the payload names; `attachments`, when given, lists what to keep."""
    payload = (request[PARSED].json_body or {}) if payload is None else payload
    files = request[PARSED].files
    if any(recorded.size > size_limit for recorded in files):
        return too_large()
    pairs = list(zip(message.attachments, message.files, strict=True))
    if "attachments" in payload:
        keep = {str(a.get("id")) for a in payload.get("attachments") or [] if isinstance(a, dict)}
        pairs = [(a, f) for a, f in pairs if a["id"] in keep]
    uploaded = {f.filename for f in files} | _described_filenames(payload)
    errors = check_message(payload, uploaded, retained_filenames={a["filename"] for a, _ in pairs})
    if errors:
        return invalid_form_body(nested(errors, prefix))
    if "content" in payload:
        message.content = payload["content"] or ""
    if "embeds" in payload:
        message.embeds = list(payload["embeds"] or [])
    if "components" in payload:
        message.components = list(payload["components"] or [])
    pairs += state.build_attachments(payload, files)
    message.attachments = [a for a, _ in pairs]
    message.files = [f for _, f in pairs]
    if payload.get("flags") is not None:
        message.flags = (message.flags & FLAG_EPHEMERAL) | (int(payload["flags"]) & ~FLAG_EPHEMERAL)
    message.flags &= ~FLAG_LOADING
    message.edited_timestamp = iso_now()
    message.request_seq = request[RECORDED].seq
    state.changed.notify()
    return None
