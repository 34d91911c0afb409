"""Discord's payload rules, checked the way Discord answers: 400 code 50035 with nested `errors`.

Each check returns the nested error tree (empty when the payload is fine) so the caller can nest it
under `data` for interaction callbacks.
"""

from __future__ import annotations

import unicodedata
from collections.abc import Iterable, Iterator
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

COMMAND_NAME_MAX = 32
# Discord's rule is ^[-_'\p{L}\p{N}\p{sc=Deva}\p{sc=Thai}]{1,32}$ (application commands, "Application Command
# Naming"); Python's re has no \p{…}, so letters and numbers are tested by Unicode category and the two
# scripts by their blocks (their vowel signs are marks, not letters).
_NAME_SCRIPTS = ((0x0900, 0x097F), (0x0E00, 0x0E7F))
COMMAND_DESCRIPTION_MAX = 100
COMMAND_OPTIONS_MAX = 25
COMMAND_TOTAL_CHARS_MAX = 4000
GLOBAL_CHAT_COMMANDS_MAX = 100
GUILD_CHAT_COMMANDS_MAX = 100
FILES_MAX = 10
COMPONENTS_V2_TOTAL_MAX = 40
FLAG_SUPPRESS_EMBEDS = 1 << 2
FLAG_EPHEMERAL = 1 << 6
FLAG_SUPPRESS_NOTIFICATIONS = 1 << 12
FLAG_IS_VOICE_MESSAGE = 1 << 13
FLAG_IS_COMPONENTS_V2 = 1 << 15
# Flags a message may be created with ("Create Message", "Execute Webhook", "Create Followup Message").
CHANNEL_MESSAGE_FLAGS = (FLAG_SUPPRESS_EMBEDS | FLAG_SUPPRESS_NOTIFICATIONS | FLAG_IS_VOICE_MESSAGE
                         | FLAG_IS_COMPONENTS_V2)
WEBHOOK_MESSAGE_FLAGS = FLAG_SUPPRESS_EMBEDS | FLAG_SUPPRESS_NOTIFICATIONS | FLAG_IS_COMPONENTS_V2
INTERACTION_MESSAGE_FLAGS = WEBHOOK_MESSAGE_FLAGS | FLAG_EPHEMERAL
# Webhook names may not contain these (Discord's webhook resource docs), case-insensitively.
WEBHOOK_NAME_FORBIDDEN = ("discord", "clyde")
BUTTON_STYLE_LINK = 5
BUTTON_STYLE_PREMIUM = 6
ACTION_ROW = 1
BUTTON = 2
LAYOUT_CHILDREN = ("components", "accessory")

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


def valid_command_name(name: str) -> bool:
    if not 1 <= len(name) <= COMMAND_NAME_MAX:
        return False
    for ch in name:
        if ch in "-_'":
            continue
        if unicodedata.category(ch)[0] in "LN":
            if ch.lower() != ch:  # a letter with a lowercase form must be lowercase
                return False
            continue
        if not any(low <= ord(ch) <= high for low, high in _NAME_SCRIPTS):
            return False
    return True


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


def _walk_components(components: list[Any], path: list[str | int]) -> Iterator[tuple[dict[str, Any], list[str | int]]]:
    for index, child in enumerate(components):
        if not isinstance(child, dict):
            continue
        here = [*path, index]
        yield child, here
        for key in LAYOUT_CHILDREN:
            nested = child.get(key)
            if isinstance(nested, list):
                yield from _walk_components(nested, [*here, key])
            elif isinstance(nested, dict):
                yield nested, [*here, key]
                if isinstance(nested.get("components"), list):
                    yield from _walk_components(nested["components"], [*here, key, "components"])


