"""Peak GPU memory of fine-tuning a decoder LLM: full, LoRA and QLoRA, on one GPU or sharded over several.

The peak is built from physical terms, each a function below:

    weights        the frozen or trained model weights the GPU holds (16-bit, fp32, or NF4 for QLoRA)
    trainable      the copy the optimizer updates: fp32 master weights (full, mixed precision) or LoRA adapters
    gradients      one value per trainable parameter
    optimizer      optimizer state per trainable parameter (AdamW: two moments)
    activations    what the forward pass keeps for the backward pass (on the GPU; offloaded ones are counted
                   in `offloaded`)
    logits         the vocabulary-wide scores and loss buffers
    qlora_buffers  bitsandbytes' dequantized weight and what QLoRA layers keep beyond a LoRA layer
    gathered       FSDP / ZeRO-3: the unsharded parameters of the blocks being computed (and, accumulating
                   under no_sync, the unsharded gradients)
    overhead       the CUDA context
    fragmentation  what the caching allocator reserves beyond what is allocated (stated, not in `total`)

Under block checkpointing the logits and a re-run layer do not peak together either: autograd runs the loss's
and the LM head's backward, which frees the logits, before it re-runs the last block. Without checkpointing
every layer's activations are still held when the logits are made, so they add.

Gradients and activations do not peak together: backward frees each layer's activations as it creates
that layer's gradients, so unless gradients are accumulated over micro-batches (they then persist while the
next micro-batch's activations build up) the peak holds the larger of the two, not their sum. The optimizer
step comes after: all gradients plus the step's own temporaries; that, not the activations, is the peak of
many full fine-tuning runs, which is why their peak does not grow with the batch.

Frameworks report different quantities: `allocated` (torch.cuda.max_memory_allocated), `reserved`
(max_memory_reserved: allocated plus the allocator's unused cache) and `nvidia_smi` (reserved plus the CUDA
context). What must fit is `total`, allocated plus the context: before PyTorch's caching allocator reports
out-of-memory it frees its unused cache and retries (docs.pytorch.org/docs/stable/notes/cuda.html), so the
cache a run shows while it has room is not memory it needs. The verdict compares `total` with the usable
memory of one GPU.

Everything is in bytes. The module is pure: no I/O, no clock.
"""

from __future__ import annotations

from collections.abc import Callable, Iterable
from typing import Any, Literal

from pydantic import BaseModel, ConfigDict, Field, model_validator

from catalog.arch import attention_params_per_layer, embedding_params
from catalog.schema import GPU, Model
from estimator.capability import supports_flash_attention_2, training_precision
from estimator.constants import TORCH_CUDA_CONTEXT_BYTES
from estimator.curve import curve_points
from estimator.finetune_presets import FRAMEWORKS, Framework, preset_values
from estimator.memory import Verdict, at_least, next_verdict, verdict_for
from estimator.units import GB_DECIMAL, GIB

Method = Literal["full", "lora", "qlora"]
Targets = Literal["qv", "attention", "all"]
Optimizer = Literal[
    "adamw", "adamw_fp32", "adamw_bf16", "adamw8bit", "paged_adamw8bit", "paged_adamw", "adafactor", "sgd",
    "sgd_momentum",
]
Precision = Literal["bf16", "fp16", "fp32"]
# bf16: weights, gradients and optimizer state in bf16 (torchtune dtype: bf16, LitGPT bf16-true);
# amp_bf16 / amp_fp16: autocast compute over fp32 master weights and fp32 optimizer state; fp32: no autocast.
Regime = Literal["bf16", "amp_bf16", "amp_fp16", "fp32"]
Sharding = Literal["none", "ddp", "zero1", "zero2", "zero3", "fsdp"]
Offload = Literal["none", "optimizer", "params"]
Loss = Literal["fp32_upcast", "fp32_upcast_forward", "chunked", "fused"]
Checkpointing = Literal["none", "block", "selective"]
Attention = Literal["flash", "sdpa", "eager"]
QuantBackend = Literal["bitsandbytes", "torchao"]

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
# torch.optim.AdamW does (fp32 under mixed precision, bf16 for pure-bf16 trainers); "adamw_fp32" keeps fp32
# moments whatever the parameters' dtype; bitsandbytes 8-bit Adam keeps two 8-bit moments (Dettmers et al.
# 2021, arXiv:2110.02861; its per-block scales are < 1 %). Adafactor (Shazeer & Stern 2018, arXiv:1804.04235;
# transformers' default beta1=None) keeps no first moment and factors the second into one fp32 row and one fp32
# column per matrix.
ADAM_MOMENTS = 2
ADAM8BIT_BYTES_PER_PARAM = 2
ADAMW_BF16_BYTES_PER_PARAM = ADAM_MOMENTS * BYTES_16BIT
ADAMW_FP32_BYTES_PER_PARAM = ADAM_MOMENTS * BYTES_FP32
# "sgd" is what the frameworks build by that name: torch.optim.SGD with its default momentum=0, which keeps no
# state at all (torch/optim/sgd.py: a momentum_buffer exists only when momentum != 0;
# docs.pytorch.org/docs/stable/generated/torch.optim.SGD.html: SGD(params, lr=0.001, momentum=0, ...)).
# Hugging Face's optim="sgd" passes only the learning rate (transformers src/transformers/trainer.py at
# 000945a9, Trainer.get_optimizer_cls_and_kwargs: `elif args.optim == OptimizerNames.SGD: optimizer_cls =
# torch.optim.SGD`, optimizer_kwargs = {"lr": args.learning_rate}, optim_args not applied). "sgd_momentum" is
# SGD with momentum set: one buffer in the trainable dtype.
SGD_DEFAULT_MOMENTUM_BUFFERS = 0
SGD_MOMENTUM_BUFFERS = 1
ADAFACTOR_STATE_BYTES = BYTES_FP32
# torch.optim.AdamW's default multi-tensor ("foreach") step computes sqrt(exp_avg_sq) for every parameter at
# once into new tensors (torch/optim/adamw.py, _multi_tensor_adamw: torch._foreach_sqrt), one moment's worth
# of temporaries on top of everything the step holds; the fused kernel (fused=True) and bitsandbytes' 8-bit
# and paged kernels work in place.
FOREACH_STEP_TEMPORARY_MOMENTS = 1
FOREACH_OPTIMIZERS: tuple[str, ...] = ("adamw", "adamw_fp32", "adamw_bf16")

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
# Eager attention (and SDPA's math backend) saves the softmax input and output (heads x s x s per sequence);
# Korthikanti's 5 bytes per score (2 + 2 + 1-byte dropout mask) less the dropout mask. SDPA on CUDA in 16-bit
# dispatches to the flash or memory-efficient kernel, which keep none.
ATTN_SCORE_BYTES_EAGER = 4
# Those counts are for trained weights: a linear layer's weight gradient needs its input. A frozen 16-bit
# linear layer (the LoRA base) needs only its weight for the input's gradient, and autograd saves only what the
# gradients asked for need (derivatives.yaml: mm saves `self` only to compute mat2's gradient), so three of the
# inputs above are saved only where something else needs them: the QKV input, the up/gate input (h each) and
# the down input (one per channel). A LoRA adapter on that projection needs it, unless LoRA dropout gives the
# adapter its own copy (counted below). bitsandbytes' 4-bit matmul saves its input whatever it is used for
# (bitsandbytes/autograd/_functions.py, MatMul4Bit.forward: ctx.tensors = (A, B)); torchao's NF4 linear keeps
# only the weight (torchao/dtypes/nf4tensor.py, LinearNF4.forward: ctx.nf4_weight = weight).
FROZEN_UNSAVED_HIDDEN_INPUTS = 2
FROZEN_UNSAVED_INPUTS_PER_CHANNEL = 1
# Checkpointing keeps each layer's input (one h-wide vector per token) and re-runs one layer at a time.
CHECKPOINT_SAVED_HIDDEN_MULTIPLE = 1
# LoRA dropout (PEFT, LitGPT) applies its own nn.Dropout to the input of every adapted projection: a copy of
# that input in the compute dtype plus a one-byte mask, i.e. 1.5 elements of 16 bits per input element.
LORA_DROPOUT_SAVED_PER_INPUT = 1.5
# Activation offloading (torchtune OffloadActivations, Unsloth's offloaded checkpointing) keeps the layer
# being computed on the GPU and streams the rest to host memory.
OFFLOAD_RESIDENT_LAYERS = 1

