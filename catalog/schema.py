"""Catalog entries: GPUs, models and quantization formats, with the units in the field names.

Memory sizes as vendors sell them ("16 GB" of GDDR6) are binary: the chips hold 16 GiB. We keep the
vendor's figure in `vram_gb` because that is what people type and read, and convert with `vram_bytes`
(× 2^30). Bandwidth and FLOPS are decimal (GB/s = 10^9 B/s).

A fact that could not be found in a primary source is `None` and its field name is listed in
`unknown`, so "unknown" is always said, never guessed.
"""

from __future__ import annotations

from typing import Any, Literal

from pydantic import BaseModel, ConfigDict, Field, model_validator

Vendor = Literal["nvidia", "amd", "apple", "intel"]
# What sets a unified-memory GPU's share of the memory it shares with the CPU (see
# `estimator.memory.unified_gpu_bytes` for each rule and its source): macOS's wired-memory limit (Apple); under Linux,
# the memory the kernel manages, all of which CUDA may allocate (NVIDIA's GB10 and Jetson SoCs); under Linux, the
# system memory the amdgpu driver may map as GTT (AMD's APUs).
UnifiedMemoryLimit = Literal["macos", "linux_cuda", "linux_gtt"]
# The engines a format file runs on (what a catalog entry states); a question may name more, see
# `estimator.query.Engine`.
FormatEngine = Literal["llama.cpp", "vllm", "mlx", "exllamav2", "exllamav3"]


# 1024² / 1000²: the most a context typed with a binary k or M (`ctx:1M` = 1,048,576) overshoots the decimal window a
# publisher names the same way (a "1M" window of 1,000,000 or 1,010,000 tokens).
BINARY_UNIT_SLACK = 1.048576

class _Frozen(BaseModel):
    model_config = ConfigDict(frozen=True, extra="forbid")


class GPU(_Frozen):
    id: str = Field(pattern=r"^[a-z0-9][a-z0-9.-]*$")
    name: str
    aliases: tuple[str, ...] = ()
    vendor: Vendor
    architecture: str
    vram_gb: float = Field(gt=0, description="memory as sold; vendors' GB of memory capacity are GiB")
    memory_type: str | None = None
    bandwidth_gbs: float = Field(gt=0, description="peak memory bandwidth, 10^9 bytes/s")
    achieved_bandwidth_gbs: float | None = Field(
        default=None, gt=0, description="measured streaming bandwidth (data/achieved_bandwidth.toml), 10^9 bytes/s"
    )
    achieved_bandwidth_source: str = ""
    silicon: str = Field(
        default="", description="the first catalog id (by id) of the cards that differ from this one only in memory "
        "capacity, this card's own where none does (derived by catalog.store, not written in the data)"
    )
    fp16_tflops: float | None = Field(
        default=None, description="dense FP16 tensor TFLOPS (FP16 accumulate where the vendor splits it)"
    )
    fp16_fp32acc_tflops: float | None = Field(
        default=None, description="dense FP16 tensor TFLOPS with FP32 accumulate (GeForce runs it at half rate)"
    )
    bf16_tflops: float | None = None
    int8_tops: float | None = Field(default=None, description="dense INT8 tensor TOPS")
    fp8: bool = False
    fp8_tflops: float | None = Field(default=None, description="dense FP8 tensor TFLOPS")
    fp4_tflops: float | None = Field(default=None, description="dense FP4 tensor TFLOPS")
    fp32_tflops: float | None = None
    tdp_w: float | None = None
    form_factor: str
    interconnect: str = Field(description="how several of these talk: 'NVLink 4', 'PCIe 4.0 x16', ...")
    interconnect_gbs: float | None = Field(
        default=None, description="per-GPU bidirectional interconnect bandwidth, GB/s, as the vendor quotes it"
    )
    release_year: int = Field(ge=2012, le=2030)
    launch_price_usd: float | None = None
    unified_memory: bool = False
    ecc_on_by_default: bool = Field(
        default=False, description="data-center GDDR boards ship with ECC on, which reserves 1/16 of memory"
    )
    display_outputs: bool = Field(default=False, description="has display outputs (desktop use likely)")
    gpu_memory_fraction: float | None = Field(
        default=None, gt=0, le=1,
        description="share of unified memory the GPU may use, where stated for this entry; None: the rule of its "
        "`gpu_memory_limit`",
    )
    gpu_memory_limit: UnifiedMemoryLimit | None = Field(
        default=None,
        description="what sets the GPU's share of unified memory (macOS for Apple, filled in; a non-Apple entry "
        "names its OS's mechanism); None for a GPU with memory of its own",
    )
    source: str = Field(min_length=8)
    notes: str = ""
    unknown: tuple[str, ...] = ()

    @model_validator(mode="before")
    @classmethod
    def _apple_shares_by_macos(cls, data: Any) -> Any:
        # Every Apple chip's share is macOS's; stating it on each of their entries would only repeat the vendor.
        if isinstance(data, dict) and data.get("vendor") == "apple" and data.get("unified_memory") \
                and data.get("gpu_memory_limit") is None:
            return {**data, "gpu_memory_limit": "macos"}
        return data

    @model_validator(mode="after")
    def _limit_matches_memory(self) -> GPU:
        if self.unified_memory and self.gpu_memory_limit is None:
            raise ValueError(f"{self.id}: unified memory needs gpu_memory_limit (what sets the GPU's share)")
        if not self.unified_memory and (self.gpu_memory_limit is not None or self.gpu_memory_fraction is not None):
            raise ValueError(f"{self.id}: gpu_memory_limit and gpu_memory_fraction are for unified memory")
        if self.gpu_memory_limit == "macos" and self.vendor != "apple":
            raise ValueError(f"{self.id}: only Apple's GPUs run macOS")
        return self

    @property
    def vram_bytes(self) -> float:
        return self.vram_gb * 2**30


