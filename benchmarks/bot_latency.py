"""Interaction latency under load, through the loopback Discord and the real bot process.

    python benchmarks/bot_latency.py [--total 1000] [--concurrency 25]

Sends `total` mixed commands (/fit, /rank, /gpu, /whatgpu, /compare) with `concurrency` in flight; every
other command is a query nobody asked before (uncached: computed and its chart drawn), the rest repeat
a query already answered (cached). For each it measures, from dispatch:

- first visible answer: the first message with an embed (a "thinking…" placeholder does not count);
- chart: the first message that carries the chart file.

Prints p50/p90/p99 of both, per cache state, the resident memory of the bot and its render workers, and
the CPU time per command of the bot, its render workers and the loopback Discord with this client. With
`concurrency` commands always in flight, the mean time to the chart is `concurrency` / throughput, and
throughput is what the CPUs allow: the CPU line says where it goes.
Goal: p99 ≤ 1 s to the first visible answer and ≤ 2 s to the chart at 25 in flight.

The figures depend on the machine; on a shared machine (other processes competing for the same cores)
they vary from run to run, so compare runs made on the same idle machine. The last line says how much of
the machine's CPU other processes took during the run.
"""

from __future__ import annotations

import argparse
import asyncio
import itertools
import os
import random
import sys
import tempfile
import time
from dataclasses import dataclass
from pathlib import Path

sys.path.insert(0, str(Path(__file__).resolve().parents[1]))

from bot.sandbox import Sandbox
from bot.sandbox.state import InteractionRecord

GPUS = ["t4", "a30", "rtx 4090", "rtx 3090", "a100 40gb", "l4", "rtx 4060 ti 16gb", "h100 sxm5 80gb", "rtx 3060 12gb"]
MODELS = ["qwen3-8b", "llama-3.1-8b", "qwen3-14b", "gemma-3-12b", "mistral-7b", "qwen3-32b", "llama-3.3-70b"]


def queries() -> itertools.cycle[str] | list[str]:
    """Distinct queries, cycling through the commands; the context makes each one new."""
    out = []
    for k in range(2, 4000):
        ctx = f"{k}k" if k < 1000 else str(k * 997)
        gpu, model = GPUS[k % len(GPUS)], MODELS[k % len(MODELS)]
        out += [f"/fit gpu:{gpu} model:{model} ctx:{ctx}", f"/rank gpu:{gpu} ctx:{ctx}", f"/gpu gpu:{gpu} ctx:{ctx}",
                f"/whatgpu model:{model} ctx:{ctx}",
                f"/compare gpu:{gpu} model:{model} gpu2:{GPUS[(k + 1) % len(GPUS)]} ctx:{ctx}"]
    return out


@dataclass
class Sample:
    command: str
    cached: bool
    first_s: float
    chart_s: float | None


def pct(values: list[float], q: float) -> float:
    ordered = sorted(values)
    return ordered[min(len(ordered) - 1, round(q * (len(ordered) - 1)))] if ordered else float("nan")


def line(label: str, values: list[float]) -> str:
    ms = [v * 1000 for v in values]
    return (f"{label:38s} n={len(ms):4d}  p50 {pct(ms, 0.5):7.0f} ms  p90 {pct(ms, 0.9):7.0f} ms  "
            f"p99 {pct(ms, 0.99):7.0f} ms")


def timings(record: InteractionRecord) -> tuple[float | None, float | None]:
    first = chart = None
    for exchange in record.exchanges:
        if exchange.error is not None or not exchange.message:
            continue
        if first is None and exchange.message.get("embeds"):
            first = exchange.at - record.dispatched_at
        if chart is None and exchange.files:
            chart = exchange.at - record.dispatched_at
    return first, chart


def rss_kib(pid: int) -> int:
    """Resident memory of a process and all its descendants (the render workers)."""
    total = 0
    todo = [pid]
    while todo:
        current = todo.pop()
        try:
            status = Path(f"/proc/{current}/status").read_text()
            total += next(int(x.split()[1]) for x in status.splitlines() if x.startswith("VmRSS:"))
            for task in Path(f"/proc/{current}/task").iterdir():
                todo += [int(c) for c in (task / "children").read_text().split()]
        except (OSError, StopIteration, ValueError):
            continue
    return total


def cpu_s(pid: int) -> tuple[float, float]:
    """CPU seconds (user + system) used so far by the bot process and by its descendants (the render workers)."""
    tick = os.sysconf("SC_CLK_TCK")
    own = workers = 0.0
    todo = [(pid, True)]
    while todo:
        current, is_bot = todo.pop()
        try:
            fields = Path(f"/proc/{current}/stat").read_text().rsplit(")", 1)[1].split()
            used = (int(fields[11]) + int(fields[12])) / tick
            if is_bot:
                own += used
            else:
                workers += used
            for task in Path(f"/proc/{current}/task").iterdir():
                todo += [(int(c), False) for c in (task / "children").read_text().split()]
        except (OSError, IndexError, ValueError):
            continue
    return own, workers


