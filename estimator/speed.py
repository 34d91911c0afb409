"""How fast: seconds per generated token and seconds of prefill, as sums of named physical terms.

    decode  s/token = inv_weight_efficiency  × dense weight bytes / achieved bandwidth
                    + (inv_weight_efficiency + expert_extra) × routed-expert bytes / achieved bandwidth
                    + inv_kv_efficiency      × KV-cache bytes at this depth / achieved bandwidth
                    + dequant_ops_per_weight × quantized weights / sustained ALU ops per second
                    + layer_overhead_s × layers + moe_layer_overhead_s × MoE layers
                    + recurrent_layer_overhead_s × linear-attention/SSM layers + token_overhead_s
                    [+ tensor-parallel all-reduces]
    prefill s       = inv_matmul_utilisation    × matmul FLOPs / peak
                    + moe_matmul_extra           × routed-expert FLOPs / peak
                    + inv_attention_utilisation × attention FLOPs / peak           (matrix-unit kernels)
                    + inv_vector_attention_utilisation × attention FLOPs / FP32 rate (llama.cpp's tile kernel)
                    + inv_pass_efficiency       × micro-batch passes × weight bytes / achieved bandwidth
                    + tile_dequant_ops_per_weight × prompt tiles × quantized weights / ALU rate
                    + recurrent_step_s          × prompt tokens × linear-attention/SSM layers
                    + prefill_layer_overhead_s  × micro-batch passes × layers
                    + inv_kv_reread_efficiency  × query tiles × group size × cached KV bytes / achieved bandwidth
                    + request_overhead_s (servers)

The compute coefficients also scale with the board's watts per datasheet TFLOPS against its architecture's
median (a covariate with a fitted slope): a power-starved board does not hold its boost clock.

Each coefficient is fitted with partial pooling on published measurements (estimator/calibration); the
terms are computed here from the catalog alone, so the fit and the estimate use the same physics.
"""

from __future__ import annotations

import math
from dataclasses import dataclass, fields, replace
from functools import lru_cache

from pydantic import BaseModel, ConfigDict

from catalog.schema import GPU, Model, QuantFormat
from estimator import constants as k
from estimator.calibration.model import HOST_SAMPLING_ENGINES, SERVER_ENGINES
from estimator.engines import (
    ONEDNN_COPY_BYTES,
    PREFILL_GEMM_BATCH_EDGES,
    DecodeCoefficients,
    PrefillCoefficients,
    achieved_bandwidth_gbs,
    alu_ops_per_s,
    attention_tflops,
    band_for,
    compute_tflops,
    decode_coefficients,
    family,
    flash_attention_walks_window_view,
    int_ops_per_s,
    layer_split_seconds,
    micro_batch_tokens,
    mla_absorbed,
    mmq_tile_tokens,
    prefill_attention_kernel,
    prefill_coefficients,
    prefill_gemm,
    tensor_parallel,
)
from estimator.memory import (
    active_weight_bits,
    body_params,
    embedding_table_params,
    kv_bytes_read_per_query_head_pass,
    kv_cache_bytes,
    weight_bytes,
)
from estimator.query import Engine, KVDtype, Query
from estimator.units import GB_DECIMAL


def active_body_params(model: Model) -> float:
    """Active parameters outside the embedding tables: the per-token matmuls but the LM head."""
    return max(model.active_params - embedding_table_params(model) * model.active_tables, 0.0)


def _active_split(model: Model) -> tuple[float, float]:
    """(non-expert active body params, routed active expert params) at one sequence."""
    total_body = body_params(model)
    active_body = active_body_params(model)
    if model.moe is None:
        return active_body, 0.0
    idle_fraction = 1 - model.moe.active_experts / model.moe.experts
    all_expert = (total_body - active_body) / idle_fraction if idle_fraction > 0 else 0.0
    routed = all_expert * model.moe.active_experts / model.moe.experts
    return max(active_body - routed, 0.0), routed


def routed_expert_params(model: Model) -> tuple[float, float]:
    """(routed-expert params one token reads, every routed expert's params): 0 and 0 for a dense model."""
    routed = _active_split(model)[1]
    return routed, _all_experts(model, routed)


def _all_experts(model: Model, routed: float) -> float:
    """Every routed expert's params, from the active share of them."""
    return routed * model.moe.experts / model.moe.active_experts if model.moe else 0.0