# Real kernels keep more than the textbook list: RMSNorm upcasts to fp32, RoPE writes rotated copies of Q
# and K. Fitted on the non-holdout rows of estimator/calibration/finetune_peaks.toml by
# benchmarks/finetune_accuracy.py --fit.
ACTIVATION_FACTOR = 1.22
# torch.compile (torchtune `compile: True` compiles each block and the loss): Inductor fuses RMSNorm's fp32
# upcast and the MLP's pointwise ops into the matmuls' epilogues and its partitioner recomputes cheap
# pointwise results in backward instead of saving them (pytorch.org/docs/stable/torch.compiler.html, "min-cut
# rematerialization"), so a compiled block saves this share of what the eager one does. Fitted as above.
COMPILED_ACTIVATION_FACTOR = 0.84

# --- logits and loss --------------------------------------------------------------------------------------
# Bytes per (token x vocabulary entry) alive at the loss's peak in backward.
# fp32_upcast (Hugging Face transformers >= 4.46: the loss function upcasts, the model returns 16-bit logits;
#   transformers PR #33902): bf16 logits returned 2 + the log-softmax output cross_entropy saves 4 + its
#   gradient 4 + the gradient w.r.t. the fp32 logits 4 = 14 (the fp32 copy itself is freed after forward:
#   log-softmax's backward needs only its output).
# fp32_upcast_forward (transformers <= 4.45 and recipes that upcast in the model's forward): fp32 logits
#   returned 4 + log-softmax output 4 + its gradient 4 + the fp32 logits' gradient 4 + the bf16 gradient 2 = 18.
# chunked (torchtune CEWithChunkedOutputLoss / LinearCrossEntropyLoss, LitGPT chunked_cross_entropy, TRL
#   chunked_nll): bf16 logits 2 + the bf16 log-softmax each chunk saves 2; one chunk's fp32 work is small.
# fused (Liger / Unsloth fused linear cross-entropy, Cut Cross-Entropy): the logits are never materialised;
#   the kernel works on chunks sized so a chunk of logits is about tokens x hidden elements
#   (linkedin/Liger-Kernel fused_linear_cross_entropy.py), in fp32 with its gradient: 8 bytes per
#   token x hidden element.
LOGITS_BYTES_PER_ELEMENT: dict[Loss, float] = {
    "fp32_upcast": 14.0,
    "fp32_upcast_forward": 18.0,
    "chunked": 4.0,
    "fused": 0.0,
}
FUSED_LOSS_BYTES_PER_HIDDEN = 2 * BYTES_FP32
# A compiled loss (torchtune compile_loss: torch.compile of the cross-entropy) fuses the fp32 upcast, the
# log-softmax and its backward into kernels that keep only the logits they were given and one logsumexp per
# token, and write the gradient in the logits' own dtype:
#   chunked: the model's 16-bit logits 2 + one chunk's 16-bit gradient at a time (2 / LOSS_CHUNKS);
#   fp32_upcast_forward: the model still returns fp32 logits (the upcast is outside the compiled loss) 4 +
#     their fp32 gradient 4 + the 16-bit gradient it is cast to 2 = 10;
#   fp32_upcast: 16-bit logits 2 + their 16-bit gradient 2.
# torchtune README (commit 1814feb, Llama 3.2 3B): "+ Compile" saves 9.0 GiB at 8,192 tokens x 128,256, i.e.
# about 8 of the 18 bytes, the rest coming from the compiled blocks.
LOSS_CHUNKS = 8  # torchtune CEWithChunkedOutputLoss(num_output_chunks=8)
COMPILED_LOGITS_BYTES_PER_ELEMENT: dict[Loss, float] = {
    "fp32_upcast": 2.0 * BYTES_16BIT,
    "fp32_upcast_forward": 2 * BYTES_FP32 + BYTES_16BIT,
    "chunked": BYTES_16BIT + BYTES_16BIT / LOSS_CHUNKS,
    "fused": 0.0,
}

# --- QLoRA --------------------------------------------------------------------------------------------------
# bitsandbytes' MatMul4Bit (and torchao's NF4 linear) dequantize each 4-bit weight into a compute-dtype copy
# for every forward and backward matmul (bitsandbytes/autograd/_functions.py, dequantize_4bit), freed after
# use. Counted in blocks the size of the largest quantized matrix; fitted by benchmarks/finetune_accuracy.py
# --fit, it lands at about one block's matrices in 16 bit (4 on a Llama block's 4 + 3 matrices, the largest
# being the MLP's), what a re-run block's matmuls hold while its backward dequantizes again.
QLORA_DEQUANT_BUFFERS = 4
# What measured QLoRA peaks without checkpointing still hold per kept layer beyond the saved 4-bit-matmul
# inputs (counted in the activations), as a share of the layer's 4-bit bytes. Fitted as above; near zero
# since those inputs are counted.
QLORA_SAVED_FRACTION = 0.05

# --- sharded parameters (FSDP / ZeRO-3) -----------------------------------------------------------------------
# FSDP all-gathers one wrapped block's parameters before computing it and frees them after; with the default
# prefetch (FSDP1 limit_all_gathers / FSDP2's one-module prefetch) the next block's are gathered meanwhile,
# so two blocks are unsharded at once (docs.pytorch.org/docs/stable/fsdp.html, BackwardPrefetch;
# pytorch/torchtitan docs/fsdp.md): beyond the rank's own shard, (1 - 1/GPUs) of two blocks' parameters.
FSDP_GATHERED_BLOCKS = 2

# --- overhead ---------------------------------------------------------------------------------------------
# Memory the caching allocator reserves but does not hand out, as a share of what is allocated. Fitted by
# benchmarks/finetune_accuracy.py on the non-holdout "reserved"/"nvidia-smi"/capacity rows.
FRAGMENTATION_FRACTION = 0.06
# Unpacked batches change shape every step, so the allocator cannot reuse the previous step's activation
# and logits blocks exactly and keeps extra cache beside them (PyTorch's CUDA caching allocator rounds and
# splits blocks per size class; docs.pytorch.org/docs/stable/notes/cuda.html#memory-management). As a share
# of the step's transient memory; packed or padded-to-length batches have fixed shapes and leave none.
# Fitted on the non-holdout "reserved" rows of unpacked runs (only ms-swift's publish them): the cache
# reaches about the transient memory again and a quarter, so the reserved peak of unpacked long-sequence
# runs is far above what must fit (which leaves this cache out: the allocator frees it before failing).
VARIABLE_SHAPE_FRAGMENTATION = 1.25
# A trainer that empties the allocator's cache every few steps (Hugging Face TrainingArguments
# torch_empty_cache_steps; PEFT's MetaMathQA benchmark every 10 steps) hands the blocks cached for earlier
# shapes back to the driver before they pile up: what stays is the share every run keeps (the PEFT
# benchmark's reserved peaks sit within a few per cent of allocated plus that share).

# --- DeepSpeed ZeRO's optimizer step ----------------------------------------------------------------------
# Before stepping, ZeRO converts the 16-bit gradient partition it will step into a new fp32 tensor
# (deepspeed/runtime/zero/stage_1_and_2.py step: single_grad_partition = flatten(...).to(fp32) per parameter
# group; stage3.py _prepare_fp32_grad_for_sub_group: the same per sub-group), freed after that group's step.
# Stage 3 steps sub-groups of at most `sub_group_size` elements (DeepSpeedZeroConfig default 1e9); stage 1/2
# step a whole parameter group, and a trainer's decayed group holds nearly every parameter.
ZERO_STAGES: tuple[str, ...] = ("zero1", "zero2", "zero3")
ZERO3_SUB_GROUP_SIZE = 1_000_000_000


# ------------------------------------------------------------------------------------------------------
PAGED_OPTIMIZERS: tuple[Optimizer, ...] = ("paged_adamw", "paged_adamw8bit")
DEFAULT_OPTIMIZER: dict[Method, Optimizer] = {"full": "adamw", "lora": "adamw", "qlora": "paged_adamw8bit"}
_REGIMES: dict[Regime, tuple[Precision, bool]] = {
    "bf16": ("bf16", False),
    "amp_bf16": ("bf16", True),
    "amp_fp16": ("fp16", True),
    "fp32": ("fp32", True),
}


