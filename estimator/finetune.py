"""Peak GPU memory of fine-tuning a decoder LLM: full, LoRA and QLoRA, on one GPU or sharded over several.

The peak is built from physical terms, each a function below:

    weights       the frozen or trained model weights the GPU holds (bf16, or NF4 for QLoRA)
    trainable     the copy the optimizer updates: fp32 master weights (full, mixed precision) or LoRA adapters
    gradients     one value per trainable parameter
    optimizer     optimizer state per trainable parameter (AdamW: two moments)
    activations   what the forward pass keeps for the backward pass
    logits        the vocabulary-wide scores and loss buffers
    overhead      CUDA context plus caching-allocator fragmentation

Gradients and activations do not peak together: backward frees each layer's activations as it creates
that layer's gradients, so unless gradients are accumulated over micro-batches (they then persist while the
next micro-batch's activations build up) the peak holds the larger of the two, not their sum.

Everything is in bytes. The module is pure: no I/O, no clock.
"""

from __future__ import annotations

from collections.abc import Iterable
from typing import Any, Literal

from pydantic import BaseModel, ConfigDict, Field

from catalog.arch import attention_params_per_layer, embedding_params
from catalog.schema import Model

Method = Literal["full", "lora", "qlora"]
Targets = Literal["qv", "attention", "all"]
Optimizer = Literal["adamw", "adamw_bf16", "adamw8bit", "paged_adamw8bit", "paged_adamw", "sgd"]
Precision = Literal["bf16", "fp16", "fp32"]
Sharding = Literal["none", "zero1", "zero2", "zero3", "fsdp"]
Loss = Literal["fp32_upcast", "chunked"]

GIB = 2**30
GB = 10**9

# --- storage widths -------------------------------------------------------------------------------------
BYTES_FP32 = 4
BYTES_16BIT = 2

# QLoRA (Dettmers et al. 2023, arXiv:2305.14314, section 3): NF4 stores 4 bits per weight plus one fp32
# absmax per 64-weight block (32/64 = 0.5 bit). Double quantization stores those absmax values as 8-bit
# with one fp32 constant per 256 of them: 8/64 + 32/(64*256) = 0.127 bit.
NF4_BITS = 4.0
NF4_BLOCK = 64
NF4_ABSMAX_BITS = 32
DQ_ABSMAX_BITS = 8
DQ_BLOCK = 256


def nf4_bits_per_param(double_quant: bool) -> float:
    if double_quant:
        return NF4_BITS + DQ_ABSMAX_BITS / NF4_BLOCK + NF4_ABSMAX_BITS / (NF4_BLOCK * DQ_BLOCK)
    return NF4_BITS + NF4_ABSMAX_BITS / NF4_BLOCK


# Optimizer state bytes per trainable parameter. "adamw" keeps two moments in the trainable dtype, as
# torch.optim.AdamW does (fp32 under mixed precision, bf16 for pure-bf16 trainers); the others are
# fixed-width: bitsandbytes 8-bit Adam keeps two 8-bit moments (Dettmers et al. 2021, arXiv:2110.02861;
# its per-block scales are < 1 %); SGD counts one momentum buffer in the trainable dtype (momentum=0 holds
# nothing, pick "sgd" only as an upper bound for that).
ADAM_MOMENTS = 2
ADAM8BIT_BYTES_PER_PARAM = 2
ADAMW_BF16_BYTES_PER_PARAM = ADAM_MOMENTS * BYTES_16BIT
SGD_MOMENTUM_BUFFERS = 1

# --- activations ------------------------------------------------------------------------------------------
# Per-token, per-layer tensors saved for backward in a pre-norm decoder with FlashAttention and no dropout,
# counted in elements of the compute dtype. From the accounting of Korthikanti et al. 2022 ("Reducing
# Activation Recomputation in Large Transformer Models", arXiv:2205.05198, section 4.1), whose
# sbh(34 + 5as/h) assumes dropout and a 4h plain MLP; here dropout masks are gone, the MLP width is the
# model's, and FlashAttention keeps no s x s scores (it recomputes them in backward).
#   attention: norm input h, QKV input h, Q h, K and V 2h*kv/heads, attention output (o_proj input) h
#   MLP: norm input h, up/gate input h, then per intermediate channel: up, gate, act(gate), product (gated)
#        or pre-activation and activation (plain)
ATTN_SAVED_HIDDEN_MULTIPLE = 4
MLP_SAVED_HIDDEN_MULTIPLE = 2
GATED_MLP_SAVED_PER_CHANNEL = 4
PLAIN_MLP_SAVED_PER_CHANNEL = 2
# Without FlashAttention the softmax input and output (a x s x s per sequence) are saved too; Korthikanti's
# 5 bytes per score (2 + 2 + 1-byte dropout mask) less the dropout mask.
ATTN_SCORE_BYTES_NO_FLASH = 4
# Checkpointing keeps each layer's input (one h-wide vector per token) and re-runs one layer at a time.
CHECKPOINT_SAVED_HIDDEN_MULTIPLE = 1

