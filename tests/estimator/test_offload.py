"""Partial offload: more RAM bandwidth is faster, more VRAM takes more layers, and a fit needs no plan."""

from __future__ import annotations

import pytest
from hypothesis import given, settings
from hypothesis import strategies as st

from catalog.store import load_catalog
from estimator.memory import memory
from estimator.offload import DEFAULT_SYSTEM_RAM_GBS, expert_offload_plan, offload_plan
from estimator.query import Query
from estimator.speed import speed

CAT = load_catalog()
Q4 = CAT.quant("q4_k_m")
LLAMA70 = CAT.model("llama-3.3-70b")
RTX4090 = CAT.gpu("nvidia-rtx-4090")


def q70(gpu=RTX4090, gpus=1, ctx=8192, model=LLAMA70):
    return Query(gpu=gpu, gpus=gpus, model=model, quant=Q4, ctx=ctx)


def test_default_ram_is_dual_channel_ddr5_5600():
    assert DEFAULT_SYSTEM_RAM_GBS == pytest.approx(2 * 8 * 5600e6 / 1e9)


def test_plan_for_a_model_that_does_not_fit():
    q = q70()
    assert memory(q).verdict == "does_not_fit"
    plan = offload_plan(q)
    assert plan is not None
    assert 0 < plan.gpu_layers < plan.total_layers == LLAMA70.layers
    assert plan.vram_bytes <= memory(q).usable_bytes
    assert plan.ram_bytes > 0
    # slower than the GPU alone would be, faster than nothing
    assert 0 < plan.decode_tps < speed(q).decode_tps


def test_no_plan_when_everything_fits():
    q = q70(model=CAT.model("llama-3.1-8b"))
    assert memory(q).verdict != "does_not_fit"
    assert offload_plan(q) is None


def test_no_plan_for_other_engines():
    q = Query(gpu=RTX4090, model=LLAMA70, quant=CAT.quant("awq-int4"), engine="vllm", ctx=8192)
    assert offload_plan(q) is None


def test_no_plan_when_ram_is_too_small():
    assert offload_plan(q70(), system_ram_gb=8) is None
    assert offload_plan(q70(), system_ram_gb=64) is not None


def test_more_ram_bandwidth_is_faster():
    slow = offload_plan(q70(), system_ram_gbs=50)
    fast = offload_plan(q70(), system_ram_gbs=120)
    assert slow is not None and fast is not None
    assert fast.decode_tps > slow.decode_tps
    assert fast.gpu_layers == slow.gpu_layers


def test_more_vram_takes_more_layers():
    small = offload_plan(q70(gpu=CAT.gpu("nvidia-rtx-4060-ti-16gb")))
    big = offload_plan(q70(gpu=RTX4090))
    assert small is not None and big is not None
    assert big.gpu_layers > small.gpu_layers


@settings(max_examples=40, deadline=None)
@given(ctx=st.sampled_from([2048, 8192, 32768]), bw=st.floats(20, 400), eff=st.floats(0.2, 0.9))
def test_monotone_in_bandwidth_and_efficiency(ctx, bw, eff):
    base = offload_plan(q70(ctx=ctx), system_ram_gbs=bw, cpu_efficiency=eff)
    more = offload_plan(q70(ctx=ctx), system_ram_gbs=bw * 1.5, cpu_efficiency=eff)
    better = offload_plan(q70(ctx=ctx), system_ram_gbs=bw, cpu_efficiency=min(eff * 1.1, 1.0))
    assert base is not None and more is not None and better is not None
    assert more.decode_tps > base.decode_tps
    assert better.decode_tps >= base.decode_tps


@settings(max_examples=30, deadline=None)
@given(ctx=st.sampled_from([4096, 16384, 65536]))
def test_layers_never_grow_with_context_and_split_adds_up(ctx):
    short = offload_plan(q70(ctx=ctx))
    longer = offload_plan(q70(ctx=ctx * 2))
    if short is not None and longer is not None:
        assert longer.gpu_layers <= short.gpu_layers
    for plan in (short, longer):
        if plan is not None:
            assert plan.gpu_layers < plan.total_layers or plan.ram_bytes > 0


def test_more_layers_on_gpu_is_faster_than_fewer():
    two = offload_plan(q70(gpus=2, gpu=CAT.gpu("nvidia-rtx-4060-ti-16gb")))
    one = offload_plan(q70(gpu=CAT.gpu("nvidia-rtx-4060-ti-16gb")))
    assert one is not None and two is not None
    assert two.gpu_layers > one.gpu_layers and two.decode_tps > one.decode_tps


def test_nothing_fits_gives_none():
    tiny = CAT.gpus[0].model_copy(update={"vram_gb": 0.3})
    assert offload_plan(q70(gpu=tiny)) is None


@pytest.mark.parametrize(("gpu", "model", "quant", "planned"), [
    ("nvidia-gb10", "deepseek-r1", "q4_k_m", False),  # 383 GiB of weights on a 128 GB machine
    ("apple-m4-16gb", "qwen3-32b", "q4_k_m", False),  # 10.7 GiB on the GPU and as much again "in RAM" of 16 GB
    ("apple-m2-max-64gb", "llama-3.1-70b", "q6_k", True),  # 48 GiB GPU share + the rest within 64 GB
    ("nvidia-rtx-4090", "llama-3.1-70b", "q4_k_m", True),  # a discrete card: the host's RAM is its own
])
def test_unified_memory_splits_only_within_the_one_memory(gpu: str, model: str, quant: str, planned: bool) -> None:
    from estimator.advice import partial_offload
    from estimator.verdict import fit

    g = CAT.gpu(gpu)
    q = Query(gpu=g, model=CAT.model(model), quant=CAT.quant(quant), ctx=8192)
    plan = partial_offload(fit(q, [q.quant]))
    assert (plan is not None) == planned
    if plan is not None and g.unified_memory:
        assert plan.vram_bytes + plan.ram_bytes <= g.vram_bytes