def default_sharding(gpus: int) -> Sharding:
    """Several GPUs without a stated strategy: fully sharded (FSDP), the way to make more cards hold more."""
    return "fsdp" if gpus > 1 else "none"


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

    `framework` fills every unset knob the way that framework does (estimator/finetune_presets.py).
    `regime` is the short form of `precision` + `master_weights_fp32`; `checkpointing_mode` of `checkpointing`;
    `attention` of `flash_attention`; `gradient_accumulation_steps` > 1 of `gradient_accumulation`.
    """

    model_config = ConfigDict(frozen=True, extra="forbid")

    method: Method
    framework: Framework | None = None
    seq: int = Field(default=2048, ge=1, description="tokens per sequence")
    batch: int = Field(default=1, ge=1, description="micro-batch, sequences per GPU per step")
    rank: int = Field(default=16, ge=1)
    targets: Targets = Field(default="all", description="qv: q,v only (PEFT's Llama default); attention: q,k,v,o")
    lora_dropout: float = Field(default=0.0, ge=0.0, lt=1.0)
    lora_head: bool = Field(default=False, description="a LoRA adapter on the LM head too (LitGPT lora_head)")
    train_embeddings: bool = Field(
        default=False, description="embeddings and LM head trained in full (PEFT modules_to_save)"
    )
    optimizer: Optimizer | None = Field(default=None, description="None: the method's default (see above)")
    precision: Precision = "bf16"
    master_weights_fp32: bool = True
    regime: Regime | None = Field(default=None, description="input only: sets precision and master weights")
    base_fp32: bool = Field(default=False, description="weights loaded in fp32 (TRL with a model id)")
    double_quant: bool = True
    quant_backend: QuantBackend = Field(
        default="bitsandbytes", description="QLoRA's 4-bit kernels: bitsandbytes (PEFT, LitGPT) or torchao (torchtune)"
    )
    checkpointing: bool = True
    checkpointing_mode: Checkpointing | None = None
    activation_offload: bool = False
    flash_attention: bool = True
    attention: Attention | None = None
    packing: bool = Field(default=False, description="packed sequences: every micro-batch is exactly `seq` long")
    empty_cache_steps: int | None = Field(
        default=None, ge=1,
        description="the allocator's cache emptied every N steps (Hugging Face torch_empty_cache_steps); None: never",
    )
    loss: Loss = "fp32_upcast"
    gradient_accumulation: bool = Field(default=False, description="gradients persist across micro-batches")
    gradient_accumulation_steps: int = Field(default=1, ge=1)
    optimizer_in_backward: bool = Field(default=False, description="step fused into backward (torchtune)")
    compiled: bool = Field(default=False, description="torch.compile of the blocks and the loss (torchtune compile)")
    unsharded_accumulation: bool = Field(
        default=False,
        description="FSDP no_sync while accumulating: every rank holds full, unsharded gradients until the step "
        "(LitGPT's fabric.no_backward_sync)",
    )
    fused_optimizer: bool = Field(
        default=True,
        description="torch AdamW(fused=True), the Hugging Face Trainer's default (adamw_torch_fused); False: "
        "torch's own default, the foreach step",
    )
    gpus: int = Field(default=1, ge=1, le=8)
    sharding: Sharding = "none"
    offload: Offload = Field(default="none", description="ZeRO-Offload / FSDP CPU offload of optimizer or params")

    given_knobs: tuple[str, ...] = Field(default=(), exclude=True, description="the fields the caller set")

    @model_validator(mode="before")
    @classmethod
    def _resolve(cls, data: Any) -> Any:
        """Fill knobs from the framework preset, then make each short form agree with its long form.

        What the caller sets always wins over the preset; a long form (`checkpointing`, `flash_attention`)
        set by the caller wins over the preset's short form."""
        if not isinstance(data, dict):
            return data
        d = dict(data)
        if not d.get("given_knobs"):
            d["given_knobs"] = tuple(sorted(k for k in d if k != "given_knobs"))
        if "checkpointing" in d and d.get("checkpointing_mode") is None:
            d["checkpointing_mode"] = "block" if d["checkpointing"] else "none"
        if "flash_attention" in d and d.get("attention") is None:
            d["attention"] = "flash" if d["flash_attention"] else "eager"
        framework = d.get("framework")
        if framework in FRAMEWORKS:
            for key, value in preset_values(framework, d.get("method", "full"), int(d.get("gpus") or 1)).items():
                if d.get(key) is None:
                    d[key] = value
        regime = d.pop("regime", None)
        if regime in _REGIMES:
            precision, master = _REGIMES[regime]
            d.setdefault("precision", precision)
            d.setdefault("master_weights_fp32", master)
        elif regime is not None:
            d["regime"] = regime  # the Literal check reports it
        if d.get("checkpointing_mode") is not None:
            d["checkpointing"] = d["checkpointing_mode"] != "none"
        if d.get("attention") is not None:
            d["flash_attention"] = d["attention"] != "eager"
        if int(d.get("gradient_accumulation_steps") or 1) > 1:
            d["gradient_accumulation"] = True
        if "sharding" not in d:
            d["sharding"] = default_sharding(int(d.get("gpus") or 1))
        return d

    def with_(self, **update: Any) -> FinetuneSettings:
        """The same request with some knobs changed, re-resolved (a new method or framework brings its own
        defaults for every knob the caller did not set)."""
        given = {k: getattr(self, k) for k in self.given_knobs if k not in update}
        merged = {**given, **update}
        return FinetuneSettings(**merged, given_knobs=tuple(sorted(merged)))

    @property
    def optimizer_used(self) -> Optimizer:
        if self.optimizer is not None:
            return self.optimizer
        return DEFAULT_OPTIMIZER[self.method]

    @property
    def regime_used(self) -> Regime:
        if self.precision == "fp32":
            return "fp32"
        if not self.master_weights_fp32:
            return "bf16" if self.precision == "bf16" else "amp_fp16"
        return "amp_bf16" if self.precision == "bf16" else "amp_fp16"

    @property
    def checkpointing_used(self) -> Checkpointing:
        # The boolean decides (model_copy updates it alone); the mode says which kind.
        if not self.checkpointing:
            return "none"
        return self.checkpointing_mode if self.checkpointing_mode in ("block", "selective") else "block"

    @property
    def attention_used(self) -> Attention:
        if not self.flash_attention:
            return "eager"
        return self.attention if self.attention in ("flash", "sdpa") else "flash"


def settings_on(gpu: GPU, **request: Any) -> FinetuneSettings:
    """A request's settings on `gpu`. Cards without bf16 (Turing, Volta, Pascal) train in fp16, and fp16
    training keeps fp32 master weights for its loss scaling: unless the request names a precision or a
    regime, that is the regime there, whatever a framework would pick on newer cards."""
    if training_precision(gpu) == "fp16" and request.get("precision") is None and request.get("regime") is None:
        request["regime"] = "amp_fp16"
    if not supports_flash_attention_2(gpu) and request.get("attention") is None and "flash_attention" not in request:
        request["attention"] = "sdpa"  # what a trainer falls back to; it keeps no score matrix either
    return FinetuneSettings(**request)


def hardware_conflict(gpu: GPU, settings: FinetuneSettings) -> str | None:
    """What the request asks of `gpu` that it cannot do: "bf16" (bfloat16 training on a card without it) or
    "flash" (FlashAttention-2 where it does not run); None when nothing."""
    if settings.precision == "bf16" and training_precision(gpu) == "fp16":
        return "bf16"
    if settings.attention_used == "flash" and not supports_flash_attention_2(gpu):
        return "flash"
    return None


# The terms held at some moment of a training step beside the weights, the trainable copy and the optimizer
# state (held throughout): "rerun_block" is the working set of the block re-run under checkpointing,
# "step_temporaries" what the optimizer step allocates for itself.
PeakTerm = Literal["weights", "trainable", "optimizer", "gradients", "step_temporaries", "activations",
                   "rerun_block", "logits", "qlora_buffers", "gathered", "overhead"]