# Real kernels keep more than the textbook list: RMSNorm upcasts to fp32, RoPE writes rotated copies of Q
# and K, LoRA dropout copies its input. Fitted on the non-holdout rows of
# estimator/calibration/finetune_peaks.toml by benchmarks/finetune_accuracy.py.
ACTIVATION_FACTOR = 1.12

# --- logits and loss --------------------------------------------------------------------------------------
# Bytes per (token x vocabulary entry) alive at the start of backward.
# fp32_upcast (Hugging Face transformers' causal-LM loss): bf16 logits 2 (returned in the output, so kept)
#   + fp32 copy from logits.float() 4 + log-softmax output saved by cross_entropy 4 + its gradient 4
#   + the gradient w.r.t. the fp32 logits 4 = 18.
# chunked (torchtune CEWithChunkedOutputLoss, LitGPT chunked_cross_entropy): bf16 logits 2 + the bf16
#   log-softmax each chunk saves 2; the fp32 work of one chunk is negligible.
LOGITS_BYTES_PER_ELEMENT: dict[Loss, float] = {"fp32_upcast": 18.0, "chunked": 4.0}

# --- overhead ---------------------------------------------------------------------------------------------
# CUDA context and kernels loaded by PyTorch + cuBLAS/cuDNN: about 0.5 GiB on recent drivers (it appears in
# nvidia-smi, never in torch.cuda.memory_allocated).
CUDA_CONTEXT_BYTES = 0.5 * GIB
# Memory the caching allocator reserves but does not hand out, as a share of what is allocated. Fitted by
# benchmarks/finetune_accuracy.py on the non-holdout "reserved"/"nvidia-smi"/capacity rows.
FRAGMENTATION_FRACTION = 0.01


# ------------------------------------------------------------------------------------------------------
DEFAULT_OPTIMIZER: dict[Method, Optimizer] = {"full": "adamw", "lora": "adamw", "qlora": "paged_adamw8bit"}


class FinetuneSettings(BaseModel):
    """One fine-tuning run. Unset fields take what the usual trainer does out of the box:

    full:  bf16 mixed precision with fp32 master weights and fp32 AdamW moments (Hugging Face Trainer
           `bf16=True` on an fp32-loaded model, DeepSpeed's mixed-precision layout: 2+2+4+8 bytes/param),
           activation checkpointing on.
    lora:  bf16 frozen base, rank 16 on all linear layers of the blocks (PEFT `target_modules="all-linear"`,
           Unsloth's recipe), adapters and their AdamW moments in fp32 (PEFT upcasts adapters to fp32),
           checkpointing on.
    qlora: NF4 with double quantization, bf16 compute, paged 8-bit AdamW, rank 16 on all linear layers,
           checkpointing on (QLoRA paper recipe and Unsloth/TRL notebooks). With fp32 master weights PEFT's
           `prepare_model_for_kbit_training` also upcasts the unquantized parameters (embeddings, LM head,
           norms) to fp32.

    `master_weights_fp32=False` describes pure-16-bit trainers (torchtune `dtype: bf16`, LitGPT
    `--precision bf16-true`): no fp32 copy, and AdamW moments in bf16.
    """

    model_config = ConfigDict(frozen=True, extra="forbid")

    method: Method
    seq: int = Field(default=2048, ge=1, description="tokens per sequence")
    batch: int = Field(default=1, ge=1, description="micro-batch, sequences per GPU per step")
    rank: int = Field(default=16, ge=1)
    targets: Targets = Field(default="all", description="qv: q,v only (PEFT's Llama default); attention: q,k,v,o")
    optimizer: Optimizer | None = Field(default=None, description="None: the method's default (see above)")
    precision: Precision = "bf16"
    master_weights_fp32: bool = True
    double_quant: bool = True
    checkpointing: bool = True
    flash_attention: bool = True
    packing: bool = Field(default=False, description="packed sequences: every micro-batch is exactly `seq` long")
    loss: Loss = "fp32_upcast"
    gradient_accumulation: bool = Field(default=False, description="gradients persist across micro-batches")
    optimizer_in_backward: bool = Field(default=False, description="step fused into backward (torchtune)")
    gpus: int = Field(default=1, ge=1, le=8)
    sharding: Sharding = "none"

    @property
    def optimizer_used(self) -> Optimizer:
        if self.optimizer is not None:
            return self.optimizer
        return DEFAULT_OPTIMIZER[self.method]


