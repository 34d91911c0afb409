"""benchmarks/measure_finetune.py without a GPU: argument parsing, the run plan, the rows it writes (which
the accuracy benchmark must read back into the same settings), and that importing it needs no torch."""

from __future__ import annotations

import importlib.util
import subprocess
import sys
import tomllib
from pathlib import Path
from types import ModuleType

import pytest

from catalog import load_catalog

BENCH = Path(__file__).resolve().parents[2] / "benchmarks"


def _load(name: str) -> ModuleType:
    spec = importlib.util.spec_from_file_location(name, BENCH / f"{name}.py")
    assert spec is not None and spec.loader is not None
    module = importlib.util.module_from_spec(spec)
    sys.modules[name] = module  # dataclasses look their module up while the class is built
    spec.loader.exec_module(module)
    return module


@pytest.fixture(scope="module")
def mf() -> ModuleType:
    return _load("measure_finetune")


CONTEXT = {"gpu_name": "NVIDIA A100-SXM4-40GB", "gpu_id": "nvidia-a100-40gb-sxm", "date": "2026-12-01",
           "libs": {"torch": "2.9.0", "transformers": "5.1.0", "peft": "0.18.0"}, "cuda": "12.8"}


def test_importing_needs_no_torch() -> None:
    code = (
        "import sys, importlib.util; sys.modules['torch'] = None; "
        f"spec = importlib.util.spec_from_file_location('m', {str(BENCH / 'measure_finetune.py')!r}); "
        "m = importlib.util.module_from_spec(spec); sys.modules['m'] = m; spec.loader.exec_module(m); "
        "print(m.main(['--dry-run']))"
    )
    done = subprocess.run([sys.executable, "-c", code], capture_output=True, text=True, timeout=120)
    assert done.returncode == 0, done.stderr
    assert done.stdout.strip().splitlines()[-1] == "0"
    assert "llama-3.2-1b full seq 512 batch 1 bf16 checkpointing none" in done.stdout


def test_arguments_and_plan(mf: ModuleType) -> None:
    args = mf.build_parser().parse_args(
        ["--models", "llama-3.2-1b, qwen3-0.6b", "--methods", "lora", "--seqs", "512,4096", "--regimes", "bf16",
         "--checkpointing", "none,block", "--batch", "1,2"]
    )
    runs = mf.plan(args)
    assert len(runs) == 2 * 1 * 2 * 2 * 1 * 2
    assert {r.seq for r in runs} == {512, 4096} and {r.batch for r in runs} == {1, 2}
    assert all(r.method == "lora" and r.regime == "bf16" for r in runs)
    defaults = mf.plan(mf.build_parser().parse_args([]))
    assert {r.method for r in defaults} == {"full", "lora"} and {r.regime for r in defaults} == {"bf16", "amp_bf16"}
    for bad in (["--methods", "qlora"], ["--seqs", "0"], ["--seqs", "x"], ["--checkpointing", "sometimes"]):
        with pytest.raises(SystemExit):
            mf.build_parser().parse_args(bad)


def test_unknown_model_is_refused(mf: ModuleType, capsys: pytest.CaptureFixture[str]) -> None:
    assert mf.main(["--models", "no-such-model", "--dry-run"]) == 2
    assert "no-such-model" in capsys.readouterr().err


def test_rows_are_sourced_toml_the_benchmark_reads_back(mf: ModuleType) -> None:
    acc = _load("finetune_accuracy")
    full = mf.Run(model="llama-3.2-1b", method="full", seq=2048, batch=1, regime="bf16", checkpointing="block")
    lora = mf.Run(model="llama-3.2-1b", method="lora", seq=512, batch=2, regime="amp_bf16", checkpointing="none",
                  rank=8, targets="qv")
    rows = [
        mf.row(full, measure="allocated", value_gib=10.1234, **CONTEXT),
        mf.row(lora, measure="reserved", value_gib=7.5, **CONTEXT),
        mf.row(full, measure="oom", value_gib=39.5, **CONTEXT),
    ]
    parsed = tomllib.loads(mf.to_toml(rows))["peak"]
    assert len(parsed) == 3
    for r in parsed:
        assert "2026-12-01" in r["source"] and "A100" in r["source"] and "torch 2.9.0" in r["source"]
        assert r["holdout"] is True and r["use"] is True and r["gpu"] == "nvidia-a100-40gb-sxm"
    assert parsed[0]["measured_gb"] == 10.123 and parsed[0]["unit"] == "GiB"
    s_full = acc.settings_of(parsed[0])
    assert (s_full.method, s_full.regime_used, s_full.checkpointing_used, s_full.packing) == (
        "full", "bf16", "block", True)
    s_lora = acc.settings_of(parsed[1])
    assert (s_lora.rank, s_lora.targets, s_lora.batch, s_lora.base_fp32) == (8, "qv", 2, True)
    catalog = load_catalog()
    results = acc.evaluate(parsed, {m.id: m for m in catalog.models}, {g.id: g for g in catalog.gpus})
    assert [r["outcome"] for r in results] == ["ran", "ran", "oom"]
    assert results[2]["error"] is None and results[0]["error"] is not None


def test_hf_config_carries_the_catalog_shapes(mf: ModuleType) -> None:
    model = load_catalog().model("llama-3.1-8b")
    cfg = mf.hf_config_kwargs(model)
    assert (cfg["hidden_size"], cfg["intermediate_size"], cfg["num_hidden_layers"]) == (4096, 14336, 32)
    assert (cfg["num_attention_heads"], cfg["num_key_value_heads"], cfg["vocab_size"]) == (32, 8, 128256)
    moe = next(m for m in load_catalog().models if m.moe is not None)
    with pytest.raises(ValueError):
        mf.hf_config_kwargs(moe)