# The moments a step can peak at: all of backward at once (no block checkpointing, or a fused loss); with block
# checkpointing, at the loss or while re-running a block; the end of backward, when every gradient is held;
# the optimizer step.
PeakPhase = Literal["backward", "loss", "rerun", "gradients", "step"]


class FinetuneMemory(BaseModel):
    """Per-GPU bytes of each term and of the peak (`total`, see the module docstring for how it adds up).
    The terms do not all peak together: `at_peak` is what the peak holds (it adds up to `total`), `apart`
    what the other moments hold beyond it."""

    model_config = ConfigDict(frozen=True)

    weights: float
    trainable: float
    gradients: float
    optimizer: float
    activations: float
    logits: float
    qlora_buffers: float = 0.0
    gathered: float = Field(default=0.0, description="FSDP / ZeRO-3 unsharded blocks (and gradients) in backward")
    overhead: float
    fragmentation: float = 0.0
    offloaded: float = Field(default=0.0, description="host memory the offloaded state and activations need")
    pageable: float = Field(default=0.0, description="paged optimizer state: on the GPU while there is room")
    total: float
    peak_phase: PeakPhase = "backward"
    at_peak: tuple[tuple[PeakTerm, float], ...] = Field(default=(), description="the terms held at the peak")
    apart: tuple[tuple[PeakTerm, float], ...] = Field(
        default=(), description="bytes terms reach at other moments beyond what the peak holds of them")

    def gib(self, term: str = "total") -> float:
        return float(getattr(self, term)) / GIB

    def gb(self, term: str = "total") -> float:
        return float(getattr(self, term)) / GB_DECIMAL

    @property
    def total_gib(self) -> float:
        return self.total / GIB

    @property
    def allocated(self) -> float:
        """What torch.cuda.max_memory_allocated would report: the peak without context and fragmentation."""
        return self.total - self.overhead

    @property
    def reserved(self) -> float:
        """What torch.cuda.max_memory_reserved would report: allocated plus the allocator's unused cache."""
        return self.allocated + self.fragmentation

    @property
    def required(self) -> float:
        """What must fit on the GPU: paged optimizer state (bitsandbytes paged optimizers, CUDA unified
        memory) moves to host memory when the GPU runs out, so it is left out."""
        return self.total - self.pageable

    @property
    def nvidia_smi(self) -> float:
        """What nvidia-smi would show for the process while it has room: reserved plus the CUDA context."""
        return self.reserved + self.overhead


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
    """The dtype the optimizer updates: fp32 master weights / fp32 adapters, or the 16-bit weights."""
    return BYTES_FP32 if (s.master_weights_fp32 or s.precision == "fp32" or s.base_fp32) else BYTES_16BIT


def _stored_weight_bytes(s: FinetuneSettings) -> int:
    return BYTES_FP32 if (s.base_fp32 or s.precision == "fp32") else BYTES_16BIT


def _attention_shapes(model: Model) -> list[tuple[int, int]]:
    h = model.hidden_size
    if model.attention.kind == "mla":
        # MLA models are approximated by equal-parameter square-ish projections.
        width = attention_params_per_layer(model) // (4 * h)
        return [(h, width), (h, width), (h, width), (width, h)]
    q_out = model.attention_heads * model.head_dim
    kv_out = model.kv_heads * model.head_dim
    return [(h, q_out), (h, kv_out), (h, kv_out), (q_out, h)]


def _ffn_shapes(model: Model, experts: str) -> list[tuple[int, int]]:
    """Dense FFN, or every expert ("all", what PEFT's all-linear wraps) / the routed-per-token ones ("active")."""
    h = model.hidden_size
    gated = model.mlp == "gated"
    if model.moe is None:
        return _mlp_shapes(h, model.intermediate_size or 0, gated)
    expert = model.moe.moe_intermediate_size or model.intermediate_size or 0
    shared = model.moe.shared_expert_intermediate_size or expert
    count = model.moe.experts if experts == "all" else model.moe.active_experts
    return count * _mlp_shapes(h, expert, gated) + model.moe.shared_experts * _mlp_shapes(h, shared, gated)


def _projection_shapes(model: Model, targets: Targets) -> list[tuple[int, int]]:
    """(in, out) of each targeted projection in one layer, attention then FFN (the router is never adapted)."""
    attn = _attention_shapes(model)
    if targets == "qv":
        return [attn[0], attn[2]]
    if targets == "attention":
        return attn
    return attn + _ffn_shapes(model, "all")


def _mlp_shapes(hidden: int, width: int, gated: bool) -> list[tuple[int, int]]:
    up = [(hidden, width), (hidden, width)] if gated else [(hidden, width)]
    return [*up, (width, hidden)]


def largest_linear_params(model: Model) -> int:
    """Elements of the largest matrix in a decoder block (the one a dequantization buffer must hold)."""
    return max(i * o for i, o in _attention_shapes(model) + _ffn_shapes(model, "active"))


def lora_params(model: Model, s: FinetuneSettings) -> int:
    """rank x (in + out) per targeted projection per layer (A is rank x in, B is out x rank), plus the LM head
    when adapted.

    MoE models with dense leading layers are counted as if every layer had experts when targeting "all"
    (an upper bound of a few percent of the adapter).
    """
    if s.method == "full":
        return 0
    per_layer = sum(s.rank * (i + o) for i, o in _projection_shapes(model, s.targets))
    layers = model.layers
    if model.attention.kind == "hybrid_linear" and s.targets != "all":
        layers = model.attention.global_layers or model.layers
    head = s.rank * (model.hidden_size + model.vocab_size) if s.lora_head else 0
    return per_layer * layers + head


def trainable_params(model: Model, s: FinetuneSettings) -> float:
    if s.method == "full":
        return model.params
    return float(lora_params(model, s)) + (unquantized_params(model) if s.train_embeddings else 0.0)


def layer_params(model: Model) -> float:
    return linear_params(model) / model.layers


# --- sharding ---------------------------------------------------------------------------------------------
def _shards(s: FinetuneSettings, stage: int) -> int:
    """How many GPUs split a state that ZeRO partitions from `stage` on (1 optimizer, 2 gradients, 3 weights).
    FSDP full-shard is ZeRO-3; DDP replicates everything."""
    level = {"none": 0, "ddp": 0, "zero1": 1, "zero2": 2, "zero3": 3, "fsdp": 3}[s.sharding]
    return s.gpus if level >= stage else 1


# --- the terms --------------------------------------------------------------------------------------------
def base_weight_bytes(model: Model, s: FinetuneSettings) -> float:
    """Model weights held per GPU: 16-bit (fp32 when loaded in fp32) or, for QLoRA, NF4 linear layers with
    16-bit embeddings and LM head (fp32 when PEFT's prepare_model_for_kbit_training runs, i.e. with fp32
    master weights). With parameter offload only the layer being computed and the next one (prefetch) are
    on the GPU."""
    if s.method == "qlora":
        linear = linear_params(model) * nf4_bits_per_param(s.double_quant) / 8
        other = unquantized_params(model) * max(_trainable_dtype_bytes(s), _stored_weight_bytes(s))
        total = linear + other
    else:
        total = model.params * _stored_weight_bytes(s)
    if s.offload == "params":
        return 2 * layer_params(model) * _stored_weight_bytes(s)
    return total / _shards(s, 3)


def trainable_bytes(model: Model, s: FinetuneSettings) -> float:
    """The copy the optimizer writes to: fp32 master weights for full mixed precision (none for pure
    16-bit or fp32-loaded weights, where the weights themselves are trained), the LoRA A and B matrices (and
    the trained copies of embeddings and LM head) otherwise. ZeRO-1 already partitions the master copy with
    the optimizer state; offloading puts it in host memory."""
    if s.method == "full":
        if not s.master_weights_fp32 or s.precision == "fp32" or s.base_fp32 or s.offload != "none":
            return 0.0
        return model.params * BYTES_FP32 / _shards(s, 1)
    return trainable_params(model, s) * _trainable_dtype_bytes(s) / _shards(s, 3)


