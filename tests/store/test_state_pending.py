"""Deferred, unanswered interactions in the state store, on both backends: recorded once, answered once,
claimed by one process of several, gone with their token's deadline, carried by export and import."""

from __future__ import annotations

import asyncio
from datetime import UTC, datetime, timedelta
from pathlib import Path
from types import SimpleNamespace

from store_clocks import T0, UtcClock

from bot.resume import orphaned, renew_claim
from bot.store.pending import MAX_ATTEMPTS, Pending
from bot.store.state import StateStore
from tests.pg import PostgresServer

SNOWFLAKE = 1216052881006788608
LEASE = timedelta(minutes=1)
REQUEST = {"job": "fit", "args": [{"$dict": {"ctx": 24576}}], "key": "k1"}


async def record(store: StateStore, interaction_id: int = SNOWFLAKE, *, owner: str = "host/shards-all#a1",
                 created_at: datetime = T0) -> bool:
    return await store.record_pending(
        interaction_id=interaction_id, application_id=SNOWFLAKE + 7, token="tok-" + str(interaction_id),
        command="fit", request=REQUEST, locale="zh-CN", created_at=created_at, owner=owner, lease=LEASE)


async def test_recorded_once_and_read_back(state: StateStore) -> None:
    assert await record(state)
    assert not await record(state), "a second record of the same interaction changes nothing"
    (row,) = await state.unanswered_interactions()
    assert (row.interaction_id, row.application_id, row.token) == (SNOWFLAKE, SNOWFLAKE + 7, f"tok-{SNOWFLAKE}")
    assert (row.command, row.request, row.locale, row.attempts) == ("fit", REQUEST, "zh-CN", 0)
    assert row.deadline == T0 + timedelta(minutes=15) and row.claimed_by == "host/shards-all#a1"
    assert row.lease_until == T0 + LEASE
    assert "tok-" not in repr(row), "the token is a credential: never in a repr (or a log line)"


async def test_answered_rows_are_done_and_keep_no_token(state: StateStore) -> None:
    await record(state)
    await record(state, SNOWFLAKE + 1)
    assert await state.finish_pending(SNOWFLAKE)
    assert not await state.finish_pending(SNOWFLAKE), "already done"
    assert [r.interaction_id for r in await state.unanswered_interactions()] == [SNOWFLAKE + 1]
    tables = (await state.export_tables())["tables"]["pending_interactions"]
    assert [row[tables["columns"].index("token")] for row in tables["rows"]] == [f"tok-{SNOWFLAKE + 1}"]


async def test_rows_go_with_their_tokens_deadline(state: StateStore, utc_clock: UtcClock) -> None:
    await record(state, created_at=T0 - timedelta(minutes=14))
    await record(state, SNOWFLAKE + 1)
    utc_clock.advance(timedelta(minutes=1, seconds=1))
    assert [r.interaction_id for r in await state.unanswered_interactions()] == [SNOWFLAKE + 1]
    assert (await state.export_tables())["tables"]["pending_interactions"]["rows"].__len__() == 1
    utc_clock.advance(timedelta(minutes=14))
    assert await state.unanswered_interactions() == []


async def test_of_several_takers_one_wins(state_target: Path | str, utc_clock: UtcClock) -> None:
    async with StateStore.open(state_target, clock=utc_clock) as one, \
            StateStore.open(state_target, clock=utc_clock) as two:
        await record(one)
        utc_clock.advance(LEASE + timedelta(seconds=1))  # the holder died; its lease ran out
        (row,) = await two.unanswered_interactions()
        takers = await asyncio.gather(*(store.take_over_pending(row, f"p{i}#x", LEASE)
                                        for i, store in enumerate([one, two] * 10)))
        taken = [t for t in takers if t is not None]
        assert len(taken) == 1 and taken[0].attempts == 1 and taken[0].claimed_by is not None
        assert await one.take_over_pending(row, "late#y", LEASE) is None, "a stale view cannot take it"
        assert taken[0].token == row.token


async def test_a_request_that_keeps_failing_is_given_up(state: StateStore) -> None:
    await record(state)
    for attempt in range(MAX_ATTEMPTS):
        (row,) = await state.unanswered_interactions()
        taken = await state.take_over_pending(row, f"p#{attempt}", LEASE)
        assert taken is not None and taken.attempts == attempt + 1
    assert await state.unanswered_interactions() == []


