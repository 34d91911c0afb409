"""Discord's payload rules, checked the way Discord answers: 400 code 50035 with nested `errors`.

Each check returns the nested error tree (empty when the payload is fine) so the caller can nest it
under `data` for interaction callbacks.
"""

from __future__ import annotations

import re
from collections.abc import Iterable
from typing import Any

CONTENT_MAX = 2000
EMBEDS_MAX = 10
EMBED_TITLE_MAX = 256
EMBED_DESCRIPTION_MAX = 4096
EMBED_FIELDS_MAX = 25
EMBED_FIELD_NAME_MAX = 256
EMBED_FIELD_VALUE_MAX = 1024
EMBED_FOOTER_MAX = 2048
EMBED_AUTHOR_MAX = 256
EMBED_TOTAL_MAX = 6000
AUTOCOMPLETE_CHOICES_MAX = 25
CHOICE_NAME_MAX = 100
CHOICE_STRING_VALUE_MAX = 100
ACTION_ROWS_MAX = 5
ROW_BUTTONS_MAX = 5
CUSTOM_ID_MAX = 100
BUTTON_LABEL_MAX = 80

COMMAND_NAME_RE = re.compile(r"^[-_\w]{1,32}$")
COMMAND_DESCRIPTION_MAX = 100
COMMAND_OPTIONS_MAX = 25
COMMAND_TOTAL_CHARS_MAX = 4000
GLOBAL_CHAT_COMMANDS_MAX = 100

ErrorTree = dict[str, Any]


def _leaf(code: str, message: str) -> ErrorTree:
    return {"_errors": [{"code": code, "message": message}]}


def _max_length(limit: int) -> ErrorTree:
    return _leaf("BASE_TYPE_MAX_LENGTH", f"Must be {limit} or fewer in length.")


def _required() -> ErrorTree:
    return _leaf("BASE_TYPE_REQUIRED", "This field is required")


def _put(tree: ErrorTree, path: Iterable[str | int], leaf: ErrorTree) -> None:
    node = tree
    keys = [str(p) for p in path]
    for key in keys[:-1]:
        node = node.setdefault(key, {})
    existing = node.setdefault(keys[-1], {})
    existing.setdefault("_errors", []).extend(leaf["_errors"])


def _text(value: Any) -> str:
    return value if isinstance(value, str) else ""


def embed_text_length(embed: dict[str, Any]) -> int:
    total = len(_text(embed.get("title"))) + len(_text(embed.get("description")))
    total += len(_text((embed.get("footer") or {}).get("text")))
    total += len(_text((embed.get("author") or {}).get("name")))
    for field in embed.get("fields") or []:
        total += len(_text(field.get("name"))) + len(_text(field.get("value")))
    return total


def check_embed(embed: dict[str, Any]) -> ErrorTree:
    errors: ErrorTree = {}
    for key, limit in (("title", EMBED_TITLE_MAX), ("description", EMBED_DESCRIPTION_MAX)):
        if len(_text(embed.get(key))) > limit:
            _put(errors, [key], _max_length(limit))
    if len(_text((embed.get("footer") or {}).get("text"))) > EMBED_FOOTER_MAX:
        _put(errors, ["footer", "text"], _max_length(EMBED_FOOTER_MAX))
    if len(_text((embed.get("author") or {}).get("name"))) > EMBED_AUTHOR_MAX:
        _put(errors, ["author", "name"], _max_length(EMBED_AUTHOR_MAX))
    fields = embed.get("fields") or []
    if len(fields) > EMBED_FIELDS_MAX:
        _put(errors, ["fields"], _max_length(EMBED_FIELDS_MAX))
    for index, field in enumerate(fields):
        for key, limit in (("name", EMBED_FIELD_NAME_MAX), ("value", EMBED_FIELD_VALUE_MAX)):
            text = _text(field.get(key))
            if not text:
                _put(errors, ["fields", index, key], _required())
            elif len(text) > limit:
                _put(errors, ["fields", index, key], _max_length(limit))
    return errors


