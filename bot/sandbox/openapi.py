"""Every request body checked against Discord's published OpenAPI spec (vendored in `spec/`).

`SpecValidator().errors(method, route, body)` finds the operation for the route, validates the body with
its `requestBody` schema (JSON Schema 2020-12, as OpenAPI 3.1 uses) and returns the violations as
Discord's nested error tree — empty when the body is what Discord accepts. The sandbox answers a
non-empty tree with 400 / 50035 "Invalid Form Body", as Discord does.

Two places where Discord is known to be looser than its own spec are normalised first (see
`spec/README.md`): discord.py sends `attachments[].id` as an integer, and the ChannelTypes enum lacks
16 (GUILD_MEDIA).
"""

from __future__ import annotations

import copy
import json
import re
from dataclasses import dataclass
from datetime import datetime
from functools import cached_property, lru_cache
from pathlib import Path
from typing import Any
from urllib.parse import urlsplit

from jsonschema import Draft202012Validator, FormatChecker
from jsonschema.exceptions import ValidationError

SPEC_PATH = Path(__file__).with_name("spec") / "openapi.json"
SPEC_COMMIT = "74fda0fad044407ea280043a03ffc9bc64c4e49e"
API_PREFIX = "/api/v10"
_FORM_CONTENT = ("application/json", "multipart/form-data")
GUILD_MEDIA = 16

ErrorTree = dict[str, Any]

_formats = FormatChecker(formats=())


@_formats.checks("uri", raises=ValueError)
def _is_uri(value: object) -> bool:
    """Discord accepts http(s) links and attachment:// references; anything else is "Not a well formed URL"."""
    if not isinstance(value, str):
        return True
    parts = urlsplit(value)
    if parts.scheme == "attachment":
        return bool(parts.netloc or parts.path)
    return parts.scheme in ("http", "https") and bool(parts.hostname) and " " not in value


@_formats.checks("date-time", raises=ValueError)
def _is_date_time(value: object) -> bool:
    if not isinstance(value, str):
        return True
    if not value.isascii() or "T" not in value:
        return False
    datetime.fromisoformat(value.replace("Z", "+00:00"))
    return True


@_formats.checks("snowflake", raises=ValueError)
def _is_snowflake(value: object) -> bool:
    if not isinstance(value, str):
        return True
    return value.isascii() and value.isdigit() and int(value) < 2**64


# Discord's own codes for the common failures (as its answers show them); others fall back to a
# generic code named after the JSON Schema keyword.
_CODES: dict[str, tuple[str, str]] = {
    "maxLength": ("BASE_TYPE_MAX_LENGTH", "Must be {limit} or fewer in length."),
    "minLength": ("BASE_TYPE_MIN_LENGTH", "Must be {limit} or more in length."),
    "maxItems": ("BASE_TYPE_MAX_LENGTH", "Must be {limit} or fewer in length."),
    "minItems": ("BASE_TYPE_MIN_LENGTH", "Must be {limit} or more in length."),
    "maxProperties": ("BASE_TYPE_MAX_LENGTH", "Must be {limit} or fewer in length."),
    "maximum": ("NUMBER_TYPE_MAX", "int value should be less than or equal to {limit}."),
    "minimum": ("NUMBER_TYPE_MIN", "int value should be greater than or equal to {limit}."),
    "required": ("BASE_TYPE_REQUIRED", "This field is required"),
    "enum": ("BASE_TYPE_CHOICES", "Value must be one of {limit}."),
    "const": ("BASE_TYPE_CHOICES", "Value must be one of {limit}."),
    "uniqueItems": ("BASE_TYPE_UNIQUE", "Values must be unique."),
    "pattern": ("STRING_TYPE_REGEX", "String value did not match validation regex."),
}
_TYPE_CODES = {"string": "STRING_TYPE_CONVERT", "integer": "NUMBER_TYPE_COERCE", "number": "NUMBER_TYPE_COERCE",
               "boolean": "BOOLEAN_TYPE_CONVERT", "array": "LIST_TYPE_CONVERT", "object": "DICT_TYPE_CONVERT"}
_FORMAT_CODES = {"uri": ("URL_TYPE_INVALID_URL", "Not a well formed URL."),
                 "date-time": ("DATE_TYPE_PARSE", "Could not parse {value}. Should be ISO8601."),
                 "snowflake": ("NUMBER_TYPE_COERCE", "Value \"{value}\" is not snowflake.")}


def leaf(code: str, message: str) -> ErrorTree:
    return {"_errors": [{"code": code, "message": message}]}


def put(tree: ErrorTree, path: list[str | int], node: ErrorTree) -> None:
    here = tree
    for key in path:
        here = here.setdefault(str(key), {})
    here.setdefault("_errors", []).extend(node["_errors"])


@dataclass(frozen=True)
class Operation:
    method: str
    template: str
    operation_id: str
    pattern: re.Pattern[str]
    schema: dict[str, Any]


def _route_pattern(template: str) -> re.Pattern[str]:
    parts = re.split(r"(\{[^}]+\})", template)
    return re.compile("^" + "".join("[^/]+" if p.startswith("{") else re.escape(p) for p in parts) + "$")


