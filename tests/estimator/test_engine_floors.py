"""Where each engine runs: the serving engines' hardware floors from their own pages, the formats a card has
kernels for, the tensor-parallel sizes a model's heads split over, and the attention kernel a trainer can use."""

from __future__ import annotations

import pytest

from catalog import load_catalog
from estimator import finetune as ft
from estimator.capability import supports_flash_attention_2
from estimator.engines import (
    engine_floor,
    format_as_run,
    format_runs_on,
    runs_weight_only,
    splits_over,
    supports,
    tensor_parallel_sizes,
)
from estimator.rank import rank
from estimator.whatgpu import what_gpu_setups

CAT = load_catalog()


@pytest.mark.parametrize(("engine", "gpu", "reason"), [
    ("vllm", "nvidia-t4", None),  # compute capability 7.5: vLLM's current floor
    ("vllm", "nvidia-v100-pcie-32gb", "cc"),
    ("vllm", "nvidia-gtx-1080", "cc"),
    ("trt-llm", "nvidia-t4", "cc"),  # TensorRT-LLM: Ampere and newer
    ("trt-llm", "nvidia-rtx-3090", None),
    ("vllm", "amd-mi300x", None),
    ("vllm", "amd-rx-7900-xtx", None),
    ("vllm", "amd-rx-580-8gb", "rocm_target"),
    ("vllm", "amd-mi50-32gb", "rocm_target"),
    ("sglang", "amd-rx-7900-xtx", "rocm_target"),  # SGLang's ROCm builds: MI300 and MI350
    ("vllm", "intel-arc-b580", None),
    ("sglang", "intel-arc-b580", "vendor"),
    ("mlx", "nvidia-rtx-4090", "vendor"),
    ("llama.cpp", "amd-rx-580-8gb", None),
])
def test_serving_engines_run_where_their_pages_say(engine: str, gpu: str, reason: str | None) -> None:
    floor = engine_floor(engine, CAT.gpu(gpu))
    assert (floor[0] if floor else None) == reason
    assert supports(engine, CAT.gpu(gpu)) == (reason is None)


@pytest.mark.parametrize(("fmt", "gpu", "runs"), [
    ("fp8", "nvidia-t4", True),  # weight-only FP8 through Marlin from compute capability 7.5
    ("fp8", "nvidia-rtx-4090", True),
    ("fp8", "amd-mi300x", True),
    ("fp8", "amd-rx-7900-xtx", False),  # RDNA 3 has no FP8 matrix units
    ("nvfp4", "amd-mi300x", False),
    ("nvfp4", "nvidia-rtx-5090", True),
    ("awq-int4", "amd-mi300x", True),
])
def test_checkpoint_formats_run_where_the_card_has_kernels_for_them(fmt: str, gpu: str, runs: bool) -> None:
    assert format_runs_on(CAT.quant(fmt), CAT.gpu(gpu)) == runs


@pytest.mark.parametrize(("gpu", "name"), [
    ("nvidia-t4", "FP8 (W8A16)"),  # Turing, compute capability 7.5: FP8 Marlin, weights only
    ("nvidia-a100-80gb-sxm", "FP8 (W8A16)"),  # Ampere 8.0
    ("nvidia-rtx-3090", "FP8 (W8A16)"),  # Ampere 8.6
    ("nvidia-l4", "FP8 (W8A8)"),  # Ada 8.9: FP8 matrix units
    ("nvidia-h100-sxm", "FP8 (W8A8)"),
    ("amd-mi300x", "FP8 (W8A8)"),
])
def test_fp8_is_named_for_what_vllm_runs_on_the_gpu(gpu: str, name: str) -> None:
    fp8, card = CAT.quant("fp8"), CAT.gpu(gpu)
    assert format_as_run(fp8, card).name == name
    assert runs_weight_only(fp8, card) == (name == "FP8 (W8A16)")
    assert format_as_run(fp8, card).model_copy(update={"name": fp8.name}) == fp8  # only the name differs
    assert format_as_run(CAT.quant("int8-w8a8"), card).name == "INT8 W8A8"


def test_whatgpu_names_fp8_per_setup() -> None:
    setups = what_gpu_setups(CAT.model("llama-3.1-8b"), [CAT.quant("fp8")], CAT.gpus, ctx=8192, engine="vllm").setups
    names = {s.gpu.id: s.quant.name for s in setups}
    assert names["nvidia-t4"] == "FP8 (W8A16)" and names["nvidia-l4"] == "FP8 (W8A8)"


def test_tensor_parallel_groups_split_whole_query_and_kv_heads() -> None:
    llama = CAT.model("llama-3.1-8b")  # 32 query heads, 8 KV heads
    assert tensor_parallel_sizes("vllm", llama, 8) == [1, 2, 4, 8]
    qwen14 = CAT.model("qwen3-14b")  # 40 query heads, 8 KV heads: 5 divides the queries, not the KV heads
    assert qwen14.attention_heads % 5 == 0 and not splits_over("vllm", qwen14, 5)
    assert all(splits_over("llama.cpp", llama, n) for n in range(1, 9))  # a layer split has no such rule


def test_whatgpu_and_rank_leave_out_what_cannot_run() -> None:
    llama = CAT.model("llama-3.1-8b")
    setups = what_gpu_setups(llama, [CAT.quant("fp8")], CAT.gpus, ctx=8192, engine="vllm").setups
    assert setups and all(format_runs_on(s.quant, s.gpu) and supports("vllm", s.gpu) for s in setups)
    assert all(s.count in (1, 2, 4, 8) for s in setups)
    rows = rank(CAT.models, [CAT.quant("bf16")], CAT.gpu("nvidia-rtx-4090"), gpus=3, engine="vllm", ctx=4096)
    assert rows and all(splits_over("vllm", r.model, 3) for r in rows)


def test_trainers_fall_back_to_sdpa_where_flash_attention_2_does_not_run() -> None:
    t4, ada = CAT.gpu("nvidia-t4"), CAT.gpu("nvidia-rtx-4090")
    assert not supports_flash_attention_2(t4) and supports_flash_attention_2(ada)
    assert ft.settings_on(t4, method="lora", seq=2048, batch=1).attention_used == "sdpa"
    assert ft.settings_on(ada, method="lora", seq=2048, batch=1).attention_used == "flash"
    asked_flash = ft.settings_on(t4, method="lora", seq=2048, batch=1, attention="flash")
    assert ft.hardware_conflict(t4, asked_flash) == "flash"
    asked_bf16 = ft.settings_on(t4, method="lora", seq=2048, batch=1, precision="bf16")
    assert ft.hardware_conflict(t4, asked_bf16) == "bf16"
    assert ft.hardware_conflict(ada, ft.settings_on(ada, method="lora", seq=2048, batch=1)) is None
