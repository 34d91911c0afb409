"""The values the state database hands out: immutable pydantic models."""

from __future__ import annotations

from datetime import datetime
from typing import Any, Literal

from pydantic import BaseModel, ConfigDict, PositiveInt, SecretStr


class _Record(BaseModel):
    model_config = ConfigDict(frozen=True)


class _Settings(_Record):
    # Rows written by a build that knew more fields must still load here.
    model_config = ConfigDict(frozen=True, extra="ignore")

    gpu_ids: tuple[str, ...] = ()
    engine: str | None = None
    ctx: PositiveInt | None = None
    kv: str | None = None
    locale: str | None = None


class GuildSettings(_Settings):
    """A server's defaults, chosen by its admins. Empty values mean "no preference"."""


class UserSettings(_Settings):
    """A person's own defaults; where set, they win over the server's."""


class Subscription(_Record):
    """A daily summary destination: a channel, an incoming webhook, or both."""

    id: int
    guild_id: int
    channel_id: int | None
    # A webhook URL carries its own token, so it must not show up in reprs or logs.
    webhook_url: SecretStr | None
    gpus: tuple[str, ...]
    ctx: PositiveInt
    locale: str
    active: bool
    disabled_reason: str | None
    created_at: datetime
    updated_at: datetime


DeliveryStatus = Literal["pending", "sent", "failed"]


class Delivery(_Record):
    """One attempt to post one subscription's summary for one day."""

    id: int
    subscription_id: int
    day: str
    status: DeliveryStatus
    forced: bool
    message_id: int | None
    reason: str | None
    created_at: datetime
    updated_at: datetime
    # Who holds the attempt ("instance#incarnation") and until when; past it, another process may take over.
    claimed_by: str | None = None
    lease_until: datetime | None = None


RunStatus = Literal["running", "done", "failed"]


class DailyRun(_Record):
    """One trigger of the daily summaries, as any process of the fleet can report it."""

    id: str
    day: str
    guild_id: int | None
    dry_run: bool
    forced: bool
    status: RunStatus
    started_by: str
    total: int | None
    counts: dict[str, int]
    results: list[dict[str, Any]] | None
    error: str | None
    created_at: datetime
    updated_at: datetime


class PairCount(_Record):
    gpu: str
    model: str
    count: int


class QueryStats(_Record):
    """Usage over a time window: totals, per command and outcome, and the most asked GPU/model pairs."""

    count: int
    cache_hits: int
    by_command: dict[str, int]
    by_outcome: dict[str, int]
    top_pairs: tuple[PairCount, ...]


class CatalogSnapshot(_Record):
    """Which GPUs and models a catalog version contained, and when the bot first ran with it."""

    id: int
    version: str
    gpu_ids: tuple[str, ...]
    model_ids: tuple[str, ...]
    recorded_at: datetime
