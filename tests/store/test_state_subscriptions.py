"""Settings, subscriptions and the delivery bookkeeping that keeps a summary from going out twice."""

from __future__ import annotations

import asyncio
import sqlite3
from datetime import timedelta
from pathlib import Path

import pytest
from store_clocks import UtcClock

from bot.store.records import Delivery, GuildSettings, Subscription, UserSettings
from bot.store.state import UNSUBSCRIBED, StateStore

DAY = "2026-05-01"
HOOK = "https://discord.com/api/webhooks/1/very-secret-token"


async def subscribed(store: StateStore) -> Subscription:
    """Server 1's channel 10 subscribed to one GPU."""
    return await store.add_subscription(1, 10, None, ["x"], 1024, "en")


async def begun(store: StateStore, sub: Subscription) -> Delivery:
    """Today's delivery of `sub`, begun: the first begin of a day always is."""
    delivery = await store.begin_delivery(sub.id, DAY)
    assert delivery is not None
    return delivery


async def test_settings_default_set_clear_and_stay_separate(state: StateStore) -> None:
    assert await state.get_guild_settings(1) == GuildSettings()
    await state.set_guild_settings(1, GuildSettings(gpu_ids=("nvidia-t4-16gb",), engine="llama.cpp", ctx=8192))
    await state.set_user_settings(1, UserSettings(locale="zh-CN"))
    assert (await state.get_guild_settings(1)).gpu_ids == ("nvidia-t4-16gb",)
    assert await state.get_user_settings(1) == UserSettings(locale="zh-CN")
    await state.set_guild_settings(1, GuildSettings(ctx=4096))
    assert await state.get_guild_settings(1) == GuildSettings(ctx=4096)
    assert await state.clear_guild_settings(1)
    assert not await state.clear_guild_settings(1)
    assert await state.get_guild_settings(1) == GuildSettings()
    assert await state.get_user_settings(1) == UserSettings(locale="zh-CN")


async def test_subscribing_again_updates_the_same_subscription(state: StateStore, utc_clock: UtcClock) -> None:
    first = await state.add_subscription(1, 10, None, ["nvidia-t4-16gb"], 32768, "en")
    utc_clock.advance(timedelta(hours=1))
    again = await state.add_subscription(1, 10, None, ["nvidia-a100-40gb", "nvidia-t4-16gb"], 8192, "zh-CN")
    assert again.id == first.id
    assert (again.gpus, again.ctx, again.locale) == (("nvidia-a100-40gb", "nvidia-t4-16gb"), 8192, "zh-CN")
    assert again.created_at == first.created_at < again.updated_at
    other_channel = await state.add_subscription(1, 11, None, ["x"], 1024, "en")
    other_guild = await state.add_subscription(2, 10, None, ["x"], 1024, "en")
    assert len({first.id, other_channel.id, other_guild.id}) == 3
    assert [s.id for s in await state.list_subscriptions(1)] == [first.id, other_channel.id]
    assert len(await state.list_subscriptions()) == 3


async def test_webhook_only_subscription_is_one_per_guild_and_hides_its_url(state: StateStore) -> None:
    first = await state.add_subscription(5, None, HOOK, ["x"], 1024, "en")
    second = await state.add_subscription(5, None, HOOK + "2", ["y"], 1024, "en")
    assert second.id == first.id
    assert second.webhook_url is not None
    assert second.webhook_url.get_secret_value() == HOOK + "2"
    assert "very-secret-token" not in repr(second)
    with pytest.raises(ValueError, match="channel"):
        await state.add_subscription(5, None, None, ["x"], 1024, "en")


async def test_remove_disable_and_resubscribe(state: StateStore) -> None:
    a = await subscribed(state)
    b = await state.add_subscription(1, 11, None, ["x"], 1024, "en")
    c = await state.add_subscription(1, 12, None, ["x"], 1024, "en")
    assert await state.remove_subscription(1, 10) == 1
    assert await state.remove_subscription(1, 10) == 0
    assert [s.id for s in await state.list_subscriptions(1)] == [b.id, c.id]
    removed = await state.get_subscription(a.id)
    assert removed is not None
    assert (removed.active, removed.disabled_reason) == (False, UNSUBSCRIBED)
    assert await state.disable_subscription(b.id, "missing access to channel")
    assert not await state.disable_subscription(b.id, "again")
    assert [s.id for s in await state.list_subscriptions(1)] == [c.id]
    assert len(await state.list_subscriptions(1, active_only=False)) == 3
    back = await state.add_subscription(1, 11, None, ["x"], 1024, "en")
    assert (back.id, back.active, back.disabled_reason) == (b.id, True, None)
    assert await state.remove_subscription(1) == 2
    assert await state.list_subscriptions(1) == []


