"""Values the sandbox records and hands back: requests it received and replies the bot gave."""

from __future__ import annotations

import builtins
import hashlib
from typing import Any

from pydantic import BaseModel, ConfigDict, Field


class RecordedFile(BaseModel):
    """One uploaded file of a multipart request."""

    model_config = ConfigDict(frozen=True)

    field: str
    filename: str
    content_type: str | None = None
    data: bytes = Field(repr=False, exclude=True)

    @property
    def size(self) -> int:
        return len(self.data)

    @property
    def sha256(self) -> str:
        return hashlib.sha256(self.data).hexdigest()


class RecordedRequest(BaseModel):
    """A request as the sandbox saw it, with the answer it gave."""

    seq: int
    method: str
    path: str
    query: dict[str, str] = {}
    json_body: Any = None
    files: list[RecordedFile] = []
    received_at: float = Field(description="time.monotonic() on arrival")
    status: int | None = None
    response: Any = None
    fault: bool = False

    @property
    def route(self) -> str:
        """The path without the API prefix, e.g. `/channels/1/messages`."""
        prefix = "/api/v10"
        return self.path[len(prefix) :] if self.path.startswith(prefix) else self.path

    @property
    def ok(self) -> bool:
        return self.status is not None and 200 <= self.status < 300


class DiscordError(BaseModel):
    """An error answer in Discord's shape (`code`, `message`, nested `errors`)."""

    status: int
    code: int
    message: str
    errors: dict[str, Any] | None = None

    def paths(self) -> list[str]:
        """Dotted paths of every nested error, e.g. `data.embeds.0.description`."""
        found: list[str] = []

        def walk(node: Any, trail: list[str]) -> None:
            if not isinstance(node, dict):
                return
            if "_errors" in node:
                found.append(".".join(trail))
            for key, value in node.items():
                if key != "_errors":
                    walk(value, [*trail, key])

        walk(self.errors or {}, [])
        return found


class ReplyFile(BaseModel):
    """A file the bot attached. `bytes` is the size; `data` holds the content."""

    filename: str
    bytes: int
    sha256: str
    content_type: str | None = None
    url: str | None = Field(default=None, description="where the sandbox serves it")
    data: builtins.bytes = Field(default=b"", repr=False, exclude=True)

    @classmethod
    def from_recorded(cls, recorded: RecordedFile, url: str | None = None) -> ReplyFile:
        return cls(
            filename=recorded.filename,
            bytes=recorded.size,
            sha256=recorded.sha256,
            content_type=recorded.content_type,
            url=url,
            data=recorded.data,
        )


class Reply(BaseModel):
    """What a person would have seen after one interaction, plus the raw traffic behind it."""

    command: str = ""
    interaction_id: int | None = None
    message_id: int | None = None
    content: str | None = None
    embeds: list[dict[str, Any]] = []
    files: list[ReplyFile] = []
    components: list[dict[str, Any]] = []
    flags: int = 0
    ephemeral: bool = False
    deferred: bool = False
    latency_ms: float | None = None
    response_type: int | None = Field(default=None, description="interaction callback type the bot chose")
    choices: list[dict[str, Any]] | None = Field(default=None, description="autocomplete answers")
    modal: dict[str, Any] | None = None
    error: DiscordError | None = Field(default=None, description="first error the sandbox answered with")
    rejected_by_client: bool = False
    reason: str | None = None
    requests: list[RecordedRequest] = Field(default=[], exclude=True, repr=False)

    @property
    def ok(self) -> bool:
        return not self.rejected_by_client and self.error is None

    def custom_ids(self) -> list[str]:
        found: list[str] = []

        def walk(items: list[dict[str, Any]]) -> None:
            for item in items:
                if "custom_id" in item:
                    found.append(item["custom_id"])
                walk(item.get("components", []))

        walk(self.components)
        return found
