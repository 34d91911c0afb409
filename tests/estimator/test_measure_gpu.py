"""benchmarks/measure_gpu.py imports without torch, parses its options and writes rows the loaders can read."""

from __future__ import annotations

import importlib.util
import sys
import tomllib
from pathlib import Path

import pytest

PATH = Path(__file__).resolve().parents[2] / "benchmarks" / "measure_gpu.py"
spec = importlib.util.spec_from_file_location("measure_gpu", PATH)
assert spec is not None and spec.loader is not None
measure_gpu = importlib.util.module_from_spec(spec)
sys.modules["measure_gpu"] = measure_gpu
spec.loader.exec_module(measure_gpu)


def test_arguments() -> None:
    args = measure_gpu.parse_args(["--models", "tiny", "llama-3.2-1b", "--prompt", "64", "--device", "cpu"])
    assert args.models == ["tiny", "llama-3.2-1b"] and args.prompt == 64 and args.device == "cpu"
    with pytest.raises(SystemExit):
        measure_gpu.parse_args(["--generate", "1"])


def test_shapes_come_from_the_catalog() -> None:
    shape = measure_gpu.shape_of("llama-3.1-8b")
    assert shape["layers"] == 32 and shape["hidden_size"] == 4096 and shape["kv_heads"] == 8
    with pytest.raises(SystemExit):
        measure_gpu.shape_of("qwen3-30b-a3b")


def test_rows_are_valid_toml_with_their_source() -> None:
    rows = [
        measure_gpu.Measured("NVIDIA H200", "2026-12-01", 'measure_gpu.py ("torch 2.5")',
                             {"achieved_gbs": 4312.5, "method": "copy"}),
        measure_gpu.Measured("NVIDIA H200", "2026-12-01", "measure_gpu.py", {
            "engine": "transformers", "model": "llama-3.1-8b", "quant": "bf16", "batch": 1, "input_tokens": 512,
            "output_tokens": 128, "prompt_tps": 9000.123, "decode_tps": 40.5}),
    ]
    doc = tomllib.loads(measure_gpu.render_rows(rows))
    first, second = doc["measurement"]
    assert first["gpu"] == "NVIDIA H200" and first["achieved_gbs"] == 4312.5 and first["source"].endswith('2.5")')
    assert second["decode_tps"] == 40.5 and second["prompt_tps"] == 9000.123 and second["date"] == "2026-12-01"


def test_tiny_model_on_cpu_when_torch_is_installed() -> None:
    pytest.importorskip("torch")
    pytest.importorskip("transformers")
    prefill, decode = measure_gpu.measure_model("cpu", measure_gpu.shape_of("tiny"), 16, 4)
    assert prefill > 0 and decode > 0
