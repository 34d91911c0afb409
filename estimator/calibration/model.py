"""Shapes of the fitted constants (the fit script writes `constants.py` with these)."""

from __future__ import annotations

from dataclasses import dataclass


@dataclass(frozen=True)
class DecodeFit:
    """seconds/token = bytes_moved / (bandwidth × efficiency) + layers × per_layer_s"""

    efficiency: float
    per_layer_s: float
    rows: int = 0


@dataclass(frozen=True)
class PrefillFit:
    """seconds = FLOPs / (peak × utilisation) + weight passes × bytes / (bandwidth × decode efficiency)"""

    utilisation: float
    rows: int = 0
