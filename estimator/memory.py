"""Where the bytes go: weights, KV cache, runtime buffers, and how much of the card can hold them.

total(ctx) = weight_bytes + kv_cache_bytes(ctx) + runtime_overhead_bytes(ctx)
fits      ⇔ total(ctx) ≤ usable_vram_bytes
"""

from __future__ import annotations

from itertools import pairwise
from typing import Literal, NamedTuple

from pydantic import BaseModel, ConfigDict

from catalog.arch import attention_params
from catalog.schema import GPU, Model, QuantFormat
from estimator import constants as k
from estimator.engines import family
from estimator.query import Engine, KVDtype, Query

Verdict = Literal["fits", "tight", "does_not_fit"]
# Worst to best: advice must move a question up this order, never sideways.
VERDICT_ORDER: tuple[Verdict, ...] = ("does_not_fit", "tight", "fits")
CTX_STEP = 256  # max-context answers are multiples of this many tokens


# --- weights ---------------------------------------------------------------------------------------


def embedding_table_params(model: Model) -> int:
    return model.vocab_size * model.hidden_size


def body_params(model: Model) -> float:
    """Parameters outside the token embedding and LM head: the ones a format quantizes."""
    tables = embedding_table_params(model) * (1 if model.tied_embeddings else 2)
    return max(model.params - tables, 0.0)


def ffn_down_fallback_bits(model: Model, fmt: QuantFormat) -> float:
    """Extra bits when the FFN width is not a whole number of k-quant blocks (see constants)."""
    extra = k.FFN_DOWN_FALLBACK_EXTRA_BITS.get(fmt.id)
    if not extra:
        return 0.0
    total = 0.0
    if model.intermediate_size and model.intermediate_size % k.KQUANT_ROW_BLOCK:
        dense_layers = model.layers if model.moe is None else model.moe.dense_layers
        total += dense_layers * model.hidden_size * model.intermediate_size * extra
    moe = model.moe
    if moe is not None and moe.moe_intermediate_size and moe.moe_intermediate_size % k.KQUANT_ROW_BLOCK:
        experts = moe.experts + moe.shared_experts
        total += (model.layers - moe.dense_layers) * experts * model.hidden_size * moe.moe_intermediate_size * extra
    return total


_WEIGHT_MEMO: dict[tuple[int, int], tuple[Model, QuantFormat, float]] = {}
_WEIGHT_MEMO_MAX = 4096


def weight_bytes(model: Model, fmt: QuantFormat) -> float:
    """Bytes of the model file in this format (bits per weight / 8 per tensor class): the body at the
    format's bits_per_weight and the tables at embedding_bits / output_bits, or, for a format stated per
    tensor class, each class at its own bits; rows that are not whole k-quant blocks at their fallback.

    Entries are frozen, so the answer for the same two objects never changes; ranking asks it thousands
    of times. The memo checks identity, so two different models that share an id are never confused.
    """
    hit = _WEIGHT_MEMO.get((id(model), id(fmt)))
    if hit is not None and hit[0] is model and hit[1] is fmt:
        return hit[2]
    value = _weight_bytes(model, fmt)
    if len(_WEIGHT_MEMO) >= _WEIGHT_MEMO_MAX:
        _WEIGHT_MEMO.clear()
    _WEIGHT_MEMO[(id(model), id(fmt))] = (model, fmt, value)
    return value


TensorClass = Literal["token_embd", "output", "attention", "ffn", "experts", "experts_down", "other"]
# The routed experts' classes: what a token reads only for its chosen experts, and what gpt-oss's files keep in MXFP4.
ROUTED_EXPERT_CLASSES: tuple[TensorClass, ...] = ("experts", "experts_down")


class TensorGroup(NamedTuple):
    cls: TensorClass
    params: float
    row_width: int  # k-quants pack a row in blocks of 256: the width says whether the group falls back
    reads_hidden: bool  # its rows run along the hidden state (not a down or attention-output projection)