class SpecValidator:
    def __init__(self, spec: dict[str, Any] | None = None) -> None:
        self.spec = spec if spec is not None else _load_spec()
        self.operations: list[Operation] = []
        self._validators: dict[str, Draft202012Validator] = {}
        for template, item in self.spec["paths"].items():
            for method, op in item.items():
                if not isinstance(op, dict) or "requestBody" not in op:
                    continue
                content = op["requestBody"].get("content", {})
                schema = next((content[c]["schema"] for c in _FORM_CONTENT if c in content), None)
                if schema is not None:
                    self.operations.append(Operation(method.upper(), template, op.get("operationId", ""),
                                                     _route_pattern(template), schema))
        # Literal segments before templated ones: `/messages/@original` must win over `/messages/{id}`.
        self.operations.sort(key=lambda o: (o.template.count("{"), -len(o.template)))

    @cached_property
    def locales(self) -> frozenset[str]:
        """Discord's locale codes, from the spec's own enum, so the list has one source."""
        return frozenset(c["const"] for c in self.spec["components"]["schemas"]["AvailableLocalesEnum"]["oneOf"])

    def operation(self, method: str, route: str) -> Operation | None:
        path = route[len(API_PREFIX):] if route.startswith(API_PREFIX) else route
        path = path.split("?", 1)[0]
        return next((o for o in self.operations if o.method == method.upper() and o.pattern.match(path)), None)

    def _validator(self, schema: dict[str, Any]) -> Draft202012Validator:
        # The operation's schema with the document's components beside it, so "#/components/..." resolves.
        root = {"$schema": "https://json-schema.org/draft/2020-12/schema", **schema,
                "components": self.spec["components"]}
        return Draft202012Validator(root, format_checker=_formats)

    def _validator_for(self, op: Operation) -> Draft202012Validator:
        key = f"{op.method} {op.template}"
        if key not in self._validators:
            self._validators[key] = self._validator(op.schema)
        return self._validators[key]

    def errors(self, method: str, route: str, body: Any) -> ErrorTree:
        op = self.operation(method, route)
        if op is None or body is None:
            return {}
        validator = self._validator_for(op)
        instance = normalise(body)
        tree: ErrorTree = {}
        for error in validator.iter_errors(instance):
            _convert(error, tree)
        return tree


def normalise(body: Any) -> Any:
    """Discord's documented looseness, applied before validation (on a copy)."""
    if not isinstance(body, dict | list):
        return body
    out = copy.deepcopy(body)

    def walk(node: Any) -> None:
        if isinstance(node, dict):
            for key, value in node.items():
                if key == "attachments" and isinstance(value, list):
                    for attachment in value:
                        if isinstance(attachment, dict) and isinstance(attachment.get("id"), int) \
                                and not isinstance(attachment.get("id"), bool):
                            attachment["id"] = str(attachment["id"])
                if key == "channel_types" and isinstance(value, list):
                    node[key] = [t for t in value if t != GUILD_MEDIA]
                walk(value)
        elif isinstance(node, list):
            for item in node:
                walk(item)

    walk(out)
    return out


def _discriminated(error: ValidationError) -> list[ValidationError] | None:
    """For a failed oneOf/anyOf: the errors of the branch the instance meant (its `type` matches, or the
    branch with the fewest errors), so the answer points at the real field instead of "no branch fits"."""
    if not error.context:
        return None
    branches: dict[int, list[ValidationError]] = {}
    for sub in error.context:
        branches.setdefault(int(sub.schema_path[0]), []).append(sub)
    choices = error.validator_value if isinstance(error.validator_value, list) else []
    for index in range(len(choices)):
        branches.setdefault(index, [])

    def mismatched_type(errs: list[ValidationError]) -> bool:
        return any(list(e.relative_path)[:1] == ["type"] or (e.validator == "type" and not e.relative_path)
                   for e in errs)

    fitting = [errs for _, errs in sorted(branches.items()) if not mismatched_type(errs)]
    if not fitting:
        return None
    return min(fitting, key=len)


def _convert(error: ValidationError, tree: ErrorTree) -> None:
    path = list(error.absolute_path)
    if error.validator in ("oneOf", "anyOf"):
        branch = _discriminated(error)
        if branch:
            for sub in branch:
                _convert(sub, tree)
            return
        allowed = sorted({v for sub in error.context or [] if list(sub.relative_path) == ["type"]
                          and sub.validator == "enum" for v in sub.validator_value})
        if isinstance(error.instance, dict) and "type" in error.instance and allowed:
            put(tree, [*path, "type"], leaf("BASE_TYPE_CHOICES", f"Value must be one of {allowed}."))
            return
        put(tree, path, leaf("UNION_TYPE_CHOICES", "Value is not one of the allowed types."))
        return
    if error.validator == "required":
        missing = re.findall(r"'([^']+)' is a required property", error.message)
        put(tree, [*path, *(missing[:1])], leaf(*_CODES["required"]))
        return
    if error.validator == "type":
        expected = error.validator_value
        first = expected[0] if isinstance(expected, list) else expected
        put(tree, path, leaf(_TYPE_CODES.get(str(first), "BASE_TYPE_CONVERT"),
                             f"Value {str(error.instance)[:40]!r} is not {first}."))
        return
    if error.validator == "format":
        code, message = _FORMAT_CODES.get(str(error.validator_value), ("BASE_TYPE_FORMAT", "Value is malformed."))
        put(tree, path, leaf(code, message.format(value=str(error.instance)[:40])))
        return
    code, message = _CODES.get(str(error.validator), (f"BASE_TYPE_{str(error.validator).upper()}", error.message))
    put(tree, path, leaf(code, message.format(limit=error.validator_value)))


@lru_cache(maxsize=1)
def _load_spec() -> dict[str, Any]:
    with open(SPEC_PATH, encoding="utf-8") as handle:
        return dict(json.load(handle))


@lru_cache(maxsize=1)
def shared_validator() -> SpecValidator:
    """One per process: loading and indexing the 1.2 MB document takes a moment."""
    return SpecValidator()


__all__ = ["SPEC_COMMIT", "SPEC_PATH", "ErrorTree", "SpecValidator", "leaf", "normalise", "put", "shared_validator"]
