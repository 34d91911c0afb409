"""A ranking works out each format's breakdown and speed when they are read; what it reads must be what /fit would
compute for the same question, whichever is read first."""

from __future__ import annotations

import pytest

from catalog.store import load_catalog
from estimator.memory import memory_of
from estimator.query import Engine, KVDtype, prompt_for
from estimator.rank import rank
from estimator.speed import speed_of
from estimator.verdict import default_formats

CATALOG = load_catalog()
SETUPS: list[tuple[str, int, Engine, KVDtype, int]] = [
    ("nvidia-rtx-4090", 1, "llama.cpp", "f16", 8192), ("nvidia-t4", 1, "llama.cpp", "q8_0", 32768),
    ("nvidia-a100-80gb-sxm", 2, "vllm", "fp8", 16384), ("apple-m4-max-128gb", 1, "mlx", "f16", 4096),
]


@pytest.mark.parametrize(("gpu_id", "gpus", "engine", "kv", "ctx"), SETUPS)
def test_each_ranked_format_reads_what_fit_would_compute(gpu_id: str, gpus: int, engine: Engine, kv: KVDtype,
                                                         ctx: int) -> None:
    gpu = CATALOG.gpu(gpu_id)
    rows = rank(CATALOG.models, default_formats(CATALOG, engine), gpu, gpus=gpus, ctx=ctx, engine=engine, kv=kv)
    assert len(rows) > 5
    for i, row in enumerate(rows):
        for f in row.fitting:
            meant = row.model.context_as_meant(ctx)
            memory = memory_of(row.model, f.quant, gpu, gpus, engine, meant, kv, 1)
            speed = speed_of(row.model, f.quant, gpu, gpus, engine, kv, prompt_for(meant))
            if i % 2:
                # decode speed first (as a sort reads it), then the whole estimate
                assert f.decode_tps == speed.decode_tps
                assert f.speed == speed
            else:
                assert f.speed == speed
                assert f.decode_tps == speed.decode_tps
            assert f.memory == memory
            assert f.verdict == memory.verdict != "does_not_fit"