def tensor_class_params(model: Model) -> list[TensorGroup]:
    """The groups of matrices in the file, by class and by what their rows run along.

    A matrix's rows run along its input: the hidden state for the embedding and LM head, Q/K/V, FFN up and
    gate and the mixers; the attention heads for the output projection; the FFN width for down. The shared
    table of a tied model is stored once, as the LM head (see `_weight_bytes`). `other` is what the decoder
    formula leaves to `extra_params_b` (linear-attention and SSM mixers, norms)."""
    h = model.hidden_size
    up_gate = 2 if model.mlp == "gated" else 1
    a = model.attention
    attention_layers = (a.global_layers or 0) if a.kind == "hybrid_linear" else model.layers
    heads_width = model.attention_heads * (a.v_head_dim or model.head_dim)
    attention = attention_params(model)
    # Gemma 4's global layers project wider heads back to the hidden state.
    global_layers = (a.global_layers or 0) if a.global_head_dim else 0
    global_heads_width = model.attention_heads * (a.global_head_dim or model.head_dim)
    local_output = (attention_layers - global_layers) * heads_width * h
    global_output = global_layers * global_heads_width * h
    width = model.intermediate_size or 0
    dense_layers = model.layers if model.moe is None else model.moe.dense_layers
    table = embedding_table_params(model)
    groups = [
        TensorGroup("output", table, h, True),
        TensorGroup("attention", attention - local_output - global_output, h, True),
        TensorGroup("attention", local_output, heads_width, False),
        TensorGroup("attention", global_output, global_heads_width, False),
        TensorGroup("ffn", dense_layers * up_gate * h * width, h, True),
        TensorGroup("ffn", dense_layers * h * width, width, False),
    ]
    if not model.tied_embeddings:
        groups.append(TensorGroup("token_embd", table, h, True))
    moe = model.moe
    if moe is not None:
        moe_layers = model.layers - moe.dense_layers
        expert_width = moe.moe_intermediate_size or width
        shared_width = moe.shared_expert_intermediate_size or expert_width
        shared = moe_layers * moe.shared_experts * h * shared_width
        groups += [
            TensorGroup("ffn", up_gate * shared, h, True),
            TensorGroup("ffn", shared, shared_width, False),
            TensorGroup("experts", moe_layers * moe.experts * up_gate * h * expert_width, h, True),
            TensorGroup("experts_down", moe_layers * moe.experts * h * expert_width, expert_width, False),
        ]
    counted = sum(g.params for g in groups)
    groups.append(TensorGroup("other", max(model.params - counted, 0.0), h, True))
    return groups


def misfits_kquant_blocks(row_width: int) -> bool:
    return row_width % k.KQUANT_ROW_BLOCK != 0 if row_width else False


def stores_in_fallback(fmt: QuantFormat, row_width: int) -> bool:
    """Whether a k-quant format stores rows of this width in its type's fallback (not whole 256-blocks)."""
    k_quant = fmt.tensor_bits is not None or fmt.id in k.FFN_DOWN_FALLBACK_EXTRA_BITS
    return k_quant and misfits_kquant_blocks(row_width)


def fallback_bits(bits: float) -> float:
    """Average bits of a class whose rows miss whole k-quant blocks: its average read as a mix of the two
    neighbouring rungs of the k-quant ladder, each stored as its fallback type (see constants)."""
    ladder = k.KQUANT_LADDER_BITS
    if bits <= ladder[0][0]:
        return ladder[0][1]
    for (lo, lo_fb), (hi, hi_fb) in pairwise(ladder):
        if bits <= hi:
            share = (bits - lo) / (hi - lo)
            return lo_fb + share * (hi_fb - lo_fb)
    return bits


