"""Reads `/name opt:value …` the way Discord's client fills in a command, against the synced schema.

A value runs until the next ` known_option:` so `gpu:rtx 4090 model:qwen3-8b` needs no quotes.
Whatever Discord's client would refuse to send raises `ClientRejection`.
"""

from __future__ import annotations

import difflib
import math
import re
from collections.abc import Callable
from dataclasses import dataclass, field
from typing import Any

SUB_COMMAND = 1
SUB_COMMAND_GROUP = 2
STRING = 3
INTEGER = 4
BOOLEAN = 5
USER = 6
CHANNEL = 7
ROLE = 8
MENTIONABLE = 9
NUMBER = 10
ATTACHMENT = 11

MAX_SAFE_INTEGER = 2**53
_MARKER = re.compile(r"(?:^|(?<=\s))([^\s:]+):")
_MENTION = re.compile(r"^<(@!?|@&|#)(\d+)>$")


class ClientRejection(Exception):
    """Discord's client would not have sent this."""

    def __init__(self, reason: str) -> None:
        super().__init__(reason)
        self.reason = reason


@dataclass
class Resolver:
    """Turns mention-like values into resolved objects; supplied by the driver, which knows the world."""

    user: Callable[[int], dict[str, Any] | None]
    member: Callable[[int], dict[str, Any] | None]
    channel: Callable[[str], dict[str, Any] | None]
    role: Callable[[str], dict[str, Any] | None]


@dataclass
class Invocation:
    command: dict[str, Any]
    path: list[str]
    leaf: dict[str, Any]
    options: list[dict[str, Any]]
    values: dict[str, Any] = field(default_factory=dict)
    resolved: dict[str, dict[str, Any]] = field(default_factory=dict)

    def data(self, guild_id: int | None) -> dict[str, Any]:
        payload: dict[str, Any] = {
            "id": self.command["id"],
            "name": self.command["name"],
            "type": self.command.get("type", 1),
            "options": self.options,
        }
        if self.command.get("guild_id"):
            payload["guild_id"] = self.command["guild_id"]
        if self.resolved:
            payload["resolved"] = self.resolved
        return payload


def names_of(node: dict[str, Any], locale: str) -> set[str]:
    names = {node["name"]}
    localized = (node.get("name_localizations") or {}).get(locale)
    if localized:
        names.add(localized)
    return names


def _pick(nodes: list[dict[str, Any]], token: str, locale: str) -> dict[str, Any] | None:
    return next((n for n in nodes if token in names_of(n, locale)), None)


def find_command(commands: list[dict[str, Any]], name: str, locale: str) -> dict[str, Any]:
    chat = [c for c in commands if c.get("type", 1) == 1]
    found = _pick(chat, name, locale)
    if found is None:
        hint = difflib.get_close_matches(name, [c["name"] for c in chat], n=1)
        suffix = f" (did you mean /{hint[0]}?)" if hint else ""
        raise ClientRejection(f"unknown command /{name}{suffix}")
    return found


