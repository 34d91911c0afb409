"""Community reports in the state store, on both backends: limits in one transaction, moderation, summary."""

from __future__ import annotations

from datetime import timedelta

import pytest
from store_clocks import UtcClock

from bot.store.reports import RateLimited, ReportDraft, ReportStatus
from bot.store.state import StateStore

HOUR = timedelta(hours=1)


def draft(decode_tps: float = 35.0, quant_id: str = "q4_k_m", gpu_count: int = 1) -> ReportDraft:
    return ReportDraft(gpu_id="nvidia-t4-16gb", gpu_count=gpu_count, model_id="qwen3-8b", quant_id=quant_id,
                       engine="llama.cpp", decode_tps=decode_tps, source="manual", estimate_decode_tps=36.0,
                       estimate_decode_tps_low=31.0, estimate_decode_tps_high=41.0)


async def add(state: StateStore, d: ReportDraft, reporter: str = "a", guild: int | None = 1, *,
              status: ReportStatus = "accepted", user_limit: int = 10, guild_limit: int = 10) -> int:
    stored = await state.add_report(d, reporter=reporter, guild_id=guild, status=status,
                                    reason=None, user_limit=user_limit, guild_limit=guild_limit, window=HOUR)
    return stored.id


async def test_salt_is_generated_once_and_kept(state: StateStore) -> None:
    first = await state.report_salt()
    assert len(first) == 64 and await state.report_salt() == first
    assert await state.report_salt("configured") == "configured"


async def test_stored_report_keeps_values_and_the_estimate(state: StateStore) -> None:
    report_id = await add(state, draft())
    stored = await state.get_report(report_id)
    assert stored is not None
    assert (stored.decode_tps, stored.estimate_decode_tps_low, stored.status, stored.guild_id) == (35.0, 31.0,
                                                                                                  "accepted", 1)
    assert (await state.reports_by("a"))[0].id == report_id and await state.reports_by("b") == []


async def test_community_values_only_accepted_and_same_setup(state: StateStore) -> None:
    await add(state, draft(30.0))
    await add(state, draft(40.0), reporter="b")
    await add(state, draft(900.0), reporter="c", status="held")
    await add(state, draft(20.0, gpu_count=2), reporter="d")
    await add(state, draft(50.0, quant_id="q8_0"), reporter="e")
    found = await state.community_values("nvidia-t4-16gb", 1, "qwen3-8b", ["q4_k_m", "q8_0"], "llama.cpp")
    assert found == {"q4_k_m": [30.0, 40.0], "q8_0": [50.0]}


async def test_user_and_guild_limits_are_enforced_at_insert(state: StateStore, utc_clock: UtcClock) -> None:
    for _ in range(2):
        await add(state, draft(), user_limit=2)
    with pytest.raises(RateLimited) as raised:
        await add(state, draft(), user_limit=2)
    assert raised.value.scope == "user"
    await add(state, draft(), reporter="b", guild_limit=3)
    with pytest.raises(RateLimited) as by_guild:
        await add(state, draft(), reporter="c", guild_limit=3)
    assert by_guild.value.scope == "guild"
    assert await state.report_counts("a", 1, HOUR) == (2, 3)
    utc_clock.advance(HOUR + timedelta(seconds=1))
    await add(state, draft(), user_limit=2, guild_limit=3)  # the window has passed


async def test_delete_only_ones_own_and_moderation(state: StateStore) -> None:
    report_id = await add(state, draft())
    assert not await state.delete_report(report_id, "someone else")
    assert not await state.set_report_status(report_id, "hidden", "manager", guild_id=2)  # another server's
    assert await state.set_report_status(report_id, "hidden", "manager", guild_id=1)
    assert [r.id for r in await state.reports_with_status("hidden")] == [report_id]
    assert await state.delete_report(report_id, "a")
    assert await state.get_report(report_id) is None


async def test_opt_out_round_trip(state: StateStore) -> None:
    assert not await state.reports_opted_out(5)
    await state.set_reports_opt_out(5, True)
    await state.set_reports_opt_out(5, True)
    assert await state.reports_opted_out(5) and not await state.reports_opted_out(None)
    await state.set_reports_opt_out(5, False)
    assert not await state.reports_opted_out(5)
