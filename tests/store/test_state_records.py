"""Replay protection, the query log's statistics and catalog snapshots."""

from __future__ import annotations

from datetime import datetime, timedelta

import pytest
from store_clocks import T0

from bot.store.records import PairCount
from bot.store.state import StateStore


async def test_a_signature_is_accepted_once(state: StateStore) -> None:
    assert await state.remember_signature("sig-a", T0)
    assert not await state.remember_signature("sig-a", T0 + timedelta(seconds=5))
    assert await state.remember_signature("sig-b", T0 + timedelta(seconds=5))


async def test_old_signatures_are_pruned_after_keep_for(state: StateStore) -> None:
    keep = timedelta(minutes=10)
    assert await state.remember_signature("old", T0, keep_for=keep)
    assert not await state.remember_signature("old", T0 + timedelta(minutes=9), keep_for=keep)
    assert await state.remember_signature("new", T0 + timedelta(minutes=11), keep_for=keep)
    # Forgotten: the webhook's own timestamp window is what rejects a replay this old.
    assert await state.remember_signature("old", T0 + timedelta(minutes=12), keep_for=keep)


async def test_naive_timestamps_are_refused(state: StateStore) -> None:
    with pytest.raises(ValueError, match="timezone"):
        await state.remember_signature("sig", datetime(2026, 5, 1))  # noqa: DTZ001


async def log(
    state: StateStore,
    command: str,
    gpu: str | None,
    model: str | None,
    *,
    guild: int = 1,
    hit: bool = False,
    outcome: str = "ok",
    at: datetime = T0,
) -> None:
    args = {key: value for key, value in {"gpu": gpu, "model": model, "ctx": 8192}.items() if value is not None}
    await state.log_query(command, args, guild, 9, 12.5, hit, outcome, at)


async def test_query_stats_aggregate_a_guild_and_window(state: StateStore) -> None:
    for _ in range(3):
        await log(state, "fit", "t4", "qwen3-8b", hit=True)
    await log(state, "fit", "t4", "llama-3.1-8b")
    await log(state, "fit", "a100", "qwen3-8b", outcome="error")
    await log(state, "fit", "a100", "llama-3.1-8b")
    await log(state, "rank", "t4", None)
    await log(state, "gpu", None, None, at=T0 + timedelta(hours=1))
    await log(state, "fit", "t4", "qwen3-8b", guild=2)  # another guild
    await log(state, "fit", "t4", "qwen3-8b", at=T0 - timedelta(seconds=1))  # before the window
    await log(state, "fit", "t4", "qwen3-8b", at=T0 + timedelta(days=1))  # the window excludes its end

    stats = await state.query_stats(1, T0, T0 + timedelta(days=1), top=3)
    assert (stats.count, stats.cache_hits) == (8, 3)
    assert stats.by_command == {"fit": 6, "rank": 1, "gpu": 1}
    assert stats.by_outcome == {"ok": 7, "error": 1}
    assert stats.top_pairs == (
        PairCount(gpu="t4", model="qwen3-8b", count=3),
        PairCount(gpu="a100", model="llama-3.1-8b", count=1),
        PairCount(gpu="a100", model="qwen3-8b", count=1),
    )
    everywhere = await state.query_stats(None, T0, T0 + timedelta(days=1))
    assert everywhere.count == 9
    empty = await state.query_stats(3, T0, T0 + timedelta(days=1))
    assert (empty.count, empty.cache_hits, empty.by_command, empty.top_pairs) == (0, 0, {}, ())


async def test_query_log_can_be_pruned(state: StateStore) -> None:
    await log(state, "fit", "t4", "m", at=T0)
    await log(state, "fit", "t4", "m", at=T0 + timedelta(days=40))
    assert await state.prune_query_log(T0 + timedelta(days=30)) == 1
    assert (await state.query_stats(None, T0, T0 + timedelta(days=60))).count == 1


async def test_catalog_snapshots(state: StateStore) -> None:
    assert await state.last_catalog_snapshot() is None
    first = await state.record_catalog_version("2026.05.1", ["t4", "a100"], ["qwen3-8b"], T0)
    assert first.gpu_ids == ("a100", "t4")
    restarted = await state.record_catalog_version("2026.05.1", ["a100", "t4"], ["qwen3-8b"], T0 + timedelta(hours=1))
    assert restarted == first
    second = await state.record_catalog_version("2026.05.2", ["t4", "a100", "l4"], ["qwen3-8b"], T0 + timedelta(days=1))
    assert await state.last_catalog_snapshot() == second
    assert await state.last_catalog_snapshot(before=T0 + timedelta(hours=12)) == first
    assert await state.last_catalog_snapshot(before=second.recorded_at) == first
    assert await state.last_catalog_snapshot(before=T0) is None
    assert set(second.gpu_ids) - set(first.gpu_ids) == {"l4"}