def parse(
    text: str,
    commands: list[dict[str, Any]],
    *,
    locale: str = "en-US",
    resolver: Resolver | None = None,
    focused: str | None = None,
    member_permissions: int | None = None,
    in_guild: bool = True,
) -> Invocation:
    """`focused` names the option being typed (autocomplete): its raw text is sent, unchecked."""
    text = text.strip()
    if not text.startswith("/"):
        raise ClientRejection("a slash command starts with '/'")
    head, _, rest = text[1:].partition(" ")
    command = find_command(commands, head, locale)
    _check_visibility(command, member_permissions, in_guild)
    path = [command["name"]]
    node = command
    rest = rest.strip()
    while any(o.get("type") in (SUB_COMMAND, SUB_COMMAND_GROUP) for o in node.get("options") or []):
        token, _, remainder = rest.partition(" ")
        children = [o for o in node.get("options") or [] if o.get("type") in (SUB_COMMAND, SUB_COMMAND_GROUP)]
        child = _pick(children, token, locale)
        if child is None:
            choices = ", ".join(c["name"] for c in children)
            raise ClientRejection(f"/{' '.join(path)} needs a subcommand: one of {choices}")
        path.append(child["name"])
        node = child
        rest = remainder.strip()
    leaf_options = [o for o in node.get("options") or [] if o.get("type") not in (SUB_COMMAND, SUB_COMMAND_GROUP)]
    raw = split_options(rest, leaf_options, locale)
    invocation = Invocation(command=command, path=path, leaf=node, options=[])
    leaf_payload: list[dict[str, Any]] = []
    for option in leaf_options:
        name = option["name"]
        if name not in raw:
            if option.get("required") and focused is None:
                raise ClientRejection(f"missing required option '{name}'")
            continue
        if name == focused:
            value: Any = raw[name]
            leaf_payload.append({"name": name, "type": option["type"], "value": value, "focused": True})
            invocation.values[name] = value
            continue
        value = convert(option, raw[name], locale, resolver, invocation.resolved)
        invocation.values[name] = value
        leaf_payload.append({"name": name, "type": option["type"], "value": value})
    if focused is not None and focused not in invocation.values:
        option = _pick(leaf_options, focused, locale)
        if option is None:
            raise ClientRejection(f"/{' '.join(path)} has no option '{focused}'")
        if not option.get("autocomplete"):
            raise ClientRejection(f"option '{option['name']}' has no autocomplete")
        leaf_payload.append({"name": option["name"], "type": option["type"], "value": "", "focused": True})
    invocation.options = _wrap(path[1:], node, command, leaf_payload)
    return invocation


def _check_visibility(command: dict[str, Any], member_permissions: int | None, in_guild: bool) -> None:
    if not in_guild:
        contexts = command.get("contexts")
        if (contexts is not None and 1 not in contexts) or command.get("dm_permission") is False:
            raise ClientRejection(f"/{command['name']} is not available in direct messages")
    required = command.get("default_member_permissions")
    if in_guild and required is not None and member_permissions is not None:
        needed = int(required)
        administrator = 0x8
        if member_permissions & administrator == 0 and member_permissions & needed != needed:
            raise ClientRejection(f"/{command['name']} is hidden from members without its permissions")


def _wrap(
    sub_path: list[str], leaf: dict[str, Any], command: dict[str, Any], options: list[dict[str, Any]]
) -> list[dict[str, Any]]:
    if not sub_path:
        return options
    wrapped = options
    node_chain: list[dict[str, Any]] = []
    node = command
    for name in sub_path:
        node = next(o for o in node["options"] if o["name"] == name)
        node_chain.append(node)
    for node in reversed(node_chain):
        wrapped = [{"name": node["name"], "type": node["type"], "options": wrapped}]
    return wrapped


def split_options(rest: str, options: list[dict[str, Any]], locale: str) -> dict[str, str]:
    """Maps canonical option names to the raw text typed for them."""
    by_name: dict[str, str] = {}
    for option in options:
        for name in names_of(option, locale):
            by_name[name] = option["name"]
    markers: list[tuple[int, int, str]] = []
    for match in _MARKER.finditer(rest):
        token = match.group(1)
        if token in by_name:
            markers.append((match.start(), match.end(), by_name[token]))
            continue
        hint = difflib.get_close_matches(token, list(by_name), n=1, cutoff=0.75)
        if match.start() == 0 or hint:
            suffix = f" (did you mean '{hint[0]}'?)" if hint else ""
            raise ClientRejection(f"unknown option '{token}'{suffix}")
    if not markers and rest:
        raise ClientRejection(f"unexpected text {rest!r}: options are written name:value")
    if markers and markers[0][0] != 0:
        raise ClientRejection(f"unexpected text {rest[: markers[0][0]].strip()!r} before the first option")
    values: dict[str, str] = {}
    for index, (_, value_start, name) in enumerate(markers):
        end = markers[index + 1][0] if index + 1 < len(markers) else len(rest)
        if name in values:
            raise ClientRejection(f"option '{name}' given twice")
        values[name] = rest[value_start:end].strip()
    return values


