"""Everything the stand-in remembers: synced commands, interactions, messages, attachments, webhooks."""

from __future__ import annotations

import copy
import json
import secrets
import time
from dataclasses import dataclass, field
from datetime import UTC, datetime
from typing import Any

from bot.sandbox.faults import FaultInjector
from bot.sandbox.gateway import GatewayHub
from bot.sandbox.models import DiscordError, RecordedFile, RecordedRequest
from bot.sandbox.recording import Notifier, RequestLog
from bot.sandbox.snowflake import new_snowflake
from bot.sandbox.world import SandboxUser, World

# Interaction callback types (what the bot answers) and message flags.
CALLBACK_MESSAGE = 4
CALLBACK_DEFERRED_MESSAGE = 5
CALLBACK_DEFERRED_UPDATE = 6
CALLBACK_UPDATE_MESSAGE = 7
CALLBACK_AUTOCOMPLETE = 8
CALLBACK_MODAL = 9
FLAG_EPHEMERAL = 64
FLAG_LOADING = 128

INTERACTION_TOKEN_LIFETIME_S = 15 * 60


def iso_now() -> str:
    return datetime.now(UTC).isoformat()


@dataclass
class Exchange:
    """One answer the bot gave to an interaction (or tried to give)."""

    kind: str  # callback | edit_original | followup | edit_message | delete_message
    request: RecordedRequest
    at: float
    response_type: int | None = None
    message: dict[str, Any] | None = None
    files: list[RecordedFile] = field(default_factory=list)
    error: DiscordError | None = None


@dataclass
class InteractionRecord:
    id: int
    token: str
    type: int
    guild_id: int | None
    channel_id: int
    user: SandboxUser
    payload: dict[str, Any]
    dispatched_at: float
    attachment_size_limit: int
    command_text: str = ""
    response_type: int | None = None
    acknowledged_at: float | None = None
    ack_flags: int = 0
    original_message_id: int | None = None
    exchanges: list[Exchange] = field(default_factory=list)

    @property
    def acknowledged(self) -> bool:
        return self.response_type is not None

    def final_exchange(self, error_grace_s: float) -> Exchange | None:
        """The answer a person would settle on, or None while the bot may still answer.

        A deferral is only final once the edit or follow-up arrives; a failed attempt becomes final
        after `error_grace_s` without a successful retry (bots often answer an error with an apology).
        """
        waiting_for_more = False
        for exchange in self.exchanges:
            if exchange.error is not None:
                continue
            if exchange.kind == "callback":
                if exchange.response_type in (CALLBACK_DEFERRED_MESSAGE, CALLBACK_DEFERRED_UPDATE):
                    waiting_for_more = True
                    continue
                return exchange
            if exchange.kind in ("edit_original", "followup") and waiting_for_more:
                return exchange
        errors = [e for e in self.exchanges if e.error is not None]
        if errors and time.monotonic() - errors[0].at >= error_grace_s:
            return errors[0]
        return None


@dataclass
class StoredMessage:
    id: int
    channel_id: int
    guild_id: int | None
    author: dict[str, Any]
    content: str
    embeds: list[dict[str, Any]]
    components: list[dict[str, Any]]
    attachments: list[dict[str, Any]]
    files: list[RecordedFile]
    flags: int
    timestamp: str
    edited_timestamp: str | None = None
    webhook_id: int | None = None
    application_id: int | None = None
    interaction_metadata: dict[str, Any] | None = None
    type: int = 0
    deleted: bool = False
    request_seq: int | None = None

    def to_json(self) -> dict[str, Any]:
        data: dict[str, Any] = {
            "id": str(self.id),
            "channel_id": str(self.channel_id),
            "author": self.author,
            "content": self.content,
            "timestamp": self.timestamp,
            "edited_timestamp": self.edited_timestamp,
            "tts": False,
            "mention_everyone": False,
            "mentions": [],
            "mention_roles": [],
            "attachments": self.attachments,
            "embeds": self.embeds,
            "pinned": False,
            "type": self.type,
            "flags": self.flags,
            "components": self.components,
        }
        if self.guild_id is not None:
            data["guild_id"] = str(self.guild_id)
        if self.webhook_id is not None:
            data["webhook_id"] = str(self.webhook_id)
        if self.application_id is not None:
            data["application_id"] = str(self.application_id)
        if self.interaction_metadata is not None:
            data["interaction_metadata"] = self.interaction_metadata
        return data