AttentionKind = Literal["full", "sliding", "mla", "hybrid_linear"]


class Attention(_Frozen):
    """Which layers keep a KV cache that grows with context, and how big one token's entry is.

    full:           every layer keeps K and V for every token (MHA/GQA/MQA).
    sliding:        `global_layers` layers keep every token; the rest keep at most `sliding_window`.
    mla:            every layer caches one latent of `kv_lora_rank + qk_rope_head_dim` per token.
    hybrid_linear:  `global_layers` full-attention layers keep every token; the other layers are
                    linear attention / SSM with a constant state of `state_elements_per_layer`
                    (`state_layers` of them, when some layers are neither, e.g. Nemotron-H's MoE blocks).
    """

    kind: AttentionKind = "full"
    sliding_window: int | None = None
    global_layers: int | None = Field(default=None, description="layers whose KV grows with context")
    layer_pattern: str | None = Field(default=None, description="e.g. '5 local : 1 global' or layer ids")
    kv_lora_rank: int | None = None
    q_lora_rank: int | None = Field(default=None, description="MLA query compression rank (None: full q_proj)")
    qk_rope_head_dim: int | None = None
    qk_nope_head_dim: int | None = None
    v_head_dim: int | None = None
    state_elements_per_layer: int | None = Field(
        default=None, description="recurrent state (conv + ssm/linear-attention) elements per layer, one sequence"
    )
    state_layers: int | None = Field(
        default=None,
        description="layers that keep that recurrent state, when not every non-global layer does (Nemotron-H: "
        "the Mamba-2 blocks, its MoE blocks keep none); default layers - global_layers",
    )
    # Gemma 4: its global (full-attention) layers have wider heads, fewer KV heads, and reuse the keys as the
    # values (attention_k_eq_v: no value projection, one cached tensor) - unlike its sliding layers.
    global_head_dim: int | None = Field(
        default=None, description="head width of the global layers where it differs from the model's head_dim"
    )
    global_kv_heads: int | None = Field(
        default=None, description="KV heads of the global layers where they differ from the model's kv_heads"
    )
    global_values_are_keys: bool = Field(
        default=False, description="the global layers have no value projection: the keys serve as values"
    )
    # Gemma 4 E2B/E4B: the last layers reuse the keys and values of an earlier layer of their kind and cache none.
    kv_shared_layers: int = Field(default=0, ge=0, description="trailing layers that cache no KV of their own")
    kv_shared_global_layers: int = Field(default=0, ge=0, description="how many of those are global layers")
    recurrent_mixer: Literal["scan", "short_conv"] = Field(
        default="scan",
        description="what the recurrent layers run: 'scan' (an SSM or linear-attention state update, token "
        "after token) or 'short_conv' (LFM2: a gated depthwise convolution over the last few tokens, no scan)",
    )

    @model_validator(mode="after")
    def _complete(self) -> Attention:
        if self.kind == "sliding" and (self.sliding_window is None or self.global_layers is None):
            raise ValueError("sliding attention needs sliding_window and global_layers")
        if self.kind == "mla" and (self.kv_lora_rank is None or self.qk_rope_head_dim is None):
            raise ValueError("MLA needs kv_lora_rank and qk_rope_head_dim")
        if self.kind == "hybrid_linear" and self.global_layers is None:
            raise ValueError("hybrid_linear needs global_layers (the full-attention layer count)")
        global_shape = (self.global_head_dim is not None or self.global_kv_heads is not None
                        or self.global_values_are_keys)
        if self.kv_shared_global_layers > self.kv_shared_layers or self.kv_shared_global_layers > (
                self.global_layers or 0):
            raise ValueError("kv_shared_global_layers counts global layers among the kv_shared_layers")
        if self.kv_shared_layers and self.kind != "sliding":
            raise ValueError("shared KV layers are described for sliding attention")
        if global_shape and self.kind != "sliding":
            raise ValueError("global-layer head shapes are for sliding attention (local and global layers differ)")
        return self


