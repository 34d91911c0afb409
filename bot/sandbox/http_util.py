"""Answers in the exact shapes discord.py parses, and the middleware that records every request."""

from __future__ import annotations

import json
import logging
import re
import time
from collections.abc import Awaitable, Callable
from dataclasses import dataclass, field
from typing import Any

from aiohttp import BodyPartReader, web

from bot.sandbox.models import DiscordError, RecordedFile, RecordedRequest
from bot.sandbox.openapi import shared_validator
from bot.sandbox.state import Exchange, SandboxState, Violation

log = logging.getLogger(__name__)

API_PREFIX = "/api/v10"


@dataclass
class ParsedBody:
    json_body: Any = None
    files: list[RecordedFile] = field(default_factory=list)


STATE = web.AppKey("sandbox_state", SandboxState)
PARSED = web.RequestKey("sandbox_parsed", ParsedBody)
RECORDED = web.RequestKey("sandbox_recorded", RecordedRequest)
RESPONSE_JSON = web.ResponseKey("sandbox_response_json", object)


def json_response(data: Any, status: int = 200, headers: dict[str, str] | None = None) -> web.Response:
    """JSON with `Content-Type` exactly `application/json`; discord.py ignores bodies with a charset."""
    response = web.Response(
        body=json.dumps(data).encode(), status=status, headers={"Content-Type": "application/json", **(headers or {})}
    )
    response[RESPONSE_JSON] = data
    return response


def no_content() -> web.Response:
    return web.Response(status=204)


def discord_error(status: int, code: int, message: str, errors: dict[str, Any] | None = None) -> web.Response:
    body: dict[str, Any] = {"code": code, "message": message}
    if errors:
        body["errors"] = errors
    return json_response(body, status)


class Refusal(Exception):
    """Raised by a route's lookup when Discord would refuse the request; the middleware sends `response`."""

    def __init__(self, response: web.Response) -> None:
        super().__init__(response.status)
        self.response = response


def invalid_form_body(errors: dict[str, Any]) -> web.Response:
    return discord_error(400, 50035, "Invalid Form Body", errors)


def rate_limited(retry_after: float, *, is_global: bool) -> web.Response:
    # Without `Via` discord.py takes a 429 for a Cloudflare ban and gives up.
    headers = {
        "Via": "1.1 google",
        "Retry-After": str(max(1, round(retry_after))),
        "X-RateLimit-Limit": "5",
        "X-RateLimit-Remaining": "0",
        "X-RateLimit-Reset-After": f"{retry_after:.3f}",
        "X-RateLimit-Scope": "global" if is_global else "user",
    }
    if is_global:
        headers["X-RateLimit-Global"] = "true"
    body = {"message": "You are being rate limited.", "retry_after": retry_after, "global": is_global}
    return json_response(body, 429, headers)


async def parse_body(request: web.Request) -> ParsedBody:
    if request.method in ("GET", "HEAD") or not request.body_exists:
        return ParsedBody()
    if request.content_type == "multipart/form-data":
        parsed = ParsedBody()
        reader = await request.multipart()
        while True:
            part = await reader.next()
            if part is None:
                break
            if not isinstance(part, BodyPartReader):
                continue
            name = part.name or ""
            raw = bytes(await part.read(decode=False))
            filename = part.filename
            if name == "payload_json":
                parsed.json_body = json.loads(raw.decode())
            elif filename is not None or name.startswith("files["):
                content_type = part.headers.get("Content-Type")
                parsed.files.append(
                    RecordedFile(field=name, filename=filename or name, content_type=content_type, data=raw)
                )
        return parsed
    raw_text = await request.text()
    if not raw_text:
        return ParsedBody()
    try:
        return ParsedBody(json_body=json.loads(raw_text))
    except json.JSONDecodeError:
        return ParsedBody(json_body=raw_text)


Handler = Callable[[web.Request], Awaitable[web.StreamResponse]]


def _needs_bot_auth(route: str) -> bool:
    # Interaction callbacks and webhook executions authenticate by their token in the path.
    return not (route.startswith("/interactions/") or route.startswith("/webhooks/"))


_CALLBACK = re.compile(r"^/interactions/(\d+)/([^/]+)/callback$")
_WEBHOOK = re.compile(r"^/webhooks/(\d+)/([^/]+)(/messages/([^/]+))?$")


def _refused_for_interaction(state: SandboxState, method: str, route: str, recorded: RecordedRequest,
                             response: web.Response) -> None:
    """A refusal on an interaction's route is that interaction's answer, so whoever waits for it sees the error."""
    record = None
    kind = "callback"
    if match := _CALLBACK.match(route):
        record = state.interactions.get(int(match.group(1)))
    elif (match := _WEBHOOK.match(route)) and match.group(1) == str(state.world.application_id):
        record = state.by_token.get(match.group(2))
        kind = "followup" if method == "POST" else "edit_original" if match.group(4) == "@original" else "edit_message"
    if record is None:
        return
    body = response.get(RESPONSE_JSON) or {}
    error = DiscordError(status=response.status, code=int(body.get("code", 0)), message=str(body.get("message", "")),
                         errors=body.get("errors"))
    state.add_exchange(record, Exchange(kind=kind, request=recorded, at=time.monotonic(), error=error))


@web.middleware
async def record_middleware(request: web.Request, handler: Handler) -> web.StreamResponse:
    if not request.path.startswith(API_PREFIX):
        return await handler(request)
    state = request.app[STATE]
    parsed = await parse_body(request)
    recorded = RecordedRequest(
        seq=state.log.next_seq(),
        method=request.method,
        path=request.path,
        query=dict(request.query),
        json_body=parsed.json_body,
        files=parsed.files,
        received_at=time.monotonic(),
    )
    state.log.add(recorded)
    request[PARSED] = parsed
    request[RECORDED] = recorded
    route = recorded.route
    response: web.StreamResponse
    fault = state.faults.take(request.method, route)
    if fault is not None:
        recorded.fault = True
        if fault.status == 429:
            response = rate_limited(fault.retry_after, is_global=fault.is_global)
        else:
            response = discord_error(fault.status, 0, "Internal Server Error")
    elif _needs_bot_auth(route) and request.headers.get("Authorization") != f"Bot {state.world.token}":
        response = discord_error(401, 0, "401: Unauthorized")
    elif state.check_spec and (spec_errors := shared_validator().errors(request.method, route,
                                                                         parsed.json_body)):
        response = invalid_form_body(spec_errors)
        _refused_for_interaction(state, request.method, route, recorded, response)
    else:
        try:
            response = await handler(request)
        except Refusal as refusal:
            response = refusal.response
        except web.HTTPNotFound:
            response = discord_error(404, 0, "404: Not Found")
        except web.HTTPMethodNotAllowed:
            response = discord_error(405, 0, "405: Method Not Allowed")
        except Exception:
            log.exception("sandbox failed on %s %s", request.method, route)
            response = discord_error(500, 0, "The sandbox failed on this request; see its log.")
    recorded.status = response.status
    recorded.response = response.get(RESPONSE_JSON) if isinstance(response, web.Response) else None
    if response.status == 400 and isinstance(recorded.response, dict) and recorded.response.get("code") in (
            50035, 50006):
        # What Discord would have refused; a test of the bot fails on any of these (Sandbox.__aexit__).
        state.violations.append(Violation(request=recorded, user_agent=request.headers.get("User-Agent", "")))
    state.log.finished(recorded)
    return response