def pending(holder: str | None, lease_until: datetime | None) -> Pending:
    return Pending(interaction_id=1, application_id=2, token="t", command="fit", request={}, locale="en",
                   created_at=T0, deadline=T0 + timedelta(minutes=15), attempts=0, claimed_by=holder,
                   lease_until=lease_until)


def test_who_counts_as_gone() -> None:
    me, now = "pod-0#new", T0 + timedelta(seconds=10)
    later = T0 + LEASE
    assert not orphaned(pending(me, later), me, now), "this process is answering it live"
    assert orphaned(pending("pod-0#old", later), me, now), "this process's predecessor, restarted"
    assert not orphaned(pending("pod-1#abc", later), me, now), "another live process within its lease"
    assert orphaned(pending("pod-1#abc", T0), me, now), "another process whose lease ran out"
    assert orphaned(pending(None, None), me, now)


async def test_export_and_import_carry_what_is_owed(tmp_path: Path, pg_server: PostgresServer,
                                                    utc_clock: UtcClock) -> None:
    async with StateStore.open(tmp_path / "state.db", clock=utc_clock) as local:
        await record(local)
        await record(local, SNOWFLAKE + 1)
        await local.finish_pending(SNOWFLAKE + 1)
        dump = await local.export_tables()
    async with StateStore.open(pg_server.create_database(), clock=utc_clock) as shared:
        counts = await shared.import_tables(dump)
        assert counts["pending_interactions"] == 2
        (row,) = await shared.unanswered_interactions()
        assert (row.interaction_id, row.token, row.request) == (SNOWFLAKE, f"tok-{SNOWFLAKE}", REQUEST)
        assert row.created_at == T0 and row.created_at.tzinfo is not None
        assert datetime.now(UTC) > row.created_at


async def test_a_holder_still_answering_keeps_its_claim(state: StateStore, utc_clock: UtcClock) -> None:
    await record(state, owner="pod-0#a1")
    utc_clock.advance(LEASE - timedelta(seconds=5))
    assert await state.renew_pending(SNOWFLAKE, "pod-0#a1", LEASE)
    utc_clock.advance(timedelta(seconds=30))  # past the first lease, inside the renewed one
    (row,) = await state.unanswered_interactions()
    assert row.lease_until == T0 + 2 * LEASE - timedelta(seconds=5)
    assert not orphaned(row, "pod-1#b2", T0 + LEASE + timedelta(seconds=25)), "nobody else may take it"
    assert not await state.renew_pending(SNOWFLAKE, "pod-1#b2", LEASE), "only the holder renews"
    utc_clock.advance(LEASE)  # the holder stopped renewing: it died
    (row,) = await state.unanswered_interactions()
    taken = await state.take_over_pending(row, "pod-1#b2", LEASE)
    assert taken is not None
    assert not await state.renew_pending(SNOWFLAKE, "pod-0#a1", LEASE), "a claim taken over is not renewed"
    assert await state.finish_pending(SNOWFLAKE)
    assert not await state.renew_pending(SNOWFLAKE, "pod-1#b2", LEASE), "an answered row holds no claim"


async def test_an_answer_slower_than_its_lease_is_not_taken_over(state: StateStore, utc_clock: UtcClock) -> None:
    """The bot renews its claim while it answers: past the first lease, another process still finds the
    interaction held; once the answer stops renewing (done, or the process died), the claim runs out."""
    lease = timedelta(seconds=0.3)
    bot = SimpleNamespace(settings=SimpleNamespace(rigcheck_resume_lease_s=lease.total_seconds()), state=state,
                          claim_owner="pod-0#a1")
    await record(state, owner="pod-0#a1")  # held until T0 + LEASE

    async def lease_until() -> datetime | None:
        (row,) = await state.unanswered_interactions()
        return row.lease_until

    renewing = renew_claim(bot, SNOWFLAKE)  # type: ignore[arg-type]
    utc_clock.advance(LEASE + timedelta(seconds=10))  # far past the lease it was recorded with
    async with asyncio.timeout(20):
        while await lease_until() != utc_clock.now + lease:
            await asyncio.sleep(0.05)
    (row,) = await state.unanswered_interactions()
    assert not orphaned(row, "pod-1#b2", utc_clock.now), "still answering: nobody else may take it"
    renewing.cancel()
    await asyncio.sleep(lease.total_seconds())
    utc_clock.advance(timedelta(seconds=1))
    assert await lease_until() == utc_clock.now - timedelta(seconds=1) + lease, "no renewal after the answer"
    (row,) = await state.unanswered_interactions()
    assert orphaned(row, "pod-1#b2", utc_clock.now), "stopped renewing: the claim runs out"