class CommandStore:
    """Application commands as synced by the bot, echoed back with ids the way Discord does."""

    def __init__(self, application_id: int) -> None:
        self.application_id = application_id
        self.global_commands: list[dict[str, Any]] = []
        self.guild_commands: dict[int, list[dict[str, Any]]] = {}
        self.syncs = 0
        self._ids: dict[tuple[int | None, int, str], int] = {}
        self.changed = Notifier()

    def put(self, guild_id: int | None, commands: list[dict[str, Any]]) -> list[dict[str, Any]]:
        stored = []
        for command in commands:
            entry = copy.deepcopy(command)
            entry.setdefault("type", 1)
            key = (guild_id, int(entry["type"]), entry["name"])
            entry["id"] = str(self._ids.setdefault(key, new_snowflake()))
            entry["application_id"] = str(self.application_id)
            entry["version"] = str(new_snowflake())
            entry.setdefault("default_member_permissions", None)
            if guild_id is not None:
                entry["guild_id"] = str(guild_id)
            stored.append(entry)
        if guild_id is None:
            self.global_commands = stored
        else:
            self.guild_commands[guild_id] = stored
        self.syncs += 1
        self.changed.notify()
        return copy.deepcopy(stored)

    def listing(self, guild_id: int | None) -> list[dict[str, Any]]:
        if guild_id is None:
            return copy.deepcopy(self.global_commands)
        return copy.deepcopy(self.guild_commands.get(guild_id, []))

    def visible_in(self, guild_id: int | None) -> list[dict[str, Any]]:
        """Guild commands shadow global ones of the same name, as in Discord's command picker."""
        local = self.guild_commands.get(guild_id, []) if guild_id is not None else []
        names = {c["name"] for c in local}
        return [*local, *(c for c in self.global_commands if c["name"] not in names)]


@dataclass
class Violation:
    """A request Discord would have refused with 400 (50035 or 50006), and who sent it."""

    request: RecordedRequest
    user_agent: str

    @property
    def from_discord_py(self) -> bool:
        return self.user_agent.startswith("DiscordBot")

    def describe(self) -> str:
        return f"{self.request.method} {self.request.route} -> {json.dumps(self.request.response)[:600]}"