def unpacked_weight_tiles(
    model: Model, prompt_tokens: int, step: int | None, split: tuple[float, float] | None = None,
    tile: int = k.PREFILL_WEIGHT_TILE_TOKENS,
) -> tuple[float, float]:
    """Weights unpacked from their quantized blocks in a prompt (shared matrices, routed experts): once per
    tile of prompt tokens for the shared matrices, once per tile of *its* tokens for each expert. A
    micro-batch of 512 gives each of 128 experts (8 active) 32 tokens, less than one tile, yet every
    expert's weights are unpacked once. `split`: the model's `_active_split`, where the caller has it."""
    dense, routed = split or _active_split(model)
    shared = prompt_tokens / tile * (dense + embedding_table_params(model))
    if model.moe is None:
        return shared + prompt_tokens / tile * routed, 0.0
    batch = min(prompt_tokens, step or prompt_tokens)
    per_expert = batch * model.moe.active_experts / model.moe.experts
    passes = prompt_tokens / batch if batch else 0.0
    return shared, passes * math.ceil(per_expert / tile) * _all_experts(model, routed)


def expert_blas_shares(fmt: QuantFormat, gpu: GPU, date: str, mean_tokens: float, experts: int) -> tuple[float, float]:
    """(share of the experts, share of their routed tokens) whose matmuls go to BLAS in one micro-batch.
    llama.cpp runs each expert's matrices as a matmul over the tokens routed to it and picks MMQ or BLAS by
    that count (ggml_cuda_mul_mat_id's per-expert loop; an expert with no tokens is skipped). Tokens are taken
    as routed independently, so an expert's count is Poisson with the mean the router gives."""
    return _expert_blas_shares(fmt, gpu, date, round(mean_tokens, 1), experts)


@lru_cache(maxsize=4096)
def _expert_blas_shares(fmt: QuantFormat, gpu: GPU, date: str, mean: float, experts: int) -> tuple[float, float]:
    if mean <= 0:
        return 0.0, 0.0
    # The choice is constant between the batch edges, so one call per interval [lo, hi) decides it. Expected
    # tokens in an interval: Σ n·P(n) = mean · P(lo − 1 ≤ N < hi − 1), since n·P(n; λ) = λ·P(n − 1; λ).
    edges = (1, *PREFILL_GEMM_BATCH_EDGES)
    experts_share = tokens_share = 0.0
    for i, lo in enumerate(edges):
        hi = edges[i + 1] if i + 1 < len(edges) else None
        if prefill_gemm(fmt, gpu, date=date, ubatch=lo, experts=experts) != "blas":
            continue
        experts_share += _poisson_between(mean, lo, hi)
        tokens_share += _poisson_between(mean, lo - 1, None if hi is None else hi - 1)
    return experts_share, tokens_share


def _poisson_between(mean: float, lo: int, hi: int | None) -> float:
    """P(lo ≤ N < hi) for N ~ Poisson(mean); hi None is unbounded."""
    below_lo = _poisson_cdf(mean, lo - 1)
    return (1.0 if hi is None else _poisson_cdf(mean, hi - 1)) - below_lo


def _poisson_cdf(mean: float, n: int) -> float:
    """P(N ≤ n), summed in log space so a large mean does not underflow."""
    if n < 0:
        return 0.0
    log_pmf = -mean
    total = 0.0
    for k_ in range(n + 1):
        if k_:
            log_pmf += math.log(mean / k_)
        total += math.exp(log_pmf)
    return min(total, 1.0)


def streamed_weight_bytes(model: Model, fmt: QuantFormat, sequences: int = 1) -> float:
    """Weight bytes read to produce one token for each of `sequences` sequences.

    Every layer's active weights and the LM head are read once per step; the input embedding is a
    row lookup. For MoE, each sequence routes to `active_experts` of `experts`; with several sequences
    the expected share of distinct experts touched is 1 − (1 − k/E)^n.
    """
    dense, routed = _streamed_split_bytes(model, fmt, sequences)
    return dense + routed


def _streamed_split_bytes(
    model: Model, fmt: QuantFormat, sequences: int, *, output_head: bool = True,
) -> tuple[float, float]:
    head_bytes = embedding_table_params(model) * fmt.output_bits / 8 if output_head else 0.0
    dense, routed = _active_split(model)
    if model.moe is not None and sequences > 1:
        share = 1 - (1 - model.moe.active_experts / model.moe.experts) ** sequences
        routed = routed / (model.moe.active_experts / model.moe.experts) * share
    # A format stated per tensor class keeps attention and shared tensors heavier than the routed experts.
    dense_bits, routed_bits = active_weight_bits(model, fmt)
    return dense * dense_bits / 8 + head_bytes, routed * routed_bits / 8


