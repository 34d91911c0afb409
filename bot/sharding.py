"""Which Discord shards this process runs.

Discord sends every event of a guild to shard `(guild_id >> 22) % shard_count`, so a process that runs a
shard is the only one that ever sees that guild. When several processes split the shards (one pod of a
Kubernetes StatefulSet each), the split has to be computed the same way everywhere and must give every
shard to exactly one process: a shard run twice answers each interaction twice (the second reply fails),
a shard run nowhere leaves its guilds without a bot.

Pods get contiguous blocks (pod 0: shards 0-3, pod 1: 4-7, ...), balanced so block sizes differ by at most
one. Contiguous rather than round-robin because Discord rate-limits IDENTIFY per bucket
`shard_id % max_concurrency`: a block of adjacent shards spreads over the buckets and can connect at once,
and an operator reading "shards 8-11" in a log knows which pod it is.

Run as `python -m bot.sharding COMMAND...` it resolves the shards from the environment, exports them as
RIGCHECK_SHARD_IDS / RIGCHECK_SHARD_COUNT and replaces itself with COMMAND, so any entry point that reads
those two settings runs the right shards.
"""

from __future__ import annotations

import math
import os
import re
import sys
from collections.abc import Mapping, Sequence

_HOSTNAME = re.compile(r"^(?P<set>[a-z0-9]([-a-z0-9]*[a-z0-9])?)-(?P<ordinal>0|[1-9][0-9]*)$")


class ShardConfigError(ValueError):
    """The sharding settings contradict each other or cannot be read."""


def shard_for_guild(guild_id: int, shard_count: int) -> int:
    """The shard Discord routes `guild_id` to (the formula in Discord's gateway documentation)."""
    if shard_count < 1:
        raise ShardConfigError(f"shard_count must be at least 1, not {shard_count}")
    if guild_id < 0:
        raise ShardConfigError(f"guild ids are not negative: {guild_id}")
    return (guild_id >> 22) % shard_count


def shards_for_pod(ordinal: int, pods: int, shard_count: int) -> list[int]:
    """The contiguous block of shards pod `ordinal` of `pods` runs; blocks differ in size by at most one."""
    if pods < 1:
        raise ShardConfigError(f"the number of pods must be at least 1, not {pods}")
    if shard_count < pods:
        # A pod without shards would sit idle and still pass its probes, hiding a mistake in the numbers.
        raise ShardConfigError(f"{pods} pods need at least {pods} shards, not {shard_count}")
    if not 0 <= ordinal < pods:
        raise ShardConfigError(f"pod ordinal {ordinal} is outside 0..{pods - 1}; were the replicas scaled "
                               "without changing the shard settings?")
    base, extra = divmod(shard_count, pods)
    start = ordinal * base + min(ordinal, extra)
    size = base + (1 if ordinal < extra else 0)
    return list(range(start, start + size))


def ordinal_from_hostname(name: str) -> int:
    """`rigcheck-3` → 3: a StatefulSet names its pods `<set name>-<ordinal>`."""
    host = name.strip().split(".", 1)[0]
    match = _HOSTNAME.match(host)
    if match is None:
        raise ShardConfigError(
            f"cannot read a pod ordinal from {name!r}: expected a StatefulSet pod name such as 'rigcheck-3'"
        )
    return int(match["ordinal"])


def _int_setting(env: Mapping[str, str], key: str) -> int | None:
    raw = (env.get(key) or "").strip()
    if not raw:
        return None
    try:
        value = int(raw)
    except ValueError:
        raise ShardConfigError(f"{key} must be a whole number, not {raw!r}") from None
    if value < 1:
        raise ShardConfigError(f"{key} must be at least 1, not {value}")
    return value