def _tensor_class_bytes(model: Model, fmt: QuantFormat) -> float:
    tb = fmt.tensor_bits
    assert tb is not None
    # The classes are stated for the catalog's typical file; a copy of the format rescaled to a file that
    # weighs more or less (the calibration's stated sizes) moves every class with its bits_per_weight.
    scale = fmt.bits_per_weight / tb.ffn
    bits: dict[TensorClass, float] = {
        "token_embd": fmt.embedding_bits / scale, "output": fmt.output_bits / scale, "attention": tb.attention,
        "ffn": tb.ffn, "experts": tb.experts, "experts_down": tb.experts_down, "other": tb.other,
    }
    kept = kept_expert_bits(model, fmt)
    total_bits = kept_bits = 0.0
    for g in tensor_class_params(model):
        if kept is not None and g.cls in ROUTED_EXPERT_CLASSES:
            # As the checkpoint shipped them, whatever the recipe states for experts (unsloth's gpt-oss-120b
            # UD-Q8_K_XL weighs 60.03 GiB, its experts MXFP4): they do not move with the file's rescaling either.
            kept_bits += g.params * kept
            continue
        total_bits += g.params * (fallback_bits(bits[g.cls]) if misfits_kquant_blocks(g.row_width) else bits[g.cls])
    return (total_bits * scale + kept_bits) / 8


def active_weight_bits(model: Model, fmt: QuantFormat) -> tuple[float, float]:
    """(bits per always-active body weight, bits per routed-expert weight) as the file stores them: what a
    decode step streams per weight outside the LM head. A format stated per tensor class averages its classes
    (attention, dense FFN and shared experts, mixers / routed gate-up and down); any other format stores the
    body at its bits_per_weight."""
    tb = fmt.tensor_bits
    if tb is None:
        kept = kept_expert_bits(model, fmt)
        return fmt.bits_per_weight, fmt.bits_per_weight if kept is None else kept
    scale = fmt.bits_per_weight / tb.ffn
    bits: dict[TensorClass, float] = {"attention": tb.attention, "ffn": tb.ffn, "experts": tb.experts,
                                      "experts_down": tb.experts_down, "other": tb.other}
    sums = {"dense": [0.0, 0.0], "routed": [0.0, 0.0]}
    for g in tensor_class_params(model):
        if g.cls in ("token_embd", "output") or g.params <= 0:
            continue
        b = fallback_bits(bits[g.cls]) if misfits_kquant_blocks(g.row_width) else bits[g.cls]
        part = sums["routed" if g.cls in ROUTED_EXPERT_CLASSES else "dense"]
        part[0] += g.params * b
        part[1] += g.params
    dense = sums["dense"][0] / sums["dense"][1] if sums["dense"][1] else tb.ffn
    routed = sums["routed"][0] / sums["routed"][1] if sums["routed"][1] else tb.experts
    kept = kept_expert_bits(model, fmt)
    return dense * scale, routed * scale if kept is None else kept


def hidden_row_fallback_bits(model: Model, fmt: QuantFormat) -> float:
    """Extra bits when the hidden size is not a whole number of k-quant blocks (Nemotron-3-Nano's 2688,
    Gemma 3 1B's 1152): every matrix read along the hidden state, the embedding and the LM head included,
    is stored in its type's fallback. The down projections are `ffn_down_fallback_bits`' part."""
    if fmt.id not in k.FFN_DOWN_FALLBACK_EXTRA_BITS or not misfits_kquant_blocks(model.hidden_size):
        return 0.0
    tables = {"output": fmt.output_bits, "token_embd": fmt.embedding_bits}
    body_fallback = k.KQUANT_MIX_FALLBACK_BITS.get(fmt.id, fallback_bits(fmt.bits_per_weight))
    extra = 0.0
    for g in tensor_class_params(model):
        if not g.reads_hidden:
            continue
        if g.cls in tables:
            extra += g.params * (fallback_bits(tables[g.cls]) - tables[g.cls])
        else:
            extra += g.params * (body_fallback - fmt.bits_per_weight)
    return extra


