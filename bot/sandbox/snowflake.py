"""Time-based snowflakes: discord.py derives `created_at` and interaction expiry from them."""

from __future__ import annotations

import itertools
import time

DISCORD_EPOCH_MS = 1_420_070_400_000

_increment = itertools.count()


def snowflake_at(unix_ms: int, increment: int = 0) -> int:
    return ((unix_ms - DISCORD_EPOCH_MS) << 22) | (increment & 0xFFF)


def new_snowflake() -> int:
    return snowflake_at(int(time.time() * 1000), next(_increment))


def shard_of(guild_id: int, shard_count: int) -> int:
    return (guild_id >> 22) % shard_count
