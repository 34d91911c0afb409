"""The playground page: type slash commands in a browser and see the bot's replies as Discord shows them.

Everything goes through the same Driver the tests use, so the page exercises the real bot process.
"""

from __future__ import annotations

import json
import re
from collections.abc import Awaitable, Callable
from pathlib import Path
from typing import Annotated, Any, TypeVar

from aiohttp import web
from pydantic import BaseModel, Field, ValidationError, field_validator

from bot.sandbox import slash
from bot.sandbox.driver import Driver, ReplyTimeout
from bot.sandbox.http_util import STATE, json_response
from bot.sandbox.models import Reply
from bot.sandbox.state import SandboxState
from bot.sandbox.world import DEFAULT_MEMBER_PERMISSIONS

STATIC_DIR = Path(__file__).with_name("static")
DRIVER = web.AppKey("sandbox_playground_driver", Driver)
# Whether the page starts with "act as a server manager" ticked (`rigcheck run --admin`).
ADMIN = web.AppKey("sandbox_playground_admin", bool)
MANAGE_GUILD = 1 << 5
LOCALES = ["en-US", "en-GB", "zh-CN", "zh-TW", "de", "fr", "es-ES", "ja", "ko", "pt-BR", "ru"]
SUGGESTIONS_MAX = 25
_ATTACHMENT_URL = re.compile(r"/attachments/(\d+)/")
_MARKER = re.compile(r"(?:^|(?<=\s))([^\s:]+):")
# The page's requests are a few hundred bytes; the app itself accepts 64 MB because bots upload files.
MAX_BODY_BYTES = 64 * 1024
# Discord caps a message at 4000 characters (with Nitro), so no slash command line is longer.
MAX_COMMAND_CHARS = 4000
MAX_CUSTOM_ID_CHARS = 100
_PLAYGROUND_PATHS = ("/playground/", "/static/")

Handler = Callable[[web.Request], Awaitable[web.StreamResponse]]


class Refused(Exception):
    """A playground request turned away; the middleware answers it as a short JSON error."""

    def __init__(self, status: int, message: str) -> None:
        super().__init__(message)
        self.status = status
        self.message = message


def _default_locale(value: object) -> object:
    # The page may send an empty locale before its menu is filled; the old handlers took that as en-US.
    return value if value not in (None, "") else "en-US"


Snowflake = Annotated[int, Field(ge=0, lt=1 << 64)]


class _Seat(BaseModel):
    locale: str = "en-US"
    admin: bool = False

    @field_validator("locale", mode="before")
    @classmethod
    def _locale_default(cls, value: object) -> object:
        return _default_locale(value)

    @field_validator("locale")
    @classmethod
    def _known_locale(cls, value: str) -> str:
        if value not in LOCALES:
            raise ValueError(f"unknown locale; one of {', '.join(LOCALES)}")
        return value


class _InGuild(_Seat):
    guild: Snowflake | None = None

    @field_validator("guild", mode="before")
    @classmethod
    def _guild_default(cls, value: object) -> object:
        return None if value in ("", 0) else value


class InvokeBody(_InGuild):
    command: str = Field(default="", max_length=MAX_COMMAND_CHARS)


class AutocompleteBody(_InGuild):
    text: str = Field(default="", max_length=MAX_COMMAND_CHARS)


class ClickBody(_Seat):
    interaction_id: Snowflake
    message_id: Snowflake
    custom_id: str = Field(min_length=1, max_length=MAX_CUSTOM_ID_CHARS)


_Body = TypeVar("_Body", bound=BaseModel)


def _allowed_hosts(request: web.Request) -> set[str]:
    """Host values naming the socket this request arrived on; anything else is DNS rebinding."""
    sockname = request.transport.get_extra_info("sockname") if request.transport else None
    if not sockname:
        return set()
    address, port = str(sockname[0]).lower(), int(sockname[1])
    bound = f"[{address}]" if ":" in address else address
    return {f"{host}:{port}" for host in ("127.0.0.1", "localhost", "[::1]", bound)}


