"""The layer-split hop is fitted on multi-GPU decode runs, robustly and per source."""

from __future__ import annotations

import math

import pytest

from estimator.calibration.fit import LayerSplitGap, MultiGpuMiss, hop_from


def gap(source: str, base_ms: float, measured_ms: float, boundaries: int) -> LayerSplitGap:
    return LayerSplitGap(source, base_ms / 1e3, measured_ms / 1e3, boundaries)


def test_each_run_gives_its_gap_per_boundary() -> None:
    assert gap("a", 10.0, 13.0, 3).per_boundary_s() == pytest.approx(1e-3)
    assert gap("a", 10.0, 9.0, 1).per_boundary_s() == pytest.approx(-1e-3)


def test_one_long_table_does_not_outvote_the_other_sources() -> None:
    gaps = [gap("long", 10.0, 15.0, 1)] * 50 + [gap("b", 10.0, 10.4, 1), gap("c", 10.0, 10.6, 2),
                                                gap("c", 10.0, 11.0, 2), gap("d", 10.0, 10.5, 1)]
    # Source medians: long 5 ms, b 0.4, c 0.4 (0.3 and 0.5), d 0.5 ms: their median is 0.45 ms.
    assert hop_from(gaps) == pytest.approx(0.45e-3)
    assert hop_from([]) == 0.0


def test_a_miss_is_repriced_with_another_hop_and_others_are_left_alone() -> None:
    miss = MultiGpuMiss("decode", 0.0, -0.2, 0.2, "s", base_s=0.010, measured_s=0.012, boundaries=2)
    assert miss.with_hop(0.001).log_error == pytest.approx(0.0)
    assert miss.with_hop(0.0).log_error == pytest.approx(math.log(0.010 / 0.012))
    served = MultiGpuMiss("decode", 0.1, -0.2, 0.2, "s")
    assert served.with_hop(0.005) is served
