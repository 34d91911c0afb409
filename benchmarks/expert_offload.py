"""The expert split (`--n-cpu-moe`) against published runs: nothing in it is fitted on them.

    python benchmarks/expert_offload.py [benchmarks/data/expert_offload.toml] [--cpu-efficiency 0.6]

For each run, the decode estimate at the run's own count of CPU-MoE layers (estimator.offload.expert_split_seconds)
with the host's RAM bandwidth where the source states it and the estimator's default elsewhere, and the count the
estimator itself would choose for the card at the run's context. Prints each run, then median and p90 of
|estimated − measured| / measured and the median ratio, for the runs whose RAM is stated and for all.
"""

from __future__ import annotations

import argparse
import statistics
import sys
import tomllib
from pathlib import Path

import numpy as np

sys.path.insert(0, str(Path(__file__).resolve().parents[1]))

from catalog import load_catalog
from estimator.offload import DEFAULT_CPU_EFFICIENCY, DEFAULT_SYSTEM_RAM_GBS, expert_offload_plan, expert_split_seconds
from estimator.query import Query
from estimator.speed import moe_layers

DATA = Path(__file__).with_name("data") / "expert_offload.toml"
# The context a run's card is sized for where the source does not say: the estimator's default.
DEFAULT_CTX = 8192


def _summary(label: str, errors: list[float], ratios: list[float]) -> str:
    if not errors:
        return f"{label}: no runs"
    p90 = float(np.quantile(np.array(errors), 0.9))
    return (f"{label}: n={len(errors)}  median |error| {statistics.median(errors):.1%}  p90 {p90:.1%}  "
            f"median estimated/measured {statistics.median(ratios):.2f}")


def main(argv: list[str] | None = None) -> int:
    parser = argparse.ArgumentParser(description=__doc__.split("\n\n")[0])
    parser.add_argument("file", nargs="?", type=Path, default=DATA)
    parser.add_argument("--cpu-efficiency", type=float, default=DEFAULT_CPU_EFFICIENCY)
    args = parser.parse_args(argv)
    catalog = load_catalog()
    runs = tomllib.loads(args.file.read_text())["run"]
    stated: tuple[list[float], list[float]] = ([], [])
    every: tuple[list[float], list[float]] = ([], [])
    for run in runs:
        depth = int(run.get("depth", 512))
        q = Query(gpu=catalog.gpu(run["gpu"]), model=catalog.model(run["model"]), quant=catalog.quant(run["quant"]),
                  ctx=max(DEFAULT_CTX, depth + 512), prompt_tokens=depth)
        layers = moe_layers(q.model)
        cpu = layers if run["cpu_moe_layers"] < 0 else run["cpu_moe_layers"]
        ram = run.get("system_ram_gbs")
        estimate = 1 / expert_split_seconds(q, cpu, ram or DEFAULT_SYSTEM_RAM_GBS, args.cpu_efficiency)
        measured = run["tg_tps"]
        own = expert_offload_plan(q)
        chosen = "fits" if own is None else own.cpu_moe_layers
        ram_text = f"{ram:5.1f}" if ram else " n/s "
        print(f"{run['gpu']:24s} {run['model']:28s} {run['quant']:10s} cpu layers {cpu:2d}/{layers:2d} "
              f"(ours {chosen}) RAM {ram_text} GB/s  measured {measured:6.1f}  "
              f"estimated {estimate:6.1f} ({estimate / measured - 1:+.0%})")
        for group in ((stated, every) if ram else (every,)):
            group[0].append(abs(estimate - measured) / measured)
            group[1].append(estimate / measured)
    print(_summary("RAM stated", *stated))
    print(_summary("all runs  ", *every))
    return 0


if __name__ == "__main__":
    sys.exit(main())