class FinetuneMemory(BaseModel):
    """Per-GPU bytes of each term and of the peak (`total`, see the module docstring for how it adds up)."""

    model_config = ConfigDict(frozen=True)

    weights: float
    trainable: float
    gradients: float
    optimizer: float
    activations: float
    logits: float
    overhead: float
    total: float

    def gib(self, term: str = "total") -> float:
        return float(getattr(self, term)) / GIB

    def gb(self, term: str = "total") -> float:
        return float(getattr(self, term)) / GB

    @property
    def total_gib(self) -> float:
        return self.total / GIB

    @property
    def total_gb(self) -> float:
        return self.total / GB

    @property
    def allocated(self) -> float:
        """What torch.cuda.max_memory_allocated would report: the peak without context and fragmentation."""
        return self.total - self.overhead


# --- parameter counts -----------------------------------------------------------------------------------
def linear_params(model: Model) -> float:
    """Parameters in the decoder blocks' linear layers, the ones QLoRA quantizes (all that is not
    embeddings, LM head or norms). Unmodelled parameters (`extra_params_b`) are counted as linear."""
    return max(model.params - embedding_params(model), 0.0)


def unquantized_params(model: Model) -> float:
    """Embeddings and LM head: QLoRA keeps them in 16 bit (QLoRA paper, section 3)."""
    return min(float(embedding_params(model)), model.params)


def _compute_bytes(s: FinetuneSettings) -> int:
    return BYTES_FP32 if s.precision == "fp32" else BYTES_16BIT


def _trainable_dtype_bytes(s: FinetuneSettings) -> int:
    return BYTES_FP32 if (s.master_weights_fp32 or s.precision == "fp32") else BYTES_16BIT


def _projection_shapes(model: Model, targets: Targets) -> list[tuple[int, int]]:
    """(in, out) of each targeted projection in one layer, attention then FFN.

    Assumes q,k,v,o for MHA/GQA (MLA models are approximated by an equal-parameter square projection) and,
    for "all", gate/up/down of the dense FFN or of every routed and shared expert (PEFT's "all-linear"
    wraps each expert's nn.Linear); the router is never adapted.
    """
    h = model.hidden_size
    q_out = model.attention_heads * model.head_dim
    kv_out = model.kv_heads * model.head_dim
    if model.attention.kind == "mla":
        width = attention_params_per_layer(model) // (4 * h)
        attn = [(h, width), (h, width), (h, width), (width, h)]
    else:
        attn = [(h, q_out), (h, kv_out), (h, kv_out), (q_out, h)]
    if targets == "qv":
        return [attn[0], attn[2]]
    if targets == "attention":
        return attn
    gated = model.mlp == "gated"
    ffn: list[tuple[int, int]] = []
    if model.moe is None:
        width = model.intermediate_size or 0
        ffn = _mlp_shapes(h, width, gated)
    else:
        expert = model.moe.moe_intermediate_size or model.intermediate_size or 0
        shared = model.moe.shared_expert_intermediate_size or expert
        ffn = model.moe.experts * _mlp_shapes(h, expert, gated) + model.moe.shared_experts * _mlp_shapes(
            h, shared, gated
        )
    return attn + ffn


def _mlp_shapes(hidden: int, width: int, gated: bool) -> list[tuple[int, int]]:
    up = [(hidden, width), (hidden, width)] if gated else [(hidden, width)]
    return [*up, (width, hidden)]


def lora_params(model: Model, s: FinetuneSettings) -> int:
    """rank x (in + out) per targeted projection per layer (A is rank x in, B is out x rank).

    MoE models with dense leading layers are counted as if every layer had experts when targeting "all"
    (an upper bound of a few percent of the adapter).
    """
    if s.method == "full":
        return 0
    per_layer = sum(s.rank * (i + o) for i, o in _projection_shapes(model, s.targets))
    layers = model.layers
    if model.attention.kind == "hybrid_linear" and s.targets != "all":
        layers = model.attention.global_layers or model.layers
    return per_layer * layers


