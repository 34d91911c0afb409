"""End-to-end interaction latency through the loopback Discord, and sustained throughput.

    python benchmarks/bot_latency.py [--n 60]

Starts the sandbox and the real bot process, then measures dispatch → final reply received:
uncached /fit and /rank (every call a different query, so each renders its chart), cached ones (the
same query again), and cached /fit commands per second with 20 in flight. Prints p50/p99 in ms.
Goals: cached p99 < 50 ms, uncached with chart p99 < 400 ms, ≥ 100 cached commands/s per process.
"""

from __future__ import annotations

import argparse
import asyncio
import statistics
import sys
import tempfile
import time
from pathlib import Path

sys.path.insert(0, str(Path(__file__).resolve().parents[1]))

import aiohttp

from bot.sandbox import Sandbox

CTXS = [1024 * k for k in range(2, 130)]


def pct(values: list[float], q: float) -> float:
    ordered = sorted(values)
    return ordered[min(len(ordered) - 1, round(q * (len(ordered) - 1)))]


def show(label: str, values: list[float]) -> None:
    print(f"{label:34s} n={len(values):4d}  p50 {statistics.median(values):7.1f} ms  p99 {pct(values, 0.99):7.1f} ms")


async def run(n: int) -> None:
    with tempfile.TemporaryDirectory() as data:
        async with Sandbox(reply_timeout_s=30) as sb:
            await sb.start_bot([sys.executable, "-m", "bot"], env={
                "RIGCHECK_DATA_DIR": data, "RIGCHECK_HTTP_PORT": "0", "RIGCHECK_LOG_LEVEL": "WARNING"})
            await sb.invoke("/fit gpu:T4 model:qwen3-8b")  # warm-up: imports, fonts, first chart
            for name, template in (("fit", "/fit gpu:T4 model:qwen3-8b ctx:{ctx}"),
                                   ("rank", "/rank gpu:A30 ctx:{ctx}")):
                uncached, cached = [], []
                for i, ctx in enumerate(CTXS[:n]):
                    # A new user each time: /rank has a per-user cooldown that would otherwise answer instead.
                    reply = await sb.invoke(template.format(ctx=ctx), user=10_000 + 2 * i)
                    assert reply.error is None and reply.latency_ms is not None and not reply.ephemeral
                    uncached.append(reply.latency_ms)
                    again = await sb.invoke(template.format(ctx=ctx), user=10_001 + 2 * i)
                    assert again.latency_ms is not None and not again.deferred
                    cached.append(again.latency_ms)
                show(f"/{name} uncached (renders chart)", uncached)
                show(f"/{name} cached", cached)
            total, in_flight = 5 * n, 20
            started = time.perf_counter()
            sem = asyncio.Semaphore(in_flight)
            lost = 0

            async def one(i: int) -> None:
                nonlocal lost
                async with sem:
                    reply = await sb.invoke(f"/fit gpu:T4 model:qwen3-8b ctx:{CTXS[i % n]}", user=20_000 + i)
                    if reply.error is not None or not reply.embeds or reply.ephemeral:
                        lost += 1

            await asyncio.gather(*(one(i) for i in range(total)))
            elapsed = time.perf_counter() - started
            print(f"sustained cached /fit: {total / elapsed:7.1f} commands/s with {in_flight} in flight, "
                  f"{lost} of {total} lost")
            await report_loop_lag(Path(data))


async def report_loop_lag(data: Path) -> None:
    """The bot samples how late its event loop wakes a 10 ms sleep; read it from its /metrics."""
    port = (data / "http.port").read_text().strip()
    async with aiohttp.ClientSession() as http, http.get(f"http://127.0.0.1:{port}/metrics") as response:
        text = await response.text()
    buckets = []
    for line in text.splitlines():
        if line.startswith("rigcheck_event_loop_lag_seconds_bucket"):
            bound = line.split('le="')[1].split('"')[0]
            buckets.append((float("inf") if bound == "+Inf" else float(bound), int(float(line.rsplit(" ", 1)[1]))))
        elif line.startswith("rigcheck_event_loop_lag_max_seconds "):
            worst = float(line.rsplit(" ", 1)[1])
    total = buckets[-1][1]

    def quantile(q: float) -> float:
        return next(bound for bound, count in buckets if count >= q * total)

    print(f"event-loop lag over the whole run ({total} samples of a 10 ms sleep): p50 ≤ {quantile(0.5) * 1000:g} ms, "
          f"p99 ≤ {quantile(0.99) * 1000:g} ms, max {worst * 1000:.1f} ms")


def main() -> None:
    parser = argparse.ArgumentParser()
    parser.add_argument("--n", type=int, default=60)
    args = parser.parse_args()
    asyncio.run(run(min(args.n, len(CTXS))))


if __name__ == "__main__":
    main()