def attachment_references(embed: dict[str, Any]) -> list[tuple[list[str], str]]:
    """(path inside the embed, filename) for every `attachment://` URL."""
    found: list[tuple[list[str], str]] = []
    for path in (["image", "url"], ["thumbnail", "url"], ["author", "icon_url"], ["footer", "icon_url"]):
        node: Any = embed
        for key in path:
            node = node.get(key) if isinstance(node, dict) else None
        if isinstance(node, str) and node.startswith("attachment://"):
            found.append((path, node.removeprefix("attachment://")))
    return found


def check_components(components: list[dict[str, Any]]) -> ErrorTree:
    errors: ErrorTree = {}
    if len(components) > ACTION_ROWS_MAX:
        _put(errors, ["components"], _max_length(ACTION_ROWS_MAX))
    for row_index, row in enumerate(components):
        children = row.get("components") or []
        if row.get("type") == 1 and len(children) > ROW_BUTTONS_MAX:
            _put(errors, ["components", row_index, "components"], _max_length(ROW_BUTTONS_MAX))
        for index, child in enumerate(children):
            custom_id = child.get("custom_id")
            if isinstance(custom_id, str) and len(custom_id) > CUSTOM_ID_MAX:
                _put(errors, ["components", row_index, "components", index, "custom_id"], _max_length(CUSTOM_ID_MAX))
            if len(_text(child.get("label"))) > BUTTON_LABEL_MAX:
                _put(errors, ["components", row_index, "components", index, "label"], _max_length(BUTTON_LABEL_MAX))
    return errors


def check_message(
    payload: dict[str, Any],
    uploaded_filenames: set[str],
    *,
    retained_filenames: set[str] | None = None,
) -> ErrorTree:
    """Rules for a message create or edit. `retained_filenames` are attachments kept from before an edit."""
    errors: ErrorTree = {}
    content = payload.get("content")
    if isinstance(content, str) and len(content) > CONTENT_MAX:
        _put(errors, ["content"], _max_length(CONTENT_MAX))
    embeds = payload.get("embeds") or []
    if len(embeds) > EMBEDS_MAX:
        _put(errors, ["embeds"], _max_length(EMBEDS_MAX))
    available = uploaded_filenames | (retained_filenames or set())
    total = 0
    for index, embed in enumerate(embeds):
        for key, value in check_embed(embed).items():
            errors.setdefault("embeds", {}).setdefault(str(index), {})[key] = value
        for path, filename in attachment_references(embed):
            if filename not in available:
                _put(
                    errors,
                    ["embeds", index, *path],
                    _leaf("ATTACHMENT_NOT_FOUND", f"attachment://{filename} was referenced but not uploaded."),
                )
        total += embed_text_length(embed)
    if total > EMBED_TOTAL_MAX:
        _put(
            errors,
            ["embeds"],
            _leaf("MAX_EMBED_SIZE_EXCEEDED", f"Embed size exceeds maximum size of {EMBED_TOTAL_MAX}"),
        )
    errors.update(check_components(payload.get("components") or []))
    return errors


def is_empty_message(payload: dict[str, Any], file_count: int) -> bool:
    return not (
        payload.get("content")
        or payload.get("embeds")
        or payload.get("components")
        or payload.get("sticker_ids")
        or payload.get("poll")
        or file_count
    )