def trainable_params(model: Model, s: FinetuneSettings) -> float:
    return model.params if s.method == "full" else float(lora_params(model, s))


# --- sharding ---------------------------------------------------------------------------------------------
def _shards(s: FinetuneSettings, stage: int) -> int:
    """How many GPUs split a state that ZeRO partitions from `stage` on (1 optimizer, 2 gradients, 3 weights).
    FSDP full-shard is ZeRO-3."""
    level = {"none": 0, "zero1": 1, "zero2": 2, "zero3": 3, "fsdp": 3}[s.sharding]
    return s.gpus if level >= stage else 1


# --- the terms --------------------------------------------------------------------------------------------
def base_weight_bytes(model: Model, s: FinetuneSettings) -> float:
    """Model weights held per GPU: 16-bit (fp32 for fp32 training) or, for QLoRA, NF4 linear layers with
    16-bit embeddings and LM head (fp32 when PEFT's prepare_model_for_kbit_training runs, i.e. with fp32
    master weights)."""
    if s.method == "qlora":
        linear = linear_params(model) * nf4_bits_per_param(s.double_quant) / 8
        other = unquantized_params(model) * _trainable_dtype_bytes(s)
        total = linear + other
    else:
        total = model.params * _compute_bytes(s)
    return total / _shards(s, 3)


def trainable_bytes(model: Model, s: FinetuneSettings) -> float:
    """The copy the optimizer writes to: fp32 master weights for full mixed precision (none for pure
    16-bit, where the weights themselves are trained), the LoRA A and B matrices otherwise. ZeRO-1 already
    partitions the master copy with the optimizer state."""
    if s.method == "full":
        if not s.master_weights_fp32 or s.precision == "fp32":
            return 0.0
        return model.params * BYTES_FP32 / _shards(s, 1)
    return lora_params(model, s) * _trainable_dtype_bytes(s) / _shards(s, 3)


def gradient_bytes(model: Model, s: FinetuneSettings) -> float:
    """One gradient per trainable parameter in the compute dtype (full) or the adapter dtype (LoRA);
    none kept when the optimizer step runs inside backward."""
    if s.optimizer_in_backward:
        return 0.0
    width = _compute_bytes(s) if s.method == "full" else _trainable_dtype_bytes(s)
    return trainable_params(model, s) * width / _shards(s, 2)


def optimizer_bytes(model: Model, s: FinetuneSettings) -> float:
    """Optimizer state; paged optimizers are counted in full (they live in GPU memory until it runs out)."""
    per_param: float
    if s.optimizer_used in ("adamw", "paged_adamw"):
        per_param = ADAM_MOMENTS * _trainable_dtype_bytes(s)
    elif s.optimizer_used == "adamw_bf16":
        per_param = ADAMW_BF16_BYTES_PER_PARAM
    elif s.optimizer_used in ("adamw8bit", "paged_adamw8bit"):
        per_param = ADAM8BIT_BYTES_PER_PARAM
    else:
        per_param = SGD_MOMENTUM_BUFFERS * _trainable_dtype_bytes(s)
    return trainable_params(model, s) * per_param / _shards(s, 1)


def layer_activation_elements_per_token(model: Model, s: FinetuneSettings) -> float:
    """Elements one token leaves saved in one transformer layer (see the constants above)."""
    h = model.hidden_size
    kv_share = model.kv_heads / model.attention_heads
    attn = h * (ATTN_SAVED_HIDDEN_MULTIPLE + 2 * kv_share)
    per_channel = GATED_MLP_SAVED_PER_CHANNEL if model.mlp == "gated" else PLAIN_MLP_SAVED_PER_CHANNEL
    if model.moe is None:
        channels = model.intermediate_size or 0
    else:
        expert = model.moe.moe_intermediate_size or model.intermediate_size or 0
        shared = model.moe.shared_expert_intermediate_size or expert
        channels = model.moe.active_experts * expert + model.moe.shared_experts * shared
    mlp = h * MLP_SAVED_HIDDEN_MULTIPLE + per_channel * channels
    return attn + mlp


def attention_score_bytes_per_layer(model: Model, s: FinetuneSettings) -> float:
    """The s x s softmax buffers per head, saved only without FlashAttention."""
    if s.flash_attention:
        return 0.0
    return ATTN_SCORE_BYTES_NO_FLASH * model.attention_heads * s.seq * s.seq * s.batch