def check_request(request: web.Request) -> None:
    """Any page a developer visits can make their browser POST here (a "simple" text/plain request needs no
    CORS preflight) or point its own name at 127.0.0.1; only the playground's own page may drive the bot."""
    hosts = _allowed_hosts(request)
    if request.headers.get("Host", "").lower() not in hosts:
        raise Refused(403, "the playground answers only on its loopback address")
    if request.method in ("GET", "HEAD"):
        return
    origin = request.headers.get("Origin")
    if origin is not None and origin.lower() not in {f"http://{host}" for host in hosts}:
        raise Refused(403, "cross-origin requests are not allowed")
    if request.content_type != "application/json":
        raise Refused(415, "expected Content-Type: application/json")


@web.middleware
async def playground_middleware(request: web.Request, handler: Handler) -> web.StreamResponse:
    if request.path != "/" and not request.path.startswith(_PLAYGROUND_PATHS):
        return await handler(request)
    try:
        check_request(request)
        return await handler(request)
    except Refused as refused:
        return json_response({"error": refused.message}, refused.status)


def setup(app: web.Application) -> None:
    app[DRIVER] = Driver(app[STATE], default_timeout=30.0)
    app[ADMIN] = False
    app.middlewares.append(playground_middleware)
    app.router.add_get("/", index)
    app.router.add_static("/static/", STATIC_DIR, follow_symlinks=False)
    app.router.add_get("/playground/meta", meta)
    app.router.add_post("/playground/invoke", invoke)
    app.router.add_post("/playground/autocomplete", autocomplete)
    app.router.add_post("/playground/click", click)
    app.router.add_get("/playground/files/{attachment_id}", file)


async def index(request: web.Request) -> web.FileResponse:
    return web.FileResponse(STATIC_DIR / "index.html")


def reply_json(reply: Reply) -> dict[str, Any]:
    data = reply.model_dump(mode="json")
    for entry in data["files"]:
        match = _ATTACHMENT_URL.search(entry.get("url") or "")
        entry["url"] = f"/playground/files/{match.group(1)}" if match else None
    # Snowflakes exceed JavaScript's safe integers; the page only ever echoes them back.
    for key in ("interaction_id", "message_id"):
        data[key] = str(data[key]) if data[key] is not None else None
    return data


async def _body(request: web.Request, model: type[_Body]) -> _Body:
    if (request.content_length or 0) > MAX_BODY_BYTES:
        raise Refused(413, f"the body is over {MAX_BODY_BYTES} bytes")
    raw = bytearray()
    # A chunked body has no Content-Length, so the cap is enforced while reading too.
    async for chunk in request.content.iter_any():
        raw += chunk
        if len(raw) > MAX_BODY_BYTES:
            raise Refused(413, f"the body is over {MAX_BODY_BYTES} bytes")
    try:
        data = json.loads(raw)
    except (ValueError, RecursionError):  # RecursionError: deeply nested arrays
        raise Refused(400, "expected a JSON object") from None
    if not isinstance(data, dict):
        raise Refused(400, "expected a JSON object")
    try:
        return model.model_validate(data)
    except ValidationError as invalid:
        first = invalid.errors()[0]
        where = ".".join(str(part) for part in first["loc"]) or "body"
        raise Refused(400, f"{where}: {first['msg']}") from None


def member_permissions(admin: bool) -> int:
    """The tester's permissions: a member's defaults, plus Manage Server when acting as a manager, so
    `/daily preview` and `/settings server` can be tried without Discord."""
    return DEFAULT_MEMBER_PERMISSIONS | MANAGE_GUILD if admin else DEFAULT_MEMBER_PERMISSIONS


def _guild(state: SandboxState, body: _InGuild) -> int:
    if body.guild is None:
        return state.world.default_guild.id
    if state.world.guild(body.guild) is None:
        raise Refused(400, f"unknown guild {body.guild}")
    return body.guild