def kept_expert_bits(model: Model, fmt: QuantFormat) -> float | None:
    """The routed experts' bits where a GGUF type leaves them as the checkpoint shipped them (gpt-oss's MXFP4:
    unsloth's gpt-oss-20b Q4_K_M weighs 11,624,759,488 bytes against the MXFP4 release's 12,109,566,624, its
    attention and tables quantized, its experts untouched); None for any other model or format."""
    if model.moe is None or model.moe.gguf_expert_bits is None or fmt.engines != ("llama.cpp",):
        return None
    return model.moe.gguf_expert_bits


def _kept_expert_bytes(model: Model, fmt: QuantFormat, expert_bits: float) -> float:
    """The file, tensor class by tensor class, with the routed experts at `expert_bits`."""
    tables = {"token_embd": fmt.embedding_bits, "output": fmt.output_bits}
    total = 0.0
    for g in tensor_class_params(model):
        if g.cls in ROUTED_EXPERT_CLASSES:
            total += g.params * expert_bits
            continue
        bits = tables.get(g.cls, fmt.bits_per_weight)
        total += g.params * (fallback_bits(bits) if stores_in_fallback(fmt, g.row_width) else bits)
    return total / 8


def _weight_bytes(model: Model, fmt: QuantFormat) -> float:
    if fmt.tensor_bits is not None:
        return _tensor_class_bytes(model, fmt)
    kept = kept_expert_bits(model, fmt)
    if kept is not None:
        return _kept_expert_bytes(model, fmt, kept)
    table = embedding_table_params(model)
    if model.tied_embeddings:
        # One shared matrix; engines store it at the LM head's type because it is used as one.
        tables_bits = table * fmt.output_bits
    else:
        tables_bits = table * (fmt.embedding_bits + fmt.output_bits)
    body_bits = body_params(model) * fmt.bits_per_weight
    return (body_bits + tables_bits + ffn_down_fallback_bits(model, fmt) + hidden_row_fallback_bits(model, fmt)) / 8


# --- KV cache --------------------------------------------------------------------------------------


def _latent_width(model: Model) -> int | None:
    """MLA, alone or in a hybrid, caches one latent per token and layer in place of K and V heads: its width in
    elements; None for a model that caches heads."""
    a = model.attention
    if a.kv_lora_rank is None or a.qk_rope_head_dim is None:
        return None
    return a.kv_lora_rank + a.qk_rope_head_dim


def kv_bytes_per_token_per_layer(model: Model, kv: KVDtype) -> float:
    """One token's cache entry in one growing layer: K and V for every KV head, or MLA's latent."""
    if (latent := _latent_width(model)) is not None:
        return latent * k.KV_BYTES_PER_ELEMENT[kv]
    return 2 * model.kv_heads * model.head_dim * k.KV_BYTES_PER_ELEMENT[kv]


def global_kv_bytes_per_token_per_layer(model: Model, kv: KVDtype) -> float:
    """A global layer's entry where its heads differ (Gemma 4: 512-wide heads, fewer of them, keys reused as
    values so one tensor is cached); otherwise the same as any layer's."""
    a = model.attention
    tensors = 1 if a.global_values_are_keys else 2
    heads = a.global_kv_heads or model.kv_heads
    return tensors * heads * (a.global_head_dim or model.head_dim) * k.KV_BYTES_PER_ELEMENT[kv]


def kv_bytes_read_per_query_head_pass(model: Model, ctx: int, kv: KVDtype = "f16", *, window_view: int = 0) -> float:
    """What one walk of the cache at `ctx` tokens reads when every query head reads the cached head of its group:
    a flash-attention block holds (query token, head) columns of one cached head, so a cached head is streamed once
    per tile of its group's columns (a GQA group's heads, MLA's one latent for every head). Layers that reuse an
    earlier layer's keys and values (Gemma 4 E2B/E4B) cache nothing but still read. `window_view`: cells a sliding
    layer's walk reads beyond its window (the micro-batch's earlier tokens, where the kernel reads the whole view)."""
    a = model.attention
    cached_heads = 1 if _latent_width(model) is not None else model.kv_heads
    per_query_head = kv_bytes_per_token_per_layer(model, kv) / cached_heads * model.attention_heads
    if a.kind in ("full", "mla"):
        return model.layers * per_query_head * ctx
    assert a.global_layers is not None
    if a.kind == "sliding":
        assert a.sliding_window is not None
        global_per_query_head = (global_kv_bytes_per_token_per_layer(model, kv) / (a.global_kv_heads or model.kv_heads)
                                 * model.attention_heads)
        return (a.global_layers * global_per_query_head * ctx
                + (model.layers - a.global_layers) * per_query_head * min(ctx, a.sliding_window + window_view))
    return a.global_layers * per_query_head * ctx


