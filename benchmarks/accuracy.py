"""The estimator's accuracy against published llama-bench measurements, with the committed constants.

    python benchmarks/accuracy.py

Runs `python -m estimator.calibration.fit --check` (reports only; writes nothing) and prints its report:
median absolute percentage error for decode and prefill, fitted rows vs held-out rows, per GPU family.
"""

from __future__ import annotations

import sys
from pathlib import Path

sys.path.insert(0, str(Path(__file__).resolve().parents[1]))

from estimator.calibration import fit


def main() -> int:
    fit.main(["--check"])
    return 0


if __name__ == "__main__":
    sys.exit(main())
