"""llama.cpp partial offload: when a model does not fit, what the GPU can take and how fast the split runs.

A dense model is split by layers (`-ngl N`). A mixture-of-experts model keeps every layer on the GPU and moves the
routed experts of some MoE layers to system RAM (`--n-cpu-moe N`, what llama.cpp's own `--fit` does first): a token
reads only its few active experts there, and the KV cache stays on the GPU.

Split by layers, the GPU holds N repeating layers, their share of the KV cache (llama.cpp keeps an offloaded
layer's cache with it) and its runtime buffers; the token embedding, the LM head and the other layers stay in
system RAM and run on the CPU. Each generated token streams both parts once:

    s/token = GPU bytes / (GPU bandwidth × η) + CPU bytes / (RAM bandwidth × η_cpu) + layers × t_layer

Split by experts, a step is the GPU's as `speed` prices it less the moved experts' share of the weight stream,
plus the active experts' bytes of the CPU layers read from RAM at the same η_cpu. No cost per CPU layer (the host
round trip) is added: against 17 published runs (benchmarks/expert_offload.py) one did not earn its place.

DEFAULT_SYSTEM_RAM_GBS = 89.6 GB/s is dual-channel DDR5-5600, the common desktop: 2 channels × 8 bytes
× 5600 MT/s (JEDEC DDR5-5600 transfer rate, 64-bit channel), theoretical peak.
DEFAULT_CPU_EFFICIENCY = 0.6 is the share of that peak a memory-bound CPU loop sustains on such
desktops (STREAM-triad style measurements on dual-channel DDR5 land around 55–70 %); it is an
assumption, not fitted on llama.cpp CPU measurements, and both values are parameters.
"""

from __future__ import annotations

import math
from dataclasses import replace

from pydantic import BaseModel, ConfigDict

from estimator.engines import decode_coefficients, decode_fit, family, layer_split_seconds
from estimator.memory import (
    active_weight_bits,
    body_params,
    embedding_table_params,
    engine_kv_cache_bytes,
    memory,
    runtime_overhead_bytes,
    usable_vram_bytes,
)
from estimator.query import Query
from estimator.speed import decode_seconds_from, decode_terms, moe_layers, routed_expert_params, streamed_weight_bytes
from estimator.units import GB_DECIMAL

DEFAULT_SYSTEM_RAM_GBS = 89.6
DEFAULT_CPU_EFFICIENCY = 0.6


class OffloadPlan(BaseModel):
    model_config = ConfigDict(frozen=True)

    gpu_layers: int
    total_layers: int
    vram_bytes: float  # what the GPU(s) hold: offloaded layers, their KV cache, runtime buffers
    ram_bytes: float  # what system RAM holds: the other layers, their KV cache, embedding and LM head
    decode_tps: float
    system_ram_gbs: float
    cpu_efficiency: float
    # An expert split (`--n-cpu-moe N`): the MoE layers whose routed experts stay in system RAM and run on the CPU;
    # every layer is then on the GPU (gpu_layers == total_layers). None for a split by layers.
    cpu_moe_layers: int | None = None
    moe_layers: int = 0  # the model's MoE layers, for an expert split
    # llama.cpp's `--n-cpu-moe` counts layers from the first, its leading dense-FFN layers (DeepSeek's, GLM's)
    # included, though those hold no experts to move.
    n_cpu_moe: int | None = None


def _per_layer(q: Query) -> tuple[float, float, float]:
    """(stored weight bytes, KV bytes, streamed weight bytes per token) of one repeating layer."""
    m, fmt = q.model, q.quant
    layer_weights = body_params(m) * fmt.bits_per_weight / 8 / m.layers
    layer_kv = engine_kv_cache_bytes(m, q.engine, q.ctx, q.kv, q.batch) / m.layers
    head_stream = embedding_table_params(m) * fmt.output_bits / 8
    layer_stream = max(streamed_weight_bytes(m, fmt, q.batch) - head_stream, 0.0) / m.layers
    return layer_weights, layer_kv, layer_stream


def _tables_bytes(q: Query) -> float:
    table = embedding_table_params(q.model)
    if q.model.tied_embeddings:
        return table * q.quant.output_bits / 8
    return table * (q.quant.embedding_bits + q.quant.output_bits) / 8