def _cached_local_layers(model: Model) -> int:
    """A sliding-window model's local layers that cache keys and values of their own: those that reuse an earlier
    layer's (Gemma 4 E2B/E4B) cache nothing."""
    a = model.attention
    assert a.global_layers is not None
    return model.layers - a.global_layers - (a.kv_shared_layers - a.kv_shared_global_layers)


def kv_cache_bytes(model: Model, ctx: int, kv: KVDtype = "f16", sequences: int = 1) -> float:
    """KV cache for `sequences` sequences of `ctx` tokens each.

    Sliding-window layers keep at most their window; linear-attention / SSM layers keep a constant
    recurrent state instead of a cache.
    """
    a = model.attention
    per_token = kv_bytes_per_token_per_layer(model, kv)
    if a.kind in ("full", "mla"):
        per_seq = model.layers * per_token * ctx
    elif a.kind == "sliding":
        assert a.global_layers is not None and a.sliding_window is not None
        # Layers that reuse an earlier layer's keys and values (Gemma 4 E2B/E4B) cache nothing of their own.
        cached_global = a.global_layers - a.kv_shared_global_layers
        per_seq = (global_kv_bytes_per_token_per_layer(model, kv) * cached_global * ctx
                   + per_token * _cached_local_layers(model) * min(ctx, a.sliding_window))
    else:
        assert a.global_layers is not None
        state = model.recurrent_layers * (a.state_elements_per_layer or 0) * k.RECURRENT_STATE_BYTES_PER_ELEMENT
        per_seq = a.global_layers * per_token * ctx + state
    return per_seq * sequences


def engine_kv_cache_bytes(model: Model, engine: Engine, ctx: int, kv: KVDtype = "f16", sequences: int = 1) -> float:
    """The cache an engine allocates. llama.cpp keeps a sliding-window layer's cache as its window for every sequence
    plus one micro-batch (llama_kv_cache_iswa: size_swa = min(kv_size, n_swa·n_seq + n_ubatch), before padding), so
    a prompt's micro-batch fits beside the window it attends to; `kv_cache_bytes` counts the window alone."""
    cache = kv_cache_bytes(model, ctx, kv, sequences)
    a = model.attention
    if family(engine) != "llama.cpp" or a.kind != "sliding" or a.sliding_window is None or a.global_layers is None:
        return cache
    held = min(ctx * sequences, a.sliding_window * sequences + k.LLAMACPP_UBATCH)
    counted = min(ctx, a.sliding_window) * sequences
    return cache + max(0, held - counted) * kv_bytes_per_token_per_layer(model, kv) * _cached_local_layers(model)


# --- runtime buffers -------------------------------------------------------------------------------


def llamacpp_compute_buffer_bytes(model: Model, ctx: int) -> float:
    """llama.cpp's per-GPU compute buffer for one micro-batch (flash attention on).

    fp32 logits for the micro-batch (n_ubatch × vocab) plus one layer's widest intermediates
    (FFN up/gate, attention Q/K/V/O), also fp32; a small term grows with the context for the
    KV views and masks (n_ctx × n_ubatch fp16 mask).
    """
    ffn = model.intermediate_size or (model.moe.moe_intermediate_size if model.moe else 0) or 0
    widest = model.vocab_size + 2 * ffn + 4 * model.hidden_size
    mask = ctx * 2  # fp16 mask row per micro-batch token
    return k.LLAMACPP_UBATCH * (widest * 4 + mask) * k.COMPUTE_BUFFER_FLOATS_PER_TOKEN_FACTOR


