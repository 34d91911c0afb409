"""Counters and a latency histogram, exposed in the Prometheus text format 0.0.4.

Written by hand because the format is a few lines of text and the bot has no other use for a client
library. Everything runs on the event loop, so plain dicts need no locking.
"""

from __future__ import annotations

import math
from collections import defaultdict
from collections.abc import Iterable, Mapping

CONTENT_TYPE = "text/plain; version=0.0.4; charset=utf-8"
# Seconds; a cache hit answers in milliseconds, a chart render on a cold cache takes around a second.
LATENCY_BUCKETS_S = (0.01, 0.025, 0.05, 0.1, 0.25, 0.5, 1.0, 2.5, 5.0, 10.0)


def _escape(value: str) -> str:
    return value.replace("\\", "\\\\").replace("\n", "\\n").replace('"', '\\"')


def _labels(pairs: Mapping[str, str]) -> str:
    if not pairs:
        return ""
    return "{" + ",".join(f'{k}="{_escape(v)}"' for k, v in pairs.items()) + "}"


def _number(value: float) -> str:
    if math.isinf(value):
        return "+Inf" if value > 0 else "-Inf"
    if float(value).is_integer():
        return str(int(value))
    return repr(float(value))


# How late the event loop runs a 10 ms sleep: the cost of anything that blocks it (render, SQL, CPU work).
LOOP_LAG_BUCKETS_S = (0.001, 0.002, 0.005, 0.01, 0.025, 0.05, 0.1, 0.25, 1.0)


class _Histogram:
    __slots__ = ("buckets", "counts", "sum", "total")

    def __init__(self, buckets: tuple[float, ...] = LATENCY_BUCKETS_S) -> None:
        self.buckets = buckets
        self.counts = [0] * len(buckets)
        self.sum = 0.0
        self.total = 0

    def observe(self, seconds: float) -> None:
        self.sum += seconds
        self.total += 1
        for i, bound in enumerate(self.buckets):
            if seconds <= bound:
                self.counts[i] += 1


class Metrics:
    """What `/metrics` reports; the bot calls `command` and `observe`, the daily job `delivery`."""

    def __init__(self) -> None:
        self.commands: dict[tuple[str, str], int] = defaultdict(int)
        self.cache_hits = 0
        self.cache_misses = 0
        self.latency: dict[str, _Histogram] = {}
        self.deliveries: dict[str, int] = defaultdict(int)
        self.loop_lag_hist = _Histogram(LOOP_LAG_BUCKETS_S)
        self.loop_lag_max_s = 0.0
        self.runs: dict[str, int] = defaultdict(int)
        self.runs_in_progress = 0
        self.takeovers = 0

    def loop_lag(self, seconds: float) -> None:
        self.loop_lag_hist.observe(max(seconds, 0.0))
        self.loop_lag_max_s = max(self.loop_lag_max_s, seconds)

    def command(self, name: str, outcome: str) -> None:
        self.commands[(name, outcome)] += 1

    def observe(self, command: str, seconds: float, cache_hit: bool) -> None:
        if cache_hit:
            self.cache_hits += 1
        else:
            self.cache_misses += 1
        self.latency.setdefault(command, _Histogram()).observe(max(seconds, 0.0))

    def delivery(self, outcome: str) -> None:
        self.deliveries[outcome] += 1

    def run_started(self) -> None:
        self.runs_in_progress += 1

    def run_finished(self, status: str) -> None:
        self.runs_in_progress -= 1
        self.runs[status] += 1

    def takeover(self) -> None:
        self.takeovers += 1

    def render(self) -> str:
        out: list[str] = []

        def family(name: str, kind: str, help_text: str, samples: Iterable[str]) -> None:
            out.append(f"# HELP {name} {help_text}")
            out.append(f"# TYPE {name} {kind}")
            out.extend(samples)

        family("rigcheck_commands_total", "counter", "Slash commands answered, by command and outcome.",
               (f"rigcheck_commands_total{_labels({'command': c, 'outcome': o})} {n}"
                for (c, o), n in sorted(self.commands.items())))
        family("rigcheck_cache_hits_total", "counter", "Answers served from the reply cache.",
               [f"rigcheck_cache_hits_total {self.cache_hits}"])
        family("rigcheck_cache_misses_total", "counter", "Answers rendered because the cache had none.",
               [f"rigcheck_cache_misses_total {self.cache_misses}"])
        samples: list[str] = []
        for command, hist in sorted(self.latency.items()):
            for bound, count in zip(LATENCY_BUCKETS_S, hist.counts, strict=True):
                samples.append("rigcheck_command_latency_seconds_bucket"
                               f"{_labels({'command': command, 'le': _number(bound)})} {count}")
            samples.append("rigcheck_command_latency_seconds_bucket"
                           f"{_labels({'command': command, 'le': '+Inf'})} {hist.total}")
            samples.append(f"rigcheck_command_latency_seconds_sum{_labels({'command': command})} {_number(hist.sum)}")
            samples.append(f"rigcheck_command_latency_seconds_count{_labels({'command': command})} {hist.total}")
        family("rigcheck_command_latency_seconds", "histogram", "Time from a command to its answer.", samples)
        lag = self.loop_lag_hist
        lag_samples = [f"rigcheck_event_loop_lag_seconds_bucket{_labels({'le': _number(b)})} {n}"
                       for b, n in zip(lag.buckets, lag.counts, strict=True)]
        lag_samples += [f"rigcheck_event_loop_lag_seconds_bucket{_labels({'le': '+Inf'})} {lag.total}",
                        f"rigcheck_event_loop_lag_seconds_sum {_number(lag.sum)}",
                        f"rigcheck_event_loop_lag_seconds_count {lag.total}"]
        family("rigcheck_event_loop_lag_seconds", "histogram", "How late the event loop wakes a 10 ms sleep.",
               lag_samples)
        family("rigcheck_event_loop_lag_max_seconds", "gauge", "Largest event-loop lag seen since start.",
               [f"rigcheck_event_loop_lag_max_seconds {_number(self.loop_lag_max_s)}"])
        family("rigcheck_deliveries_total", "counter", "Daily summary deliveries, by outcome.",
               (f"rigcheck_deliveries_total{_labels({'outcome': o})} {n}" for o, n in sorted(self.deliveries.items())))
        family("rigcheck_daily_runs_total", "counter", "Daily runs this process carried out, by final status.",
               (f"rigcheck_daily_runs_total{_labels({'status': s})} {n}" for s, n in sorted(self.runs.items())))
        family("rigcheck_daily_runs_in_progress", "gauge", "Daily runs this process is carrying out now.",
               [f"rigcheck_daily_runs_in_progress {self.runs_in_progress}"])
        family("rigcheck_delivery_takeovers_total", "counter",
               "Pending deliveries this process took over from a holder that died or whose lease ran out.",
               [f"rigcheck_delivery_takeovers_total {self.takeovers}"])
        return "\n".join(out) + "\n"