def _choice_value(option: dict[str, Any], text: str, locale: str) -> Any:
    for choice in option["choices"]:
        labels = {choice["name"], str(choice["value"])}
        localized = (choice.get("name_localizations") or {}).get(locale)
        if localized:
            labels.add(localized)
        if text in labels or text.lower() in {label.lower() for label in labels}:
            return choice["value"]
    allowed = ", ".join(str(c["name"]) for c in option["choices"])
    raise ClientRejection(f"'{text}' is not a choice for '{option['name']}' (choices: {allowed})")


def _check_range(option: dict[str, Any], value: float) -> None:
    low, high = option.get("min_value"), option.get("max_value")
    if low is not None and value < low:
        raise ClientRejection(f"'{option['name']}' must be at least {low}")
    if high is not None and value > high:
        raise ClientRejection(f"'{option['name']}' must be at most {high}")


def convert(
    option: dict[str, Any], text: str, locale: str, resolver: Resolver | None, resolved: dict[str, dict[str, Any]]
) -> Any:
    name, kind = option["name"], option["type"]
    if text == "":
        raise ClientRejection(f"option '{name}' needs a value")
    if option.get("choices"):
        return _choice_value(option, text, locale)
    if kind == STRING:
        low, high = option.get("min_length"), option.get("max_length", 6000)
        if low is not None and len(text) < low:
            raise ClientRejection(f"'{name}' must be at least {low} characters")
        if high is not None and len(text) > high:
            raise ClientRejection(f"'{name}' must be at most {high} characters")
        return text
    if kind == INTEGER:
        if not re.fullmatch(r"[+-]?\d+", text):
            raise ClientRejection(f"'{name}' must be a whole number, not {text!r}")
        number = int(text)
        if abs(number) > MAX_SAFE_INTEGER:
            raise ClientRejection(f"'{name}' is out of range")
        _check_range(option, number)
        return number
    if kind == NUMBER:
        try:
            value = float(text)
        except ValueError:
            raise ClientRejection(f"'{name}' must be a number, not {text!r}") from None
        if not math.isfinite(value):
            raise ClientRejection(f"'{name}' must be a finite number")
        _check_range(option, value)
        return value
    if kind == BOOLEAN:
        lowered = text.lower()
        if lowered not in ("true", "false"):
            raise ClientRejection(f"'{name}' must be True or False, not {text!r}")
        return lowered == "true"
    if kind == ATTACHMENT:
        raise ClientRejection(f"'{name}' takes a file upload, which text cannot express")
    if resolver is None:
        raise ClientRejection(f"'{name}' needs a resolver for mentions")
    return _convert_mention(option, text, resolver, resolved)


def _convert_mention(option: dict[str, Any], text: str, resolver: Resolver, resolved: dict[str, dict[str, Any]]) -> str:
    name, kind = option["name"], option["type"]
    mention = _MENTION.match(text)
    sigil, raw_id = (mention.group(1), mention.group(2)) if mention else ("", text.lstrip("#@"))
    if kind in (USER, MENTIONABLE) and sigil in ("", "@", "@!") and raw_id.isdigit():
        user = resolver.user(int(raw_id))
        if user is not None:
            resolved.setdefault("users", {})[raw_id] = user
            member = resolver.member(int(raw_id))
            if member is not None:
                resolved.setdefault("members", {})[raw_id] = member
            return raw_id
    if kind in (ROLE, MENTIONABLE) and sigil in ("", "@&"):
        role = resolver.role(raw_id)
        if role is not None:
            resolved.setdefault("roles", {})[role["id"]] = role
            return str(role["id"])
    if kind == CHANNEL and sigil in ("", "#"):
        channel = resolver.channel(raw_id)
        if channel is not None:
            allowed = option.get("channel_types")
            if allowed and channel["type"] not in allowed:
                raise ClientRejection(f"'{name}' does not accept that kind of channel")
            resolved.setdefault("channels", {})[channel["id"]] = channel
            return str(channel["id"])
    raise ClientRejection(f"'{name}': nothing called {text!r} can be picked here")
