"""Plays the part of people using the bot: builds INTERACTION_CREATE events and collects the replies."""

from __future__ import annotations

import secrets
import time
from dataclasses import dataclass
from typing import Any, TypedDict, Unpack

from bot.sandbox import slash
from bot.sandbox.models import RecordedRequest, Reply, ReplyFile
from bot.sandbox.snowflake import new_snowflake, snowflake_at
from bot.sandbox.state import (
    CALLBACK_AUTOCOMPLETE,
    CALLBACK_DEFERRED_MESSAGE,
    CALLBACK_DEFERRED_UPDATE,
    CALLBACK_MODAL,
    FLAG_EPHEMERAL,
    Exchange,
    InteractionRecord,
    SandboxState,
)
from bot.sandbox.world import (
    BOT_PERMISSIONS,
    DEFAULT_MEMBER_PERMISSIONS,
    SandboxGuild,
    SandboxUser,
    member_json,
)

INTERACTION_APPLICATION_COMMAND = 2
INTERACTION_COMPONENT = 3
INTERACTION_AUTOCOMPLETE = 4
CONTEXT_GUILD = 0
CONTEXT_BOT_DM = 1
DM_CHANNEL = 1


class ReplyTimeout(TimeoutError):
    """The bot gave no final answer in time; `requests` shows what it did send."""

    def __init__(self, message: str, requests: list[RecordedRequest]) -> None:
        super().__init__(message)
        self.requests = requests


class AutocompleteError(RuntimeError):
    def __init__(self, reply: Reply) -> None:
        detail = reply.reason or (reply.error.model_dump_json() if reply.error else "no choices")
        super().__init__(f"autocomplete failed: {detail}")
        self.reply = reply


UserLike = SandboxUser | int | None


class Seat(TypedDict, total=False):
    """Who types and where, for invoke and autocomplete_reply; Driver._seat holds the defaults."""

    user: UserLike
    guild: int | None
    dm: bool
    channel: int | None
    locale: str
    member_permissions: int


@dataclass(frozen=True)
class _Seated:
    user: SandboxUser
    guild: SandboxGuild | None  # None: a DM
    channel_id: int
    locale: str
    member_permissions: int


