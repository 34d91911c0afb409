"""What the bot sends: one Reply, whether it goes to Discord, the sandbox, the CLI or a daily post."""

from __future__ import annotations

import hashlib
from typing import Any

from pydantic import BaseModel, Field


class ReplyFile(BaseModel):
    filename: str
    data: bytes

    @property
    def sha256(self) -> str:
        return hashlib.sha256(self.data).hexdigest()


class Reply(BaseModel):
    content: str | None = None
    embeds: list[dict[str, Any]] = Field(default_factory=list)
    files: list[ReplyFile] = Field(default_factory=list)
    ephemeral: bool = False
    meta: dict[str, Any] = Field(default_factory=dict, description="for the bot, never sent: e.g. page count")