# --- expert offload (`--n-cpu-moe`) ---------------------------------------------------------------------------

QWEN30 = CAT.model("qwen3-30b-a3b")
RTX3060 = CAT.gpu("nvidia-rtx-3060-12gb")


def moe_query(gpu=RTX3060, ctx=8192, model=QWEN30):
    return Query(gpu=gpu, model=model, quant=Q4, ctx=ctx)


def test_a_moe_model_that_does_not_fit_moves_the_fewest_layers_of_experts():
    q = moe_query()
    mem = memory(q)
    plan = expert_offload_plan(q)
    assert mem.verdict == "does_not_fit" and plan is not None and plan.cpu_moe_layers is not None
    assert plan.gpu_layers == plan.total_layers == QWEN30.layers and 0 < plan.cpu_moe_layers <= plan.moe_layers
    per_layer = (mem.total_bytes - plan.vram_bytes) / plan.cpu_moe_layers
    assert plan.vram_bytes <= mem.usable_bytes < plan.vram_bytes + per_layer  # one layer fewer would not fit
    assert plan.ram_bytes == pytest.approx(plan.cpu_moe_layers * per_layer + mem.host_weights_bytes)


def test_an_expert_split_reads_only_the_active_experts_from_ram():
    """The layer split streams whole layers (attention, every active expert, their KV cache) from RAM; the expert
    split only the active experts of its CPU layers, so it is the faster of the two for the same card."""
    experts, layers = expert_offload_plan(moe_query()), offload_plan(moe_query())
    assert experts is not None and layers is not None
    assert layers.decode_tps < experts.decode_tps < speed(moe_query(gpu=RTX4090)).decode_tps


def test_the_kv_cache_stays_on_the_gpu_so_a_longer_context_moves_more_experts():
    short, longer = expert_offload_plan(moe_query(ctx=8192)), expert_offload_plan(moe_query(ctx=32768))
    assert short is not None and longer is not None
    assert short.cpu_moe_layers is not None and longer.cpu_moe_layers is not None
    assert longer.cpu_moe_layers > short.cpu_moe_layers and longer.decode_tps < short.decode_tps


def test_an_expert_split_is_faster_with_faster_ram():
    slow = expert_offload_plan(moe_query(), system_ram_gbs=50)
    fast = expert_offload_plan(moe_query(), system_ram_gbs=120)
    assert slow is not None and fast is not None and slow.decode_tps < fast.decode_tps
    assert slow.cpu_moe_layers == fast.cpu_moe_layers


def test_no_expert_split_for_a_dense_model_a_fit_or_too_little_ram():
    assert expert_offload_plan(q70()) is None
    assert expert_offload_plan(moe_query(gpu=RTX4090)) is None  # it fits
    assert expert_offload_plan(moe_query(), system_ram_gb=2) is None
    # Ollama splits by layers (num_gpu) and cannot be told where experts go.
    ollama = moe_query().model_copy(update={"engine": "ollama"})
    assert expert_offload_plan(ollama) is None and offload_plan(ollama) is not None


def test_the_flag_counts_the_leading_dense_layers_that_hold_no_experts():
    """`--n-cpu-moe N` names layers 0 … N−1; DeepSeek-V2-Lite's first layer has a dense FFN."""
    lite = CAT.model("deepseek-v2-lite")
    assert lite.moe is not None and lite.moe.dense_layers == 1
    plan = expert_offload_plan(moe_query(gpu=CAT.gpu("nvidia-rtx-4060"), model=lite, ctx=32768))
    assert plan is not None and plan.cpu_moe_layers is not None
    assert plan.n_cpu_moe == plan.cpu_moe_layers + 1


def test_when_the_experts_alone_are_not_enough_the_split_falls_back_to_layers():
    """A context whose KV cache and attention outgrow the card even with every expert in RAM."""
    q = moe_query(gpu=CAT.gpu("nvidia-rtx-4060"), ctx=98304)
    assert expert_offload_plan(q) is None
    plan = offload_plan(q)
    assert plan is not None and plan.cpu_moe_layers is None and plan.gpu_layers < plan.total_layers


def test_the_published_expert_split_runs_name_their_source_and_resolve():
    """benchmarks/expert_offload.py checks the split against these; each must say where it comes from and be a
    setup the estimator can answer."""
    import tomllib
    from pathlib import Path

    from estimator.speed import moe_layers

    runs = tomllib.loads((Path(__file__).resolve().parents[2] / "benchmarks/data/expert_offload.toml").read_text())
    assert len(runs["run"]) >= 10
    for run in runs["run"]:
        assert run["source"].startswith("https://") and run["note"] and run["tg_tps"] > 0
        model = CAT.model(run["model"])
        CAT.gpu(run["gpu"]), CAT.quant(run["quant"])
        assert model.moe is not None and -1 <= run["cpu_moe_layers"] <= moe_layers(model) and run["cpu_moe_layers"]
