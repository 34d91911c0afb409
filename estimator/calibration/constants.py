"""Fitted constants. Rewritten by `python -m estimator.calibration.fit`; do not edit by hand."""

from estimator.calibration.model import DecodeFit, PrefillFit

DECODE: dict[tuple[str, str, str], DecodeFit] = {
    ('llama.cpp', '*', '*'): DecodeFit(efficiency=0.9396, per_layer_s=9.047e-05, rows=32),
    ('llama.cpp', 'cuda', '*'): DecodeFit(efficiency=0.9396, per_layer_s=9.047e-05, rows=32),
    ('llama.cpp', 'cuda', 'f16'): DecodeFit(efficiency=0.9243, per_layer_s=7.876e-05, rows=14),
    ('llama.cpp', 'cuda', 'k'): DecodeFit(efficiency=0.9371, per_layer_s=9.020e-05, rows=18),
}
PREFILL: dict[tuple[str, str, str], PrefillFit] = {
    ('llama.cpp', '*', '*'): PrefillFit(utilisation=0.2361, rows=36),
    ('llama.cpp', 'cuda', '*'): PrefillFit(utilisation=0.2912, rows=34),
    ('llama.cpp', 'cuda', 'fp16'): PrefillFit(utilisation=0.5692, rows=13),
    ('llama.cpp', 'cuda', 'int8'): PrefillFit(utilisation=0.1923, rows=21),
    ('llama.cpp', 'rocm', '*'): PrefillFit(utilisation=0.0067, rows=2),
    ('llama.cpp', 'rocm', 'int8'): PrefillFit(utilisation=0.0067, rows=2),
}