def offload_plan(
    q: Query,
    *,
    system_ram_gbs: float = DEFAULT_SYSTEM_RAM_GBS,
    cpu_efficiency: float = DEFAULT_CPU_EFFICIENCY,
    system_ram_gb: float | None = None,
) -> OffloadPlan | None:
    """The largest -ngl that fits, or None: when everything fits already, when not even the runtime
    buffers fit, when the engine is not llama.cpp, or when the CPU part exceeds `system_ram_gb` (GiB)."""
    if family(q.engine) != "llama.cpp" or system_ram_gbs <= 0 or cpu_efficiency <= 0:
        return None
    if memory(q).verdict != "does_not_fit":
        return None
    m = q.model
    usable = usable_vram_bytes(q.gpu, q.engine) * q.gpus
    buffers = runtime_overhead_bytes(m, q.gpu, q.engine, q.ctx, q.gpus)
    if buffers > usable:
        return None
    w_layer, kv_layer, s_layer = _per_layer(q)
    per_layer = w_layer + kv_layer
    n = m.layers if per_layer <= 0 else min(int((usable - buffers) // per_layer), m.layers)
    cpu_layers = m.layers - n
    vram = buffers + n * per_layer
    ram = cpu_layers * per_layer + _tables_bytes(q)
    if system_ram_gb is not None and ram > system_ram_gb * 2**30:
        return None

    fit = decode_fit(q.engine, q.quant, q.gpu)
    kv_read = kv_layer  # every cached token of a layer is read once per generated token
    head_stream = embedding_table_params(m) * q.quant.output_bits / 8
    gpu_bytes = n * (s_layer + kv_read)
    cpu_bytes = cpu_layers * (s_layer + kv_read) + head_stream
    seconds = (gpu_bytes / (q.gpu.bandwidth_gbs * GB_DECIMAL * fit.efficiency)
               + cpu_bytes / (system_ram_gbs * GB_DECIMAL * cpu_efficiency)
               + m.layers * fit.per_layer_s)
    return OffloadPlan(gpu_layers=n, total_layers=m.layers, vram_bytes=vram, ram_bytes=ram, decode_tps=1 / seconds,
                       system_ram_gbs=system_ram_gbs, cpu_efficiency=cpu_efficiency)


def expert_offload_plan(
    q: Query,
    *,
    system_ram_gbs: float = DEFAULT_SYSTEM_RAM_GBS,
    cpu_efficiency: float = DEFAULT_CPU_EFFICIENCY,
    system_ram_gb: float | None = None,
) -> OffloadPlan | None:
    """The fewest MoE layers whose routed experts must go to system RAM for the rest to fit, or None: for a dense
    model, a model that fits, an engine other than llama.cpp itself, when even every expert in RAM leaves too much
    for the GPU, or when the RAM part exceeds `system_ram_gb` (GiB). Decode as `expert_split_seconds` times it."""
    m = q.model
    # Ollama places whole layers (its num_gpu) and has no per-layer expert placement to suggest.
    if m.moe is None or q.engine != "llama.cpp" or system_ram_gbs <= 0 or cpu_efficiency <= 0:
        return None
    mem = memory(q)
    if mem.verdict != "does_not_fit":
        return None
    moe = moe_layers(m)
    layer_experts = _routed_expert_bytes(q)[1] / moe if moe else 0.0
    if layer_experts <= 0:
        return None
    n = math.ceil((mem.total_bytes - mem.usable_bytes) / layer_experts)
    if n > moe:
        return None
    ram = n * layer_experts + mem.host_weights_bytes
    if system_ram_gb is not None and ram > system_ram_gb * 2**30:
        return None
    return OffloadPlan(gpu_layers=m.layers, total_layers=m.layers, vram_bytes=mem.total_bytes - n * layer_experts,
                       ram_bytes=ram, decode_tps=1 / expert_split_seconds(q, n, system_ram_gbs, cpu_efficiency),
                       system_ram_gbs=system_ram_gbs, cpu_efficiency=cpu_efficiency, cpu_moe_layers=n,
                       moe_layers=moe, n_cpu_moe=n + m.moe.dense_layers)


def expert_split_seconds(q: Query, cpu_moe_layers: int, system_ram_gbs: float, cpu_efficiency: float) -> float:
    """Seconds per decoded token with the routed experts of `cpu_moe_layers` MoE layers in system RAM: the step as
    `speed` times it, right after a prompt of `q.prompt_tokens`, less those experts' share of the weight stream and
    of the unpacking, plus their active weights read from RAM."""
    m, fmt = q.model, q.quant
    moe = moe_layers(m)
    share = min(cpu_moe_layers, moe) / moe if moe else 0.0
    terms = decode_terms(m, fmt, q.gpu, q.engine, max(q.prompt_tokens, 1), q.kv)
    streamed = terms.dense_weights_s + terms.expert_weights_s
    routed_of_unpacking = terms.expert_weights_s / streamed if streamed > 0 else 0.0
    on_gpu = replace(terms, expert_weights_s=terms.expert_weights_s * (1 - share),
                     dequant_op_s=terms.dequant_op_s * (1 - routed_of_unpacking * share))
    gpu_s = decode_seconds_from(on_gpu, decode_coefficients(q.engine, fmt, q.gpu)) + layer_split_seconds(q.gpus)
    cpu_bytes = _routed_expert_bytes(q)[0] * share
    return gpu_s + cpu_bytes / (system_ram_gbs * GB_DECIMAL * cpu_efficiency)


def _routed_expert_bytes(q: Query) -> tuple[float, float]:
    """(routed-expert bytes one token reads, every routed expert's bytes) as the file stores them."""
    bytes_per_param = active_weight_bits(q.model, q.quant)[1] / 8
    active, every = routed_expert_params(q.model)
    return active * bytes_per_param, every * bytes_per_param


__all__ = ["DEFAULT_CPU_EFFICIENCY", "DEFAULT_SYSTEM_RAM_GBS", "OffloadPlan", "expert_offload_plan",
           "expert_split_seconds", "offload_plan"]
