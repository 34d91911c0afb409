"""How long the estimator takes: median of N runs after one warm-up.

    python benchmarks/estimator_speed.py [--runs 50] [--gpu "rtx 4090"]

Goals: a full `rank` over the whole catalog for one GPU under 5 ms, with the speed and TTFT of every format on
the page `/rank` shows first (the rest are estimated when a page shows them); one `fit` option (memory, speed and
the max-context bisection) under 200 µs. The whole catalog's estimates, as `rigcheck rank --json` prints them, are
timed too.
"""

from __future__ import annotations

import argparse
import statistics
import sys
import time
from collections.abc import Callable
from pathlib import Path

sys.path.insert(0, str(Path(__file__).resolve().parents[1]))

from bot.render.replies import PAGE_SIZE
from catalog import load_catalog
from catalog.resolve import NotFound, Resolver
from estimator.query import Query
from estimator.rank import RankRow, rank
from estimator.verdict import default_formats, fit_option

RANK_GOAL_MS = 5.0
FIT_GOAL_US = 200.0


def median_seconds(fn: Callable[[], object], runs: int) -> float:
    fn()
    times = []
    for _ in range(runs):
        start = time.perf_counter()
        fn()
        times.append(time.perf_counter() - start)
    return statistics.median(times)


def read_speeds(rows: list[RankRow]) -> float:
    """What a table of these rows reads: each format's decode speed and TTFT (`/rank` shows PAGE_SIZE rows)."""
    return sum(f.speed.decode_tps + f.speed.ttft_s for r in rows for f in r.fitting)


def main(argv: list[str] | None = None) -> int:
    parser = argparse.ArgumentParser(description=__doc__, formatter_class=argparse.RawDescriptionHelpFormatter)
    parser.add_argument("--runs", type=int, default=50)
    parser.add_argument("--gpu", default="rtx 4090")
    parser.add_argument("--model", default="llama-3.1-8b")
    args = parser.parse_args(argv)

    cat = load_catalog()
    resolver = Resolver(cat)
    try:
        gpu = resolver.gpu(args.gpu)
        model = resolver.model(args.model).model
    except NotFound as err:
        parser.error(str(err))
    formats = default_formats(cat, "llama.cpp")

    rank_s = median_seconds(lambda: read_speeds(rank(cat.models, formats, gpu, ctx=8192)[:PAGE_SIZE]), args.runs)
    whole_s = median_seconds(lambda: read_speeds(rank(cat.models, formats, gpu, ctx=8192)), args.runs)
    rows = len(rank(cat.models, formats, gpu, ctx=8192))
    q = Query(gpu=gpu, model=model, quant=cat.quant("q4_k_m"), ctx=8192)
    fit_s = median_seconds(lambda: fit_option(q), args.runs * 20)

    print(f"catalog: {len(cat.gpus)} GPUs, {len(cat.models)} models; {len(formats)} formats per model")
    print(f"rank on {gpu.name} ({rows} rows)       median {rank_s * 1e3:8.2f} ms   goal < {RANK_GOAL_MS:g} ms"
          f"   {'ok' if rank_s * 1e3 < RANK_GOAL_MS else 'OVER'}")
    print(f"rank on {gpu.name}, every row's speed     median {whole_s * 1e3:8.2f} ms")
    print(f"fit option {model.id} q4_k_m + max_ctx  median {fit_s * 1e6:8.1f} µs   goal < {FIT_GOAL_US:g} µs"
          f"   {'ok' if fit_s * 1e6 < FIT_GOAL_US else 'OVER'}")
    return 0


if __name__ == "__main__":
    sys.exit(main())
