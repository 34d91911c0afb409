"""Persistence: a disposable reply cache and the durable, migrated state database."""

from bot.store.cache import CachedFile, CachedReply, CacheStats, ReplyCache, make_key
from bot.store.errors import SchemaTooNewError, StateCorruptError, StateStoreError
from bot.store.records import (
    CatalogSnapshot,
    Delivery,
    DeliveryStatus,
    GuildSettings,
    PairCount,
    QueryStats,
    Subscription,
    UserSettings,
)
from bot.store.state import StateStore

__all__ = [
    "CacheStats",
    "CachedFile",
    "CachedReply",
    "CatalogSnapshot",
    "Delivery",
    "DeliveryStatus",
    "GuildSettings",
    "PairCount",
    "QueryStats",
    "ReplyCache",
    "SchemaTooNewError",
    "StateCorruptError",
    "StateStore",
    "StateStoreError",
    "Subscription",
    "UserSettings",
    "make_key",
]
