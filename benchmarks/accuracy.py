"""The estimator's accuracy against published measurements, cross-validated.

    python benchmarks/accuracy.py

Refits the model with each GPU left out in turn (together with the cards that differ from it only in memory
capacity, `GPU.silicon`), then each source, estimates the left-out rows, and prints
median and p90 absolute error (|estimated − measured| / measured) per engine, model class (dense / MoE / ≤ 3B)
and GPU family, plus how often the measured value falls inside the 80 % band built from the other folds' errors.
Writes nothing.
Targets: leave-one-GPU-out decode median ≤ 8 %, p90 ≤ 25 %; prefill median ≤ 15 %, p90 ≤ 35 %; no GPU family's
decode median above 20 %; band coverage 75–85 %.
"""

from __future__ import annotations

import argparse
import sys
from pathlib import Path

sys.path.insert(0, str(Path(__file__).resolve().parents[1]))

from estimator.calibration import fit


def main(argv: list[str] | None = None) -> int:
    argparse.ArgumentParser(description=__doc__, formatter_class=argparse.RawDescriptionHelpFormatter).parse_args(argv)
    fit.main(["--check"])
    return 0


if __name__ == "__main__":
    sys.exit(main())
