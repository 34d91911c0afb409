"""What to change: each suggestion is one the engine runs, differs from what was asked and makes the verdict better;
and which KV caches each engine runs."""

from __future__ import annotations

import pytest

from catalog.store import load_catalog
from estimator.advice import Tip, overall_verdict, smaller_kv, what_to_change
from estimator.engines import KV_DTYPES_OF, kv_dtypes, nearest_kv, runs_kv
from estimator.memory import at_least, memory, next_verdict
from estimator.query import DEFAULT_KV, ENGINES, Query
from estimator.verdict import FitResult, default_formats, fit

CAT = load_catalog()


# --- the KV caches each engine runs -----------------------------------------------------------------------


def test_every_engine_states_its_kv_caches_and_runs_the_default() -> None:
    assert set(ENGINES) <= set(KV_DTYPES_OF)
    assert all(DEFAULT_KV in kv_dtypes(e) for e in ENGINES)


def test_llamacpp_has_no_fp8_cache_and_vllm_no_ggml_blocks() -> None:
    # llama.cpp's --cache-type-k list (common/arg.cpp) has no fp8; vLLM's --kv-cache-dtype has no q8_0/q4_0.
    assert not runs_kv("llama.cpp", "fp8") and runs_kv("llama.cpp", "q8_0")
    assert not runs_kv("vllm", "q8_0") and not runs_kv("vllm", "q4_0") and runs_kv("vllm", "fp8")
    assert not runs_kv("ollama", "bf16")  # OLLAMA_KV_CACHE_TYPE: f16, q8_0, q4_0


@pytest.mark.parametrize(("engine", "asked", "nearest"), [
    ("vllm", "q8_0", "fp8"), ("vllm", "q4_0", "fp8"), ("sglang", "q8_0", "fp8"), ("llama.cpp", "fp8", "q8_0"),
    ("ollama", "bf16", "f16"), ("mlx", "q8_0", "f16"), ("exllamav2", "fp8", "f16"),
])
def test_the_nearest_kv_cache_an_engine_runs(engine: str, asked: str, nearest: str) -> None:
    assert nearest_kv(engine, asked) == nearest  # type: ignore[arg-type]


@pytest.mark.parametrize(("engine", "asked", "offered"), [
    ("llama.cpp", "f16", "q8_0"), ("ollama", "f16", "q8_0"), ("vllm", "f16", "fp8"), ("vllm", "bf16", "fp8"),
    ("trt-llm", "f16", "fp8"), ("llama.cpp", "q8_0", None), ("vllm", "fp8", None), ("mlx", "f16", None),
    ("exllamav3", "f16", None),
])
def test_the_smaller_kv_cache_offered_is_one_the_engine_runs(engine: str, asked: str, offered: str | None) -> None:
    assert smaller_kv(engine, asked) == offered  # type: ignore[arg-type]


# --- what to change ----------------------------------------------------------------------------------------


def _answer(gpu: str, model: str, quant: str | None = None, **kw: object) -> FitResult:
    engine = kw.get("engine", "llama.cpp")
    formats = [CAT.quant(quant)] if quant else default_formats(CAT, engine)  # type: ignore[arg-type]
    q = Query(gpu=CAT.gpu(gpu), model=CAT.model(model), quant=formats[0], **kw)  # type: ignore[arg-type]
    return fit(q, formats)


def _assert_each_tip_changes_something_for_the_better(result: FitResult, tips: list[Tip]) -> None:
    q, target = result.query, next_verdict(overall_verdict(result))
    for tip in tips:
        if tip.kind == "kv":
            assert tip.kv is not None and tip.kv != q.kv and runs_kv(q.engine, tip.kv), tip
            changed = q.model_copy(update={"quant": tip.quant, "kv": tip.kv})
        elif tip.kind == "ctx":
            assert tip.ctx is not None and tip.ctx < q.ctx, tip
            changed = q.model_copy(update={"quant": tip.quant, "ctx": tip.ctx})
        elif tip.kind == "gpus":
            assert tip.gpus is not None and tip.gpus > q.gpus, tip
            changed = q.model_copy(update={"quant": tip.quant, "gpus": tip.gpus})
        elif tip.kind == "smaller":
            assert tip.quant.id not in {o.quant.id for o in result.options}, tip
            changed = q.model_copy(update={"quant": tip.quant})
        else:
            continue
        assert at_least(memory(changed).verdict, target), (tip, memory(changed).verdict, target)


def test_vllm_is_advised_its_fp8_cache_never_q8_0() -> None:
    # /fit gpu:H100 SXM model:llama3.1:8b engine:vllm quant:fp8 batch:64 advised `kv:q8_0`, which vLLM has not.
    result = _answer("nvidia-h100-sxm", "llama-3.1-8b", "fp8", engine="vllm", batch=64)
    tips = what_to_change(result, CAT)
    assert [t.kv for t in tips if t.kind == "kv"] == ["fp8"]
    _assert_each_tip_changes_something_for_the_better(result, tips)


@pytest.mark.parametrize(("gpu", "model", "quant", "ctx", "kv"), [
    # "at most 128k of context" was what had been asked; "at most 32k" likewise.
    ("nvidia-rtx-4090", "qwen3-8b", "q4_k_m", 131072, "f16"),
    ("nvidia-rtx-3090", "qwen3-32b", None, 32768, "q8_0"),
])
def test_less_context_is_less_than_asked_and_leaves_headroom(gpu: str, model: str, quant: str | None, ctx: int,
                                                               kv: str) -> None:
    result = _answer(gpu, model, quant, ctx=ctx, kv=kv)
    assert overall_verdict(result) == "tight"
    tips = what_to_change(result, CAT)
    offered = [t for t in tips if t.kind == "ctx"]
    assert len(offered) == 1 and offered[0].ctx is not None and offered[0].ctx < ctx
    _assert_each_tip_changes_something_for_the_better(result, tips)


@pytest.mark.parametrize("engine", ["llama.cpp", "ollama", "vllm", "sglang"])
@pytest.mark.parametrize(("gpu", "model", "ctx", "batch"), [
    ("nvidia-t4", "qwen3-8b", 32768, 1), ("nvidia-rtx-3090", "qwen3-32b", 32768, 1),
    ("nvidia-rtx-4090", "qwen3-8b", 131072, 1), ("nvidia-a100-40gb-pcie", "llama-3.1-8b", 8192, 64),
    ("nvidia-rtx-3060-12gb", "qwen3-14b", 16384, 1), ("nvidia-l4", "llama-3.3-70b", 8192, 1),
])
def test_every_tip_is_runnable_different_and_better(engine: str, gpu: str, model: str, ctx: int, batch: int) -> None:
    result = _answer(gpu, model, engine=engine, ctx=ctx, batch=batch)
    _assert_each_tip_changes_something_for_the_better(result, what_to_change(result, CAT))