def machine_busy_s() -> float:
    """CPU seconds all processes on the machine have used so far, over all its cores (/proc/stat)."""
    fields = [int(x) for x in Path("/proc/stat").read_text().splitlines()[0].split()[1:9]]
    user, nice, system, _idle, _iowait, irq, softirq, steal = fields
    return (user + nice + system + irq + softirq + steal) / os.sysconf("SC_CLK_TCK")


async def run(total: int, concurrency: int, seed: int) -> None:
    rng = random.Random(seed)
    fresh = iter(queries())
    answered: list[str] = []
    samples: list[Sample] = []
    failures: list[str] = []
    refused: list[str] = []
    users = itertools.count(50_000)
    with tempfile.TemporaryDirectory() as data:
        async with Sandbox(reply_timeout_s=60) as sb:
            bot = await sb.start_bot([sys.executable, "-m", "bot"], env={
                "RIGCHECK_DATA_DIR": data, "RIGCHECK_HTTP_ENABLED": "false", "RIGCHECK_LOG_LEVEL": "WARNING",
                "RIGCHECK_GUILD_READY_TIMEOUT": "0.2"}, ready_timeout=120)
            for _ in range(concurrency):  # warm-up, not measured: imports, fonts, a first cached set
                text = next(fresh)
                await sb.invoke(text, user=next(users))
                answered.append(text)
            rss_before = rss_kib(bot.pid)
            cpu_before = cpu_s(bot.pid)
            harness_before = time.process_time()
            machine_before = machine_busy_s()
            peak = rss_before
            sem = asyncio.Semaphore(concurrency)

            async def one(i: int) -> None:
                nonlocal peak
                async with sem:
                    cached = i % 2 == 1
                    text = rng.choice(answered) if cached else next(fresh)
                    try:
                        reply = await sb.invoke(text, user=next(users))
                        if reply.ephemeral:  # refused with a reason (e.g. past the model's context window)
                            refused.append(text)
                            return
                        record = sb.state.interactions[reply.interaction_id or 0]
                        await sb.state.changed.wait_until(
                            lambda: True if timings(record)[1] is not None else None, 30)
                    except (TimeoutError, KeyError) as exc:
                        failures.append(f"{text}: {type(exc).__name__}")
                        return
                    first, chart = timings(record)
                    if reply.error is not None or first is None:
                        failures.append(f"{text}: {reply.error}")
                        return
                    samples.append(Sample(text.split()[0], cached, first, chart))
                    if not cached:
                        answered.append(text)
                    if i % 50 == 0:
                        peak = max(peak, rss_kib(bot.pid))

            started = time.perf_counter()
            await asyncio.gather(*(one(i) for i in range(total)))
            elapsed = time.perf_counter() - started
            peak = max(peak, rss_kib(bot.pid))
            cpu_after = cpu_s(bot.pid)
            harness_cpu = time.process_time() - harness_before
            machine_cpu = machine_busy_s() - machine_before
    print(f"{total} commands, {concurrency} in flight, {elapsed:.1f} s ({total / elapsed:.1f}/s), "
          f"{len(refused)} refused with a reason, {len(failures)} failed; "
          f"cores visible: {len(os.sched_getaffinity(0))}, load average {os.getloadavg()[0]:.1f}")
    for label, pick in (("all", lambda s: True), ("uncached", lambda s: not s.cached), ("cached", lambda s: s.cached)):
        chosen = [s for s in samples if pick(s)]
        print(line(f"first visible answer, {label}", [s.first_s for s in chosen]))
        print(line(f"chart attached, {label}", [s.chart_s for s in chosen if s.chart_s is not None]))
    for command in sorted({s.command for s in samples}):
        chosen = [s for s in samples if s.command == command and not s.cached]
        print(line(f"  {command} uncached, chart", [s.chart_s for s in chosen if s.chart_s is not None]))
    print(f"RSS (bot + render workers): {rss_before / 1024:.0f} MiB after warm-up, {peak / 1024:.0f} MiB peak")
    bot_cpu, worker_cpu = (after - before for after, before in zip(cpu_after, cpu_before, strict=True))
    print(f"CPU per command: bot process {bot_cpu / total * 1000:.0f} ms, "
          f"render workers {worker_cpu / total * 1000:.0f} ms, loopback Discord and this client "
          f"{harness_cpu / total * 1000:.0f} ms")
    # With `concurrency` commands always waiting, these processes would use every core if they could:
    # what other processes took in the same time is what the figures above were measured against.
    cores = os.cpu_count() or 1
    ours = bot_cpu + worker_cpu + harness_cpu
    print(f"CPU over the run: {ours:.0f} core-s these processes, {max(machine_cpu - ours, 0):.0f} core-s other "
          f"processes on this machine, of {elapsed * cores:.0f} core-s ({cores} cores × {elapsed:.0f} s)")
    for failure in failures[:10]:
        print("failed:", failure)


def main() -> None:
    parser = argparse.ArgumentParser()
    parser.add_argument("--total", type=int, default=1000)
    parser.add_argument("--concurrency", type=int, default=25)
    parser.add_argument("--seed", type=int, default=1)
    args = parser.parse_args()
    asyncio.run(run(args.total, args.concurrency, args.seed))


if __name__ == "__main__":
    main()