def vllm_activation_bytes(model: Model) -> float:
    """vLLM's profiled activation peak: one pass of max_num_batched_tokens through the widest layer."""
    ffn = model.intermediate_size or (model.moe.moe_intermediate_size if model.moe else 0) or 0
    return k.VLLM_PROFILE_TOKENS * (2 * ffn + 4 * model.hidden_size) * 2


def context_bytes(gpu: GPU) -> float:
    return k.ENGINE_CUDA_CONTEXT_BYTES if gpu.vendor == "nvidia" else k.OTHER_CONTEXT_BYTES


def runtime_overhead_bytes(model: Model, gpu: GPU, engine: Engine, ctx: int, gpus: int = 1) -> float:
    """Everything beside weights and KV cache, summed over all GPUs in the setup."""
    if family(engine) == "server":  # vLLM and the servers like it reserve memory up front
        per_gpu = context_bytes(gpu) + vllm_activation_bytes(model) / gpus + k.VLLM_CUDA_GRAPH_BYTES
    else:
        per_gpu = context_bytes(gpu) + llamacpp_compute_buffer_bytes(model, ctx)
    return per_gpu * gpus


# --- capacity --------------------------------------------------------------------------------------


def apple_gpu_fraction(gpu: GPU) -> float:
    if gpu.gpu_memory_fraction is not None:
        return gpu.gpu_memory_fraction
    if gpu.vram_gb > k.APPLE_FRACTION_THRESHOLD_GB:
        return k.APPLE_GPU_FRACTION_LARGE
    return k.APPLE_GPU_FRACTION_SMALL


def unified_gpu_bytes(gpu: GPU) -> float:
    """The share of unified memory its OS lets the GPU take, by what sets it (`GPU.gpu_memory_limit`): macOS's
    wired-memory limit; under Linux, the memory the kernel manages (NVIDIA: CUDA's total) or what the amdgpu driver
    may map as GTT. A share stated for the entry wins."""
    total = gpu.vram_bytes
    if gpu.gpu_memory_fraction is not None:
        return total * gpu.gpu_memory_fraction
    if gpu.gpu_memory_limit == "linux_cuda":
        return total * k.LINUX_CUDA_UMA_FRACTION
    if gpu.gpu_memory_limit == "linux_gtt":
        return total - k.LINUX_GTT_OS_RESERVE_BYTES
    return total * apple_gpu_fraction(gpu)


def ecc_reserve_fraction(gpu: GPU) -> float:
    if gpu.vendor == "nvidia" and gpu.ecc_on_by_default and (gpu.memory_type or "").upper().startswith("GDDR"):
        return k.GDDR_ECC_RESERVE_FRACTION
    return 0.0


def device_total_bytes(gpu: GPU) -> float:
    """The memory the GPU's runtime reports as its total (torch.cuda.mem_get_info's total, nvidia-smi's): a card
    less the check bits ECC sets aside (15360 MiB on a 16 GiB T4); of unified memory, the GPU's share."""
    if gpu.unified_memory:
        return unified_gpu_bytes(gpu)
    return gpu.vram_bytes * (1 - ecc_reserve_fraction(gpu))


def ollama_default_context(gpu: GPU, gpus: int = 1, model: Model | None = None) -> int:
    """The context Ollama loads a model at when neither the request's num_ctx nor OLLAMA_CONTEXT_LENGTH sets one: a
    tier of the total its GPUs report, at most the model's window where a model is given."""
    total = device_total_bytes(gpu) * gpus
    tier = next(ctx for floor, ctx in k.OLLAMA_DEFAULT_CONTEXT_TIERS if total >= floor)
    return tier if model is None else min(tier, model.max_context)