async def meta(request: web.Request) -> web.Response:
    state = request.app[STATE]
    return json_response(
        {
            "bot": state.world.bot_user.to_json(),
            "user": state.world.tester.to_json(),
            "locales": LOCALES,
            "guilds": [{"id": str(g.id), "name": g.name, "locale": g.preferred_locale} for g in state.world.guilds],
            "connected": state.hub.all_ready(),
            "admin": request.app[ADMIN],
        }
    )


async def invoke(request: web.Request) -> web.Response:
    body = await _body(request, InvokeBody)
    driver = request.app[DRIVER]
    guild = _guild(driver.state, body)
    try:
        reply = await driver.invoke(
            body.command, locale=body.locale, guild=guild, member_permissions=member_permissions(body.admin)
        )
    except ReplyTimeout as timeout:
        return json_response({"timed_out": True, "reason": str(timeout)})
    return json_response(reply_json(reply))


async def click(request: web.Request) -> web.Response:
    body = await _body(request, ClickBody)
    driver = request.app[DRIVER]
    origin = Reply(interaction_id=body.interaction_id, message_id=body.message_id)
    try:
        reply = await driver.click(origin, body.custom_id, locale=body.locale,
                                   member_permissions=member_permissions(body.admin))
    except ReplyTimeout as timeout:
        return json_response({"timed_out": True, "reason": str(timeout)})
    return json_response(reply_json(reply))


async def file(request: web.Request) -> web.Response:
    raw = request.match_info["attachment_id"]
    # isdigit alone would pass "²", which int() refuses; a snowflake has at most 20 digits.
    if not (raw.isascii() and raw.isdigit() and len(raw) <= 20):
        raise Refused(400, "an attachment id is a number")
    recorded = request.app[STATE].attachments.get(int(raw))
    if recorded is None:
        raise Refused(404, "no such attachment")
    return web.Response(body=recorded.data, content_type=_content_type(recorded.filename, recorded.content_type))


def _content_type(filename: str, declared: str | None) -> str:
    if declared and declared != "application/octet-stream":
        return declared
    suffix = Path(filename).suffix.lower()
    return {".png": "image/png", ".jpg": "image/jpeg", ".jpeg": "image/jpeg", ".gif": "image/gif"}.get(
        suffix, "application/octet-stream"
    )


def _suggestion(label: str, insert: str, detail: str = "") -> dict[str, str]:
    return {"label": label, "insert": insert, "detail": detail}


async def autocomplete(request: web.Request) -> web.Response:
    """Suggestions for the text typed so far; option values with autocomplete come from the bot."""
    body = await _body(request, AutocompleteBody)
    driver = request.app[DRIVER]
    guild = _guild(driver.state, body)
    commands = driver.commands_in(guild)
    return json_response(await _suggest(driver, body.text, commands, body.locale, guild))