def interconnect_kind(gpu: GPU) -> str:
    link = gpu.interconnect.lower()
    if "nvlink" in link:
        return "nvlink"
    if "infinity" in link or "xgmi" in link:
        return "infinity fabric"
    return "pcie"


def moe_layers(model: Model) -> int:
    return 0 if model.moe is None else model.layers - model.moe.dense_layers


def layer_kernel_equivalents(model: Model) -> float:
    """Llama layers' worth of fixed per-layer work: the model's layers (`Model.layer_equivalents`), each weighed by
    the kernels its graph launches (`Model.layer_graph`) against a Llama layer's. Query/key norms only sit in the
    attention layers of a hybrid; an always-on MLP beside the routed experts only in the MoE layers."""
    g = model.layer_graph
    layers = model.layers
    extra = 0.0
    if g is not None:
        a = model.attention
        attention_share = (a.global_layers or layers) / layers if a.kind == "hybrid_linear" else 1.0
        extra += k.QK_NORM_NODES * attention_share if g.qk_norm else 0.0
        extra += k.SANDWICH_NORM_NODES if g.sandwich_norms else 0.0
        extra += k.PER_LAYER_INPUT_NODES if g.per_layer_inputs else 0.0
    if model.moe is not None and model.moe.shared_experts:
        branch = k.BRANCH_NORM_NODES if g is not None and g.sandwich_norms else 0.0
        extra += (k.SHARED_EXPERT_NODES + branch) * moe_layers(model) / layers
    return model.layer_equivalents * (1 + extra / k.LLAMA_LAYER_NODES)


@dataclass(frozen=True)
class DecodeTerms:
    """The physical quantities of one decode step, before any fitted coefficient (seconds at 100 %)."""

    dense_weights_s: float  # non-expert weight bytes / achieved bandwidth
    expert_weights_s: float  # routed-expert weight bytes / achieved bandwidth
    kv_read_s: float  # KV-cache bytes / achieved bandwidth
    dequant_op_s: float  # quantized weights / sustained ALU ops per second (one op per weight)
    layers: float  # Llama layers' worth of fixed per-layer work (layer_kernel_equivalents)
    moe_layers: int
    recurrent_layers: int
    matmul_compute_s: float  # 2 FLOPs per active weight per sequence / peak (binds only at large batch)
    sampled_vocab: float = 0.0  # vocabulary entries (in 100,000s) a host-side sampler walks per token


def decode_terms(
    model: Model, fmt: QuantFormat, gpu: GPU, engine: Engine, ctx: int, kv: KVDtype, sequences: int = 1,
    *, output_head: bool = True,
) -> DecodeTerms:
    """`output_head=False`: a step whose logits nobody asked for (all but the last token of a prompt fed one token
    per micro-batch) skips the output layer."""
    bandwidth_bps = achieved_bandwidth_gbs(gpu) * GB_DECIMAL
    dense_b, routed_b = _streamed_split_bytes(model, fmt, sequences, output_head=output_head)
    kv_b = kv_cache_bytes(model, ctx, kv, sequences)
    quantized = 0.0 if fmt.kernel == "f16" else (dense_b + routed_b) * 8 / fmt.bits_per_weight
    return DecodeTerms(
        dense_weights_s=dense_b / bandwidth_bps,
        expert_weights_s=routed_b / bandwidth_bps,
        kv_read_s=kv_b / bandwidth_bps,
        # Decode's unpacking hides behind the weight stream but for the part the coefficient counts, at the FP32-lane
        # rate: at the integer-lane rate (as prompt tiles use) leave-one-GPU-out decode moved 0.1 point and the P100's
        # unpacking fell below its streaming, which its measured rows contradict.
        dequant_op_s=quantized / alu_ops_per_s(gpu),
        layers=layer_kernel_equivalents(model),
        moe_layers=moe_layers(model),
        recurrent_layers=model.scan_layers,
        # Every step runs the LM head; the input embedding is a row lookup.
        matmul_compute_s=2 * (active_body_params(model) + embedding_table_params(model)) * sequences
        / (compute_tflops(engine, fmt, gpu) * 1e12),
        sampled_vocab=model.vocab_size / 1e5 if engine in HOST_SAMPLING_ENGINES else 0.0,
    )