def usable_vram_bytes(gpu: GPU, engine: Engine = "llama.cpp") -> float:
    """Memory one GPU gives an engine: the total its runtime reports, less the desktop's share on a card that drives
    one. vLLM and the servers like it take gpu_memory_utilization of that same reported total (vLLM sizes its pool
    from torch.cuda.mem_get_info's total), so both engines start from one figure."""
    reported = device_total_bytes(gpu)
    usable = reported
    if gpu.display_outputs and not gpu.unified_memory:
        usable -= k.DESKTOP_RESERVE_BYTES
    if family(engine) == "server":  # vLLM and the servers like it reserve memory up front
        usable = min(usable, reported * k.VLLM_GPU_MEMORY_UTILIZATION)
    return usable


class MemoryBreakdown(BaseModel):
    model_config = ConfigDict(frozen=True)

    weights_bytes: float  # on the GPU(s)
    kv_cache_bytes: float
    overhead_bytes: float
    total_bytes: float
    host_weights_bytes: float = 0.0  # what the engine keeps in system memory (`host_table_bytes`)
    usable_bytes: float
    vram_bytes: float
    headroom_bytes: float
    verdict: Verdict


def verdict_for(total: float, usable: float) -> Verdict:
    if total > usable:
        return "does_not_fit"
    if usable - total < k.TIGHT_HEADROOM_FRACTION * usable:
        return "tight"
    return "fits"


def at_least(verdict: Verdict, floor: Verdict) -> bool:
    """Whether `verdict` is `floor` or better (VERDICT_ORDER)."""
    return VERDICT_ORDER.index(verdict) >= VERDICT_ORDER.index(floor)


def next_verdict(verdict: Verdict) -> Verdict:
    """The verdict a suggested change must reach: the next one up (VERDICT_ORDER), "fits" staying "fits"."""
    return VERDICT_ORDER[min(VERDICT_ORDER.index(verdict) + 1, len(VERDICT_ORDER) - 1)]


def usable_needed_bytes(total: float, verdict: Verdict) -> float:
    """The least usable memory at which `total` gets `verdict` or better, by `verdict_for`'s thresholds."""
    return total / (1 - k.TIGHT_HEADROOM_FRACTION) if verdict == "fits" else total


def memory(q: Query) -> MemoryBreakdown:
    return memory_of(q.model, q.quant, q.gpu, q.gpus, q.engine, q.ctx, q.kv, q.batch)


def host_table_bytes(model: Model, fmt: QuantFormat, gpu: GPU, engine: Engine) -> float:
    """Weights llama.cpp keeps in system memory with every layer offloaded: the token-embedding table, a row
    lookup ("very little benefit to offloading the input layer, so always keep it on the CPU", llama-model.cpp;
    Llama 3 8B Q4_K_M loads a 4403.49 MiB CUDA0 weight buffer from its 4.58 GiB file, the rest CPU_Mapped). A
    tied model's one table is also its LM head, so a copy of it sits on the GPU anyway; unified memory has no
    other place for it."""
    if family(engine) != "llama.cpp" or model.tied_embeddings or gpu.unified_memory:
        return 0.0
    # Stored in its type's fallback where the rows are not whole k-quant blocks, as the file's size counts it.
    bits = fmt.embedding_bits
    return embedding_table_params(model) * (fallback_bits(bits) if stores_in_fallback(fmt, model.hidden_size)
                                            else bits) / 8


def gpu_weight_bytes(model: Model, fmt: QuantFormat, gpu: GPU, engine: Engine) -> float:
    """The weights that take GPU memory: the file less what the engine keeps in system memory."""
    return weight_bytes(model, fmt) - host_table_bytes(model, fmt, gpu, engine)


