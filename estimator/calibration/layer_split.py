"""What a layer split over several cards adds to each decoded token, fitted on the multi-GPU decode runs.

llama.cpp's layer split (and the engines built on it) runs the cards one after another, so a token costs what one
card's estimate says plus the cost of splitting: the host synchronises with each card before the next one starts
and the token's activations are copied across every card boundary. The single-GPU design cannot see it; the runs on
several cards measure it. They put most of it in splitting at all and little in each further card: with one cost per
boundary only (0.61 ms), 2-card runs came out 3 % fast and 8-card runs 11 % slow, and with each source left out in
turn the multi-GPU decode runs missed by 8.5 % at the median (p90 31.1 %); with a fixed part (0.95 ms) and a part per
boundary (0.20 ms), 6.5 % (p90 31.5 %), no count of 2, 4, 6 or 8 cards off by more than 3.5 % at the median.

Runs scatter from below zero to several milliseconds (a host's PCIe topology, peer access, a build's graph handling),
so the two values are fitted robustly and per source: on a grid, the pair whose misses have the smallest mean over
sources of each source's median |log(estimated / measured)|, so one long table counts once. Per backend (CUDA, ROCm;
SYCL has 6 runs) a single per-boundary value did no better with each source or each GPU left out.
"""

from __future__ import annotations

from collections import defaultdict
from collections.abc import Iterable
from dataclasses import dataclass

import numpy as np

from estimator.calibration.model import NO_SPLIT_COST, LayerSplitCost

# Grid of the fit, in seconds per token: fixed 0–3 ms by 0.05 ms, per boundary 0–1.5 ms by 0.025 ms. A fitted value
# on an edge would mean the grid, not the runs, chose it (a test fails if one does).
FIXED_GRID_S: tuple[float, ...] = tuple(round(i * 5e-5, 8) for i in range(61))
HOP_GRID_S: tuple[float, ...] = tuple(round(i * 2.5e-5, 8) for i in range(61))


@dataclass(frozen=True)
class LayerSplitGap:
    """A layer-split decode run: seconds per token this fit estimates without splitting costs, seconds measured, and
    how many card boundaries each token crosses."""

    source: str
    base_s: float
    measured_s: float
    boundaries: int


@dataclass(frozen=True)
class SplitLossTable:
    """Each grid pair's median |log miss| per source (pairs × sources), so a fit without one source is a column
    dropped, not a refit."""

    costs: tuple[LayerSplitCost, ...]
    sources: tuple[str, ...]
    losses: np.ndarray

    def best(self, without: Iterable[str] = ()) -> LayerSplitCost:
        left_out = set(without)
        keep = np.array([s not in left_out for s in self.sources], dtype=bool)
        if not keep.any():
            return NO_SPLIT_COST
        return self.costs[int(np.argmin(self.losses[:, keep].mean(axis=1)))]


def split_loss_table(gaps: list[LayerSplitGap]) -> SplitLossTable:
    costs = tuple(LayerSplitCost(f, h) for f in FIXED_GRID_S for h in HOP_GRID_S)
    by_source: dict[str, list[int]] = defaultdict(list)
    for i, g in enumerate(gaps):
        by_source[g.source].append(i)
    sources = tuple(sorted(by_source))
    if not gaps:
        return SplitLossTable(costs, sources, np.zeros((len(costs), 0)))
    base = np.array([g.base_s for g in gaps])
    measured = np.array([g.measured_s for g in gaps])
    boundaries = np.array([g.boundaries for g in gaps], dtype=float)
    fixed = np.array([c.fixed_s for c in costs])[:, None]
    hop = np.array([c.hop_s for c in costs])[:, None]
    misses = np.abs(np.log((base + fixed + hop * boundaries) / measured))
    losses = np.stack([np.median(misses[:, by_source[s]], axis=1) for s in sources], axis=1)
    return SplitLossTable(costs, sources, losses)


def fit_layer_split(gaps: list[LayerSplitGap]) -> LayerSplitCost:
    return split_loss_table(gaps).best()