def decode_seconds_from(t: DecodeTerms, c: DecodeCoefficients) -> float:
    memory_s = (
        c.inv_weight_efficiency * (t.dense_weights_s + t.expert_weights_s)
        + c.expert_extra * t.expert_weights_s
        + c.inv_kv_efficiency * t.kv_read_s
        + c.dequant_ops_per_weight * t.dequant_op_s
    )
    fixed_s = (c.layer_overhead_s * t.layers + c.moe_layer_overhead_s * t.moe_layers
               + c.recurrent_layer_overhead_s * t.recurrent_layers + c.token_overhead_s
               + c.sampling_s_per_100k_vocab * t.sampled_vocab)
    return max(memory_s, t.matmul_compute_s) + fixed_s


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
    terms = decode_terms(model, fmt, gpu, engine, ctx, kv, sequences)
    c = decode_coefficients(engine, fmt, gpu)
    if gpus > 1 and tensor_parallel(engine):
        # Tensor parallel: each GPU streams its 1/N slice, then all-reduces twice per layer.
        split = DecodeTerms(
            dense_weights_s=terms.dense_weights_s / gpus, expert_weights_s=terms.expert_weights_s / gpus,
            kv_read_s=terms.kv_read_s / gpus, dequant_op_s=terms.dequant_op_s / gpus, layers=terms.layers,
            moe_layers=terms.moe_layers, recurrent_layers=terms.recurrent_layers,
            matmul_compute_s=terms.matmul_compute_s / gpus, sampled_vocab=terms.sampled_vocab,
        )
        # One after each mixer and each MLP: a Nemotron-H block is one of the two, so it ends in one all-reduce.
        allreduce_s = model.layer_equivalents * k.ALLREDUCES_PER_LAYER * k.ALLREDUCE_LATENCY_S[interconnect_kind(gpu)]
        return decode_seconds_from(split, c) + allreduce_s
    # llama.cpp's layer split runs the GPUs one after another: capacity adds up, speed does not. The host
    # synchronises with each card before the next starts and the token's activations cross every card boundary,
    # which multi-GPU runs show as a cost per token (calibration/layer_split.py).
    return decode_seconds_from(terms, c) + layer_split_seconds(gpus)


def matmul_flops(model: Model, prompt_tokens: int) -> float:
    """The token embedding is a lookup and the LM head only runs for the last prompt token, so neither is
    in the per-token matmuls."""
    return 2 * active_body_params(model) * prompt_tokens


def attention_score_split(
    model: Model, prompt_tokens: int, depth: int = 0, *, unmasked_batch: int = 0, window_view_batch: int = 0,
) -> tuple[float, float]:
    """Query–key scores of a prompt in the layers that see the whole context and in the sliding-window ones:
    token i attends to `depth + i` earlier tokens (causal) in every head, L·H·P·(depth + P/2) in all; a
    sliding layer to at most its window; linear-attention layers compute none.

    `unmasked_batch`: attention without a fused kernel multiplies whole micro-batches of that many queries by the
    whole cache view, the causal mask's future half included (ggml's mul_mat then soft_max_ext with the mask), so
    each micro-batch of u queries adds u²/2 scores: P·u/2 per head over the prompt.
    `window_view_batch`: a fused kernel that skips only the masked tail of the view (see
    `flash_attention_walks_window_view`) scores a sliding layer's query against the micro-batch's earlier tokens as
    well as its window: u/2 more per query in those layers."""
    a = model.attention
    attn_layers = model.layers
    # Mean tokens attended (or, unfused, computed) per prompt token.
    seen = depth + prompt_tokens * k.ATTENTION_FLOPS_CAUSAL_FACTOR + unmasked_batch / 2
    local = 0.0
    if a.kind == "sliding" and a.global_layers is not None and a.sliding_window is not None:
        attn_layers = a.global_layers
        window = a.sliding_window + max(unmasked_batch, window_view_batch) / 2
        local = (model.layers - a.global_layers) * model.attention_heads * prompt_tokens * min(seen, window)
    elif a.kind == "hybrid_linear" and a.global_layers is not None:
        attn_layers = a.global_layers
    return attn_layers * model.attention_heads * prompt_tokens * seen, local


def attention_scores(model: Model, prompt_tokens: int, depth: int = 0) -> float:
    return sum(attention_score_split(model, prompt_tokens, depth))