class SandboxState:
    def __init__(self, world: World, *, response_deadline_s: float = 3.0) -> None:
        self.world = world
        self.response_deadline_s = response_deadline_s
        self.base_url = ""  # set once the server is bound
        self.log = RequestLog()
        self.faults = FaultInjector()
        # Check every request body against Discord's OpenAPI spec (off only to replay raw probes).
        self.check_spec = True
        self.violations: list[Violation] = []
        self.hub = GatewayHub(world, lambda: self.gateway_url)
        self.commands = CommandStore(world.application_id)
        self.interactions: dict[int, InteractionRecord] = {}
        self.by_token: dict[str, InteractionRecord] = {}
        self.messages: dict[int, StoredMessage] = {}
        self.channel_messages: dict[int, list[int]] = {}
        self.attachments: dict[int, RecordedFile] = {}
        self.webhooks: dict[int, tuple[str, int]] = {}
        self.changed = Notifier()
        self._handed_out: dict[int, set[int]] = {}

    # -- urls --------------------------------------------------------------------------------------
    @property
    def api_base(self) -> str:
        return f"{self.base_url}/api/v10"

    @property
    def gateway_url(self) -> str:
        return self.base_url.replace("http://", "ws://", 1) + "/gateway"

    def attachment_url(self, attachment_id: int, filename: str) -> str:
        return f"{self.base_url}/attachments/{attachment_id}/{filename}"

    # -- interactions ------------------------------------------------------------------------------
    def register_interaction(self, record: InteractionRecord) -> None:
        self.interactions[record.id] = record
        self.by_token[record.token] = record

    def add_exchange(self, record: InteractionRecord, exchange: Exchange) -> None:
        record.exchanges.append(exchange)
        self.changed.notify()

    async def wait_for_reply(
        self,
        interaction_id: int,
        *,
        timeout: float = 10.0,  # noqa: ASYNC109 - a plain deadline, as in asyncio.wait_for
        error_grace_s: float = 0.5,
    ) -> tuple[InteractionRecord, Exchange]:
        record = self.interactions[interaction_id]

        def check() -> tuple[InteractionRecord, Exchange] | None:
            final = record.final_exchange(error_grace_s)
            return (record, final) if final is not None else None

        # Grace periods end without any new traffic, so poll a little as well as waiting on changes.
        deadline = time.monotonic() + timeout
        while True:
            try:
                return await self.changed.wait_until(check, min(0.1, max(0.0, deadline - time.monotonic())))
            except TimeoutError:
                if time.monotonic() >= deadline:
                    raise

    # -- webhooks ----------------------------------------------------------------------------------
    def create_webhook(self, channel_id: int) -> tuple[int, str]:
        """A channel webhook the bot may execute; returns (webhook_id, token)."""
        webhook_id, token = new_snowflake(), secrets.token_urlsafe(32)
        self.webhooks[webhook_id] = (token, channel_id)
        return webhook_id, token

    # -- messages ----------------------------------------------------------------------------------
    def store_message(self, message: StoredMessage) -> None:
        self.messages[message.id] = message
        self.channel_messages.setdefault(message.channel_id, []).append(message.id)
        self.changed.notify()

    def build_attachments(
        self, payload: dict[str, Any], files: list[RecordedFile]
    ) -> list[tuple[dict[str, Any], RecordedFile]]:
        """Attachment objects for newly uploaded files (`files[n]` pairs with attachments id n)."""
        described = {str(a.get("id")): a for a in payload.get("attachments") or [] if isinstance(a, dict)}
        out: list[tuple[dict[str, Any], RecordedFile]] = []
        for recorded in files:
            index = recorded.field.removeprefix("files[").removesuffix("]")
            meta = described.get(index, {})
            filename = meta.get("filename") or recorded.filename
            attachment_id = new_snowflake()
            stored = RecordedFile(
                field=recorded.field, filename=filename, content_type=recorded.content_type, data=recorded.data
            )
            self.attachments[attachment_id] = stored
            url = self.attachment_url(attachment_id, filename)
            attachment: dict[str, Any] = {
                "id": str(attachment_id),
                "filename": filename,
                "size": stored.size,
                "url": url,
                "proxy_url": url,
                "content_type": recorded.content_type or "application/octet-stream",
            }
            if meta.get("description"):
                attachment["description"] = meta["description"]
            out.append((attachment, stored))
        return out

    def channel_messages_json(self, channel_id: int) -> list[dict[str, Any]]:
        return [self.messages[m].to_json() for m in self.channel_messages.get(channel_id, [])]

    async def wait_for_message(
        self,
        channel_id: int,
        *,
        timeout: float = 10.0,  # noqa: ASYNC109 - a plain deadline, as in asyncio.wait_for
        include_interactions: bool = False,
    ) -> StoredMessage:
        """The oldest message in the channel not yet handed out by this method.

        Interaction replies live in channels too, but by default only channel posts and webhook
        executions count: those are what scheduled jobs produce.
        """
        handed_out = self._handed_out.setdefault(channel_id, set())

        def check() -> StoredMessage | None:
            for message_id in self.channel_messages.get(channel_id, []):
                message = self.messages[message_id]
                if message_id in handed_out or (message.interaction_metadata and not include_interactions):
                    continue
                handed_out.add(message_id)
                return message
            return None

        return await self.changed.wait_until(check, timeout)
