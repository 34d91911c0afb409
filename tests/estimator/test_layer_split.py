"""The cost of a layer split is fitted on multi-GPU decode runs, robustly and per source."""

from __future__ import annotations

import math

import pytest

from estimator.calibration.fit import MultiGpuMiss
from estimator.calibration.layer_split import FIXED_GRID_S, HOP_GRID_S, LayerSplitGap, fit_layer_split, split_loss_table
from estimator.calibration.model import NO_SPLIT_COST, LayerSplitCost


def runs(source: str, fixed_ms: float, hop_ms: float, cards: tuple[int, ...], base_ms: float = 10.0,
         noise: tuple[float, ...] = (1.0,)) -> list[LayerSplitGap]:
    """Runs whose measured time is the base plus the given split costs, times a little noise each."""
    out = []
    for i, n in enumerate(cards):
        measured = (base_ms + fixed_ms + hop_ms * (n - 1)) * noise[i % len(noise)]
        out.append(LayerSplitGap(source, base_ms / 1e3, measured / 1e3, n - 1))
    return out


def test_the_cost_is_nothing_on_one_card_and_grows_by_a_hop_per_boundary() -> None:
    cost = LayerSplitCost(1e-3, 2e-4)
    assert cost.seconds(0) == 0.0
    assert cost.seconds(1) == pytest.approx(1.2e-3)
    assert cost.seconds(7) == pytest.approx(2.4e-3)


def test_the_fit_recovers_a_fixed_part_and_a_part_per_boundary() -> None:
    # Each card count is measured a little fast once and a little slow once in every source.
    gaps = [g for i, s in enumerate("abcdef") for g in runs(s, 1.0, 0.2, (2, 4, 8, 2, 4, 8), base_ms=8.0 + i,
                                                          noise=(0.995, 1.005, 1.0, 1.005, 0.995, 1.0))]
    cost = fit_layer_split(gaps)
    assert cost.fixed_s == pytest.approx(1.0e-3, abs=1.5e-4)
    assert cost.hop_s == pytest.approx(0.2e-3, abs=5e-5)
    # One cost per boundary alone could not price both 2- and 8-card runs; the fixed part tells them apart.
    assert cost.fixed_s > cost.hop_s


def test_one_long_table_does_not_outvote_the_other_sources() -> None:
    gaps = runs("long", 3.0, 1.0, (2, 4, 8) * 30)
    for s in "bcd":
        gaps += runs(s, 1.0, 0.2, (2, 4, 8))
    cost = fit_layer_split(gaps)
    assert cost.fixed_s == pytest.approx(1.0e-3, abs=1.5e-4)
    assert cost.hop_s == pytest.approx(0.2e-3, abs=5e-5)


def test_a_source_left_out_is_a_column_dropped() -> None:
    gaps = runs("odd", 3.0, 1.0, (2, 4, 8)) + runs("b", 0.5, 0.1, (2, 4, 8)) + runs("c", 0.5, 0.1, (2, 4))
    table = split_loss_table(gaps)
    assert table.best(without=["odd"]) == fit_layer_split([g for g in gaps if g.source != "odd"])
    assert table.best(without=["odd", "b", "c"]) == NO_SPLIT_COST
    assert fit_layer_split([]) == LayerSplitCost(FIXED_GRID_S[0], HOP_GRID_S[0])


def test_the_committed_costs_are_not_on_an_edge_of_the_grid() -> None:
    from estimator.calibration.constants import LAYER_SPLIT_FIXED_S, LAYER_SPLIT_HOP_S

    assert FIXED_GRID_S[0] < LAYER_SPLIT_FIXED_S < FIXED_GRID_S[-1]
    assert HOP_GRID_S[0] < LAYER_SPLIT_HOP_S < HOP_GRID_S[-1]


def test_a_miss_is_repriced_with_other_costs_and_others_are_left_alone() -> None:
    miss = MultiGpuMiss("decode", 0.0, -0.2, 0.2, "s", base_s=0.010, measured_s=0.012, boundaries=2)
    assert miss.with_split(LayerSplitCost(0.001, 0.0005)).log_error == pytest.approx(0.0)
    assert miss.with_split(NO_SPLIT_COST).log_error == pytest.approx(math.log(0.010 / 0.012))
    served = MultiGpuMiss("decode", 0.1, -0.2, 0.2, "s")
    assert served.with_split(LayerSplitCost(0.005, 0.001)) is served