def check_components(components: list[dict[str, Any]], flags: int = 0) -> ErrorTree:
    errors: ErrorTree = {}
    v2 = bool(flags & FLAG_IS_COMPONENTS_V2)
    # Without the Components V2 flag a message holds at most 5 action rows; with it, 40 components in all.
    if not v2 and len(components) > ACTION_ROWS_MAX:
        _put(errors, ["components"], _max_length(ACTION_ROWS_MAX))
    every = list(_walk_components(components, ["components"]))
    if v2 and len(every) > COMPONENTS_V2_TOTAL_MAX:
        _put(errors, ["components"], _leaf("COMPONENT_LAYOUT_TOO_MANY_COMPONENTS",
                                           f"A message may contain at most {COMPONENTS_V2_TOTAL_MAX} components"))
    if not v2:
        for index, row in enumerate(components):
            if isinstance(row, dict) and row.get("type") != ACTION_ROW:
                _put(errors, ["components", index, "type"], _leaf(
                    "COMPONENT_TYPE_INVALID", "Top-level components must be action rows without IS_COMPONENTS_V2"))
    seen: dict[str, list[str | int]] = {}
    for child, where in every:
        custom_id = child.get("custom_id")
        if isinstance(custom_id, str) and len(custom_id) > CUSTOM_ID_MAX:
            _put(errors, [*where, "custom_id"], _max_length(CUSTOM_ID_MAX))
        if len(_text(child.get("label"))) > BUTTON_LABEL_MAX:
            _put(errors, [*where, "label"], _max_length(BUTTON_LABEL_MAX))
        if child.get("type") == ACTION_ROW:
            buttons = child.get("components") or []
            if len(buttons) > ROW_BUTTONS_MAX:
                _put(errors, [*where, "components"], _max_length(ROW_BUTTONS_MAX))
        if child.get("type") == BUTTON:
            style = child.get("style")
            if style == BUTTON_STYLE_LINK:
                if custom_id is not None:
                    _put(errors, [*where, "custom_id"], _leaf(
                        "BUTTON_COMPONENT_CUSTOM_ID_NOT_ALLOWED", "A link button cannot have a custom id"))
                if not child.get("url"):
                    _put(errors, [*where, "url"], _leaf("BUTTON_COMPONENT_URL_REQUIRED", "A url is required"))
            elif style == BUTTON_STYLE_PREMIUM:
                if not child.get("sku_id"):
                    _put(errors, [*where, "sku_id"], _leaf("BUTTON_COMPONENT_SKU_ID_REQUIRED", "A sku id is required"))
            else:
                if not custom_id:
                    _put(errors, [*where, "custom_id"], _leaf(
                        "BUTTON_COMPONENT_CUSTOM_ID_REQUIRED", "A custom id is required"))
                if child.get("url") is not None:
                    _put(errors, [*where, "url"], _leaf(
                        "BUTTON_COMPONENT_URL_NOT_ALLOWED", "Only link buttons can have a url"))
        if isinstance(custom_id, str) and custom_id:
            if custom_id in seen:
                _put(errors, [*where, "custom_id"], _leaf(
                    "COMPONENT_CUSTOM_ID_DUPLICATED", "Component custom id cannot be duplicated"))
            seen[custom_id] = where
    return errors


def check_flags(payload: dict[str, Any], allowed: int) -> ErrorTree:
    flags = payload.get("flags")
    if isinstance(flags, int) and not isinstance(flags, bool) and flags & ~allowed:
        return {"flags": _leaf("MESSAGE_FLAGS_INVALID", f"Flags {flags & ~allowed} cannot be set on this message")}
    return {}


def check_webhook_name(payload: dict[str, Any]) -> ErrorTree:
    name = _text(payload.get("username")).lower()
    bad = next((word for word in WEBHOOK_NAME_FORBIDDEN if word in name), None)
    if bad is not None:
        return {"username": _leaf("WEBHOOK_INVALID_USERNAME", f'Username cannot contain "{bad}"')}
    return {}


def check_file_count(file_count: int) -> ErrorTree:
    if file_count > FILES_MAX:
        return {"files": _max_length(FILES_MAX)}
    return {}


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
    flags = payload.get("flags")
    components = payload.get("components") or []
    if isinstance(components, list):
        errors.update(check_components(components, flags if isinstance(flags, int) else 0))
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


def _longest(option: dict[str, Any], key: str) -> int:
    """Discord counts only the longest localisation of each field (the default included) towards 4,000."""
    localized = option.get(f"{key}_localizations") or {}
    texts = [_text(option.get(key)), *(_text(v) for v in localized.values())] if isinstance(localized, dict) \
        else [_text(option.get(key))]
    return max(len(t) for t in texts)