def gradient_bytes(model: Model, s: FinetuneSettings) -> float:
    """One gradient per trainable parameter in the weights' dtype (full) or the adapter dtype (LoRA); with
    the optimizer step inside backward only the gradient waiting for its step, one layer's with parameter
    offload."""
    width = _stored_weight_bytes(s) if s.method == "full" else _trainable_dtype_bytes(s)
    if s.optimizer_in_backward:
        return in_backward_gradient_bytes(model, s) if s.method == "full" else 0.0
    if s.method == "full" and s.offload == "params":
        return layer_params(model) * width
    if accumulates_unsharded(s):
        return trainable_params(model, s) * width
    return trainable_params(model, s) * width / _shards(s, 2)


def in_backward_gradient_bytes(model: Model, s: FinetuneSettings) -> float:
    """Stepping each parameter in its post-accumulate-grad hook (torchtune optimizer_in_bwd) frees a gradient
    as soon as it is complete, but the embedding table's is complete only when backward reaches the embedding:
    tied to the LM head it accumulates from the head's backward at the start to the embedding's at the end,
    and untied the head's own gradient (as large) is made while the logits' gradient is alive. One table's
    gradient, held through the part of backward that peaks."""
    return model.vocab_size * model.hidden_size * _stored_weight_bytes(s) / _shards(s, 2)


def accumulates_unsharded(s: FinetuneSettings) -> bool:
    """FSDP's no_sync keeps the full gradients on every rank between optimizer steps: "FSDP will accumulate
    the full model gradients (instead of gradient shards) until the eventual sync" (torch/distributed/fsdp/
    fully_sharded_data_parallel.py, FullyShardedDataParallel.no_sync)."""
    return s.unsharded_accumulation and s.gradient_accumulation and s.sharding == "fsdp" and s.gpus > 1


def gathered_bytes(model: Model, s: FinetuneSettings) -> float:
    """FSDP / ZeRO-3 in forward and backward: the other ranks' shares of the gathered blocks' parameters."""
    if _shards(s, 3) == 1 or s.offload == "params":
        return 0.0
    blocks = min(FSDP_GATHERED_BLOCKS, model.layers)
    width = _stored_weight_bytes(s) if s.method != "qlora" else nf4_bits_per_param(s.double_quant) / 8
    return blocks * layer_params(model) * width * (1 - 1 / s.gpus)


def adafactor_state_elements(model: Model, s: FinetuneSettings) -> float:
    """One row and one column accumulator per trained matrix."""
    if s.method == "full":
        per_layer = sum(i + o for i, o in _projection_shapes(model, "all"))
        tables = 1 if model.tied_embeddings else 2
        return model.layers * per_layer + tables * (model.vocab_size + model.hidden_size)
    per_layer = sum((s.rank + i) + (o + s.rank) for i, o in _projection_shapes(model, s.targets))
    return model.layers * per_layer


def optimizer_state_bytes(model: Model, s: FinetuneSettings) -> float:
    """Optimizer state of the whole model, wherever it lives. Paged optimizers are counted in full (they live
    in GPU memory until it runs out)."""
    opt = s.optimizer_used
    if opt == "adafactor":
        return adafactor_state_elements(model, s) * ADAFACTOR_STATE_BYTES
    per_param: float
    if opt in ("adamw", "paged_adamw"):
        per_param = ADAM_MOMENTS * _trainable_dtype_bytes(s)
    elif opt == "adamw_fp32":
        per_param = ADAMW_FP32_BYTES_PER_PARAM
    elif opt == "adamw_bf16":
        per_param = ADAMW_BF16_BYTES_PER_PARAM
    elif opt in ("adamw8bit", "paged_adamw8bit"):
        per_param = ADAM8BIT_BYTES_PER_PARAM
    elif opt == "sgd_momentum":
        per_param = SGD_MOMENTUM_BUFFERS * _trainable_dtype_bytes(s)
    else:
        per_param = SGD_DEFAULT_MOMENTUM_BUFFERS * _trainable_dtype_bytes(s)
    return trainable_params(model, s) * per_param


def optimizer_bytes(model: Model, s: FinetuneSettings) -> float:
    """Optimizer state per GPU (ZeRO-1 and up partition it; offloading moves it to host memory)."""
    if s.offload != "none":
        return 0.0
    return optimizer_state_bytes(model, s) / _shards(s, 1)


def optimizer_step_temporary_bytes(model: Model, s: FinetuneSettings) -> float:
    """What the optimizer step allocates for itself while every gradient and state is held (see above)."""
    zero = zero_fp32_gradient_bytes(model, s)
    if s.optimizer_used not in FOREACH_OPTIMIZERS or s.fused_optimizer or s.optimizer_in_backward:
        return zero
    return zero + optimizer_bytes(model, s) * FOREACH_STEP_TEMPORARY_MOMENTS / ADAM_MOMENTS


def zero_fp32_gradient_bytes(model: Model, s: FinetuneSettings) -> float:
    """DeepSpeed ZeRO's fp32 copy of the gradient partition being stepped (see ZERO3_SUB_GROUP_SIZE). Only
    where the gradients are 16-bit and the optimizer updates fp32 copies; offloaded optimizers step on the
    host."""
    if s.sharding not in ZERO_STAGES or s.offload != "none" or _trainable_dtype_bytes(s) != BYTES_FP32:
        return 0.0
    if s.method == "full" and _stored_weight_bytes(s) == BYTES_FP32:
        return 0.0  # fp32 weights: the gradients are fp32 already and the step uses them in place
    partition = trainable_params(model, s) / _shards(s, 1)
    if s.sharding == "zero3":
        partition = min(partition, ZERO3_SUB_GROUP_SIZE)
    return partition * BYTES_FP32


def _mlp_channels(model: Model) -> int:
    if model.moe is None:
        return model.intermediate_size or 0
    expert = model.moe.moe_intermediate_size or model.intermediate_size or 0
    shared = model.moe.shared_expert_intermediate_size or expert
    return model.moe.active_experts * expert + model.moe.shared_experts * shared


def lora_dropout_inputs_per_token(model: Model, s: FinetuneSettings) -> float:
    """Input elements per token of the adapted projections a token passes through in one layer."""
    if s.method == "full" or s.lora_dropout <= 0:
        return 0.0
    attn = _attention_shapes(model)
    if s.targets == "qv":
        return float(attn[0][0] + attn[2][0])
    total = float(sum(i for i, _ in attn))
    if s.targets == "all":
        h = model.hidden_size
        ups = 2 if model.mlp == "gated" else 1
        experts = (model.moe.active_experts + model.moe.shared_experts) if model.moe else 1
        total += experts * ups * h + _mlp_channels(model)
    return total


def layer_activation_elements_per_token(model: Model, s: FinetuneSettings) -> float:
    """Elements one token leaves saved in one transformer layer (see the constants above)."""
    h = model.hidden_size
    kv_share = model.kv_heads / model.attention_heads
    attn = h * (ATTN_SAVED_HIDDEN_MULTIPLE + 2 * kv_share)
    per_channel = GATED_MLP_SAVED_PER_CHANNEL if model.mlp == "gated" else PLAIN_MLP_SAVED_PER_CHANNEL
    mlp = h * MLP_SAVED_HIDDEN_MULTIPLE + per_channel * _mlp_channels(model)
    return attn + mlp - unsaved_frozen_input_elements_per_token(model, s)


def unsaved_frozen_input_elements_per_token(model: Model, s: FinetuneSettings) -> float:
    """The linear inputs of the count above that a frozen base does not keep (see the constants): the QKV
    input where no adapter (or only dropout-fed ones) reads it, the up/gate and down inputs likewise."""
    if s.method == "full" or (s.method == "qlora" and s.quant_backend == "bitsandbytes"):
        return 0.0
    dropout = s.lora_dropout > 0
    # Every target set adapts q, so the QKV input feeds an adapter; the MLP's only under "all".
    attention_unsaved = dropout
    mlp_unsaved = dropout or s.targets != "all"
    hidden = (attention_unsaved + mlp_unsaved) * FROZEN_UNSAVED_HIDDEN_INPUTS / 2
    channels = FROZEN_UNSAVED_INPUTS_PER_CHANNEL * _mlp_channels(model) if mlp_unsaved else 0.0
    return hidden * model.hidden_size + channels


