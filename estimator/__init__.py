"""Pure functions over catalog facts: memory, speed, fit, ranking, capability. No I/O, no clock."""

# Bumped whenever a formula or a fitted constant changes, so cached answers are not reused.
ESTIMATOR_VERSION = "1"