def _check_localizations(option: dict[str, Any], path: list[str | int], errors: ErrorTree, locales: frozenset[str],
                         *, is_choice: bool = False) -> None:
    for key in ("name", "description"):
        localized = option.get(f"{key}_localizations")
        if not isinstance(localized, dict):
            continue
        for locale, text in localized.items():
            where = [*path, f"{key}_localizations", locale]
            if locale not in locales:
                _put(errors, where, _leaf("LOCALE_INVALID", f"Invalid locale: {locale[:20]}"))
            elif key == "name" and not is_choice and not valid_command_name(_text(text)):
                _put(errors, where, _leaf("APPLICATION_COMMAND_INVALID_NAME", "Command name is invalid"))
            elif key == "description" and len(_text(text)) > COMMAND_DESCRIPTION_MAX:
                _put(errors, where, _max_length(COMMAND_DESCRIPTION_MAX))


def _check_option(option: dict[str, Any], path: list[str | int], errors: ErrorTree,
                  locales: frozenset[str]) -> int:
    """Checks one option (recursively for subcommands); returns the characters it counts towards 4000."""
    name = _text(option.get("name"))
    description = _text(option.get("description"))
    if not valid_command_name(name):
        _put(errors, [*path, "name"], _leaf("APPLICATION_COMMAND_INVALID_NAME", "Command name is invalid"))
    if not 1 <= len(description) <= COMMAND_DESCRIPTION_MAX:
        _put(
            errors,
            [*path, "description"],
            _leaf("BASE_TYPE_BAD_LENGTH", f"Must be between 1 and {COMMAND_DESCRIPTION_MAX} in length."),
        )
    _check_localizations(option, path, errors, locales)
    chars = _longest(option, "name") + _longest(option, "description")
    choices = option.get("choices") or []
    if len(choices) > AUTOCOMPLETE_CHOICES_MAX:
        _put(errors, [*path, "choices"], _max_length(AUTOCOMPLETE_CHOICES_MAX))
    for index, choice in enumerate(choices):
        value = choice.get("value", "")
        if isinstance(value, str) and len(value) > CHOICE_STRING_VALUE_MAX:
            _put(errors, [*path, "choices", index, "value"], _max_length(CHOICE_STRING_VALUE_MAX))
        _check_localizations(choice, [*path, "choices", index], errors, locales, is_choice=True)
        chars += _longest(choice, "name") + len(str(value))
    if choices and option.get("autocomplete"):
        _put(errors, [*path, "autocomplete"], _leaf("AUTOCOMPLETE_AND_CHOICES", "Cannot have choices and autocomplete"))
    children = option.get("options") or []
    if len(children) > COMMAND_OPTIONS_MAX:
        _put(errors, [*path, "options"], _max_length(COMMAND_OPTIONS_MAX))
    seen_optional = False
    names: set[str] = set()
    for index, child in enumerate(children):
        child_name = _text(child.get("name"))
        if child_name in names:
            _put(errors, [*path, "options", index, "name"], _leaf(
                "APPLICATION_COMMAND_OPTION_NAME_ALREADY_EXISTS", "Option names must be unique"))
        names.add(child_name)
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
        chars += _check_option(child, [*path, "options", index], errors, locales)
    return chars


def check_command_list(commands: list[dict[str, Any]], *, is_global: bool) -> ErrorTree:
    from bot.sandbox.openapi import shared_validator

    locales = shared_validator().locales
    errors: ErrorTree = {}
    chat_input = [c for c in commands if isinstance(c, dict) and c.get("type", 1) == 1]
    limit = GLOBAL_CHAT_COMMANDS_MAX if is_global else GUILD_CHAT_COMMANDS_MAX
    if len(chat_input) > limit:
        _put(errors, ["_root"], _max_length(limit))
    seen: set[tuple[int, str]] = set()
    for index, command in enumerate(commands):
        if not isinstance(command, dict):
            continue
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
        if _check_option(command, [index], errors, locales) > COMMAND_TOTAL_CHARS_MAX:
            _put(
                errors,
                [index],
                _leaf("APPLICATION_COMMAND_TOO_LARGE", f"Command exceeds maximum size ({COMMAND_TOTAL_CHARS_MAX})"),
            )
    return errors