async def test_a_day_is_delivered_once_unless_forced(state: StateStore) -> None:
    sub = await subscribed(state)
    first = await state.begin_delivery(sub.id, DAY)
    assert first is not None
    assert (first.status, first.forced) == ("pending", False)
    assert await state.begin_delivery(sub.id, DAY) is None  # in flight
    assert await state.begin_delivery(sub.id, DAY, force=True) is None  # even forced: it may be posting now
    assert await state.mark_sent(first.id, 555)
    assert not await state.mark_sent(first.id, 556)
    assert await state.begin_delivery(sub.id, DAY) is None  # already sent
    forced = await state.begin_delivery(sub.id, DAY, force=True)
    assert forced is not None
    assert forced.forced
    assert await state.mark_sent(forced.id, 777)
    assert await state.begin_delivery(sub.id, "2026-05-02") is not None
    delivered = await state.deliveries_for(DAY)
    assert [(d.status, d.message_id) for d in delivered] == [("sent", 555), ("sent", 777)]


async def test_a_failed_day_can_be_retried(state: StateStore) -> None:
    sub = await subscribed(state)
    attempt = await state.begin_delivery(sub.id, DAY)
    assert attempt is not None
    assert await state.mark_failed(attempt.id, "HTTP 503")
    assert not await state.mark_sent(attempt.id, 1)
    retry = await state.begin_delivery(sub.id, DAY)
    assert retry is not None
    assert [d.status for d in await state.deliveries_for(DAY)] == ["failed", "pending"]
    assert (await state.deliveries_for(DAY))[0].reason == "HTTP 503"


async def test_a_delivery_interrupted_by_a_crash_is_found_after_restart(tmp_path: Path, utc_clock: UtcClock) -> None:
    path = tmp_path / "state.db"
    async with StateStore.open(path, clock=utc_clock) as store:
        sub = await subscribed(store)
        first = await begun(store, sub)
    async with StateStore.open(path, clock=utc_clock) as store:
        assert await store.pending_deliveries() == [first]
        assert await store.begin_delivery(sub.id, DAY) is None
        assert await store.mark_sent(first.id, 42)
        assert await store.pending_deliveries() == []


async def test_concurrent_triggers_get_one_delivery(tmp_path: Path, utc_clock: UtcClock) -> None:
    path = tmp_path / "state.db"
    async with StateStore.open(path, clock=utc_clock) as one, StateStore.open(path, clock=utc_clock) as two:
        sub = await subscribed(one)
        results = await asyncio.gather(*(store.begin_delivery(sub.id, DAY) for store in [one, two] * 20))
    assert sum(result is not None for result in results) == 1


async def test_the_database_itself_rejects_a_second_scheduled_delivery(tmp_path: Path, utc_clock: UtcClock) -> None:
    path = tmp_path / "state.db"
    async with StateStore.open(path, clock=utc_clock) as store:
        sub = await subscribed(store)
        await store.mark_sent((await begun(store, sub)).id, 1)
    insert = (
        "INSERT INTO deliveries (subscription_id, day, status, forced, created_at, updated_at)"
        " VALUES (?, ?, ?, ?, 'x', 'x')"
    )
    with sqlite3.connect(path) as db:
        with pytest.raises(sqlite3.IntegrityError):
            db.execute(insert, (sub.id, DAY, "pending", 0))
        db.execute(insert, (sub.id, DAY, "pending", 1))
        with pytest.raises(sqlite3.IntegrityError):
            db.execute(insert, (sub.id, DAY, "pending", 1))


async def test_delivery_arguments_are_checked(state: StateStore) -> None:
    sub = await subscribed(state)
    for bad in ("2026-5-1", "2026-02-30", "yesterday"):
        with pytest.raises(ValueError):
            await state.begin_delivery(sub.id, bad)
    with pytest.raises(LookupError):
        await state.begin_delivery(sub.id + 99, DAY)
