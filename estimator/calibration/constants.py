"""Fitted constants. Rewritten by `python -m estimator.calibration.fit`; do not edit by hand."""

from estimator.calibration.model import DecodeFit, PrefillFit

DECODE: dict[tuple[str, str, str], DecodeFit] = {
    ('llama.cpp', '*', '*'): DecodeFit(efficiency=0.8808, per_layer_s=1.161e-04, rows=78),
    ('llama.cpp', 'cuda', '*'): DecodeFit(efficiency=0.9500, per_layer_s=1.255e-04, rows=56),
    ('llama.cpp', 'cuda', 'f16'): DecodeFit(efficiency=0.9500, per_layer_s=1.628e-04, rows=22),
    ('llama.cpp', 'cuda', 'k'): DecodeFit(efficiency=0.9500, per_layer_s=1.202e-04, rows=34),
    ('llama.cpp', 'metal', '*'): DecodeFit(efficiency=0.8520, per_layer_s=2.056e-04, rows=22),
    ('llama.cpp', 'metal', 'f16'): DecodeFit(efficiency=0.8868, per_layer_s=1.915e-04, rows=8),
    ('llama.cpp', 'metal', 'k'): DecodeFit(efficiency=0.7652, per_layer_s=1.742e-04, rows=11),
}
PREFILL: dict[tuple[str, str, str], PrefillFit] = {
    ('llama.cpp', '*', '*'): PrefillFit(utilisation=0.3939, rows=80),
    ('llama.cpp', 'cuda', '*'): PrefillFit(utilisation=0.3521, rows=56),
    ('llama.cpp', 'cuda', 'fp16'): PrefillFit(utilisation=0.4656, rows=17),
    ('llama.cpp', 'cuda', 'int8'): PrefillFit(utilisation=0.3117, rows=39),
    ('llama.cpp', 'cuda/Ada Lovelace', '*'): PrefillFit(utilisation=0.3706, rows=24),
    ('llama.cpp', 'cuda/Ada Lovelace', 'fp16'): PrefillFit(utilisation=0.5452, rows=8),
    ('llama.cpp', 'cuda/Ada Lovelace', 'int8'): PrefillFit(utilisation=0.3056, rows=16),
    ('llama.cpp', 'cuda/Ampere', '*'): PrefillFit(utilisation=0.3766, rows=27),
    ('llama.cpp', 'cuda/Ampere', 'fp16'): PrefillFit(utilisation=0.4700, rows=7),
    ('llama.cpp', 'cuda/Ampere', 'int8'): PrefillFit(utilisation=0.3484, rows=20),
    ('llama.cpp', 'cuda/Hopper', '*'): PrefillFit(utilisation=0.1917, rows=5),
    ('llama.cpp', 'cuda/Hopper', 'fp16'): PrefillFit(utilisation=0.2399, rows=2),
    ('llama.cpp', 'cuda/Hopper', 'int8'): PrefillFit(utilisation=0.1652, rows=3),
    ('llama.cpp', 'metal', '*'): PrefillFit(utilisation=0.7140, rows=22),
    ('llama.cpp', 'metal', 'fp16'): PrefillFit(utilisation=0.7140, rows=22),
    ('llama.cpp', 'metal/Apple M1 GPU', '*'): PrefillFit(utilisation=0.5532, rows=6),
    ('llama.cpp', 'metal/Apple M1 GPU', 'fp16'): PrefillFit(utilisation=0.5532, rows=6),
    ('llama.cpp', 'metal/Apple M1 Max GPU', '*'): PrefillFit(utilisation=0.5053, rows=3),
    ('llama.cpp', 'metal/Apple M1 Max GPU', 'fp16'): PrefillFit(utilisation=0.5053, rows=3),
    ('llama.cpp', 'metal/Apple M2 Ultra GPU', '*'): PrefillFit(utilisation=0.7963, rows=7),
    ('llama.cpp', 'metal/Apple M2 Ultra GPU', 'fp16'): PrefillFit(utilisation=0.7963, rows=7),
    ('llama.cpp', 'metal/Apple M3 Max GPU', '*'): PrefillFit(utilisation=0.9646, rows=6),
    ('llama.cpp', 'metal/Apple M3 Max GPU', 'fp16'): PrefillFit(utilisation=0.9646, rows=6),
    ('llama.cpp', 'rocm/CDNA 3', '*'): PrefillFit(utilisation=0.0131, rows=2),
    ('llama.cpp', 'rocm/CDNA 3', 'int8'): PrefillFit(utilisation=0.0131, rows=2),
}