def _shard_ids_setting(env: Mapping[str, str], shard_count: int | None) -> list[int] | None:
    raw = (env.get("RIGCHECK_SHARD_IDS") or "").strip()
    if not raw:
        return None
    try:
        ids = [int(part) for part in raw.split(",") if part.strip()]
    except ValueError:
        raise ShardConfigError(f"RIGCHECK_SHARD_IDS must be comma-separated numbers, not {raw!r}") from None
    if shard_count is None:
        # discord.py refuses shard_ids without a total: it could not tell which guilds the ids mean.
        raise ShardConfigError("RIGCHECK_SHARD_IDS needs RIGCHECK_SHARD_COUNT, the total over all processes")
    bad = [i for i in ids if not 0 <= i < shard_count]
    if bad or len(set(ids)) != len(ids) or not ids:
        raise ShardConfigError(f"RIGCHECK_SHARD_IDS={raw!r} must list distinct shards in 0..{shard_count - 1}")
    return ids


def resolve_shards(env: Mapping[str, str]) -> tuple[list[int] | None, int | None]:
    """(shard ids, shard count) for this process; (None, None) lets discord.py ask Discord for a count.

    In order: explicit RIGCHECK_SHARD_IDS + RIGCHECK_SHARD_COUNT; else POD_NAME with two of RIGCHECK_PODS,
    RIGCHECK_SHARDS_PER_POD and RIGCHECK_SHARD_COUNT; else RIGCHECK_SHARD_COUNT alone (every shard here).
    Empty values count as unset, the way an `.env` line `KEY=` reads.
    """
    shard_count = _int_setting(env, "RIGCHECK_SHARD_COUNT")
    explicit = _shard_ids_setting(env, shard_count)
    if explicit is not None:
        return explicit, shard_count
    pods = _int_setting(env, "RIGCHECK_PODS")
    per_pod = _int_setting(env, "RIGCHECK_SHARDS_PER_POD")
    pod_name = (env.get("POD_NAME") or "").strip()
    if pods is None and per_pod is None:
        # POD_NAME alone is set in any pod from the downward API; it only means sharding with a pod count.
        return None, shard_count
    if not pod_name:
        raise ShardConfigError("RIGCHECK_PODS / RIGCHECK_SHARDS_PER_POD need POD_NAME (the downward API's "
                               "metadata.name) to know which pod this is")
    if shard_count is None:
        if pods is None or per_pod is None:
            raise ShardConfigError("set RIGCHECK_SHARD_COUNT, or both RIGCHECK_PODS and RIGCHECK_SHARDS_PER_POD")
        shard_count = pods * per_pod
    if pods is None:
        assert per_pod is not None
        pods = math.ceil(shard_count / per_pod)
    if per_pod is not None and math.ceil(shard_count / pods) > per_pod:
        raise ShardConfigError(f"RIGCHECK_PODS={pods} × RIGCHECK_SHARDS_PER_POD={per_pod} cannot cover "
                               f"RIGCHECK_SHARD_COUNT={shard_count}")
    return shards_for_pod(ordinal_from_hostname(pod_name), pods, shard_count), shard_count


def exported_env(env: Mapping[str, str]) -> dict[str, str]:
    """`env` with the resolved shards written back as the two settings the bot reads."""
    ids, count = resolve_shards(env)
    out = dict(env)
    if ids is not None:
        out["RIGCHECK_SHARD_IDS"] = ",".join(str(i) for i in ids)
    if count is not None:
        out["RIGCHECK_SHARD_COUNT"] = str(count)
    return out


def main(argv: Sequence[str] | None = None) -> int:
    args = list(sys.argv[1:] if argv is None else argv)
    if args[:1] == ["--"]:
        args = args[1:]
    try:
        env = exported_env(os.environ)
    except ShardConfigError as problem:
        print(f"rigcheck sharding: {problem}", file=sys.stderr)
        return 2
    ids, count = env.get("RIGCHECK_SHARD_IDS"), env.get("RIGCHECK_SHARD_COUNT")
    print(f"rigcheck sharding: shards {ids or 'all'} of {count or 'Discord-recommended'}", file=sys.stderr)
    if not args:
        return 0
    sys.stdout.flush()
    sys.stderr.flush()
    os.execvpe(args[0], args, env)  # noqa: S606 - the pod's own command line, not outside input
    return 0  # pragma: no cover - execvpe does not return


if __name__ == "__main__":
    sys.exit(main())