class LayerGraph(_Frozen):
    """What a decoder layer computes beyond a Llama layer (a norm, the attention, a norm, the MLP), as the
    engines' layer graphs build it. Each is a handful of extra small kernels per layer, which decode pays in
    launches and synchronisation whatever the layer's width."""

    qk_norm: bool = Field(default=False, description="per-head RMS norms on the queries and keys (Qwen3, Gemma 3)")
    sandwich_norms: bool = Field(
        default=False, description="RMS norms after the attention and after the MLP as well as before each (Gemma 2+)")
    per_layer_inputs: bool = Field(
        default=False, description="a per-layer embedding gated and projected into every layer (Gemma 3n/4 E-models)")
    source: str = Field(min_length=8)


class MoE(_Frozen):
    experts: int = Field(ge=2)
    active_experts: int = Field(ge=1, description="routed experts per token")
    shared_experts: int = 0
    moe_intermediate_size: int | None = None
    shared_expert_intermediate_size: int | None = Field(
        default=None, description="width of each shared expert when it differs from moe_intermediate_size"
    )
    dense_layers: int = Field(default=0, description="leading layers with a dense FFN instead of experts")
    gguf_expert_bits: float | None = Field(
        default=None, gt=0,
        description="bits per weight at which GGUF files keep the routed experts whatever their type (gpt-oss ships "
        "its experts in MXFP4 and llama.cpp's quantize leaves them so); None: quantized like the rest")
    fused_gate_up: bool = Field(
        default=False,
        description="GGUF files hold each routed expert's gate and up projections as one tensor (llama.cpp's "
        "ffn_gate_up_exps), multiplied by one mul_mat_id: two expert matmuls per MoE layer, not three")


RopeScaling = Literal["yarn", "linear", "dynamic", "longrope", "llama3"]


