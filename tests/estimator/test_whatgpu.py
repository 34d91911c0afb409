"""whatgpu: which setups run a model, never one the memory estimate rejects, filtered and ordered."""

from __future__ import annotations

import math

import pytest

from catalog.store import load_catalog
from estimator.memory import memory
from estimator.query import Query
from estimator.whatgpu import what_gpu_setups

CAT = load_catalog()
LLAMA70 = CAT.model("llama-3.3-70b")
Q4 = CAT.quant("q4_k_m")
CTX = 32 * 1024


@pytest.fixture(scope="module")
def setups():
    return what_gpu_setups(LLAMA70, [Q4], CAT.gpus, ctx=CTX).setups


def test_includes_multi_gpu_and_single_80gb_cards(setups):
    assert any(s.count > 1 for s in setups)
    singles = {s.gpu.id for s in setups if s.count == 1}
    assert {"nvidia-h100-sxm", "nvidia-a100-80gb-sxm"} <= singles
    assert all(s.gpu.vram_gb >= 64 for s in setups if s.count == 1)


def test_never_a_setup_the_estimator_rejects(setups):
    for s in setups:
        q = Query(gpu=s.gpu, gpus=s.count, model=LLAMA70, quant=s.quant, ctx=CTX, prompt_tokens=2048)
        assert memory(q).verdict != "does_not_fit", (s.gpu.id, s.count)
        assert s.memory == memory(q)


def test_count_is_the_smallest_that_fits(setups):
    for s in setups:
        if s.count > 1:
            fewer = Query(gpu=s.gpu, gpus=s.count - 1, model=LLAMA70, quant=s.quant, ctx=CTX)
            assert memory(fewer).verdict == "does_not_fit", (s.gpu.id, s.count)


def test_rtx_4090s_need_several_cards(setups):
    four090 = [s for s in setups if s.gpu.id == "nvidia-rtx-4090"]
    assert len(four090) == 1 and four090[0].count >= 2


def test_apple_never_pooled(setups):
    assert all(s.count == 1 for s in setups if s.gpu.vendor == "apple")


def test_sorted_by_count_price_power_speed(setups):
    keys = [s.sort_key() for s in setups]
    assert keys == sorted(keys)
    assert keys[0][0] == 1


def test_min_tps_filters(setups):
    fast = what_gpu_setups(LLAMA70, [Q4], CAT.gpus, ctx=CTX, min_tps=40).setups
    assert fast and all(s.decode_tps >= 40 for s in fast)
    assert len(fast) < len(setups)
    assert what_gpu_setups(LLAMA70, [Q4], CAT.gpus, ctx=CTX, min_tps=1e6).setups == []


def test_budget_filters(setups):
    budget = 5000
    cheap = what_gpu_setups(LLAMA70, [Q4], CAT.gpus, ctx=CTX, budget_usd=budget).setups
    assert cheap
    assert all(s.price_usd is not None and s.price_usd <= budget for s in cheap)
    assert all(s.gpu.launch_price_usd is not None for s in cheap)
    assert len(cheap) < len(setups)


def test_unsupported_engines_are_skipped():
    out = what_gpu_setups(CAT.model("llama-3.1-8b"), [CAT.quant("awq-int4")], CAT.gpus, ctx=8192,
                          engine="vllm").setups
    assert out and all(s.gpu.vendor != "apple" for s in out)
    mlx = what_gpu_setups(CAT.model("llama-3.1-8b"), [CAT.quant("mlx-4bit")], CAT.gpus, ctx=8192,
                          engine="mlx").setups
    assert mlx and all(s.gpu.vendor == "apple" for s in mlx)


def test_vllm_tensor_parallel_divides_heads_and_speeds_up():
    out = what_gpu_setups(LLAMA70, [CAT.quant("awq-int4")], CAT.gpus, ctx=CTX, engine="vllm").setups
    assert all(LLAMA70.attention_heads % s.count == 0 for s in out)
    h100 = CAT.gpu("nvidia-h100-sxm")
    one = what_gpu_setups(LLAMA70, [CAT.quant("awq-int4")], [h100], ctx=CTX, engine="vllm").setups[0]
    need = one.decode_tps * 1.3
    more = what_gpu_setups(LLAMA70, [CAT.quant("awq-int4")], [h100], ctx=CTX, engine="vllm",
                           min_tps=need).setups
    assert more and more[0].count > 1 and more[0].decode_tps >= need


def test_max_gpus_caps_the_count():
    out = what_gpu_setups(LLAMA70, [Q4], CAT.gpus, ctx=CTX, max_gpus=2).setups
    assert out and max(s.count for s in out) <= 2


def test_headroom_is_reported(setups):
    for s in setups:
        assert s.headroom_bytes >= 0
        assert math.isclose(s.headroom_fraction, s.headroom_bytes / s.memory.usable_bytes)


def test_a_budget_counts_the_setups_it_leaves_out_for_an_unknown_price():
    # A T4 has no known launch price: under a budget it cannot be shown to be within it, so it is left out, and
    # counted; without a budget it is listed like any other card.
    t4, rtx3090 = CAT.gpu("nvidia-t4"), CAT.gpu("nvidia-rtx-3090")
    assert t4.launch_price_usd is None and rtx3090.launch_price_usd is not None
    model = CAT.model("qwen3-8b")
    capped = what_gpu_setups(model, [Q4], [t4, rtx3090], ctx=8192, budget_usd=10_000)
    assert [s.gpu.id for s in capped.setups] == ["nvidia-rtx-3090"] and capped.unpriced == 1
    free = what_gpu_setups(model, [Q4], [t4, rtx3090], ctx=8192)
    assert {s.gpu.id for s in free.setups} == {"nvidia-t4", "nvidia-rtx-3090"} and free.unpriced == 0
    # A priced card over the budget is simply dearer, not unpriced.
    assert what_gpu_setups(model, [Q4], [t4, rtx3090], ctx=8192, budget_usd=1).unpriced == 1


def test_cards_with_a_sourced_launch_price_are_within_a_budget():
    # RX 7800 XT ($499), Arc A770 16GB ($349) and RX 7900 GRE ($549) run Qwen3-14B at 8k and cost under $600.
    found = what_gpu_setups(CAT.model("qwen3-14b"), [Q4], CAT.gpus, ctx=8192, budget_usd=600).setups
    listed = {s.gpu.id for s in found}
    assert {"amd-rx-7800-xt", "intel-arc-a770-16gb", "amd-rx-7900-gre"} <= listed
