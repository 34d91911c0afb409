"""How fast: seconds per generated token (memory-bound) and seconds of prefill (compute-bound).

    decode  s/token = bytes_moved(ctx) / (bandwidth × η) + layers × t_layer [+ tensor-parallel all-reduces]
    prefill s       = FLOPs(prompt) / (peak × u) + passes × weight_bytes / (bandwidth × η)

η, t_layer and u are fitted on published llama-bench and vLLM measurements (estimator/calibration).
"""

from __future__ import annotations

import math

from pydantic import BaseModel, ConfigDict

from catalog.schema import GPU, Model, QuantFormat
from estimator import constants as k
from estimator.engines import compute_tflops, decode_fit, prefill_fit
from estimator.memory import body_params, embedding_table_params, kv_cache_bytes, weight_bytes
from estimator.query import Engine, KVDtype, Query


def streamed_weight_bytes(model: Model, fmt: QuantFormat, sequences: int = 1) -> float:
    """Weight bytes read to produce one token for each of `sequences` sequences.

    Every layer's active weights and the LM head are read once per step; the input embedding is a
    row lookup. For MoE, each sequence routes to `active_experts` of `experts`; with several sequences
    the expected share of distinct experts touched is 1 − (1 − k/E)^n.
    """
    table = embedding_table_params(model)
    head_bits = table * fmt.output_bits
    total_body = body_params(model)
    active_body = max(model.active_params - table * (1 if model.tied_embeddings else 2), 0.0)
    if model.moe is not None and sequences > 1:
        share = 1 - (1 - model.moe.active_experts / model.moe.experts) ** sequences
        expert_params = total_body - active_body  # idle expert params at batch 1
        idle_fraction = 1 - model.moe.active_experts / model.moe.experts
        all_expert_params = expert_params / idle_fraction if idle_fraction > 0 else 0.0
        routed_active = all_expert_params * model.moe.active_experts / model.moe.experts
        shared_params = active_body - routed_active
        active_body = shared_params + all_expert_params * share
    return (active_body * fmt.bits_per_weight + head_bits) / 8


def decode_bytes_per_step(model: Model, fmt: QuantFormat, ctx: int, kv: KVDtype, sequences: int = 1) -> float:
    """Weights once per step plus every sequence's KV cache at context `ctx`."""
    return streamed_weight_bytes(model, fmt, sequences) + kv_cache_bytes(model, ctx, kv, sequences)


def interconnect_kind(gpu: GPU) -> str:
    link = gpu.interconnect.lower()
    if "nvlink" in link:
        return "nvlink"
    if "infinity" in link or "xgmi" in link:
        return "infinity fabric"
    return "pcie"


def decode_seconds_per_step(
    model: Model,
    fmt: QuantFormat,
    gpu: GPU,
    engine: Engine,
    ctx: int,
    kv: KVDtype,
    gpus: int = 1,
    sequences: int = 1,
) -> float:
    fit = decode_fit(engine, fmt, gpu)
    moved = decode_bytes_per_step(model, fmt, ctx, kv, sequences)
    bandwidth = gpu.bandwidth_gbs * 1e9 * fit.efficiency
    latency = model.layers * fit.per_layer_s
    if engine == "vllm" and gpus > 1:
        # Tensor parallel: each GPU streams its 1/N slice, then all-reduces twice per layer.
        allreduce = k.ALLREDUCE_LATENCY_S[interconnect_kind(gpu)]
        memory_s = moved / gpus / bandwidth
        latency += model.layers * k.ALLREDUCES_PER_LAYER * allreduce
    else:
        # llama.cpp's layer split runs the GPUs one after another: capacity adds up, speed does not.
        memory_s = moved / bandwidth
    compute_s = 2 * model.active_params * sequences / (compute_tflops(engine, fmt, gpu) * 1e12 * gpus)
    return max(memory_s, compute_s) + latency


