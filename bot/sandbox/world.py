"""Who and what exists in the sandbox: the application, its bot user, guilds, channels and people."""

from __future__ import annotations

from typing import Any

from pydantic import BaseModel, ConfigDict, Field

from bot.sandbox.snowflake import snowflake_at

# Fixed ids keep test output stable. The two guilds sit on different shards of a two-shard bot:
# shard = (guild_id >> 22) % shard_count.
_BASE_MS = 1_700_000_000_000

DEFAULT_MEMBER_PERMISSIONS = 1_071_698_660_929  # Discord's default @everyone permissions
BOT_PERMISSIONS = 2_147_483_647 & ~0x8  # broad, but not Administrator
DEFAULT_ATTACHMENT_SIZE_LIMIT = 10 * 1024 * 1024


class SandboxUser(BaseModel):
    model_config = ConfigDict(frozen=True)

    id: int
    username: str
    global_name: str | None = None
    bot: bool = False

    def to_json(self) -> dict[str, Any]:
        data: dict[str, Any] = {
            "id": str(self.id),
            "username": self.username,
            "discriminator": "0",
            "global_name": self.global_name,
            "avatar": None,
            "public_flags": 0,
        }
        if self.bot:
            data["bot"] = True
        return data


class SandboxChannel(BaseModel):
    model_config = ConfigDict(frozen=True)

    id: int
    name: str
    type: int = 0  # GUILD_TEXT
    topic: str | None = None

    def to_json(self, guild_id: int, *, permissions: int | None = None) -> dict[str, Any]:
        data: dict[str, Any] = {
            "id": str(self.id),
            "type": self.type,
            "guild_id": str(guild_id),
            "name": self.name,
            "position": 0,
            "permission_overwrites": [],
            "nsfw": False,
            "topic": self.topic,
            "last_message_id": None,
            "rate_limit_per_user": 0,
            "parent_id": None,
            "flags": 0,
        }
        if permissions is not None:
            data["permissions"] = str(permissions)
        return data


class SandboxGuild(BaseModel):
    model_config = ConfigDict(frozen=True)

    id: int
    name: str
    preferred_locale: str = "en-US"
    channels: tuple[SandboxChannel, ...] = ()
    owner_id: int = 0

    def everyone_role_json(self) -> dict[str, Any]:
        return {
            "id": str(self.id),
            "name": "@everyone",
            "color": 0,
            "hoist": False,
            "position": 0,
            "permissions": str(DEFAULT_MEMBER_PERMISSIONS),
            "managed": False,
            "mentionable": False,
            "flags": 0,
        }

    def partial_json(self) -> dict[str, Any]:
        return {"id": str(self.id), "locale": self.preferred_locale, "features": []}


def member_json(user: SandboxUser, *, permissions: int | None = None) -> dict[str, Any]:
    data: dict[str, Any] = {
        "user": user.to_json(),
        "nick": None,
        "avatar": None,
        "roles": [],
        "joined_at": "2023-11-14T22:13:20+00:00",
        "premium_since": None,
        "deaf": False,
        "mute": False,
        "flags": 0,
        "pending": False,
        "communication_disabled_until": None,
    }
    if permissions is not None:
        data["permissions"] = str(permissions)
    return data


class World(BaseModel):
    """The fixed cast of a sandbox. Defaults: one application, two guilds on different shards."""

    model_config = ConfigDict(frozen=True)

    token: str = "sandbox-token.not-a-real-secret"  # noqa: S105 - a placeholder the loopback stand-in checks, never a credential
    application_id: int = snowflake_at(_BASE_MS - 10_000)
    bot_user: SandboxUser = SandboxUser(id=snowflake_at(_BASE_MS - 10_000), username="rigcheck", bot=True)
    owner: SandboxUser = SandboxUser(id=snowflake_at(_BASE_MS - 20_000), username="owner")
    tester: SandboxUser = SandboxUser(id=snowflake_at(_BASE_MS - 30_000), username="tester", global_name="Tester")
    guilds: tuple[SandboxGuild, ...] = Field(
        default=(
            SandboxGuild(
                id=snowflake_at(_BASE_MS),
                name="Sandbox Guild",
                channels=(SandboxChannel(id=snowflake_at(_BASE_MS + 100), name="general"),),
            ),
            SandboxGuild(
                id=snowflake_at(_BASE_MS + 1),
                name="Second Guild",
                preferred_locale="zh-CN",
                channels=(SandboxChannel(id=snowflake_at(_BASE_MS + 200), name="chat"),),
            ),
        )
    )
    attachment_size_limit: int = DEFAULT_ATTACHMENT_SIZE_LIMIT
    recommended_shards: int = 1

    def guild(self, guild_id: int) -> SandboxGuild | None:
        return next((g for g in self.guilds if g.id == guild_id), None)

    def channel(self, channel_id: int) -> tuple[SandboxGuild, SandboxChannel] | None:
        for guild in self.guilds:
            for channel in guild.channels:
                if channel.id == channel_id:
                    return guild, channel
        return None

    @property
    def default_guild(self) -> SandboxGuild:
        return self.guilds[0]

    def guild_create_json(self, guild: SandboxGuild) -> dict[str, Any]:
        return {
            "id": str(guild.id),
            "name": guild.name,
            "icon": None,
            "splash": None,
            "discovery_splash": None,
            "owner_id": str(guild.owner_id or self.owner.id),
            "afk_channel_id": None,
            "afk_timeout": 300,
            "verification_level": 0,
            "default_message_notifications": 0,
            "explicit_content_filter": 0,
            "roles": [guild.everyone_role_json()],
            "emojis": [],
            "stickers": [],
            "features": [],
            "mfa_level": 0,
            "system_channel_id": None,
            "system_channel_flags": 0,
            "rules_channel_id": None,
            "max_members": 500_000,
            "vanity_url_code": None,
            "description": None,
            "banner": None,
            "premium_tier": 0,
            "premium_subscription_count": 0,
            "preferred_locale": guild.preferred_locale,
            "public_updates_channel_id": None,
            "nsfw_level": 0,
            "premium_progress_bar_enabled": False,
            "joined_at": "2023-11-14T22:13:20+00:00",
            "large": False,
            "unavailable": False,
            "member_count": 2,
            "voice_states": [],
            "members": [member_json(self.bot_user)],
            "channels": [c.to_json(guild.id) for c in guild.channels],
            "threads": [],
            "presences": [],
            "stage_instances": [],
            "guild_scheduled_events": [],
            "soundboard_sounds": [],
        }