def flops_per_score(model: Model, *, global_layer: bool = False, mla_absorbed: bool = False) -> float:
    """QK^T and AV together cost 2·(d_k + d_v) FLOPs per score (Gemma 4's global layers have heads of their own
    width). MLA decompressed into heads scores over its nope + rope width and weighs values of `v_head_dim`;
    absorbed (`mla_absorbed`), every head scores over the whole cached latent plus its rope part and weighs the
    latent itself: 2·(r + rope) + 2·r, about 3× the decompressed work for DeepSeek's r = 512."""
    a = model.attention
    if a.kind == "mla":
        rope, rank = a.qk_rope_head_dim or 0, a.kv_lora_rank or 0
        if mla_absorbed:
            return 2 * (rank + rope) + 2 * rank
        key = (a.qk_nope_head_dim or 0) + rope
        return 2 * key + 2 * (a.v_head_dim or key)
    return 4 * ((a.global_head_dim or model.head_dim) if global_layer else model.head_dim)


def attention_flops(model: Model, prompt_tokens: int, depth: int = 0, *, mla_absorbed: bool = False) -> float:
    return _attention_flops_of(model, *attention_score_split(model, prompt_tokens, depth), mla_absorbed=mla_absorbed)


def _attention_flops_of(model: Model, whole: float, local: float, *, mla_absorbed: bool = False) -> float:
    return (flops_per_score(model, global_layer=True, mla_absorbed=mla_absorbed) * whole
            + flops_per_score(model, mla_absorbed=mla_absorbed) * local)


@dataclass(frozen=True)
class PrefillTerms:
    matmul_s: float  # matmul FLOPs / peak
    expert_matmul_s: float  # the routed-expert share of matmul_s
    attention_s: float  # attention FLOPs / peak
    weight_passes_s: float  # micro-batch passes × weight bytes / achieved bandwidth
    request: float  # 1 for an engine that pays a per-request cost, else 0
    tile_dequant_s: float = 0.0  # quantized weights unpacked per tile of prompt tokens / ALU rate
    recurrent_token_layers: float = 0.0  # prompt tokens × recurrent (linear-attention / SSM) layers
    layer_passes: float = 0.0  # micro-batch passes × layers (kernel launches per layer per pass)
    kv_reread_s: float = 0.0  # each cached head streamed once per tile of its group's queries / achieved bandwidth
    vector_kv_reread_s: float = 0.0  # the same for the vector tile kernel, whose query tiles are its own
    vector_attention_s: float = 0.0  # attention FLOPs of the vector tile kernel / FP32 lane rate
    score_matrix_s: float = 0.0  # without flash attention: the F32 score matrix written and read back / bandwidth
    expert_matmuls: float = 0.0  # mul_mat_id fallback: passes × MoE layers × matrices × experts with tokens
    activation_s: float = 0.0  # prompt tokens × the activation bytes each moves between kernels / achieved bandwidth


def activation_bytes_per_token(model: Model) -> float:
    """F32 activation bytes one prompt token writes and reads between the kernels of all its layers (see
    ACTIVATION_HIDDEN_VECTORS_PER_LAYER): a small model does as much of this per weight as a large one does per several,
    so its prompt rate falls further below its GEMM rate."""
    moe, moe_count = model.moe, moe_layers(model)
    ffn = (model.layers - moe_count) * (model.intermediate_size or 0)
    routed = 0
    if moe is not None:
        width = moe.moe_intermediate_size or model.intermediate_size or 0
        shared = moe.shared_experts * (moe.shared_expert_intermediate_size or width)
        ffn += moe_count * (moe.active_experts * width + shared)
        routed = moe_count * moe.active_experts
    # A fused gate-up tensor takes one int8 copy of each routed token's input where separate gate and up take two.
    per_routed = k.ACTIVATION_ROUTED_HIDDEN_VECTORS - (1 if fuses_gate_up(model) else 0)
    vectors = ((k.ACTIVATION_HIDDEN_VECTORS_PER_LAYER * model.layers + per_routed * routed)
               * model.hidden_size + k.ACTIVATION_FFN_VECTORS_PER_LAYER * ffn)
    return vectors * k.ACTIVATION_BYTES_PER_ELEMENT


def fallback_expert_matmuls(model: Model, passes: int, batch: int) -> float:
    """Where ggml_cuda_mul_mat_id declines its one-kernel MMQ path for the micro-batch (it asks with the whole
    batch's token count), it copies the router's choices to the host, sorts the tokens by expert, and runs each
    expert that got any as its own matmul, with its own dequantisation and launches: per MoE layer and pass,
    one per matrix per expert with tokens (Poisson: an expert gets none with probability e^-mean)."""
    if model.moe is None or batch <= 0:
        return 0.0
    mean = batch * model.moe.active_experts / model.moe.experts
    used = model.moe.experts * (1 - math.exp(-mean))
    return passes * moe_layers(model) * expert_matmuls_per_layer(model) * used