async def _suggest(
    driver: Driver, text: str, commands: list[dict[str, Any]], locale: str, guild: int | None
) -> dict[str, Any]:
    chat = [c for c in commands if c.get("type", 1) == 1]
    if not text.startswith("/"):
        return {"replace_from": 0, "suggestions": []}
    if " " not in text:
        prefix = text[1:]
        hits = [c for c in chat if any(n.startswith(prefix) for n in slash.names_of(c, locale))]
        return {
            "replace_from": 0,
            "suggestions": [
                _suggestion(f"/{_local_name(c, locale)}", f"/{_local_name(c, locale)} ", _local_description(c, locale))
                for c in hits[:SUGGESTIONS_MAX]
            ],
        }
    head, _, rest = text[1:].partition(" ")
    try:
        node = slash.find_command(chat, head, locale)
    except slash.ClientRejection as rejection:
        return {"replace_from": len(text), "suggestions": [], "reason": rejection.reason}
    path = f"/{head}"
    offset = len(head) + 2
    while any(o.get("type") in (slash.SUB_COMMAND, slash.SUB_COMMAND_GROUP) for o in node.get("options") or []):
        children = [o for o in node["options"] if o.get("type") in (slash.SUB_COMMAND, slash.SUB_COMMAND_GROUP)]
        token, space, remainder = rest.partition(" ")
        picked = next((c for c in children if token in slash.names_of(c, locale)), None)
        if picked is None or not space:
            hits = [c for c in children if any(n.startswith(token) for n in slash.names_of(c, locale))]
            return {
                "replace_from": offset,
                "suggestions": [
                    _suggestion(_local_name(c, locale), _local_name(c, locale) + " ", _local_description(c, locale))
                    for c in hits
                ],
            }
        node, rest, offset = picked, remainder, offset + len(token) + 1
        path += f" {token}"
    options = [o for o in node.get("options") or [] if o.get("type") not in (1, 2)]
    markers = [
        (match, option)
        for match in _MARKER.finditer(rest)
        for option in options
        if match.group(1) in slash.names_of(option, locale)
    ]
    used = {option["name"] for _, option in markers}
    tail_word = "" if not rest or rest[-1].isspace() else rest.split()[-1]
    word_start = offset + len(rest) - len(tail_word)
    name_hits = [
        o for o in options if o["name"] not in used and any(n.startswith(tail_word) for n in slash.names_of(o, locale))
    ]
    name_suggestions = {
        "replace_from": word_start,
        "suggestions": [
            _suggestion(
                _local_name(o, locale) + ":",
                _local_name(o, locale) + ":",
                ("required · " if o.get("required") else "") + _local_description(o, locale),
            )
            for o in name_hits
        ],
    }
    if not markers or not tail_word:
        return name_suggestions
    match, option = markers[-1]
    value = rest[match.end() :]
    if " " in value.strip() and name_hits:
        # After a space inside a value, a word that starts an unused option's name is the next option.
        return name_suggestions
    return await _value_suggestions(
        driver, path, option, value, rest[: match.start()], offset + match.end(), locale, guild
    )


async def _value_suggestions(
    driver: Driver,
    path: str,
    option: dict[str, Any],
    value: str,
    before: str,
    value_start: int,
    locale: str,
    guild: int | None,
) -> dict[str, Any]:
    if option.get("choices"):
        hits = [c for c in option["choices"] if value.lower() in _local_name(c, locale).lower()]
        return {
            "replace_from": value_start,
            "suggestions": [_suggestion(_local_name(c, locale), _local_name(c, locale) + " ") for c in hits],
        }
    if option.get("type") == slash.BOOLEAN:
        return {
            "replace_from": value_start,
            "suggestions": [_suggestion(v, v + " ") for v in ("True", "False") if v.lower().startswith(value.lower())],
        }
    if not option.get("autocomplete"):
        return {"replace_from": value_start, "suggestions": []}
    others: dict[str, str] = {}
    try:
        others = slash.split_options(before.strip(), _siblings(driver, path, locale, guild), locale)
    except slash.ClientRejection:
        others = {}
    others.pop(option["name"], None)
    reply = await driver.autocomplete_reply(path, option["name"], value, options=others, locale=locale, guild=guild)
    if reply.choices is None:
        reason = reply.reason or (f"{reply.error.code}: {reply.error.message}" if reply.error else "no answer")
        return {"replace_from": value_start, "suggestions": [], "reason": reason}
    return {
        "replace_from": value_start,
        "suggestions": [_suggestion(str(c.get("name")), str(c.get("value")) + " ") for c in reply.choices],
        "from_bot": True,
    }


def _siblings(driver: Driver, path: str, locale: str, guild: int | None) -> list[dict[str, Any]]:
    words = path.lstrip("/").split(" ")
    node: dict[str, Any] = slash.find_command(driver.commands_in(guild), words[0], locale)
    for word in words[1:]:
        node = next(o for o in node.get("options") or [] if word in slash.names_of(o, locale))
    return [o for o in node.get("options") or [] if o.get("type") not in (1, 2)]


def _local_name(node: dict[str, Any], locale: str) -> str:
    return str((node.get("name_localizations") or {}).get(locale) or node["name"])


def _local_description(node: dict[str, Any], locale: str) -> str:
    return str((node.get("description_localizations") or {}).get(locale) or node.get("description") or "")
