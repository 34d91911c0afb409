"""Published measurements, the script that fits the estimator's constants to them, and its output."""
