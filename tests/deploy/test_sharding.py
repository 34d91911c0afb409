"""The shard split: every shard in exactly one pod, Discord's guild formula, pod names, the env resolver."""

from __future__ import annotations

import os
import subprocess
import sys
from pathlib import Path

import pytest
from hypothesis import given
from hypothesis import strategies as st

from bot.sandbox.snowflake import shard_of, snowflake_at
from bot.sharding import (
    ShardConfigError,
    ordinal_from_hostname,
    resolve_shards,
    shard_for_guild,
    shards_for_pod,
)

ROOT = Path(__file__).resolve().parents[2]


@pytest.mark.parametrize("shard_count", range(1, 65))
def test_every_shard_runs_in_exactly_one_pod(shard_count: int) -> None:
    for pods in range(1, shard_count + 1):
        blocks = [shards_for_pod(k, pods, shard_count) for k in range(pods)]
        flat = [s for block in blocks for s in block]
        assert sorted(flat) == list(range(shard_count)), (pods, shard_count)
        assert len(flat) == len(set(flat))
        sizes = [len(b) for b in blocks]
        assert min(sizes) >= 1 and max(sizes) - min(sizes) <= 1
        # Contiguous and in ordinal order: pod k's block ends where pod k+1's starts.
        assert flat == list(range(shard_count))
        assert all(b == list(range(b[0], b[-1] + 1)) for b in blocks)


@given(st.integers(1, 5000), st.data())
def test_split_covers_large_counts(shard_count: int, data: st.DataObject) -> None:
    pods = data.draw(st.integers(1, shard_count))
    owners = {}
    for k in range(pods):
        for s in shards_for_pod(k, pods, shard_count):
            assert s not in owners
            owners[s] = k
    assert len(owners) == shard_count


def test_split_examples() -> None:
    assert shards_for_pod(0, 2, 4) == [0, 1] and shards_for_pod(1, 2, 4) == [2, 3]
    assert [shards_for_pod(k, 3, 10) for k in range(3)] == [[0, 1, 2, 3], [4, 5, 6], [7, 8, 9]]
    assert shards_for_pod(0, 1, 3) == [0, 1, 2]


@pytest.mark.parametrize(("ordinal", "pods", "count"), [(2, 2, 4), (-1, 2, 4), (0, 0, 4), (0, 5, 4), (0, 1, 0)])
def test_split_rejects_impossible_layouts(ordinal: int, pods: int, count: int) -> None:
    with pytest.raises(ShardConfigError):
        shards_for_pod(ordinal, pods, count)


@given(st.integers(0, 2**63 - 1), st.integers(1, 10_000))
def test_guild_shard_matches_discord(guild_id: int, shard_count: int) -> None:
    # The formula from Discord's gateway documentation, as discord.py and the sandbox apply it.
    assert shard_for_guild(guild_id, shard_count) == (guild_id >> 22) % shard_count == shard_of(guild_id, shard_count)


def test_guild_shard_known_values() -> None:
    # Guilds created one millisecond apart have consecutive timestamps, hence consecutive shards.
    first, second = snowflake_at(1_700_000_000_000), snowflake_at(1_700_000_000_001)
    assert {shard_for_guild(first, 2), shard_for_guild(second, 2)} == {0, 1}
    assert shard_for_guild(41771983423143937, 1) == 0
    assert shard_for_guild(41771983423143937, 10) == 4
    with pytest.raises(ShardConfigError):
        shard_for_guild(1, 0)


@pytest.mark.parametrize(("name", "ordinal"), [
    ("rigcheck-0", 0), ("rigcheck-3", 3), ("rigcheck-12", 12), ("my-bot-set-7", 7),
    ("rigcheck-2.rigcheck.default.svc.cluster.local", 2), (" rigcheck-1\n", 1),
])
def test_ordinal_from_hostname(name: str, ordinal: int) -> None:
    assert ordinal_from_hostname(name) == ordinal


@pytest.mark.parametrize("name", ["", "rigcheck", "rigcheck-", "rigcheck-x", "rigcheck-01", "-3", "3",
                                  "rigcheck-7f9c4-abcde", "Rigcheck-1", "rigcheck--1"])
def test_ordinal_from_bad_hostname_says_what_it_expected(name: str) -> None:
    with pytest.raises(ShardConfigError, match="StatefulSet pod name"):
        ordinal_from_hostname(name)


def test_resolve_explicit_settings_win() -> None:
    env = {"RIGCHECK_SHARD_IDS": "1, 3", "RIGCHECK_SHARD_COUNT": "4", "POD_NAME": "rigcheck-0", "RIGCHECK_PODS": "2"}
    assert resolve_shards(env) == ([1, 3], 4)