def prefill_flops(model: Model, prompt_tokens: int, depth: int = 0) -> float:
    """2 FLOPs per active weight per prompt token, plus attention over what each token sees.

    Token i of the prompt attends to `depth + i` earlier tokens (causal), so QK^T and AV together cost
    4·H·d per layer per token per attended token: 4·L·H·d·P·(depth + P/2) in all. Sliding-window layers
    attend to at most their window. The token embedding is a lookup and the LM head only runs for the
    last prompt token, so neither is in the per-token matmuls.
    """
    table = embedding_table_params(model)
    matmul_params = max(model.active_params - table * (1 if model.tied_embeddings else 2), 0.0)
    a = model.attention
    attn_layers = model.layers
    seen = depth + prompt_tokens * k.ATTENTION_FLOPS_CAUSAL_FACTOR  # mean tokens attended per prompt token
    local_flops = 0.0
    if a.kind == "sliding" and a.global_layers is not None and a.sliding_window is not None:
        local = model.layers - a.global_layers
        attn_layers = a.global_layers
        local_flops = 4 * local * model.attention_heads * model.head_dim * prompt_tokens * min(seen, a.sliding_window)
    elif a.kind == "hybrid_linear" and a.global_layers is not None:
        attn_layers = a.global_layers
    qk_dim = model.head_dim
    if a.kind == "mla":
        qk_dim = (a.qk_nope_head_dim or 0) + (a.qk_rope_head_dim or 0)
    attention = 4 * attn_layers * model.attention_heads * qk_dim * prompt_tokens * seen
    return 2 * matmul_params * prompt_tokens + attention + local_flops


def prefill_seconds(
    model: Model, fmt: QuantFormat, gpu: GPU, engine: Engine, prompt_tokens: int, gpus: int = 1, depth: int = 0
) -> float:
    if prompt_tokens <= 0:
        return 0.0
    fit = prefill_fit(engine, fmt, gpu)
    dfit = decode_fit(engine, fmt, gpu)
    peak = compute_tflops(engine, fmt, gpu) * 1e12
    # Tensor parallel splits the work; llama.cpp's layer split pipelines micro-batches over the GPUs.
    parallel = gpus if engine == "vllm" else 1
    compute_s = prefill_flops(model, prompt_tokens, depth) / (peak * fit.utilisation * parallel)
    passes = math.ceil(prompt_tokens / k.LLAMACPP_UBATCH) if engine != "vllm" else 1
    # A big prompt batch routes to every expert, so each pass streams the whole model.
    weights_s = passes * weight_bytes(model, fmt) / (gpu.bandwidth_gbs * 1e9 * dfit.efficiency * parallel)
    return compute_s + weights_s


class Speed(BaseModel):
    model_config = ConfigDict(frozen=True)

    decode_tps: float  # tokens/s of one sequence, right after the prompt
    aggregate_tps: float  # tokens/s summed over `batch` concurrent sequences
    prefill_tps: float
    ttft_s: float


def speed(q: Query) -> Speed:
    return speed_of(q.model, q.quant, q.gpu, q.gpus, q.engine, q.kv, q.prompt_tokens, q.batch)


def speed_of(
    model: Model, fmt: QuantFormat, gpu: GPU, gpus: int, engine: Engine, kv: KVDtype, prompt_tokens: int,
    sequences: int = 1,
) -> Speed:
    """Decode right after a prompt of `prompt_tokens` (its KV cache is read every step), and its TTFT."""
    step_s = decode_seconds_per_step(model, fmt, gpu, engine, max(prompt_tokens, 1), kv, gpus, sequences)
    ttft = prefill_seconds(model, fmt, gpu, engine, prompt_tokens, gpus)
    prefill_tps = prompt_tokens / ttft if ttft > 0 else 0.0
    return Speed(decode_tps=1 / step_s, aggregate_tps=sequences / step_s, prefill_tps=prefill_tps, ttft_s=ttft)