def check_autocomplete(data: dict[str, Any]) -> ErrorTree:
    errors: ErrorTree = {}
    choices = data.get("choices")
    if not isinstance(choices, list):
        _put(errors, ["choices"], _required())
        return errors
    if len(choices) > AUTOCOMPLETE_CHOICES_MAX:
        _put(errors, ["choices"], _max_length(AUTOCOMPLETE_CHOICES_MAX))
    for index, choice in enumerate(choices):
        name = _text(choice.get("name"))
        if not 1 <= len(name) <= CHOICE_NAME_MAX:
            _put(
                errors,
                ["choices", index, "name"],
                _leaf("BASE_TYPE_BAD_LENGTH", f"Must be between 1 and {CHOICE_NAME_MAX} in length."),
            )
        value = choice.get("value")
        if isinstance(value, str) and len(value) > CHOICE_STRING_VALUE_MAX:
            _put(errors, ["choices", index, "value"], _max_length(CHOICE_STRING_VALUE_MAX))
    return errors


def _check_option(option: dict[str, Any], path: list[str | int], errors: ErrorTree) -> int:
    """Checks one option (recursively for subcommands); returns the characters it counts towards 4000."""
    name = _text(option.get("name"))
    description = _text(option.get("description"))
    if not COMMAND_NAME_RE.match(name) or name != name.lower():
        _put(errors, [*path, "name"], _leaf("APPLICATION_COMMAND_INVALID_NAME", "Command name is invalid"))
    if not 1 <= len(description) <= COMMAND_DESCRIPTION_MAX:
        _put(
            errors,
            [*path, "description"],
            _leaf("BASE_TYPE_BAD_LENGTH", f"Must be between 1 and {COMMAND_DESCRIPTION_MAX} in length."),
        )
    for locale, text in (option.get("description_localizations") or {}).items():
        if len(_text(text)) > COMMAND_DESCRIPTION_MAX:
            _put(errors, [*path, "description_localizations", locale], _max_length(COMMAND_DESCRIPTION_MAX))
    chars = len(name) + len(description)
    choices = option.get("choices") or []
    if len(choices) > AUTOCOMPLETE_CHOICES_MAX:
        _put(errors, [*path, "choices"], _max_length(AUTOCOMPLETE_CHOICES_MAX))
    for choice in choices:
        chars += len(_text(choice.get("name"))) + len(str(choice.get("value", "")))
    if choices and option.get("autocomplete"):
        _put(errors, [*path, "autocomplete"], _leaf("AUTOCOMPLETE_AND_CHOICES", "Cannot have choices and autocomplete"))
    children = option.get("options") or []
    if len(children) > COMMAND_OPTIONS_MAX:
        _put(errors, [*path, "options"], _max_length(COMMAND_OPTIONS_MAX))
    seen_optional = False
    for index, child in enumerate(children):
        if child.get("type") not in (1, 2):
            if child.get("required"):
                if seen_optional:
                    _put(
                        errors,
                        [*path, "options", index, "required"],
                        _leaf(
                            "APPLICATION_COMMAND_OPTIONS_REQUIRED_INVALID",
                            "Required options must be placed before non-required options",
                        ),
                    )
            else:
                seen_optional = True
        chars += _check_option(child, [*path, "options", index], errors)
    return chars


def check_command_list(commands: list[dict[str, Any]], *, is_global: bool) -> ErrorTree:
    errors: ErrorTree = {}
    chat_input = [c for c in commands if c.get("type", 1) == 1]
    if is_global and len(chat_input) > GLOBAL_CHAT_COMMANDS_MAX:
        _put(errors, ["_root"], _max_length(GLOBAL_CHAT_COMMANDS_MAX))
    seen: set[tuple[int, str]] = set()
    for index, command in enumerate(commands):
        key = (int(command.get("type", 1)), _text(command.get("name")))
        if key in seen:
            _put(
                errors,
                [index, "name"],
                _leaf("APPLICATION_COMMANDS_DUPLICATE_NAME", "Application command names must be unique"),
            )
        seen.add(key)
        if key[0] != 1:
            continue
        if _check_option(command, [index], errors) > COMMAND_TOTAL_CHARS_MAX:
            _put(
                errors,
                [index],
                _leaf("APPLICATION_COMMAND_TOO_LARGE", f"Command exceeds maximum size ({COMMAND_TOTAL_CHARS_MAX})"),
            )
    return errors