def test_resolve_from_pod_name() -> None:
    base = {"POD_NAME": "rigcheck-1"}
    assert resolve_shards({**base, "RIGCHECK_PODS": "2", "RIGCHECK_SHARD_COUNT": "4"}) == ([2, 3], 4)
    assert resolve_shards({**base, "RIGCHECK_PODS": "2", "RIGCHECK_SHARDS_PER_POD": "3"}) == ([3, 4, 5], 6)
    assert resolve_shards({**base, "RIGCHECK_SHARDS_PER_POD": "4", "RIGCHECK_SHARD_COUNT": "6"}) == ([3, 4, 5], 6)
    three = {"RIGCHECK_PODS": "3", "RIGCHECK_SHARDS_PER_POD": "4", "RIGCHECK_SHARD_COUNT": "10"}
    assert [resolve_shards({**three, "POD_NAME": f"rigcheck-{k}"})[0] for k in range(3)] == [
        [0, 1, 2, 3], [4, 5, 6], [7, 8, 9]]


def test_resolve_falls_back_to_discord() -> None:
    assert resolve_shards({}) == (None, None)
    assert resolve_shards({"POD_NAME": "rigcheck-0"}) == (None, None)
    assert resolve_shards({"RIGCHECK_SHARD_COUNT": "3"}) == (None, 3)
    # `.env` lines left blank read as unset.
    assert resolve_shards({"RIGCHECK_SHARD_IDS": "", "RIGCHECK_SHARD_COUNT": "", "RIGCHECK_PODS": ""}) == (None, None)


@pytest.mark.parametrize(("env", "message"), [
    ({"RIGCHECK_SHARD_IDS": "0"}, "needs RIGCHECK_SHARD_COUNT"),
    ({"RIGCHECK_SHARD_IDS": "0,a", "RIGCHECK_SHARD_COUNT": "2"}, "comma-separated numbers"),
    ({"RIGCHECK_SHARD_IDS": "2", "RIGCHECK_SHARD_COUNT": "2"}, "distinct shards in 0..1"),
    ({"RIGCHECK_SHARD_IDS": "1,1", "RIGCHECK_SHARD_COUNT": "2"}, "distinct"),
    ({"RIGCHECK_SHARD_COUNT": "zero"}, "whole number"),
    ({"RIGCHECK_SHARD_COUNT": "0"}, "at least 1"),
    ({"RIGCHECK_PODS": "2", "RIGCHECK_SHARD_COUNT": "4"}, "need POD_NAME"),
    ({"POD_NAME": "rigcheck-0", "RIGCHECK_PODS": "2"}, "RIGCHECK_SHARD_COUNT"),
    ({"POD_NAME": "rigcheck-2", "RIGCHECK_PODS": "2", "RIGCHECK_SHARD_COUNT": "4"}, "outside 0..1"),
    ({"POD_NAME": "rigcheck-0", "RIGCHECK_PODS": "2", "RIGCHECK_SHARDS_PER_POD": "2", "RIGCHECK_SHARD_COUNT": "5"},
     "cannot cover"),
    ({"POD_NAME": "rigcheck-0", "RIGCHECK_PODS": "3", "RIGCHECK_SHARD_COUNT": "2"}, "need at least 3 shards"),
    ({"POD_NAME": "web-abc12", "RIGCHECK_PODS": "2", "RIGCHECK_SHARD_COUNT": "4"}, "StatefulSet pod name"),
])
def test_resolve_errors_are_clear(env: dict[str, str], message: str) -> None:
    with pytest.raises(ShardConfigError, match=message):
        resolve_shards(env)


def _run_wrapper(env: dict[str, str], *command: str) -> subprocess.CompletedProcess[str]:
    clean = {k: v for k, v in os.environ.items() if not k.startswith("RIGCHECK_") and k != "POD_NAME"}
    return subprocess.run([sys.executable, "-m", "bot.sharding", "--", *command], env={**clean, **env}, cwd=ROOT,
                          capture_output=True, text=True, timeout=60, check=False)


def test_wrapper_exports_the_pods_shards_and_execs() -> None:
    show = "import os; print(os.environ['RIGCHECK_SHARD_IDS'], os.environ['RIGCHECK_SHARD_COUNT'])"
    done = _run_wrapper({"POD_NAME": "rigcheck-1", "RIGCHECK_PODS": "2", "RIGCHECK_SHARDS_PER_POD": "2"},
                        sys.executable, "-c", show)
    assert done.returncode == 0, done.stderr
    assert done.stdout.strip() == "2,3 4"
    assert "shards 2,3 of 4" in done.stderr


def test_wrapper_refuses_a_pod_beyond_the_configured_count() -> None:
    done = _run_wrapper({"POD_NAME": "rigcheck-2", "RIGCHECK_PODS": "2", "RIGCHECK_SHARD_COUNT": "4"},
                        sys.executable, "-c", "print('started')")
    assert done.returncode == 2 and "started" not in done.stdout
    assert "outside 0..1" in done.stderr