def fuses_gate_up(model: Model) -> bool:
    return model.moe is not None and model.moe.fused_gate_up


def expert_matmuls_per_layer(model: Model) -> int:
    """The mul_mat_id products of one MoE layer: gate, up and down, or a fused gate-up and down."""
    return k.EXPERT_MATRICES_PER_LAYER - (1 if fuses_gate_up(model) else 0)


def prefill_terms(
    model: Model, fmt: QuantFormat, gpu: GPU, engine: Engine, prompt_tokens: int, depth: int = 0,
    *, ubatch: int | None = None, date: str = "", flash_attn: bool | None = None, rocwmma: bool | None = None,
    sycl_f16: bool | None = None, mmq: bool | None = None, fa_matrix: bool | None = None,
) -> PrefillTerms:
    """`date`: the build's, for a measured row (llama.cpp's choice of matrix and attention kernels changed over
    time), and its flags; an estimate passes none and gets the current default build."""
    step = ubatch or micro_batch_tokens(engine)
    passes = math.ceil(prompt_tokens / step) if step else 1
    batch = min(prompt_tokens, step or prompt_tokens)
    # llama.cpp picks a kernel per matrix by its token count: the shared matrices see the whole micro-batch,
    # each expert only its routed share of it (few enough tokens that even a BLAS build keeps its MMQ).
    gemm: str | None = None
    # Shares of the experts (and of their routed tokens) whose matrices go to BLAS rather than MMQ.
    blas_experts = blas_tokens = 0.0
    if family(engine) == "llama.cpp":
        experts = model.moe.experts if model.moe else 0
        gemm = prefill_gemm(fmt, gpu, date=date, ubatch=batch, experts=experts, sycl_f16=sycl_f16, mmq=mmq)
        if model.moe is not None:
            blas_experts, blas_tokens = expert_blas_shares(
                fmt, gpu, date, batch * model.moe.active_experts / experts, experts)
    mm = matmul_flops(model, prompt_tokens)
    dense, routed = _active_split(model)
    expert_share = routed / (dense + routed) if dense + routed > 0 else 0.0
    dense_peak = compute_tflops(engine, fmt, gpu, gemm, date=date) * 1e12
    if gemm not in ("mmq", "blas"):
        expert_s = mm * expert_share / dense_peak
    else:
        mmq_peak = compute_tflops(engine, fmt, gpu, "mmq", date=date) * 1e12
        expert_s = mm * expert_share * (blas_tokens / (compute_tflops(engine, fmt, gpu, "blas") * 1e12)
                                        + (1 - blas_tokens) / mmq_peak)
    streamed = weight_bytes(model, fmt)
    copy_bytes = ONEDNN_COPY_BYTES.get(gemm or "", 0)
    onednn = copy_bytes > 0
    if fmt.kernel != "f16":
        # A pass that sends a matrix to BLAS first dequantises it to an F16 buffer that the GEMM reads back.
        f16_copy = 2 * k.KV_BYTES_PER_ELEMENT["f16"]
        streamed += f16_copy * ((dense if gemm == "blas" else 0.0) + blas_experts * _all_experts(model, routed))
        if onednn:
            # SYCL dequantises every matrix, each expert's included, to an F16 or F32 copy once per pass.
            streamed += 2 * copy_bytes * (dense + _all_experts(model, routed))
    # A sliding layer's cache view holds its window and the micro-batch, and the CUDA/HIP kernels walk all of it.
    view = batch if flash_attention_walks_window_view(engine, gpu) else 0
    whole, local = attention_score_split(
        model, prompt_tokens, depth, unmasked_batch=batch if flash_attn is False else 0,
        window_view_batch=view)
    scores = whole + local
    attention = _attention_flops_of(model, whole, local, mla_absorbed=mla_absorbed(engine, date))
    bandwidth_bps = achieved_bandwidth_gbs(gpu) * GB_DECIMAL
    # Without flash attention the scores are BLAS products, on matrix units wherever there are any.
    vector = flash_attn is not False and prefill_attention_kernel(
        engine, gpu, model, date=date, rocwmma=rocwmma, fa_matrix=fa_matrix) == "vector"
    kv_reread_s = (prompt_tokens / k.ATTENTION_QUERY_TILE_TOKENS
                   * kv_bytes_read_per_query_head_pass(model, depth + prompt_tokens // 2, window_view=view // 2)
                   / bandwidth_bps)
    shared_tiles, expert_tiles = unpacked_weight_tiles(model, prompt_tokens, step, (dense, routed),
                                                       mmq_tile_tokens(gpu, date))
    if fmt.kernel == "f16":
        unpacked = 0.0
    elif onednn:
        unpacked = passes * (dense + _all_experts(model, routed))  # every weight unpacked once per pass, into the copy
    else:
        unpacked = (0.0 if gemm == "blas" else shared_tiles) + (1 - blas_experts) * expert_tiles
    return PrefillTerms(
        matmul_s=mm * (1 - expert_share) / dense_peak + expert_s,
        expert_matmul_s=expert_s,
        attention_s=0.0 if vector else attention / (attention_tflops(gpu) * 1e12),
        vector_attention_s=attention / (attention_tflops(gpu, "vector") * 1e12) if vector else 0.0,
        # A big prompt batch routes to every expert, so each pass streams the whole model.
        weight_passes_s=passes * streamed / bandwidth_bps,
        request=1.0 if engine in SERVER_ENGINES else 0.0,
        tile_dequant_s=unpacked / int_ops_per_s(gpu),
        recurrent_token_layers=float(prompt_tokens * model.scan_layers),
        layer_passes=passes * layer_kernel_equivalents(model),
        expert_matmuls=fallback_expert_matmuls(model, passes, batch) if gemm == "blas" else 0.0,
        # Without flash attention llama.cpp materialises the scores: KQ is written, read by the softmax, its
        # output written and read again by the KQV product.
        score_matrix_s=0.0 if flash_attn is not False else scores * k.SCORE_MATRIX_BYTES_PER_SCORE / bandwidth_bps,
        kv_reread_s=0.0 if vector else kv_reread_s,
        vector_kv_reread_s=kv_reread_s if vector else 0.0,
        activation_s=prompt_tokens * activation_bytes_per_token(model) / bandwidth_bps,
    )


# The work each GPU of a tensor-parallel group does a 1/N share of; the per-request cost and the per-layer and
# per-expert launches stay whole.
_WHOLE_PREFILL_TERMS = ("request", "layer_passes", "expert_matmuls")
_SPLIT_PREFILL_TERMS = tuple(f.name for f in fields(PrefillTerms) if f.name not in _WHOLE_PREFILL_TERMS)


def prefill_seconds_from(t: PrefillTerms, c: PrefillCoefficients) -> float:
    return (
        c.inv_matmul_utilisation * t.matmul_s
        + c.moe_matmul_extra * t.expert_matmul_s
        + c.inv_attention_utilisation * t.attention_s
        + c.inv_pass_efficiency * t.weight_passes_s
        + c.request_overhead_s * t.request
        + c.tile_dequant_ops_per_weight * t.tile_dequant_s
        + c.recurrent_step_s * t.recurrent_token_layers
        + c.prefill_layer_overhead_s * t.layer_passes
        + c.inv_kv_reread_efficiency * t.kv_reread_s
        + c.inv_vector_kv_reread_efficiency * t.vector_kv_reread_s
        + c.inv_vector_attention_utilisation * t.vector_attention_s
        + c.expert_matmul_launch_s * t.expert_matmuls
        + c.inv_score_matrix_efficiency * t.score_matrix_s
        + c.inv_activation_efficiency * t.activation_s
    )


def prefill_seconds(
    model: Model, fmt: QuantFormat, gpu: GPU, engine: Engine, prompt_tokens: int, gpus: int = 1, depth: int = 0
) -> float:
    if prompt_tokens <= 0:
        return 0.0
    t = prefill_terms(model, fmt, gpu, engine, prompt_tokens, depth)
    # Tensor parallel splits the work; llama.cpp's layer split pipelines micro-batches over the GPUs.
    parallel = gpus if tensor_parallel(engine) else 1
    if parallel > 1:
        t = replace(t, **{name: getattr(t, name) / parallel for name in _SPLIT_PREFILL_TERMS})
    return prefill_seconds_from(t, prefill_coefficients(engine, fmt, gpu))


# What each prompt pays on its own when several arrive together: attention over its own tokens (and cache), and a
# server's per-request cost. The rest (GEMMs, weight passes, tile unpacking, activations, layer launches) is work over
# all their tokens at once, as the engine batches the prompts.
_PER_PROMPT_TERMS = ("attention_s", "kv_reread_s", "vector_kv_reread_s", "vector_attention_s", "score_matrix_s",
                     "request")


def prefill_seconds_together(
    model: Model, fmt: QuantFormat, gpu: GPU, engine: Engine, prompt_tokens: int, prompts: int, gpus: int = 1
) -> float:
    """Until the last of `prompts` prompts that arrive at once has its first token: they are prefilled together."""
    if prompt_tokens <= 0 or prompts <= 1:
        return prefill_seconds(model, fmt, gpu, engine, prompt_tokens, gpus)
    one = prefill_terms(model, fmt, gpu, engine, prompt_tokens, 0)
    t = prefill_terms(model, fmt, gpu, engine, prompt_tokens * prompts, 0)
    t = replace(t, **{name: getattr(one, name) * prompts for name in _PER_PROMPT_TERMS})
    parallel = gpus if tensor_parallel(engine) else 1
    if parallel > 1:
        t = replace(t, **{name: getattr(t, name) / parallel for name in _SPLIT_PREFILL_TERMS})
    return prefill_seconds_from(t, prefill_coefficients(engine, fmt, gpu))


class Speed(BaseModel):
    """Point estimates and the 80 % band of each (from cross-validated errors in the same situation)."""

    model_config = ConfigDict(frozen=True)

    decode_tps: float  # tokens/s of one sequence, right after the prompt
    aggregate_tps: float  # tokens/s summed over `batch` concurrent sequences
    prefill_tps: float
    ttft_s: float
    decode_tps_low: float = 0.0
    decode_tps_high: float = 0.0
    prefill_tps_low: float = 0.0
    prefill_tps_high: float = 0.0
    ttft_s_low: float = 0.0
    ttft_s_high: float = 0.0
    # With `batch` sequences whose prompts arrive at once: when the last of them has its first token.
    ttft_last_s: float = 0.0
    ttft_last_s_low: float = 0.0
    ttft_last_s_high: float = 0.0


def speed(q: Query) -> Speed:
    return speed_of(q.model, q.quant, q.gpu, q.gpus, q.engine, q.kv, q.prompt_tokens, q.batch)


def _decode_step_after(
    model: Model, fmt: QuantFormat, gpu: GPU, gpus: int, engine: Engine, kv: KVDtype, prompt_tokens: int,
    sequences: int,
) -> float:
    return decode_seconds_per_step(model, fmt, gpu, engine, max(prompt_tokens, 1), kv, gpus, sequences)


def decode_tps_of(
    model: Model, fmt: QuantFormat, gpu: GPU, gpus: int, engine: Engine, kv: KVDtype, prompt_tokens: int,
) -> float:
    """`speed_of(...).decode_tps` alone, for ordering many options by decode speed without their prompt estimates."""
    return 1 / _decode_step_after(model, fmt, gpu, gpus, engine, kv, prompt_tokens, 1)


def speed_of(
    model: Model, fmt: QuantFormat, gpu: GPU, gpus: int, engine: Engine, kv: KVDtype, prompt_tokens: int,
    sequences: int = 1,
) -> Speed:
    """Decode right after a prompt of `prompt_tokens` (its KV cache is read every step), and its TTFT."""
    step_s = _decode_step_after(model, fmt, gpu, gpus, engine, kv, prompt_tokens, sequences)
    ttft = prefill_seconds(model, fmt, gpu, engine, prompt_tokens, gpus)
    prefill_tps = prompt_tokens / ttft if ttft > 0 else 0.0
    d_lo, d_hi = band_for("decode", engine, gpu, model.moe is not None, gpus)
    p_lo, p_hi = band_for("prefill", engine, gpu, model.moe is not None, gpus)
    decode = 1 / step_s
    last = (prefill_seconds_together(model, fmt, gpu, engine, prompt_tokens, sequences, gpus) if sequences > 1
            else ttft)
    # Every field is a float computed here: skip re-validation (ranking builds thousands of these).
    return Speed.model_construct(
        decode_tps=decode, aggregate_tps=sequences / step_s, prefill_tps=prefill_tps, ttft_s=ttft,
        decode_tps_low=decode * math.exp(d_lo), decode_tps_high=decode * math.exp(d_hi),
        prefill_tps_low=prefill_tps * math.exp(p_lo), prefill_tps_high=prefill_tps * math.exp(p_hi),
        ttft_s_low=ttft * math.exp(-p_hi), ttft_s_high=ttft * math.exp(-p_lo),
        ttft_last_s=last, ttft_last_s_low=last * math.exp(-p_hi), ttft_last_s_high=last * math.exp(-p_lo),
    )