def attention_score_bytes_per_layer(model: Model, s: FinetuneSettings) -> float:
    """The s x s softmax buffers per head, saved only by eager attention and not under selective
    checkpointing (which recomputes the attention core, Korthikanti et al. section 5)."""
    if s.attention_used != "eager" or s.checkpointing_used == "selective":
        return 0.0
    return ATTN_SCORE_BYTES_EAGER * model.attention_heads * s.seq * s.seq * s.batch


def autocast_weight_copy_bytes_per_layer(model: Model, s: FinetuneSettings) -> float:
    """fp32 weights under 16-bit autocast (LitGPT bf16-mixed, a model loaded in fp32 with `bf16=True`): each
    matmul casts its weight to a new 16-bit tensor, and the matmul saves that copy for its input's gradient
    (tools/autograd/derivatives.yaml: mm saves `mat2` to compute self's gradient), so a kept layer holds a 16-bit
    copy of its weights until its backward. FSDP's mixed precision gathers the weights already in 16 bit and
    DeepSpeed casts the module to 16 bit, so neither casts again."""
    if s.method == "qlora" or not s.base_fp32 or s.precision == "fp32" or s.sharding not in ("none", "ddp"):
        return 0.0
    return layer_params(model) * _compute_bytes(s)


def layer_activation_bytes(model: Model, s: FinetuneSettings) -> float:
    tokens = s.seq * s.batch
    elements = layer_activation_elements_per_token(model, s) + LORA_DROPOUT_SAVED_PER_INPUT * (
        lora_dropout_inputs_per_token(model, s)
    )
    saved = elements * tokens * _compute_bytes(s)
    factor = ACTIVATION_FACTOR * (COMPILED_ACTIVATION_FACTOR if s.compiled else 1.0)
    return factor * saved + attention_score_bytes_per_layer(model, s) + autocast_weight_copy_bytes_per_layer(model, s)


def checkpoint_input_bytes(model: Model, s: FinetuneSettings) -> float:
    """One layer's saved input under block checkpointing."""
    return CHECKPOINT_SAVED_HIDDEN_MULTIPLE * model.hidden_size * s.seq * s.batch * _compute_bytes(s)


def activation_split(model: Model, s: FinetuneSettings) -> tuple[float, float]:
    """(on the GPU, offloaded to host) bytes of saved activations at the start of backward."""
    layer = layer_activation_bytes(model, s)
    if s.checkpointing_used == "block":
        # The layer being re-run already counts its own input in its working set.
        inputs = (model.layers - 1) * checkpoint_input_bytes(model, s)
        if s.activation_offload:
            # The inputs go to the host; the one being re-run comes back as part of that layer's working set.
            return layer, inputs
        return inputs + layer, 0.0
    if s.activation_offload:
        resident = min(OFFLOAD_RESIDENT_LAYERS, model.layers)
        return resident * layer, (model.layers - resident) * layer
    return model.layers * layer, 0.0


def activation_bytes(model: Model, s: FinetuneSettings) -> float:
    """Saved activations on the GPU: all layers', or with block checkpointing the other layers' inputs plus
    one layer re-run; offloading keeps only the resident layer."""
    return activation_split(model, s)[0]


def logits_bytes(model: Model, s: FinetuneSettings) -> float:
    """batch x seq x vocab buffers of the loss. The Hugging Face default upcasts all logits to fp32 before
    cross-entropy; chunked losses keep 16-bit logits and work on one chunk in fp32 at a time; fused kernels
    never hold the logits, only a chunk about tokens x hidden in size."""
    tokens = s.batch * s.seq
    if s.precision == "fp32":
        return tokens * model.vocab_size * LOGITS_BYTES_PER_ELEMENT["fp32_upcast_forward"]
    if s.loss == "fused":
        return tokens * model.hidden_size * FUSED_LOSS_BYTES_PER_HIDDEN
    table = COMPILED_LOGITS_BYTES_PER_ELEMENT if s.compiled else LOGITS_BYTES_PER_ELEMENT
    return tokens * model.vocab_size * table[s.loss]


def qlora_buffer_bytes(model: Model, s: FinetuneSettings) -> float:
    """The dequantized copy of the largest 4-bit matrix, plus the share of 4-bit weight bytes the kept layers
    hold for backward (all layers without checkpointing, the re-run layer with it)."""
    if s.method != "qlora":
        return 0.0
    dequant = QLORA_DEQUANT_BUFFERS * largest_linear_params(model) * _compute_bytes(s)
    layer_4bit = layer_params(model) * nf4_bits_per_param(s.double_quant) / 8
    kept = 1 if (s.checkpointing_used == "block" or s.activation_offload) else model.layers
    # The kept share follows the weights it is a share of: partitioned when they are (ZeRO-3 / FSDP).
    return dequant + QLORA_SAVED_FRACTION * kept * layer_4bit / _shards(s, 3)


def backward_transient_phases(
    model: Model, s: FinetuneSettings, activations: float, logits: float, qlora: float
) -> dict[PeakPhase, dict[PeakTerm, float]]:
    """What backward holds beside the weights and gradients, by moment. With block checkpointing the saved
    block inputs are held throughout; the logits (at the loss) and one re-run block with its QLoRA buffers
    (after the LM head's backward freed the logits) come one after the other. Otherwise (and with a fused
    loss) all of it at once."""
    # Fused losses compute the hidden states' gradient in forward and keep it for backward
    # (linkedin/Liger-Kernel fused_linear_cross_entropy.py saves grad_input in ctx), so it meets the re-run block.
    if s.checkpointing_used != "block" or s.loss == "fused":
        return {"backward": {"activations": activations, "logits": logits, "qlora_buffers": qlora}}
    layer = layer_activation_bytes(model, s)
    inputs = activations - layer
    return {"loss": {"activations": inputs, "logits": logits},
            "rerun": {"activations": inputs, "rerun_block": layer, "qlora_buffers": qlora}}


def fragmentation_bytes(
    allocated_bytes: float, transient_bytes: float = 0.0, packed: bool = True, cache_emptied: bool = False
) -> float:
    """Reserved but unallocated memory: a small share of everything, plus a share of the per-step
    transient memory when batch shapes vary and the cache is never emptied."""
    variable = 0.0 if (packed or cache_emptied) else VARIABLE_SHAPE_FRAGMENTATION * transient_bytes
    return FRAGMENTATION_FRACTION * allocated_bytes + variable


def finetune_memory(model: Model, s: FinetuneSettings) -> FinetuneMemory:
    weights = base_weight_bytes(model, s)
    trainable = trainable_bytes(model, s)
    gradients = gradient_bytes(model, s)
    optimizer = optimizer_bytes(model, s)
    activations, activations_host = activation_split(model, s)
    logits = logits_bytes(model, s)
    qlora = qlora_buffer_bytes(model, s)
    gathered = gathered_bytes(model, s)
    transients = {phase: {**parts, "gathered": gathered}
                  for phase, parts in backward_transient_phases(model, s, activations, logits, qlora).items()}
    # Accumulated gradients persist through the next micro-batch; a gradient waiting for its in-backward step
    # is held while backward peaks; otherwise gradients grow as the activations are freed, and all of them
    # are held only at the end of backward.
    together = s.gradient_accumulation or s.optimizer_in_backward
    phases: dict[PeakPhase, dict[PeakTerm, float]] = (
        {phase: {"gradients": gradients, **parts} for phase, parts in transients.items()} if together
        else {**transients, "gradients": {"gradients": gradients}})
    # The step runs after backward: all gradients, the state and the step's own temporaries at once.
    phases["step"] = {"gradients": gradients, "step_temporaries": optimizer_step_temporary_bytes(model, s)}
    # The peak is the largest moment; the weights, the trainable copy and the optimizer state are held at all.
    peak_phase = max(phases, key=lambda phase: sum(phases[phase].values()))
    held = phases[peak_phase]
    allocated = weights + trainable + optimizer + sum(held.values())
    fragmentation = fragmentation_bytes(allocated, activations + logits, s.packing, s.empty_cache_steps is not None)
    overhead = TORCH_CUDA_CONTEXT_BYTES
    host_state = 0.0
    if s.offload != "none":
        host_state += optimizer_state_bytes(model, s)
        if s.method == "full" and s.master_weights_fp32 and not s.base_fp32:
            host_state += model.params * BYTES_FP32
        if s.offload == "params":
            host_state += model.params * _stored_weight_bytes(s)
        host_state /= s.gpus if s.sharding in ("zero1", "zero2", "zero3", "fsdp") else 1
    return FinetuneMemory(
        weights=weights,
        trainable=trainable,
        gradients=gradients,
        optimizer=optimizer,
        activations=activations,
        logits=logits,
        qlora_buffers=qlora,
        gathered=gathered,
        overhead=overhead,
        fragmentation=fragmentation,
        offloaded=activations_host + host_state,
        pageable=optimizer if s.optimizer_used in PAGED_OPTIMIZERS else 0.0,
        total=allocated + overhead,
        peak_phase=peak_phase,
        at_peak=(("weights", weights), ("trainable", trainable), ("optimizer", optimizer), *held.items(),
                 ("overhead", overhead)),
        # Each term's largest size at another moment, beyond what the peak holds of it.
        apart=tuple((term, size - held.get(term, 0.0)) for term, size in _largest_by_term(phases).items()
                    if size > held.get(term, 0.0)),
    )