def layer_activation_bytes(model: Model, s: FinetuneSettings) -> float:
    tokens = s.seq * s.batch
    saved = layer_activation_elements_per_token(model, s) * tokens * _compute_bytes(s)
    return ACTIVATION_FACTOR * saved + attention_score_bytes_per_layer(model, s)


def activation_bytes(model: Model, s: FinetuneSettings) -> float:
    """All layers' saved activations, or with checkpointing the other layers' inputs plus one layer re-run."""
    layer = layer_activation_bytes(model, s)
    if not s.checkpointing:
        return model.layers * layer
    # The layer being re-run already counts its own input in its working set.
    tokens = s.seq * s.batch
    other_layers = model.layers - 1
    inputs = other_layers * CHECKPOINT_SAVED_HIDDEN_MULTIPLE * model.hidden_size * tokens * _compute_bytes(s)
    return inputs + layer


def logits_bytes(model: Model, s: FinetuneSettings) -> float:
    """batch x seq x vocab buffers of the loss. The Hugging Face default upcasts all logits to fp32 before
    cross-entropy; chunked losses keep 16-bit logits and work on one chunk in fp32 at a time."""
    per_element = LOGITS_BYTES_PER_ELEMENT[s.loss]
    if s.precision == "fp32":
        per_element = LOGITS_BYTES_PER_ELEMENT["fp32_upcast"]
    return s.batch * s.seq * model.vocab_size * per_element


def overhead_bytes(allocated_bytes: float) -> float:
    """CUDA context plus the caching allocator's unused reserve."""
    return CUDA_CONTEXT_BYTES + FRAGMENTATION_FRACTION * allocated_bytes


def finetune_memory(model: Model, s: FinetuneSettings) -> FinetuneMemory:
    weights = base_weight_bytes(model, s)
    trainable = trainable_bytes(model, s)
    gradients = gradient_bytes(model, s)
    optimizer = optimizer_bytes(model, s)
    activations = activation_bytes(model, s)
    logits = logits_bytes(model, s)
    transient = activations + logits
    backward = gradients + transient if s.gradient_accumulation else max(gradients, transient)
    allocated = weights + trainable + optimizer + backward
    overhead = overhead_bytes(allocated)
    return FinetuneMemory(
        weights=weights,
        trainable=trainable,
        gradients=gradients,
        optimizer=optimizer,
        activations=activations,
        logits=logits,
        overhead=overhead,
        total=allocated + overhead,
    )


# --- inverse questions --------------------------------------------------------------------------------------
def _largest_fitting(fits: Any, low: int, high: int, step: int) -> int | None:
    """Largest multiple of `step` in [low, high] for which the monotone predicate holds."""
    lo, hi = low // step, high // step
    if hi < 1 or lo > hi or not fits(max(lo, 1) * step):
        return None
    lo = max(lo, 1)
    while lo < hi:
        mid = (lo + hi + 1) // 2
        if fits(mid * step):
            lo = mid
        else:
            hi = mid - 1
    return lo * step


def max_seq(model: Model, settings: FinetuneSettings, budget_bytes: float, step: int = 1) -> int | None:
    """Longest sequence (a multiple of `step`, at most the model's context) whose peak fits the budget."""

    def fits(seq: int) -> bool:
        return finetune_memory(model, settings.model_copy(update={"seq": seq})).total <= budget_bytes

    return _largest_fitting(fits, step, model.max_context, step)


MAX_BATCH_SEARCHED = 4096


def max_batch(model: Model, settings: FinetuneSettings, budget_bytes: float) -> int | None:
    """Largest micro-batch whose peak fits the budget, or None if not even one sequence fits."""

    def fits(batch: int) -> bool:
        return finetune_memory(model, settings.model_copy(update={"batch": batch})).total <= budget_bytes

    return _largest_fitting(fits, 1, MAX_BATCH_SEARCHED, 1)


METHODS: tuple[Method, ...] = ("full", "lora", "qlora")


def largest_trainable(
    models: Iterable[Model], settings: FinetuneSettings, budget_bytes: float
) -> dict[Method, Model | None]:
    """For each method, the model with the most parameters whose peak fits the budget.

    The other settings are kept as given; the optimizer too if it was set explicitly, else each method
    takes its own default.
    """
    given = settings.model_dump(exclude_unset=True)
    given.pop("method", None)
    pool = sorted(models, key=lambda m: m.params, reverse=True)
    best: dict[Method, Model | None] = {}
    for method in METHODS:
        s = FinetuneSettings(**given, method=method)
        best[method] = next((m for m in pool if finetune_memory(m, s).total <= budget_bytes), None)
    return best