class ContextExtension(_Frozen):
    """A window past the native one that the publisher documents, reached by RoPE scaling.

    Qwen3: 32,768 native, 131,072 with YaRN factor 4. Engines apply it only when asked (llama.cpp
    `--rope-scaling yarn --rope-scale 4 --yarn-orig-ctx 32768`; vLLM `--hf-overrides` with `rope_parameters`),
    and static YaRN scales every prompt, short ones included, which the publishers say can cost quality
    on short texts.
    """

    method: RopeScaling
    factor: float = Field(gt=1, description="RoPE scaling factor over the native window")
    extended_context: int = Field(ge=1024, description="tokens the scaled model is documented to handle")
    source: str = Field(min_length=8)
    note: str = ""


ContextStatus = Literal["native", "scaled", "too_long"]


class ContextFit(_Frozen):
    """How a model serves a requested context: in its native window, with its documented RoPE scaling,
    or not at all (past every documented window)."""

    ctx: int
    status: ContextStatus
    native_context: int
    limit: int = Field(description="the largest documented window (extended when one exists)")
    extension: ContextExtension | None = Field(default=None, description="set when status is 'scaled'")


class OllamaBuild(_Frozen):
    """The format Ollama's library ships every tag of a model in, where that is not the usual Q4_K_M ladder: a
    tag such as `gpt-oss:20b` then names this one build, as `qwen3:8b-q8_0` names its Q8_0."""

    quant: str = Field(description="the catalog's id of that format")
    source: str = Field(min_length=8)


class Quality(_Frozen):
    score: float
    metric: str = Field(description="what the score is, e.g. 'LMArena text Elo 2025-09' or 'seed page rank'")
    source: str