class Driver:
    """Sends what Discord's client would send, over the sandbox's gateway, and waits for the answer."""

    def __init__(self, state: SandboxState, *, default_timeout: float = 10.0, error_grace_s: float = 0.5) -> None:
        self.state = state
        self.default_timeout = default_timeout
        self.error_grace_s = error_grace_s

    # -- schema ------------------------------------------------------------------------------------
    @property
    def commands(self) -> list[dict[str, Any]]:
        """The synced commands a member of the default guild sees (guild commands shadow global ones)."""
        return self.state.commands.visible_in(self.state.world.default_guild.id)

    def commands_in(self, guild: int | None) -> list[dict[str, Any]]:
        return self.state.commands.visible_in(guild)

    # -- people and places -------------------------------------------------------------------------
    def _user(self, user: UserLike) -> SandboxUser:
        if user is None:
            return self.state.world.tester
        if isinstance(user, SandboxUser):
            return user
        for known in (self.state.world.tester, self.state.world.owner, self.state.world.bot_user):
            if known.id == user:
                return known
        return SandboxUser(id=user, username=f"user{user}")

    def _place(self, guild: int | None, channel: int | None, dm: bool) -> tuple[SandboxGuild | None, int]:
        world = self.state.world
        if dm:
            return None, channel or snowflake_at(1_700_000_500_000)
        target = world.guild(guild) if guild is not None else world.default_guild
        if target is None:
            raise ValueError(f"no guild {guild} in the sandbox world")
        if channel is None:
            return target, target.channels[0].id
        if not any(c.id == channel for c in target.channels):
            raise ValueError(f"channel {channel} is not in guild {target.id}")
        return target, channel

    def _seat(
        self,
        *,
        user: UserLike = None,
        guild: int | None = None,
        dm: bool = False,
        channel: int | None = None,
        locale: str = "en-US",
        member_permissions: int = DEFAULT_MEMBER_PERMISSIONS,
    ) -> _Seated:
        """The tester in the default guild's first channel unless told otherwise."""
        who = self._user(user)
        place, channel_id = self._place(guild, channel, dm)
        return _Seated(who, place, channel_id, locale, member_permissions)

    def _resolver(self, guild: SandboxGuild | None, member_permissions: int) -> slash.Resolver:
        def user(user_id: int) -> dict[str, Any] | None:
            return self._user(user_id).to_json()

        def member(user_id: int) -> dict[str, Any] | None:
            if guild is None:
                return None
            data = member_json(self._user(user_id), permissions=member_permissions)
            data.pop("user")
            return data

        def channel(text: str) -> dict[str, Any] | None:
            if guild is None:
                return None
            for candidate in guild.channels:
                if text in (str(candidate.id), candidate.name):
                    data = candidate.to_json(guild.id, permissions=member_permissions)
                    return data
            return None

        def role(text: str) -> dict[str, Any] | None:
            if guild is not None and text in (str(guild.id), "everyone", "@everyone"):
                return guild.everyone_role_json()
            return None

        return slash.Resolver(user=user, member=member, channel=channel, role=role)

    def _parse(self, text: str, place: SandboxGuild | None, locale: str, member_permissions: int,
               focused: str | None = None) -> slash.Invocation:
        """What Discord's client makes of `text` typed in `place` (None: a DM) by a member with these permissions."""
        return slash.parse(
            text,
            self.commands_in(place.id if place else None),
            locale=locale,
            resolver=self._resolver(place, member_permissions),
            focused=focused,
            member_permissions=member_permissions,
            in_guild=place is not None,
        )

    async def _interact(
        self,
        *,
        interaction_type: int,
        data: dict[str, Any],
        user: SandboxUser,
        guild: SandboxGuild | None,
        channel_id: int,
        locale: str,
        member_permissions: int,
        app_permissions: int,
        command_text: str,
        timeout: float | None,  # noqa: ASYNC109 - a plain deadline, as in asyncio.wait_for
        message: dict[str, Any] | None = None,
        original_message_id: int | None = None,
    ) -> Reply:
        """Send one interaction as Discord would (payload, record, gateway event) and wait for its answer."""
        world = self.state.world
        interaction_id = new_snowflake()
        token = "sandbox." + secrets.token_urlsafe(48)
        payload: dict[str, Any] = {
            "id": str(interaction_id),
            "application_id": str(world.application_id),
            "type": interaction_type,
            "data": data,
            "token": token,
            "version": 1,
            "locale": locale,
            "attachment_size_limit": world.attachment_size_limit,
            "entitlements": [],
            "entitlement_sku_ids": [],
            "app_permissions": str(app_permissions),
            "channel_id": str(channel_id),
        }
        if guild is not None:
            channel = next(c for c in guild.channels if c.id == channel_id)
            payload.update(
                guild_id=str(guild.id),
                guild={**guild.partial_json()},
                guild_locale=guild.preferred_locale,
                member=member_json(user, permissions=member_permissions),
                channel=channel.to_json(guild.id, permissions=member_permissions),
                context=CONTEXT_GUILD,
                authorizing_integration_owners={"0": str(guild.id)},
            )
        else:
            payload.update(
                user=user.to_json(),
                channel={"id": str(channel_id), "type": DM_CHANNEL, "recipients": [user.to_json()], "flags": 0},
                context=CONTEXT_BOT_DM,
                authorizing_integration_owners={"1": str(user.id)},
            )
        if message is not None:
            payload["message"] = message
        record = InteractionRecord(
            id=interaction_id,
            token=token,
            type=interaction_type,
            guild_id=guild.id if guild else None,
            channel_id=channel_id,
            user=user,
            payload=payload,
            dispatched_at=time.monotonic(),
            attachment_size_limit=int(payload["attachment_size_limit"]),
            command_text=command_text,
            original_message_id=original_message_id,
        )
        self.state.register_interaction(record)
        await self.state.hub.dispatch(record.guild_id, "INTERACTION_CREATE", payload)
        return await self.wait_for_reply(record.id, timeout=timeout)

    # -- people's actions --------------------------------------------------------------------------
    async def invoke(
        self,
        text: str,
        *,
        app_permissions: int = BOT_PERMISSIONS,
        timeout: float | None = None,  # noqa: ASYNC109 - a plain deadline, as in asyncio.wait_for
        **seat: Unpack[Seat],
    ) -> Reply:
        """Types `text` into the chat box and waits for the bot's final answer.

        Returns a Reply with `rejected_by_client=True` (and nothing sent) when Discord's client would
        refuse the input; raises ReplyTimeout when the bot never answers.
        """
        at = self._seat(**seat)
        try:
            invocation = self._parse(text, at.guild, at.locale, at.member_permissions)
        except slash.ClientRejection as rejection:
            return Reply(command=text, rejected_by_client=True, reason=rejection.reason)
        return await self._interact(
            interaction_type=INTERACTION_APPLICATION_COMMAND, data=invocation.data(at.guild.id if at.guild else None),
            user=at.user, guild=at.guild, channel_id=at.channel_id, locale=at.locale,
            member_permissions=at.member_permissions, app_permissions=app_permissions, command_text=text,
            timeout=timeout,
        )

    async def invoke_raw(
        self,
        name: str,
        options: list[dict[str, Any]],
        *,
        user: UserLike = None,
        guild: int | None = None,
        locale: str = "en-US",
        member_permissions: int = DEFAULT_MEMBER_PERMISSIONS,
        timeout: float | None = None,  # noqa: ASYNC109 - a plain deadline, as in asyncio.wait_for
    ) -> Reply:
        """Sends option values exactly as given, skipping the client's checks: what a modified client or a
        replayed payload delivers (`batch: 0`, an unknown choice, a 4 kB string)."""
        who = self._user(user)
        place, channel_id = self._place(guild, None, False)
        command = slash.find_command(self.commands_in(place.id if place else None), name, locale)
        data: dict[str, Any] = {"id": command["id"], "name": command["name"], "type": command.get("type", 1),
                                "options": options}
        if command.get("guild_id"):
            data["guild_id"] = command["guild_id"]
        text = f"/{name} " + " ".join(f"{o['name']}:{o.get('value')}"[:80] for o in options)
        return await self._interact(
            interaction_type=INTERACTION_APPLICATION_COMMAND, data=data, user=who, guild=place,
            channel_id=channel_id, locale=locale, member_permissions=member_permissions,
            app_permissions=BOT_PERMISSIONS, command_text=text, timeout=timeout,
        )

    async def autocomplete_reply(
        self,
        command: str,
        option: str,
        value: str = "",
        *,
        options: dict[str, str] | None = None,
        timeout: float | None = None,  # noqa: ASYNC109 - a plain deadline, as in asyncio.wait_for
        **seat: Unpack[Seat],
    ) -> Reply:
        """Like typing `value` into `option` of `command` (which may name a subcommand path)."""
        at = self._seat(**seat)
        parts = [command.strip()]
        parts += [f"{name}:{text}" for name, text in (options or {}).items()]
        parts.append(f"{option}:{value}")
        text = " ".join(parts)
        try:
            invocation = self._parse(text, at.guild, at.locale, at.member_permissions, focused=option)
            focused_option = next(o for o in invocation.leaf.get("options") or [] if o["name"] == option)
            if not focused_option.get("autocomplete"):
                raise slash.ClientRejection(f"option '{option}' has no autocomplete")
        except (slash.ClientRejection, StopIteration) as problem:
            reason = problem.reason if isinstance(problem, slash.ClientRejection) else f"no option '{option}'"
            return Reply(command=text, rejected_by_client=True, reason=reason)
        return await self._interact(
            interaction_type=INTERACTION_AUTOCOMPLETE, data=invocation.data(at.guild.id if at.guild else None),
            user=at.user, guild=at.guild, channel_id=at.channel_id, locale=at.locale,
            member_permissions=at.member_permissions, app_permissions=BOT_PERMISSIONS, command_text=text,
            timeout=timeout,
        )

    async def autocomplete(self, command: str, option: str, value: str = "", **kwargs: Any) -> list[dict[str, Any]]:
        """The choices the bot offers; raises AutocompleteError when it offers none the API accepts."""
        reply = await self.autocomplete_reply(command, option, value, **kwargs)
        if reply.choices is None:
            raise AutocompleteError(reply)
        return reply.choices

    async def click(
        self,
        reply: Reply,
        custom_id: str,
        *,
        user: UserLike = None,
        values: list[str] | None = None,
        locale: str = "en-US",
        member_permissions: int = DEFAULT_MEMBER_PERMISSIONS,
        timeout: float | None = None,  # noqa: ASYNC109 - a plain deadline, as in asyncio.wait_for
    ) -> Reply:
        """Clicks a button (or picks `values` in a select menu) on the message a reply produced.

        The click goes to the message as it is now, so a button removed by an earlier edit is gone.
        """
        label = f"click {custom_id}"
        message = self.state.messages.get(reply.message_id or 0)
        origin = self.state.interactions.get(reply.interaction_id or 0)
        if message is None or message.deleted or origin is None:
            return Reply(command=label, rejected_by_client=True, reason="the message is gone")
        component = _find_component(message.components, custom_id)
        if component is None:
            return Reply(command=label, rejected_by_client=True, reason=f"no component {custom_id!r} on the message")
        if component.get("disabled"):
            return Reply(command=label, rejected_by_client=True, reason=f"{custom_id!r} is disabled")
        who = self._user(user)
        if message.flags & FLAG_EPHEMERAL and who.id != origin.user.id:
            return Reply(command=label, rejected_by_client=True, reason="ephemeral message of someone else")
        place = self.state.world.guild(origin.guild_id) if origin.guild_id else None
        data: dict[str, Any] = {"custom_id": custom_id, "component_type": component["type"]}
        if values is not None:
            data["values"] = values
        return await self._interact(
            interaction_type=INTERACTION_COMPONENT, data=data, user=who, guild=place, channel_id=origin.channel_id,
            locale=locale, member_permissions=member_permissions, app_permissions=BOT_PERMISSIONS,
            command_text=label, timeout=timeout, message=message.to_json(), original_message_id=message.id,
        )

    # -- answers -----------------------------------------------------------------------------------
    async def wait_for_reply(self, interaction_id: int, *, timeout: float | None = None) -> Reply:  # noqa: ASYNC109 - a plain deadline, as in asyncio.wait_for
        wait_s = self.default_timeout if timeout is None else timeout
        try:
            record, exchange = await self.state.wait_for_reply(
                interaction_id, timeout=wait_s, error_grace_s=self.error_grace_s
            )
        except TimeoutError:
            record = self.state.interactions[interaction_id]
            requests = self.requests_for(record)
            raise ReplyTimeout(
                f"no answer to {record.command_text!r} within {wait_s:.1f}s ({len(requests)} related requests)",
                requests,
            ) from None
        return self.reply_from(record, exchange)

    def requests_for(self, record: InteractionRecord) -> list[RecordedRequest]:
        marker = f"/interactions/{record.id}/"
        found = {r.seq: r for r in self.state.log.with_segment(record.token)}
        found.update((r.seq, r) for r in self.state.log.with_segment(str(record.id)) if marker in r.path)
        return [found[seq] for seq in sorted(found)]

    def reply_from(self, record: InteractionRecord, exchange: Exchange) -> Reply:
        deferred = record.response_type in (CALLBACK_DEFERRED_MESSAGE, CALLBACK_DEFERRED_UPDATE)
        reply = Reply(
            command=record.command_text,
            interaction_id=record.id,
            deferred=deferred,
            response_type=record.response_type,
            latency_ms=(exchange.request.received_at - record.dispatched_at) * 1000,
            requests=self.requests_for(record),
        )
        if exchange.error is not None:
            reply.error = exchange.error
            return reply
        body = exchange.request.json_body if isinstance(exchange.request.json_body, dict) else {}
        if exchange.response_type == CALLBACK_AUTOCOMPLETE:
            reply.choices = list((body.get("data") or {}).get("choices") or [])
            return reply
        if exchange.response_type == CALLBACK_MODAL:
            reply.modal = body.get("data")
            return reply
        message = exchange.message or {}
        reply.message_id = int(message["id"]) if message.get("id") else None
        reply.content = message.get("content") or None
        reply.embeds = list(message.get("embeds") or [])
        reply.components = list(message.get("components") or [])
        reply.flags = int(message.get("flags") or 0)
        reply.ephemeral = bool(reply.flags & FLAG_EPHEMERAL)
        urls = [a.get("url") for a in message.get("attachments") or []]
        reply.files = [
            ReplyFile.from_recorded(f, urls[i] if i < len(urls) else None) for i, f in enumerate(exchange.files)
        ]
        return reply


def _find_component(components: list[dict[str, Any]], custom_id: str) -> dict[str, Any] | None:
    for item in components:
        if item.get("custom_id") == custom_id:
            return item
        found = _find_component(item.get("components") or [], custom_id)
        if found is not None:
            return found
    return None
