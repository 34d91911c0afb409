"""How long name resolution takes: median µs of autocomplete (prefix completion) and of a full lookup.

    python benchmarks/resolver_speed.py [--runs 200]

Goal: prefix completion over the whole catalog under 1 ms (Discord autocomplete must answer in 3 s,
and the bot serves many at once).
"""

from __future__ import annotations

import argparse
import statistics
import sys
from collections.abc import Callable
from functools import partial
from pathlib import Path

sys.path.insert(0, str(Path(__file__).resolve().parents[1]))

from benchmarks.estimator_speed import median_seconds
from catalog import load_catalog
from catalog.resolve import NotFound, Resolver

COMPLETE_GOAL_US = 1000.0
PREFIXES = ["", "q", "qw", "qwen3", "llama 3.1", "gemma-3-2", "mistral", "deepseek r1", "gpt-oss", "xyzzy"]
GPU_PREFIXES = ["", "r", "rtx", "rtx 40", "a100", "m2 max", "h100 s", "mi3", "arc", "xyzzy"]
LOOKUPS = ["qwen3-8b", "Qwen/Qwen3-8B", "llama3.1:8b-instruct-q4_K_M", "qwen3-8bb", "t4", "rtx 4090", "m2 max"]


def median_us(fn: Callable[[], object], runs: int) -> float:
    return median_seconds(fn, runs) * 1e6


def main(argv: list[str] | None = None) -> int:
    parser = argparse.ArgumentParser(description=__doc__, formatter_class=argparse.RawDescriptionHelpFormatter)
    parser.add_argument("--runs", type=int, default=200)
    args = parser.parse_args(argv)
    cat = load_catalog()
    resolver = Resolver(cat)

    def lookup(text: str) -> None:
        for fn in (resolver.gpu, resolver.model):
            try:
                fn(text)
            except NotFound:
                pass

    model_us = {p: median_us(partial(resolver.complete_model, p), args.runs) for p in PREFIXES}
    gpu_us = {p: median_us(partial(resolver.complete_gpu, p), args.runs) for p in GPU_PREFIXES}
    look_us = {t: median_us(partial(lookup, t), args.runs) for t in LOOKUPS}

    print(f"catalog: {len(cat.gpus)} GPUs, {len(cat.models)} models")
    for title, table in (("complete_model", model_us), ("complete_gpu", gpu_us), ("gpu+model lookup", look_us)):
        print(f"\n{title}:")
        for text, us in table.items():
            print(f"  {text!r:34s} {us:8.1f} µs")
    overall = statistics.median([*model_us.values(), *gpu_us.values()])
    worst = max([*model_us.values(), *gpu_us.values()])
    print(f"\nprefix completion: median {overall:.1f} µs, worst prefix {worst:.1f} µs   goal < {COMPLETE_GOAL_US:g} µs"
          f"   {'ok' if worst < COMPLETE_GOAL_US else 'OVER'}")
    return 0


if __name__ == "__main__":
    sys.exit(main())