class Model(_Frozen):
    id: str = Field(pattern=r"^[a-z0-9][a-z0-9._-]*$")
    name: str
    aliases: tuple[str, ...] = ()
    hf_repo: str | None = None
    family: str
    release_date: str | None = Field(default=None, pattern=r"^\d{4}-\d{2}(-\d{2})?$")
    license: str | None = None
    params_b: float = Field(gt=0, description="total parameters, billions, exact (e.g. 8.19)")
    active_params_b: float = Field(gt=0, description="parameters used per token; equals params_b for dense")
    active_tables_counted: int | None = Field(
        default=None, ge=0, le=2,
        description="embedding tables (input lookup, output head) inside active_params_b where a card's count leaves "
        "some out (gpt-oss: the head but not the input lookup); None: every table, as a config-derived count has")
    layers: int = Field(ge=1)
    hidden_size: int = Field(ge=1)
    attention_heads: int = Field(ge=1)
    kv_heads: int = Field(ge=1)
    head_dim: int = Field(ge=1)
    intermediate_size: int | None = Field(default=None, description="dense FFN width (None if every layer is MoE)")
    mlp: Literal["gated", "plain"] = Field(default="gated", description="gated = 3 matrices (SwiGLU/GeGLU)")
    vocab_size: int = Field(ge=1, description="padded vocabulary of the embedding matrix (config vocab_size)")
    tied_embeddings: bool = False
    max_context: int = Field(ge=512, description="native context window, tokens (no RoPE scaling)")
    context_extension: ContextExtension | None = Field(
        default=None, description="documented longer window with RoPE scaling (YaRN etc.), if any"
    )
    context_note: str = ""
    attention: Attention = Attention()
    moe: MoE | None = None
    extra_params_b: float = Field(
        default=0.0,
        ge=0,
        description="parameters the decoder formula does not count (vision/audio towers, MTP layers, "
        "linear-attention or SSM mixers, per-layer embeddings); explained in notes",
    )
    modalities: tuple[str, ...] = ("text",)
    layer_graph: LayerGraph | None = Field(
        default=None, description="set from layer_graphs.toml by family; None: a Llama-style layer, nothing recorded")
    quality: Quality | None = None
    ollama: OllamaBuild | None = None
    seed_rank: int | None = Field(default=None, description="rank shown on the calculator pages we replace")
    source: str = Field(min_length=8)
    notes: str = ""
    unknown: tuple[str, ...] = ()

    @model_validator(mode="after")
    def _consistent(self) -> Model:
        if self.active_params_b > self.params_b + 1e-9:
            raise ValueError(f"{self.id}: active parameters exceed total")
        if self.attention_heads % self.kv_heads:
            raise ValueError(f"{self.id}: attention heads not a multiple of KV heads")
        if self.moe is not None and self.moe.active_experts > self.moe.experts:
            raise ValueError(f"{self.id}: more active experts than experts")
        ext = self.context_extension
        if ext is not None and ext.extended_context <= self.max_context:
            raise ValueError(f"{self.id}: extended context does not exceed the native window")
        return self

    @property
    def native_context(self) -> int:
        return self.max_context

    def context_limit(self, with_scaling: bool = False) -> int:
        """Largest documented window: the native one, or the RoPE-scaled one when `with_scaling`."""
        if with_scaling and self.context_extension is not None:
            return self.context_extension.extended_context
        return self.max_context

    def context_as_meant(self, ctx: int) -> int:
        """The context a user means by `ctx`: the longest documented window where `ctx` overshoots it by no more than
        a k or M read as 1024 rather than 1000 (a "1M" Qwen2.5-1M window is 1,010,000 tokens, `ctx:1M` is 1,048,576);
        `ctx` itself otherwise."""
        limit = self.context_limit(with_scaling=True)
        return limit if limit < ctx <= limit * BINARY_UNIT_SLACK else ctx

    def past_every_window(self, ctx: int) -> bool:
        """`ctx` exceeds the native window and any documented RoPE-scaled one (`context_fit`'s "too_long")."""
        return ctx > self.context_limit(with_scaling=True)

    def context_fit(self, ctx: int) -> ContextFit:
        """Whether `ctx` tokens fit natively, need the documented RoPE scaling, or exceed every window."""
        limit = self.context_limit(with_scaling=True)
        if ctx <= self.max_context:
            return ContextFit(ctx=ctx, status="native", native_context=self.max_context, limit=limit)
        if self.past_every_window(ctx):
            return ContextFit(ctx=ctx, status="too_long", native_context=self.max_context, limit=limit)
        # Past the native window and within the limit: the documented extension is what makes the limit larger.
        return ContextFit(ctx=ctx, status="scaled", native_context=self.max_context, limit=limit,
                          extension=self.context_extension)

    def scaling_flags(self, engine: str) -> str:
        """llama.cpp options that turn on the documented scaling ('' when there is none or for other engines:
        vLLM takes it as `--hf-overrides` with the model's full `rope_parameters`, rope_theta included,
        which the catalog does not store)."""
        ext = self.context_extension
        if ext is None or engine != "llama.cpp":
            return ""
        if ext.method == "yarn":
            return f"--rope-scaling yarn --rope-scale {ext.factor:g} --yarn-orig-ctx {self.max_context}"
        return f"--rope-scaling linear --rope-scale {ext.factor:g}"

    @property
    def is_moe(self) -> bool:
        return self.moe is not None

    @property
    def recurrent_layers(self) -> int:
        """Layers that hold a constant recurrent state (linear attention / SSM); 0 unless hybrid_linear."""
        a = self.attention
        if a.kind != "hybrid_linear":
            return 0
        if a.state_layers is not None:
            return a.state_layers
        return self.layers - (a.global_layers or 0)

    @property
    def layer_equivalents(self) -> float:
        """Decoder layers' worth of fixed per-layer work (norms, residual adds, kernel launches). A layer of most
        models is a mixer followed by an MLP; Nemotron-H's blocks are one or the other (a Mamba-2, attention or MoE
        block: some layers are neither global nor state layers, `state_layers`), so two of its blocks make one."""
        a = self.attention
        if a.kind == "hybrid_linear" and a.state_layers is not None \
                and a.state_layers + (a.global_layers or 0) < self.layers:
            return self.layers / 2
        return float(self.layers)

    @property
    def scan_layers(self) -> int:
        """Recurrent layers that update a state token after token (a short convolution does not)."""
        return self.recurrent_layers if self.attention.recurrent_mixer == "scan" else 0

    @property
    def params(self) -> float:
        return self.params_b * 1e9

    @property
    def active_params(self) -> float:
        return self.active_params_b * 1e9

    @property
    def active_tables(self) -> int:
        """How many embedding-sized tables `active_params_b` includes (a tied model has one)."""
        if self.active_tables_counted is not None:
            return self.active_tables_counted
        return 1 if self.tied_embeddings else 2