def context_costs(
    model: Model, gpu: GPU, gpus: int, engine: Engine, ctx: int, kv: KVDtype, sequences: int
) -> tuple[float, float]:
    """The KV cache and the runtime's own memory at a context: the same for every weight format of a model, so a
    ranking over many formats works them out once."""
    kv_bytes = engine_kv_cache_bytes(model, engine, ctx, kv, sequences)
    return kv_bytes, runtime_overhead_bytes(model, gpu, engine, ctx, gpus)


def memory_of(
    model: Model, fmt: QuantFormat, gpu: GPU, gpus: int, engine: Engine, ctx: int, kv: KVDtype, sequences: int,
    costs: tuple[float, float] | None = None,
) -> MemoryBreakdown:
    """`costs`: `context_costs` of the same arguments, where the caller has them."""
    host = host_table_bytes(model, fmt, gpu, engine)
    weights = weight_bytes(model, fmt) - host
    kv_bytes, overhead = costs or context_costs(model, gpu, gpus, engine, ctx, kv, sequences)
    total = weights + kv_bytes + overhead
    usable = usable_vram_bytes(gpu, engine) * gpus
    # Every field is a number computed here or `verdict_for`'s verdict: skip re-validation (a ranking builds hundreds).
    return MemoryBreakdown.model_construct(
        weights_bytes=weights,
        kv_cache_bytes=kv_bytes,
        overhead_bytes=overhead,
        total_bytes=total,
        usable_bytes=usable,
        vram_bytes=gpu.vram_bytes * gpus,
        headroom_bytes=usable - total,
        verdict=verdict_for(total, usable),
        host_weights_bytes=host,
    )


def total_bytes(
    model: Model, fmt: QuantFormat, gpu: GPU, engine: Engine, ctx: int, kv: KVDtype, sequences: int, gpus: int,
    costs: tuple[float, float] | None = None,
) -> float:
    """`costs`: `context_costs` of the same arguments, where the caller has them."""
    kv_bytes, overhead = costs or context_costs(model, gpu, gpus, engine, ctx, kv, sequences)
    return gpu_weight_bytes(model, fmt, gpu, engine) + kv_bytes + overhead


def total_bytes_at(q: Query, ctx: int) -> float:
    return total_bytes(q.model, q.quant, q.gpu, q.engine, ctx, q.kv, q.batch, q.gpus)


def context_window(q: Query) -> int:
    """The window a question is answered within: the model's native one, or its documented RoPE-scaled
    one (YaRN etc.) when the asked context needs it. One rule for the verdict, the largest context and
    the curve, so they never disagree."""
    return q.model.context_limit(with_scaling=q.ctx > q.model.max_context)


def max_context(q: Query, with_scaling: bool | None = None, verdict: Verdict = "tight") -> int:
    """Largest context (in tokens, at most the window of `context_window`) whose total gets `verdict` or better
    (by default: fits at all); 0 if none does at CTX_STEP tokens. `with_scaling` picks the window outright (native
    or RoPE-scaled) instead of letting the asked context choose it, for a figure that must not move with the asked
    context.

    Memory grows monotonically with context, so a bisection finds the edge: over CTX_STEP multiples, then to
    the token, so any asked context up to the figure fits and none above it does.
    """
    usable = usable_vram_bytes(q.gpu, q.engine) * q.gpus
    cap = context_window(q) if with_scaling is None else q.model.context_limit(with_scaling=with_scaling)

    def holds(ctx: int) -> bool:
        return at_least(verdict_for(total_bytes_at(q, ctx), usable), verdict)

    if holds(cap):
        return cap
    lo, hi = 0, cap // CTX_STEP  # lo holds (or is 0), hi does not
    if not holds(CTX_STEP):
        return 0
    lo = 1
    while hi - lo > 1:
        mid = (lo + hi) // 2
        if holds(mid * CTX_STEP):
            lo = mid
        else:
            hi = mid
    lo, hi = lo * CTX_STEP, min(hi * CTX_STEP, cap)
    while hi - lo > 1:
        mid = (lo + hi) // 2
        if holds(mid):
            lo = mid
        else:
            hi = mid
    return lo