def _largest_by_term(phases: dict[PeakPhase, dict[PeakTerm, float]]) -> dict[PeakTerm, float]:
    largest: dict[PeakTerm, float] = {}
    for parts in phases.values():
        for term, size in parts.items():
            largest[term] = max(size, largest.get(term, 0.0))
    return largest


# --- inverse questions --------------------------------------------------------------------------------------
def _largest_holding(holds: Callable[[int], bool], low: int, high: int,
                     known: tuple[int, bool] | None = None) -> int | None:
    """Largest n in [low, high] for which the monotone predicate holds (None if none does), by bisection to the
    unit. `known` is a point already decided, (n, whether it holds): the search keeps to its side of it, so the
    answer never contradicts it."""
    lo, hi = low - 1, high + 1  # lo holds (or is below the range), hi does not (or is above it)
    if known is not None and low <= known[0] <= high:
        if known[1]:
            lo = known[0]
        else:
            hi = known[0]
    while hi - lo > 1:
        mid = (lo + hi) // 2
        if holds(mid):
            lo = mid
        else:
            hi = mid
    return lo if lo >= low else None


def max_seq(model: Model, settings: FinetuneSettings, usable_per_gpu_bytes: float, step: int = 1,
            verdict: Verdict = "tight") -> int | None:
    """Longest sequence (a multiple of `step`, at most the model's context) whose peak gets `verdict` or better
    against one GPU's usable memory (by default: fits at all, what must fit within it), exact to the token with
    `step` 1. The asked sequence is one point of the search, so the answer agrees with the verdict there."""

    def holds(multiple: int) -> bool:
        mem = finetune_memory(model, settings.model_copy(update={"seq": multiple * step}))
        return at_least(memory_verdict(mem, usable_per_gpu_bytes), verdict)

    known = (settings.seq // step, holds(settings.seq // step)) if settings.seq % step == 0 else None
    multiple = _largest_holding(holds, 1, model.max_context // step, known)
    return None if multiple is None else multiple * step


MAX_BATCH_SEARCHED = 4096


def max_batch(model: Model, settings: FinetuneSettings, usable_per_gpu_bytes: float,
              verdict: Verdict = "tight") -> int | None:
    """Largest micro-batch whose peak gets `verdict` or better (by default: fits at all), or None if not even one
    sequence does; the asked batch is one point of the search, as for `max_seq`."""

    def holds(batch: int) -> bool:
        mem = finetune_memory(model, settings.model_copy(update={"batch": batch}))
        return at_least(memory_verdict(mem, usable_per_gpu_bytes), verdict)

    return _largest_holding(holds, 1, MAX_BATCH_SEARCHED, (settings.batch, holds(settings.batch)))


METHODS: tuple[Method, ...] = ("full", "lora", "qlora")


def memory_verdict(mem: FinetuneMemory, usable_per_gpu_bytes: float) -> Verdict:
    """fits / tight / does_not_fit: what must fit against one GPU's usable memory (the same headroom rule as
    inference); a run that fits only by paging its optimizer state to the host is tight."""
    verdict = verdict_for(mem.required, usable_per_gpu_bytes)
    if verdict == "fits" and mem.total > usable_per_gpu_bytes:
        return "tight"
    return verdict


def spilled_paged_bytes(mem: FinetuneMemory, usable_per_gpu_bytes: float) -> float:
    """The paged optimizer state a run that fits only by paging moves to host memory (0 when it fits
    without paging, or does not fit at all)."""
    if mem.pageable <= 0 or mem.total <= usable_per_gpu_bytes:
        return 0.0
    if memory_verdict(mem, usable_per_gpu_bytes) == "does_not_fit":
        return 0.0
    return mem.pageable


# The host memory of NVIDIA's own 8-GPU H200 SXM server as submitted to MLPerf Inference v4.1
# (mlcommons/inference_results_v4.1, closed/NVIDIA/systems/H200-SXM-141GBx8_TRT_MaxQ.json: host_memory_capacity
# "2 TB", 32x 64GB DIMMs). A run whose offloaded state needs more than that needs a host few machines have.
LARGE_HOST_MEMORY_BYTES = 32 * 64 * 2**30


# Changes that move state or activations to CPU memory: a tip for one says how much that memory must hold.
OFFLOAD_CHANGES: tuple[ChangeKey, ...] = ("offload", "cpu_offload_optimizer", "cpu_offload_params")


def host_memory_bytes(mem: FinetuneMemory, s: FinetuneSettings) -> float:
    """CPU memory the run needs on its machine: what each GPU's process offloads, for every GPU."""
    return mem.offloaded * s.gpus


def _change(key: ChangeKey, value: str, mem: FinetuneMemory, usable: float, s: FinetuneSettings) -> Change:
    return Change(key=key, value=value, total=mem.total, verdict=memory_verdict(mem, usable),
                  paged=spilled_paged_bytes(mem, usable), host=host_memory_bytes(mem, s))


def finetune_verdict(model: Model, settings: FinetuneSettings, usable_per_gpu_bytes: float) -> Verdict:
    return memory_verdict(finetune_memory(model, settings), usable_per_gpu_bytes)


def settings_for_method(settings: FinetuneSettings, method: Method) -> FinetuneSettings:
    """The same run with another method: knobs set explicitly are kept, the others are the method's (or the
    framework's) defaults."""
    return settings.with_(method=method)


def largest_trainable(
    models: Iterable[Model], settings: FinetuneSettings, usable_per_gpu_bytes: float
) -> dict[Method, Model | None]:
    """For each method, the model with the most parameters whose per-GPU peak fits one GPU's usable memory.

    The other settings are kept as given; the optimizer too if it was set explicitly, else each method
    takes its own default.
    """
    pool = sorted(models, key=lambda m: m.params, reverse=True)
    best: dict[Method, Model | None] = {}
    for method in METHODS:
        s = settings_for_method(settings, method)
        best[method] = next(
            (m for m in pool if finetune_verdict(m, s, usable_per_gpu_bytes) != "does_not_fit"), None
        )
    return best


# --- the answer -------------------------------------------------------------------------------------------------
CURVE_START_SEQ = 512
# Lightest first: the order a chart's legend reads.
CURVE_METHODS: tuple[Method, ...] = ("qlora", "lora", "full")

# What a run that does not fit (or is tight) could change, cheapest first: what costs nothing of the result
# (an 8-bit or paged optimizer, which bitsandbytes reports matching 32-bit Adam; checkpointing, which only
# recomputes), then sharding over the GPUs already there (only traffic), a smaller micro-batch (the same updates
# through gradient accumulation, slower), activation and CPU offload (slower still, host memory), then what changes
# the training itself (a smaller LoRA rank, shorter sequences, a lighter method, another trainer), and last more
# hardware. Each suggestion is the lightest of its kind that reaches the better verdict.
ChangeKey = Literal[
    "optimizer_8bit", "optimizer_paged", "checkpointing", "sharding", "batch", "offload", "cpu_offload_optimizer",
    "cpu_offload_params", "rank", "seq", "lora", "qlora", "qlora_seq", "framework", "gpus", "gpus_fsdp",
]
CHANGE_ORDER: tuple[ChangeKey, ...] = ChangeKey.__args__  # type: ignore[attr-defined]
MAX_CHANGES = 4
# The strategy offered to hold more per GPU: FSDP full sharding, which every framework preset can run
# (estimator/finetune_presets.py FSDP_SUPPORT).
SHARDED: Sharding = "fsdp"


class Change(BaseModel):
    """One thing to change and what the peak becomes with it."""

    model_config = ConfigDict(frozen=True)

    key: ChangeKey
    value: str
    total: float
    verdict: Verdict
    paged: float = Field(default=0.0, description="paged optimizer state it fits only by spilling to host memory")
    host: float = Field(default=0.0, description="CPU memory the changed run offloads to, all GPUs together")


class SeqCurve(BaseModel):
    model_config = ConfigDict(frozen=True)

    method: Method
    seq: tuple[int, ...]
    total_bytes: tuple[float, ...]
    max_seq: int | None


class FinetunePlan(BaseModel):
    """Everything /finetune answers: the peak, the verdict, what fits, what to change and the curves."""

    model_config = ConfigDict(frozen=True)

    settings: FinetuneSettings
    memory: FinetuneMemory
    usable_per_gpu_bytes: float
    verdict: Verdict
    max_seq: int | None
    max_batch: int | None
    changes: tuple[Change, ...]
    curves: tuple[SeqCurve, ...]


def seq_curve(model: Model, settings: FinetuneSettings, usable_per_gpu_bytes: float) -> SeqCurve:
    points = curve_points(model.max_context, start=CURVE_START_SEQ)
    # What must fit, the quantity the OOM line and max_seq are about (paged optimizer state left out).
    totals = tuple(finetune_memory(model, settings.model_copy(update={"seq": p})).required for p in points)
    return SeqCurve(
        method=settings.method,
        seq=tuple(points),
        total_bytes=totals,
        max_seq=max_seq(model, settings, usable_per_gpu_bytes),
    )


def _same_run(a: FinetuneSettings, b: FinetuneSettings) -> bool:
    return a.model_dump(exclude={"given_knobs"}) == b.model_dump(exclude={"given_knobs"})


def _candidates(model: Model, s: FinetuneSettings, usable: float, target: Verdict,
                more_gpus: bool) -> list[tuple[ChangeKey, str, FinetuneSettings]]:
    """For each kind of change, its variants lightest first (the first that reaches `target` is the one offered)."""
    out: list[tuple[ChangeKey, str, FinetuneSettings]] = []
    if s.optimizer_used not in ("adamw8bit", "paged_adamw8bit", "adafactor", "sgd"):
        out.append(("optimizer_8bit", "adamw8bit", s.with_(optimizer="adamw8bit")))
    if s.optimizer_used not in PAGED_OPTIMIZERS and s.optimizer_used not in ("adafactor", "sgd"):
        out.append(("optimizer_paged", "paged_adamw8bit", s.with_(optimizer="paged_adamw8bit")))
    if s.checkpointing_used != "block":
        out.append(("checkpointing", "block", s.with_(checkpointing_mode="block", checkpointing=True)))
    if s.gpus > 1 and _shards(s, 3) == 1:
        out.append(("sharding", SHARDED, s.with_(sharding=SHARDED)))
    if s.batch > 1:
        batch = max_batch(model, s, usable, verdict=target)
        if batch is not None and batch < s.batch:
            out.append(("batch", str(batch), s.model_copy(update={"batch": batch})))
    if not s.activation_offload:
        out.append(("offload", "activations", s.with_(activation_offload=True)))
    if s.offload == "none":
        out.append(("cpu_offload_optimizer", "optimizer", s.with_(offload="optimizer")))
    if s.offload != "params":
        out.append(("cpu_offload_params", "params", s.with_(offload="params")))
    if s.method != "full":
        out.extend(("rank", str(r), s.with_(rank=r)) for r in _smaller_ranks(s.rank))
    seq = max_seq(model, s, usable, verdict=target)
    if seq is not None and seq < s.seq:
        out.append(("seq", str(seq), s.model_copy(update={"seq": seq})))
    if s.method == "full":
        out.append(("lora", "lora", s.with_(method="lora")))
    if s.method != "qlora":
        qlora = s.with_(method="qlora")
        out.append(("qlora", "qlora", qlora))
        qlora_seq = max_seq(model, qlora, usable, verdict=target)
        if qlora_seq is not None and qlora_seq < s.seq:
            out.append(("qlora_seq", str(qlora_seq), qlora.model_copy(update={"seq": qlora_seq})))
    if s.framework != "unsloth":
        out.append(("framework", "unsloth", s.with_(framework="unsloth")))
    if more_gpus:
        for count in range(s.gpus + 1, MAX_FINETUNE_GPUS + 1):
            more = s.with_(gpus=count)
            out.append(("gpus", str(count), more))
            if _shards(more, 3) == 1:  # replicated weights (DDP): more cards hold no more unless they shard too
                out.append(("gpus_fsdp", str(count), s.with_(gpus=count, sharding=SHARDED)))
    return out


def _smaller_ranks(rank: int) -> list[int]:
    """Powers of two below `rank`, largest first (8, 4, 2, 1 under 16)."""
    return [2**k for k in range(rank.bit_length() - 1, -1, -1) if 2**k < rank]


MAX_FINETUNE_GPUS = 8  # FinetuneSettings.gpus
MIN_CHANGE_SHARE = 0.02  # of the usable memory per GPU
MIN_CHANGE_BYTES = 0.25 * 2**30
# Changes of one kind, of which only the lightest that works is offered: more cards (with the sharding the run
# has, or with FSDP), an 8-bit optimizer (in GPU memory, or paged), CPU offload (optimizer state, or parameters).
SAME_KIND: dict[ChangeKey, ChangeKey] = {"gpus_fsdp": "gpus", "optimizer_paged": "optimizer_8bit",
                                         "cpu_offload_params": "cpu_offload_optimizer"}


def _changes(model: Model, s: FinetuneSettings, usable: float, now: FinetuneMemory, more_gpus: bool
             ) -> list[Change]:
    """Single changes that lift the verdict (does not fit → tight or fits; tight → fits), each differing from the
    question, cheapest first (CHANGE_ORDER); of each kind, its lightest variant that reaches the better verdict."""
    target = next_verdict(memory_verdict(now, usable))
    # A change must take off at least this much: 12 tokens less of sequence that crosses the line by a few MiB is
    # true and useless.
    least = max(MIN_CHANGE_SHARE * usable, MIN_CHANGE_BYTES)
    found: dict[ChangeKey, Change] = {}
    for key, value, changed in _candidates(model, s, usable, target, more_gpus):
        kind = SAME_KIND.get(key, key)
        if kind in found or _same_run(changed, s):
            continue
        mem = finetune_memory(model, changed)
        if now.total - mem.total < least:
            continue
        # Offloading to more CPU memory than a large 8-GPU server has lifts nothing anyone can run.
        if at_least(memory_verdict(mem, usable), target) and host_memory_bytes(mem, changed) <= LARGE_HOST_MEMORY_BYTES:
            found[kind] = _change(key, value, mem, usable, changed)
    return sorted(found.values(), key=lambda c: CHANGE_ORDER.index(c.key))


def finetune_plan(model: Model, settings: FinetuneSettings, usable_per_gpu_bytes: float,
                  more_gpus: bool = True) -> FinetunePlan:
    """The answer; `more_gpus` False where cards cannot be added (one machine's unified memory)."""
    mem = finetune_memory(model, settings)
    verdict = memory_verdict(mem, usable_per_gpu_bytes)
    changes = _changes(model, settings, usable_per_gpu_bytes, mem, more_gpus) if verdict != "fits" else []
    curves = [seq_curve(model, settings_for_method(settings, m), usable_per_gpu_bytes) for m in CURVE_METHODS]
    return FinetunePlan(
        settings=settings,
        memory=mem,
        usable_per_gpu_bytes=usable_per_gpu_bytes,
        verdict=verdict,
        max_seq=max_seq(model, settings, usable_per_gpu_bytes),
        max_batch=max_batch(model, settings, usable_per_gpu_bytes),
        changes=tuple(changes[:MAX_CHANGES]),
        curves=tuple(curves),
    )