class TensorBits(_Frozen):
    """Average storage bits per weight of each tensor class, for a format that stores the classes at
    different precisions (Unsloth's dynamic GGUFs keep attention and the always-active tensors above the
    routed experts). `ffn` is the dense FFN and any shared experts; `experts` the routed experts' gate and
    up matrices, `experts_down` their down matrices; `other` whatever the decoder formula does not count
    (linear-attention and SSM mixers, norms). Averages over the class, scales included."""

    attention: float = Field(gt=1, le=32)
    ffn: float = Field(gt=1, le=32)
    experts: float = Field(gt=1, le=32)
    experts_down: float = Field(gt=1, le=32)
    other: float = Field(gt=1, le=32)


class QuantFormat(_Frozen):
    """A weight format. `bits_per_weight` is the storage cost of the quantized tensors including their
    scales; `embedding_bits` and `output_bits` are what the format keeps the token embedding and the
    LM head in (GGUF keeps `output.weight` at Q6_K for most k-quants, for example). A format with
    `tensor_bits` states each tensor class on its own; its `bits_per_weight` is then the dense FFN's, the
    bulk of a dense model."""

    id: str = Field(pattern=r"^[a-z0-9][a-z0-9._-]*$")
    name: str
    aliases: tuple[str, ...] = ()
    engines: tuple[FormatEngine, ...]
    level: Literal["int2", "int3", "int4", "int5", "int6", "int8", "fp8", "fp4", "fp16"]
    bits_per_weight: float = Field(gt=1, le=32)
    embedding_bits: float = Field(gt=1, le=32)
    output_bits: float = Field(gt=1, le=32)
    compute: Literal["fp16", "int8", "fp8", "fp4"] = Field(
        default="fp16", description="precision the matrix multiplies run in during prefill"
    )
    kernel: str = Field(default="", description="decode kernel family, used to pick a calibrated efficiency")
    weight_only_name: str | None = Field(
        default=None, description="the name where the GPU has no matrix units for `compute` and the engine runs the "
        "weights only, multiplying in FP16 (vLLM's FP8 Marlin: 'FP8 (W8A16)'); see estimator.engines.runs_weight_only"
    )
    tensor_bits: TensorBits | None = Field(
        default=None, description="per-tensor-class bits, for formats whose mix differs by tensor class"
    )
    released_for: tuple[str, ...] = Field(
        default=(), description="the model families whose publisher released weights in this format (a "
        "quantization-aware-trained checkpoint is trained, not converted: no other model has it); empty: any model "
        "can be converted to it"
    )
    source: str = Field(min_length=8)
    notes: str = ""

    @model_validator(mode="after")
    def _bulk_is_the_ffn(self) -> QuantFormat:
        if self.tensor_bits is not None and self.tensor_bits.ffn != self.bits_per_weight:
            raise ValueError(f"{self.id}: bits_per_weight must equal tensor_bits.ffn (the bulk of a dense model)")
        return self


class NotARelease(_Frozen):
    """A model name that circulates (other calculators list it) but that no publisher has released.

    Listed so the bot can say "not a known release" instead of suggesting look-alikes. An entry needs the
    searches that found nothing in `source`; a name that turns out to be real moves to a `[[model]]`.
    """

    name: str
    aliases: tuple[str, ...] = ()
    reason: str = Field(min_length=8, description="one sentence the bot shows")
    source: str = Field(min_length=8, description="where it was seen and what was searched")
