"""The estimator against measurements it has never seen: data files kept outside the calibration set.

    python benchmarks/unseen.py FILE.toml [FILE.toml ...] [--since 2025-06-01] [--rows]

Each file holds [[measurement]] entries in the calibration data's format (see
`estimator/calibration/data/llamacpp_other.toml`). Every row is estimated as a user would get it (the committed
constants, the current default build, nothing refitted) and the script prints median and p90 absolute error
(|estimated − measured| / measured) for decode and prefill, per engine and GPU family, and how often the measured
value falls inside the 80 % band the estimate would print. Entries whose GPU, model or format the catalog does not
hold are listed with the reason. Run it on newly collected rows before they join the fit: it is the closest this
project gets to the published runs it will be judged on. Writes nothing.
"""

from __future__ import annotations

import argparse
import math
import statistics
import sys
from collections import defaultdict
from pathlib import Path

import numpy as np

sys.path.insert(0, str(Path(__file__).resolve().parents[1]))

from catalog import load_catalog
from estimator.calibration import fit
from estimator.calibration.measurements import Row, llamacpp_rows, server_rows, unplaced_entries
from estimator.engines import band_for


def _stats(errs: list[float]) -> str:
    if not errs:
        return "n=   0"
    p90 = float(np.quantile(np.array(errs), 0.9))
    return f"n={len(errs):4d}  median {statistics.median(errs):6.1%}  p90 {p90:6.1%}"


def _band(row: Row) -> tuple[float, float]:
    """The 80 % band the estimate for this row's test prints, as factors of the estimate."""
    low, high = band_for(row.kind, row.engine, row.gpu, row.model.moe is not None, row.gpus)
    return math.exp(low), math.exp(high)


def main(argv: list[str] | None = None) -> int:
    parser = argparse.ArgumentParser(description=__doc__.split("\n\n")[0])
    parser.add_argument("files", nargs="+", type=Path)
    parser.add_argument("--since", default="", help="only rows dated on or after this day (YYYY-MM-DD)")
    parser.add_argument("--rows", action="store_true", help="print every row's estimate and measurement")
    args = parser.parse_args(argv)
    catalog = load_catalog()
    rows = llamacpp_rows(catalog, paths=args.files)[0] + server_rows(catalog, paths=args.files)[0]
    rows = [r for r in rows if r.date >= args.since]
    # A prompt fed one token per micro-batch (`prompt_test`) is decode without logits or host waits: the fit prices
    # it so, but no user asks for it, and the estimate a user gets would score it as ordinary decode.
    prompt_tests = [r for r in rows if not r.output_every_token]
    rows = [r for r in rows if r.output_every_token]
    if prompt_tests:
        print(f"skipped {len(prompt_tests)} micro-batch-1 prompt tests (prompt_test = true): not a question users ask")
    for line in unplaced_entries(catalog, args.files):
        print("skipped", line)
    groups: dict[tuple[str, str], list[float]] = defaultdict(list)
    inside: dict[str, list[bool]] = defaultdict(list)
    for row in rows:
        estimate = fit.predicted_tps(row)
        err = abs(estimate - row.measured_tps) / row.measured_tps
        low, high = _band(row)
        inside[row.kind].append(low * estimate <= row.measured_tps <= high * estimate)
        for key in ("all", f"engine {row.engine}", f"family {row.family}"):
            groups[(row.kind, key)].append(err)
        if args.rows:
            print(f"{row.kind:7s} {row.gpu.id:28s} {row.model.id:26s} {row.quant.id:10s} {row.engine:9s} "
                  f"n{row.tokens} d{row.depth} {row.date:10s} measured {row.measured_tps:9.1f} "
                  f"estimated {estimate:9.1f} ({estimate / row.measured_tps - 1:+.0%})")
    for (kind, key), errs in sorted(groups.items(), key=lambda kv: (kv[0][0], kv[0][1] != "all", kv[0][1])):
        print(f"{kind:7s} {key:40s} {_stats(errs)}")
    for kind, hits in sorted(inside.items()):
        print(f"{kind:7s} 80 % band holds the measurement {sum(hits)}/{len(hits)} ({sum(hits) / len(hits):.0%})")
    return 0


if __name__ == "__main__":
    sys.exit(main())
