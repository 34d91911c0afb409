"""Shapes of the fitted constants, and the groups a situation belongs to (the fit and the estimate share them).

Every speed term is `coefficient × physical quantity`. A coefficient is its stated prior times
exp(sum of the fitted log-offsets of the groups the situation belongs to), one group per level:

    all → engine family → engine → backend → memory type → architecture (or die) → GPU    (+ format, precision, …)

A covariate level (`power_per_flop`) holds a slope instead: its log-offset is slope × the GPU's value.

Each level's offset is shrunk toward zero (toward its parents' value) by a ridge penalty, so a group with
few rows stays close to its parent. A group owns an offset only when at least `MIN_GROUP_ROWS` rows from
`MIN_GROUP_SOURCES` distinct sources inform it; otherwise it has none and its parent speaks for it.
"""

from __future__ import annotations

import math
import re
from dataclasses import dataclass

from catalog.schema import GPU
from estimator.query import backend_of

MIN_GROUP_ROWS = 8
MIN_GROUP_SOURCES = 2

# The engine families: Ollama and LM Studio run llama.cpp (with their own defaults), SGLang and
# TensorRT-LLM serve with the same kind of fused CUDA kernels and request scheduling as vLLM.
ENGINE_FAMILY: dict[str, str] = {
    "llama.cpp": "llama.cpp",
    "ollama": "llama.cpp",
    "lm studio": "llama.cpp",
    "vllm": "server",
    "sglang": "server",
    "trt-llm": "server",
    "exllamav2": "exllama",
    "exllamav3": "exllama",
    "mlx": "mlx",
}
# Engines whose time to first token includes a per-request scheduling/tokenisation cost (llama-bench,
# the ExLlama benchmark scripts and mlx_lm's prompt rate time the forward passes alone).
SERVER_ENGINES = frozenset({"vllm", "sglang", "trt-llm", "ollama", "lm studio"})


# A card whose board power is at most this many watts cannot hold its boost clock under a sustained
# matrix load (T4 70 W, A2 60 W, L4 72 W, RTX 4000 SFF Ada 70 W): its compute terms get their own group.
POWER_LIMITED_MAX_TDP_W = 75.0

# Builds older than this ran without CUDA graphs for single-sequence decode and with the 2024 MoE
# kernels; their rows get an "era" group (never applied to an estimate, which is for current builds).
OLD_BUILD_BEFORE = "2024-06"
# llama.cpp's CUDA backend captured decode in CUDA graphs only on compute capability 8.0 and up until
# llama.cpp#25749 (ggml commit c621d2c8, 2026-07-16) moved the gate to Volta; Pascal and older never use them,
# so each of their layers pays its kernel launches from the CPU.
GRAPHS_VOLTA_SINCE = "2026-07-16"
GRAPHS_MIN_CC = 8.0
GRAPHS_MIN_CC_SINCE_VOLTA = 7.0


# Ollama ran GGUF models in runners of its own (a vendored llama.cpp through cgo and, from 2025, Go model code over
# ggml that served gpt-oss and the Qwen3 MoE models) until v0.30.0 (tagged 2026-06-01): ollama/ollama#16031 (merged
# 2026-05-29) removed both, and every GGUF model since runs in upstream llama-server, launched with Ollama's
# num_batch as -b and -ub (512), -fa auto and -np 1 (llm/llama_server.go). Those runners' rows keep their own "engine"
# group; later runs, and every estimate (a current build), are llama-server's behind Ollama's front end.
OLLAMA_LLAMA_SERVER_SINCE = "2026-06-01"
OLLAMA_LLAMA_SERVER_VERSION = (0, 30, 0)
_VERSION = re.compile(r"v?(\d+)\.(\d+)\.(\d+)")


def ollama_runs_llama_server(date: str, build: str) -> bool:
    """Whether an Ollama run went through llama-server: by the version the source states, else by its date ("" = an
    estimate, for a current build)."""
    version = _VERSION.match(build.strip())
    if version:
        return tuple(int(v) for v in version.groups()) >= OLLAMA_LLAMA_SERVER_VERSION
    return not date or date >= OLLAMA_LLAMA_SERVER_SINCE


def engine_group(engine: str, date: str = "", build: str = "") -> str:
    """The "engine" level's group: the engine, except that Ollama is llama.cpp's llama-server since v0.30.0 and its
    own runners' rows stand apart. (A group of its own for the llama-server years, fitted on their 12 decode rows, did
    no better: leave-one-GPU-out decode 7.99 % against 7.97 %, leave-one-source-out 7.39 % against 7.37 %.)"""
    if engine != "ollama":
        return engine
    return "llama.cpp" if ollama_runs_llama_server(date, build) else "ollama-runner"


def cuda_graphs_off(engine: str, gpu: GPU, date: str) -> bool:
    """Whether a llama.cpp CUDA build of that date ("" = current) ran decode without CUDA graphs on this GPU."""
    if ENGINE_FAMILY.get(engine, engine) != "llama.cpp" or backend_of(gpu) != "cuda":
        return False
    cc = compute_capability(gpu) or GRAPHS_MIN_CC
    floor = GRAPHS_MIN_CC_SINCE_VOLTA if (date or "9999") >= GRAPHS_VOLTA_SINCE else GRAPHS_MIN_CC
    return cc < floor

# Levels whose "group" is a continuous property of the GPU: the fitted value is a slope, multiplied by
# the property (see `covariates`), not an offset shared by a set of rows.
COVARIATE_LEVELS = frozenset({"power_per_flop", "build_age", "bytes_per_unit_clock"})

# The group of a flag's level where the flag is not stated: it owns no offset, its parents speak for it.
DEFAULT_GROUP = "default"


@dataclass(frozen=True)
class Param:
    """One coefficient: its prior (the value before any data), its unit, and the levels that may own offsets."""

    name: str
    prior: float
    unit: str
    levels: tuple[str, ...]
    why: str
    # A physical limit the coefficient approaches but cannot cross; the fitted offsets act on the excess over
    # it: floor + (prior − floor)·exp(Σ offsets). `datasheet_floor`: the term is in achieved-bandwidth
    # seconds and nothing streams faster than the datasheet peak, so the floor is achieved / datasheet.
    floor: float = 0.0
    datasheet_floor: bool = False
    # `peak_floor`: the term is in peak-FLOPS seconds, and no kernel multiplies faster than the vendor's peak, so the
    # coefficient cannot fall below 1 (see `estimator.engines.floor_of` for where the peak is not a vendor figure).
    peak_floor: bool = False
    # How much harder than its levels' usual ridge the data must push to move this coefficient's offsets, overall
    # and (level, factor) for single levels.
    ridge: float = 1.0
    level_ridge: tuple[tuple[str, float], ...] = ()

    def ridge_at(self, level: str) -> float:
        return self.ridge * dict(self.level_ridge).get(level, 1.0)


# Chosen among 1, 10, 20, 50 and 200 by leave-one-GPU-out decode median (8.2, 7.9, 7.8, 7.9 and 7.9 %); anything
# from 10 up does most of the good, and leave-one-source-out moves the other way by less (8.2 → 8.3–8.5 %).
DEQUANT_RIDGE = 20.0
# The "dp4a" level's share of it. Only the P100 decodes without dp4a, and it has no F16 or Q8_0 decode row that would
# price its streaming apart from its unpacking, so the fit may put its extra time in either. At ×1 and at ×0.05 (a
# level's usual ridge) it put it in streaming (the P100's Q4_K_M unpacking 0.96 and 0.95 of its weight stream); at
# ×0.25 the byte-loop emulation the prior states keeps the larger share (1.04). Leave-one-GPU-out decode 7.8, 7.8 and
# 7.9 %, leave-one-source-out 7.8, 7.7 and 7.9 %: the data do not choose, the instruction count does.
DEQUANT_DP4A_RIDGE = 0.25

# Prefill's GEMM share of the peak: cards of one die differ more in clocks and board power (the power covariate) than
# in kernels, so a die's siblings speak for a left-out card only where many rows agree. Chosen among 1, 3, 10 and 30
# by leave-one-GPU-out prefill p90 (37.8, 37.0, 36.8 and 36.8 %; medians 12.7, 12.4, 11.9 and 12.1 %). Freeing the
# build-age slope as well reached 35.0 %, but only with a ROCm slope of 2.4 per year (11× per year of build age), a
# runaway that stands in for kernel changes the model does not date, so the slope keeps its ridge.
# On the RDNA 2, RDNA 3 and Radeon Pro rows (2024-25 builds that ran close to today's rate) the slope at its usual
# ridge is 0.93 per year for ROCm, which has those builds run 4-9× slower than measured. Its ridge ×3 was chosen among
# 1, 2, 3, 5 and 10 by leave-one-GPU-out prefill p90 (42.8, 41.0, 39.7, 39.4 and 40.9 %) against leave-one-source-out
# (35.7, 34.8, 35.8, 37.2 and 38.0 %).
MATMUL_LEVEL_RIDGE: tuple[tuple[str, float], ...] = (("die", 10.0), ("build_age", 3.0))

# Prefill attention's and per-layer cost's architecture level (see inv_attention_utilisation): half a level's ridge.
ARCH_LEVEL_RIDGE: tuple[tuple[str, float], ...] = (("arch", 0.5),)

# Prefill's tile unpacking grows with the prompt just as the GEMM does; only the ratio of a GPU's ALU rate to its
# int8 rate tells the two apart, so the fit can trade one for the other, and with a loose prior the fitted value swung
# 5× between leave-one-GPU-out folds (five Arc B580 rows in or out). An MMQ tile load does more than the two ops of
# the unpack itself (scales, conversion to int8, the store to shared memory and the MMA fragments' loads back). Prior
# and ridge chosen among priors 2, 8, 12, 16 and ridges 1, 3, 5, 10 by leave-one-GPU-out prefill p90 (2 × 1: 44.1 %,
# median 16.3 %; 8 × 3: 41.5 %, 15.8 %; 8 × 5: 42.3 %, 15.6 %; 16 × 5: 41.8 %, 15.7 %; ridge 10: 42.8-43.2 %), with
# leave-one-source-out in view (14.2 % / 38.0 % at 2 × 1, 14.5 % / 37.9 % at 8 × 3, 15.1 % / 39 % at ridge 10).
TILE_DEQUANT_PRIOR = 8.0
TILE_DEQUANT_RIDGE = 3.0

# Activations stream like the weights and the cache do: the same prior as the other achieved-bandwidth terms (fitted
# at 0.87 over all rows, some of the traffic staying in the last-level cache).
ACTIVATION_PRIOR = 1.25
# Ollama and LM Studio time decode as a chat does: each token's logits come back to the host, where the sampler chain
# (repeat penalty, top-k, top-p, temperature by default) walks the vocabulary before the next step, inside the front
# end's own per-token loop. llama.cpp's samplers alone take 0.06-0.14 ms a token at 128-152k entries on a desktop CPU
# (llama.cpp#34, #17382); the front ends add their loop around them. Prior chosen among 0.2, 0.5, 1 and 2 ms per 100k
# entries by leave-one-GPU-out decode median (8.13, 8.17, 8.04 and 8.02 %; none 8.27 %); the fit moves it per engine.
SAMPLING_PRIOR_S = 1e-3
# Engines whose timed decode includes sampling each token on the host (llama-bench and the benchmark scripts of the
# other engines time the forward passes, or sample on the GPU).
HOST_SAMPLING_ENGINES = frozenset({"ollama", "lm studio"})

# The vector tile kernel holds fewer query columns per block than the matrix kernels (ggml-cuda/fattn-tile.cuh's
# configs), so it walks the cache more often per prompt: twice the matrix kernels' prior. Chosen among 0.25, 0.5 and 1.0
# by leave-one-GPU-out prefill (74, 72 and 73 rows above 35 %; p90 42.0, 41.5 and 41.5 %).
VECTOR_KV_REREAD_PRIOR = 0.5
# Decode: seconds per token = Σ coefficient × term (see estimator.speed.decode_terms).
DECODE_PARAMS: tuple[Param, ...] = (
    Param("inv_weight_efficiency", 1.25, "achieved-bandwidth seconds per second", (
        "all", "family", "engine", "backend", "memory", "die", "gpu", "kernel", "kernel_die", "bytes_per_unit_clock"),
        "weights stream at a kernel-specific share of the card's achieved bandwidth", datasheet_floor=True),
    # "engine" (here and on the per-MoE-layer cost): Ollama ran gpt-oss and the Qwen3 MoE models in its own model
    # runner until v0.30.0 (engine_group), whose router, top-k and expert gather were its own graph, not llama.cpp's.
    # With 19 Ollama MoE decode rows from 6 publications the level took their leave-one-GPU-out median from 7.5 to
    # 5.3 % (all rows 8.08 → 8.05 %, leave-one-source-out 7.55 → 7.51 %).
    Param("expert_extra", 0.3, "extra seconds per achieved-bandwidth second of routed experts", (
        "all", "family", "engine", "backend", "era"),
        "routed experts are read as several small gathered matmuls (mul_mat_id), below one large read"),
    Param("inv_kv_efficiency", 1.5, "achieved-bandwidth seconds per second", ("all", "family", "backend", "fa"),
          "the attention kernel reads the cache in small per-head tiles (flash attention on or off)"),
    Param("dequant_ops_per_weight", 2.0, "non-overlapped ALU ops per quantized weight", (
        "all", "family", "backend", "kernel", "dp4a", "power", "power_per_flop", "die"),
        "unpacking and scaling each quantized weight is integer/FP work the memory stream does not hide",
        # The prior is the kernels' instruction count per weight, and this term scales with the weights just as
        # the streaming term does: the fit can trade one for the other, so one GPU's rows (an RTX 2080's 15 rows
        # moved the dp4a offset from +0.04 to -0.46) must not re-price every card's ALU work.
        ridge=DEQUANT_RIDGE, level_ridge=(("dp4a", DEQUANT_DP4A_RIDGE),)),
    # "power": a card capped at a few tens of watts (T4 70 W, A2 60 W, laptop parts) sustains well below its boost
    # clock under load, and each of a layer's small kernels runs at that clock.
    Param("layer_overhead_s", 6e-5, "s per layer per token", (
        "all", "family", "engine", "launch", "memfam", "die", "power_per_flop", "build_age", "graphs", "power"),
        "kernel launches and synchronisation per layer (fewer build by build; slower at a throttled clock)"),
    Param("moe_layer_overhead_s", 3e-5, "s per MoE layer per token", ("all", "family", "engine", "backend", "era"),
          "router, top-k and expert gather per MoE layer"),
    Param("recurrent_layer_overhead_s", 3e-5, "s per recurrent layer per token", ("all", "family", "backend"),
          "a linear-attention / SSM layer runs its convolution, gates and state update as extra small kernels"),
    Param("token_overhead_s", 3e-4, "s per token", ("all", "family", "engine"),
          "graph build, sampling and host work once per token"),
    Param("sampling_s_per_100k_vocab", SAMPLING_PRIOR_S, "s per token per 100,000 vocabulary entries",
          ("all", "engine"),
          "a chat front end samples each token on the host: the logits come back and its sampler chain walks them"),
)
# Prefill: seconds = Σ coefficient × term (see estimator.speed.prefill_terms).
PREFILL_PARAMS: tuple[Param, ...] = (
    Param("inv_matmul_utilisation", 2.5, "peak-FLOPS seconds per second", (
        "all", "family", "engine", "backend", "compute", "arch", "die", "gpu", "power", "power_per_flop",
        "build_age", "blas_library"),
        "the engine's GEMM kernels reach a per-architecture share of the datasheet peak",
        level_ridge=MATMUL_LEVEL_RIDGE, peak_floor=True),
    # "die" (here and on the per-layer cost below): each die runs its own attention kernels (mma, WMMA or MFMA flash
    # attention by generation) and launches a layer's kernels at its own clock and scheduler latency, as decode's
    # per-layer cost does. Both levels together took leave-one-GPU-out prefill from 14.6 % (p90 44.5 %, 87 rows above
    # 35 %) to 14.3 % (p90 43.3 %, 80 rows) and leave-one-source-out from 13.8 % (p90 38.7 %) to 13.4 % (p90 36.6 %).
    # "build_age", as on the GEMMs: the flash-attention kernels were rewritten build by build, and an early-2025 build's
    # 16k-token prompts (the cloud-instance rows) otherwise price today's long prompts at that build's attention rate.
    # With those rows it took leave-one-GPU-out prefill from 12.4 % (p90 39.3 %) to 12.0 % (p90 38.2 %).
    # "arch" (here and on the per-layer cost below), a parent of "die" where one architecture spans several dies: the
    # kernels are compiled per instruction set, not per memory system. llama.cpp's flash attention issues the same
    # warp-level mma on every Ampere die (GA100 and GA10x) and every Blackwell one (GB100, GB20x, GB10: no tcgen05),
    # and launches a layer's kernels through the same driver paths, so a die never seen takes its siblings' rate
    # rather than only the backend's. (Apple's "arch" is the chip variant, Max or Ultra, under its generation's die.)
    # Both levels took leave-one-GPU-out prefill from 11.8 % (p90 36.1 %, 88 of 756 rows above 35 %) to 11.65 % (p90
    # 35.0 %, 76 rows) and leave-one-source-out from 11.6 % (p90 32.6 %) to 11.4 % (p90 32.4 %). The level's ridge,
    # half a level's usual on both, was chosen among ×0.25, ×0.5, ×1 and ×2 on attention with the per-layer level at
    # ×1 (p90 35.0, 35.0, 35.2 and 35.7 %; medians 11.9, 11.7, 11.7 and 11.7 %), then ×0.5 on both (11.65 %, 35.0 %).
    # The level on the mixed architectures alone gave 11.3 % (p90 35.8 %), and halving the "die" ridge instead, 11.8 %
    # (p90 36.5 %): the gain is the siblings' pooling, not looser per-die offsets.
    # "wave": AMD's wave64 line (GCN 5.1, CDNA) and its wave32 line (RDNA) run different attention code (the tile
    # kernel's wave64 configs and MFMA since llama.cpp#19806, against WMMA), but 31 of the 33 ROCm rows where attention
    # matters are RDNA's, so the backend's offset was RDNA's and priced an Instinct part's attention at a consumer
    # card's rate. With RDNA's own group the backend's offset stays with the line that has too few rows for one; other
    # vendors' rows get no group (wave_group). The level took leave-one-GPU-out prefill from 11.65 % (p90 35.01 %, 76
    # of 756 rows above 35 %) to 11.50 % (p90 34.88 %, 75 rows) and leave-one-source-out from 11.40 % (p90 32.41 %) to
    # 11.27 % (p90 32.07 %). With each other backend as a group of its own as well: 11.46 % (p90 34.91 %, 76 rows); its
    # ridge ×0.5 or ×2 there gave 11.48 % (p90 34.92 %) and 11.54 % (p90 34.71 %). On the GEMMs (p90 35.6 %), the
    # per-layer cost (35.7 %) or the tile unpacking (35.9 %) it did worse, as it did on decode's per-layer cost, cache
    # reads and unpacking (p90 24.0, 23.7 and 23.7 % against 23.6 %).
    Param("inv_attention_utilisation", 4.0, "peak-FLOPS seconds per second", (
        "all", "family", "backend", "wave", "fa", "arch", "die", "build_age"),
          "attention over the prompt and the cached depth runs below the GEMM rate", level_ridge=ARCH_LEVEL_RIDGE),
    # One coefficient: the tile kernel is the same code on every GPU that runs it, referred to its FP32 rate.
    Param("inv_vector_attention_utilisation", 3.0, "FP32-lane seconds per second", ("all",),
          "llama.cpp's tile flash-attention kernel (GPUs or builds without a matrix-unit one) runs on vector lanes"),
    # "family": how much of a pass's weight stream hides behind the GEMMs is the engine's own: llama.cpp's int8 tiles
    # read the weights they multiply (fitted at a fifth of a plain stream on CUDA, two fifths on ROCm), MLX prompts in
    # one pass and overlaps little. The level took leave-one-GPU-out prefill from 12.9 % (p90 39.0 %, 80 rows above
    # 35 %) to 12.2 % (p90 38.0 %, 77 rows) and leave-one-source-out from 12.6 % (p90 32.9 %) to 12.3 % (p90 31.6 %).
    Param("inv_pass_efficiency", 1.25, "achieved-bandwidth seconds per second", ("all", "family", "backend"),
          "each micro-batch streams the weights once"),
    Param("moe_matmul_extra", 1.0, "extra peak-FLOPS seconds per routed-expert second", (
        "all", "family", "backend", "era"),
        "each expert sees only its share of the micro-batch: small GEMMs plus token routing"),
    Param("request_overhead_s", 0.02, "s per request", ("all", "engine"),
          "a server's tokenisation, scheduling and first-step setup before the first token"),
    # "compute": the kernel family that unpacks (CUDA/HIP int8 MMQ tiles, or Metal's and the BLAS-era kernels'
    # dequantise-to-half tiles) does different ALU work per weight. "die": a tile load is integer ops, global loads and
    # shared-memory stores, and which of them bounds it is the die's own (RTX Blackwell issues INT32 on every FP32 lane,
    # which speeds the integer ops and neither of the others). The level took leave-one-GPU-out prefill from 14.3 % (p90
    # 42.9 %, 103 rows above 35 %) to 13.1 % (p90 41.5 %, 95 rows) and leave-one-source-out from 13.3 % (p90 37.5 %)
    # to 12.6 % (p90 36.6 %); a die ridge of 0.3, 3 or 10 times the level's did worse (p90 41.8, 42.0 and 42.6 %).
    Param("tile_dequant_ops_per_weight", TILE_DEQUANT_PRIOR, "ALU ops per quantized weight per tile of prompt tokens", (
        "all", "family", "backend", "kernel", "dp4a", "power_per_flop", "compute", "mmq_unit", "die", "kernel_unit"),
        "the int8 matrix kernels unpack each quantized weight tile once per tile of prompt tokens",
        ridge=TILE_DEQUANT_RIDGE),
    Param("recurrent_step_s", 5e-6, "s per prompt token per recurrent layer", ("all", "family", "backend"),
          "linear-attention / SSM layers scan the prompt in order, a chunk at a time, with many small kernels"),
    Param("prefill_layer_overhead_s", 1e-4, "s per layer per micro-batch pass", (
        "all", "family", "backend", "arch", "die"),
          "each layer's kernels are launched once per micro-batch, whatever its size", level_ridge=ARCH_LEVEL_RIDGE),
    Param("expert_matmul_launch_s", 2e-5, "s per expert matmul", ("all", "backend"),
          "the mul_mat_id fallback syncs with the host, then dequantises and launches each expert's matmul alone"),
    Param("inv_score_matrix_efficiency", 1.25, "achieved-bandwidth seconds per second", ("all", "backend"),
          "without flash attention the score matrix goes through memory between the KQ, softmax and KQV kernels"),
    # "family": which of a layer's element-wise ops run as kernels of their own, and so move a token's activations
    # through memory, is the engine's graph (llama.cpp's ggml ops, a server's fused kernels, MLX's lazy graph). Fitted,
    # a server's term comes out about twice llama.cpp's, not below it: it also takes up whatever else in a server's
    # time to first token grows with the prompt. The level took leave-one-GPU-out prefill from 12.0 % (p90 36.8 %) to
    # 11.8 % (p90 36.1 %) and leave-one-source-out from 11.8 % (p90 33.3 %) to 11.6 % (p90 32.6 %).
    Param("inv_activation_efficiency", ACTIVATION_PRIOR, "achieved-bandwidth seconds per second", (
        "all", "family", "backend"),
          "each prompt token's activations go through memory between a layer's kernels (norms, RoPE, residual adds)"),
    Param("inv_kv_reread_efficiency", 0.25, "achieved-bandwidth seconds per second", (
        "all", "family", "backend", "fa"),
          "flash attention streams the cached keys and values once per tile of queries (less what the cache keeps)"),
    Param("inv_vector_kv_reread_efficiency", VECTOR_KV_REREAD_PRIOR, "achieved-bandwidth seconds per second", (
        "all", "backend"),
          "the vector tile kernel streams the cache once per tile of its own, smaller query tiles"),
)
# gfx1151's F16 GEMM rate through rocBLAS without tuned kernels, measured (see PRIOR_LOG_OFFSET), in TFLOPS.
ROCBLAS_UNTUNED_GFX1151_TFLOPS = 4.89
ROCBLAS_UNTUNED_LOG_FACTOR = 1.548  # ln 4.7

# Where ggml_cuda_dp4a has no instruction to issue, its C fallback unpacks the four bytes of each operand and
# multiplies and adds them one by one: 7 instructions where the multiplies take their bytes by operand selection
# (the gfx900 asm beside it), 12 with separate extracts; NVIDIA below sm_61 spends eight (PRIOR_LOG_OFFSET below).
EMULATED_DOT4_INSTRUCTIONS = 8

# Prior log-offsets of groups whose effect the source code states before any data: without dp4a
# (compute capability < 6.1, GGML_CUDA_CC_DP4A in ggml/src/ggml-cuda/common.cuh) ggml_cuda_dp4a falls back
# to four byte multiply-adds plus unpacking for what is one instruction on sm_61+: four byte extracts and four
# multiply-adds, the latter XMAD on Maxwell/Pascal, whose instruction set has no 32-bit IMAD (CUDA Binary
# Utilities, "Maxwell and Pascal Instruction Set" vs "Volta Instruction Set"): eight instructions for one.
# The i-quants unpack through codebooks: ggml-cuda/vecdotq.cuh's vec_dot_iq2_xxs_q8_1 spends about 20 instructions on
# 8 weights (a grid-table lookup, the sign unpacking, an and/vcmpne4/xor/vsub4 and a load per 4 weights, two dp4a)
# where vec_dot_q4_K_q8_1 spends about 8 to 9 (loads, a shift, two masks, dp4a for the values and for the block
# minimums): about 2.3× a K-quant's ALU work per weight (the IQ1-IQ3 grids alike). IQ4_XS and IQ4_NL ("iq4") only map
# each nibble through a 16-entry table (two masks and a few byte permutes per 8 weights, get_int_from_table_16):
# about 1.5×.
PRIOR_LOG_OFFSET: dict[tuple[str, str, str], float] = {
    # Three decimals, as every prior here is stated.
    ("dequant_ops_per_weight", "dp4a", "none"): round(math.log(EMULATED_DOT4_INSTRUCTIONS), 3),
    ("dequant_ops_per_weight", "kernel", "llama.cpp/iq"): 0.833,  # ln 2.3
    ("dequant_ops_per_weight", "kernel", "llama.cpp/iq4"): 0.405,  # ln 1.5
    # SYCL's generic decode kernel against a reorder one on the same card and file: 3.1× the time for Q8_0 on a B70
    # (llama.cpp#21527), 1.95× for IQ3_XXS on a B60 (#29107), 2.9× for Q3_K_S on a B50 (#27373): about 2.5×. The
    # offset acts on the excess over the datasheet floor (0.86 on Xe2), where a reorder kernel's coefficient sits
    # near 1.45: (2.5 × 1.45 − 0.86) / (1.45 − 0.86) ≈ 4.7.
    ("inv_weight_efficiency", "kernel", "llama.cpp/sycl-generic"): 1.548,  # ln 4.7
    # SYCL runs a gated-delta-net layer's state update with one work-group per head (llama.cpp#20455), and Qwen3.5's
    # hybrids decode disproportionately slower than same-size Qwen3 models there (#22001). At the shared prior the term
    # is under MATERIAL_SHARE of a row and its SYCL group could never be fitted; the factor was chosen among 1, 2, 3, 5
    # and 10 by leave-one-GPU-out decode (Xe2 family median 31, 19, 16, 19 and 22 %; all rows 8.2, 8.3, 8.3, 8.3 and
    # 8.2 %), the fitted group then moves it with the rows.
    ("recurrent_layer_overhead_s", "backend", "sycl"): 1.099,  # ln 3
    # A prompt goes through the same fused GATED_DELTA_NET op, which scans its tokens in order inside each head's one
    # work-group (#20455 took an A770's Qwen3.5 pp512 only from 91 to 339 t/s). The decode factor, not a new choice:
    # it took leave-one-GPU-out prefill from 82 rows above 35 % to 72 (p90 42.9 → 41.5 %; 5× and 10× gave 70 and 69).
    ("recurrent_step_s", "backend", "sycl"): 1.099,  # ln 3
    # gfx1151's rocBLAS before its tuned kernels (rocblas_untuned): llama.cpp's own MUL_MAT test of the prompt shape
    # (F16, m=4096, n=512, k=14336) ran at 4.89 TFLOPS (ROCm/ROCm#4748, 2025-05-16), where the fitted GEMM share of
    # the chip's 59.4 TFLOPS F16 peak (1 / 2.59, the default group's fitted coefficient) is 22.9: 4.7×. The factor is
    # the ratio of the two rates, so it follows the fit (test_speed_terms checks it against the committed constants):
    # at 3.64, set against an older fit's 1 / 3.34, it had the untuned builds 1.3-1.6× faster than measured.
    ("inv_matmul_utilisation", "blas_library", "rocblas-untuned"): ROCBLAS_UNTUNED_LOG_FACTOR,
}


def memory_group(gpu: GPU) -> str:
    return (gpu.memory_type or "unknown").lower()


def memory_family(gpu: GPU) -> str:
    t = memory_group(gpu)
    for fam in ("hbm", "gddr", "lpddr", "ddr"):
        if t.startswith(fam):
            return fam
    return "other"


# Architectures whose name spans dies with different memory systems: a data-center HBM die (GP100, GA100,
# GB100) beside GDDR parts (GP10x, GA10x, GB20x) and LPDDR modules (Jetson Orin's GA10B, GB10). Their dies
# differ in caches, memory controllers and instruction support (GP100 has no dp4a), so each is its own group.
MIXED_MEMORY_ARCHITECTURES = frozenset({"nvidia/Pascal", "nvidia/Ampere", "nvidia/Blackwell"})


def arch_group(gpu: GPU) -> str:
    return f"{gpu.vendor}/{gpu.architecture.split(' (')[0].split(' + ')[0]}"


def die_group(gpu: GPU) -> str:
    """The architecture, split by memory system where one name spans several dies; Apple's by generation."""
    arch = arch_group(gpu)
    if gpu.vendor == "apple":
        # One GPU core design per generation: an M1, M1 Pro, M1 Max and M1 Ultra differ only in core count.
        return f"apple/{gpu.architecture.split()[1]}"
    if arch in MIXED_MEMORY_ARCHITECTURES:
        t = memory_group(gpu)
        fam = next((f for f in ("hbm", "gddr", "lpddr") if t.startswith(f)), "other")
        return f"{arch} {fam.upper()}"
    return arch


def wave_group(gpu: GPU, backend: str) -> str:
    """AMD's two instruction-set lines under one backend: GCN and CDNA (gfx9) run 64-wide wavefronts, RDNA (gfx10-12)
    32-wide ones, and ggml's HIP kernels are built and configured per line (common.cuh: "GCN/CDNA, wave size is 64").
    Every other vendor's backend is one line, which the backend's own offset speaks for."""
    if gpu.vendor != "amd":
        return DEFAULT_GROUP
    line = "wave64" if gpu.architecture.startswith(("GCN", "CDNA")) else "wave32"
    return f"{backend}/{line}"


def silicon_of(gpu: GPU) -> str:
    return gpu.silicon or gpu.id


def gpu_group(engine: str, gpu: GPU) -> str:
    """The "gpu" level's group: the silicon, per engine family outside llama.cpp. A card's own offset is what one
    family's kernels make of it: llama.cpp's matrix-vector kernels reach the same ~2.3 TB/s on an H100 and an H200
    (the H200's extra bandwidth unused), which says nothing of a server's GEMMs on the same card."""
    fam = ENGINE_FAMILY.get(engine, engine)
    return silicon_of(gpu) if fam == "llama.cpp" else f"{fam}@{silicon_of(gpu)}"


def compute_capability(gpu: GPU) -> float | None:
    """NVIDIA compute capability from the architecture name (the P100 is the one sm_60 Pascal part)."""
    if gpu.vendor != "nvidia":
        return None
    arch = gpu.architecture.split(" (")[0]
    if arch == "Pascal":
        return 6.0 if "p100" in gpu.id else 6.1
    return {"Maxwell": 5.2, "Volta": 7.0, "Turing": 7.5, "Ampere": 8.6, "Ada Lovelace": 8.9, "Hopper": 9.0,
            "Blackwell": 10.0}.get(arch)


# ggml_cuda_dp4a issued v_dot4_i32_i8 for gfx906, gfx908, gfx90a and RDNA 2 only; CDNA 3 (gfx942) fell through to
# the generic C byte loop (llama.cpp#6750, 2024-04: adding __gfx942__ to that list sped an MI300X up) until
# llama.cpp#12177 (ggml-org/ggml c03f1a5e, 2025-03-11) gated it on CDNA, which names gfx942.
GFX942_DP4A_SINCE = "2025-03-11"


def has_int8_dot(gpu: GPU, date: str = "") -> bool:
    """A byte-wise dot-product instruction for the quantized kernels: NVIDIA dp4a from sm_61; AMD from
    Vega 20 (gfx906) on, except RDNA 1 ("RDNA removes MFMA, dp4a", ggml-cuda/common.cuh) and CDNA 3 in builds dated
    before GFX942_DP4A_SINCE (an estimate, undated, is for a current build). Metal and SYCL kernels dequantise to
    halves and use no such instruction, so they are not penalised for it."""
    cc = compute_capability(gpu)
    if cc is not None:
        return cc >= 6.1
    if gpu.vendor == "amd":
        arch = gpu.architecture
        if arch.startswith("CDNA 3") and date and date < GFX942_DP4A_SINCE:
            return False
        return not (arch.startswith("RDNA (") or arch.startswith("RDNA 1") or "Vega 10" in arch or "GCN 4" in arch)
    return True


def mmq_on_dot_products(gpu: GPU) -> bool:
    """A GPU without int8 matrix units runs llama.cpp's MMQ tiles on byte-wise dot products (dp4a, v_dot4_i32_i8):
    NVIDIA below Turing, AMD GCN and RDNA 1/2. Their tiles are loaded and unpacked for those instructions, not into
    matrix fragments (ggml-cuda/mmq.cuh's dp4a and MMA variants of each format's load_tiles)."""
    cc = compute_capability(gpu)
    if cc is not None:
        return cc < 7.5
    arch = gpu.architecture
    return gpu.vendor == "amd" and (arch.startswith("GCN") or arch.startswith("RDNA (") or arch.startswith("RDNA 1")
                                    or arch.startswith("RDNA 2"))


def power_limited(gpu: GPU) -> bool:
    return (gpu.tdp_w is not None and gpu.tdp_w <= POWER_LIMITED_MAX_TDP_W) or "laptop" in gpu.form_factor.lower()


def watts_per_tflops(gpu: GPU) -> float | None:
    peak = gpu.fp16_tflops or gpu.bf16_tflops
    return gpu.tdp_w / peak if gpu.tdp_w and peak else None


# rocBLAS shipped no tuned GEMM kernels for gfx1151 (Strix Halo) through ROCm 7.0: rocm-libraries#699/#745 (July
# 2025) added its logic files, and on 2025-10-06 a comment on #708 still asked for them in 7.0.1. Before that date a
# ROCm build on that chip ran prompt GEMMs through rocBLAS's generic kernels unless ROCBLAS_USE_HIPBLASLT=1 was set.
ROCBLAS_GFX1151_UNTUNED_BEFORE = "2025-10-06"


def rocblas_untuned(gpu: GPU, compute: str, date: str, hipblaslt: bool | None) -> bool:
    """Whether a dated ROCm build's F16 GEMMs ran rocBLAS without tuned kernels for the chip. An estimate (no date)
    is for current builds and never does."""
    return (bool(date) and date < ROCBLAS_GFX1151_UNTUNED_BEFORE and hipblaslt is not True and compute == "fp16"
            and backend_of(gpu) == "rocm" and "gfx1151" in gpu.architecture)


def situation_groups(
    engine: str, gpu: GPU, kernel: str, compute: str, *, date: str = "", flash_attn: bool | None = None,
    hipblaslt: bool | None = None, cuda_graphs: bool | None = None, build: str = "",
) -> dict[str, str]:
    """The group of each level this situation belongs to. An estimate passes no date: it is for current builds,
    and no ROCm library flags: it speaks for a default build."""
    fam, backend, die = ENGINE_FAMILY.get(engine, engine), backend_of(gpu), die_group(gpu)
    rocm = backend == "rocm"
    llamacpp = fam == "llama.cpp"
    kernel_group = f"{fam}/{kernel or 'other'}"
    groups = {
        "all": "all",
        "family": fam,
        "engine": engine_group(engine, date, build),
        "backend": backend,
        # How a decode step's kernels reach the GPU: a server engine (vLLM, SGLang, TensorRT-LLM) replays each step as
        # one captured CUDA/HIP graph of its own kernels, where llama.cpp's ggml-hip build launches every kernel from
        # the host. The per-layer cost a backend's llama.cpp rows fit (ROCm's is the largest) says nothing of a
        # server's on the same backend: an MI300X's SGLang steps would be priced at llama.cpp's ROCm launch cost.
        "launch": f"server@{backend}" if fam == "server" else backend,
        # Per engine family outside llama.cpp, as the "gpu" level is: llama.cpp's matrix-vector kernels stream an H200's
        # or a B200's HBM3e at a low share of its bandwidth (the cards decode barely faster than an H100), which says
        # nothing of a server's kernels on the same memory.
        "memory": memory_group(gpu) if llamacpp else f"{fam}@{memory_group(gpu)}",
        # HBM parts are big data-center dies at modest clocks: the small kernels of each decoded layer take
        # longer there than on a GDDR card of the same generation (H100/H200/B300 decode a 1B model barely faster
        # than an RTX 4090).
        "memfam": memory_family(gpu),
        "arch": arch_group(gpu),
        "wave": wave_group(gpu, backend),
        "die": die,
        # Cards that differ only in memory capacity are one silicon and share its offsets.
        "gpu": gpu_group(engine, gpu),
        "kernel": kernel_group,
        # One decode kernel on one die: how a format's unpacking maps onto a die's instructions, caches and warp or
        # wave width is its own (F16 mat-vec on GCN's wave64, K-quant scales on Pascal), beyond what either says alone.
        "kernel_die": f"{kernel_group}@{die}",
        "compute": f"{ENGINE_FAMILY.get(engine, engine)}/{compute}",
        # The instruction set, not the build: an MI300X's 2024 builds emulated dp4a (has_int8_dot with a date), which
        # prices its prompt tiles (engines.compute_tflops); in decode its 19,456 lanes unpack a token's weights faster
        # than it streams them, and the group fitted on Pascal's few lanes would charge it Pascal's cost.
        "dp4a": "yes" if has_int8_dot(gpu) else "none",
        "power": "limited" if power_limited(gpu) else "full",
        "fa": "off" if flash_attn is False else "on",
        "era": "old" if date and date < OLD_BUILD_BEFORE else "current",
        "power_per_flop": "slope",
        # Bytes the memory delivers per SM per clock: a single sequence's matrix-vector kernels keep only so many
        # loads in flight per SM (Little's law), so a bandwidth-rich, SM-poor die (A100, H200, B300) streams at a lower
        # share of its bandwidth than a GeForce card. One slope: the law is the same on every backend.
        # One slope per engine family: how many loads a family's kernels keep in flight is their own.
        "bytes_per_unit_clock": fam,
        # One slope per backend: its kernels improve build by build at their own pace. An estimate is for
        # current builds, so its age is zero and the slope only keeps old rows from biasing the rest.
        "build_age": backend_of(gpu),
        # Graphs on is the reference; a build that launched every kernel from the CPU (an old or sub-Ampere one)
        # owns an offset, as does one compiled with GGML_CUDA_GRAPHS=OFF on a GPU that would have used them, and a
        # server run eagerly (vLLM --enforce-eager, SGLang --disable-cuda-graph) launches each op from Python.
        "graphs": "off" if cuda_graphs_off(engine, gpu, date) else
                  ("built-off" if llamacpp else "eager") if cuda_graphs is False else DEFAULT_GROUP,
        # ROCm's F16 GEMMs run through rocBLAS, or through hipBLASLt where ROCBLAS_USE_HIPBLASLT=1. A row that does
        # not say, and every estimate, sits in "default"; see rocblas_untuned for the one library-era with its own.
        "blas_library": ("rocblas-untuned" if llamacpp and rocblas_untuned(gpu, compute, date, hipblaslt)
                         else ("hipblaslt" if hipblaslt else "rocblas") if rocm and hipblaslt is not None
                         else DEFAULT_GROUP),
    }
    # int8 MMQ tiles unpacked for dot-product instructions or into matrix fragments: different ALU work per weight
    # (on the tile unpacking only: leave-one-GPU-out prefill 15.4 → 15.3 %, p90 44.6 → 44.1 %, leave-one-source-out
    # p90 39.9 → 38.2 %; on the GEMM's share of the peak as well it made leave-one-GPU-out worse, 16 %).
    groups["mmq_unit"] = (f"{groups['compute']}/{'dot4' if mmq_on_dot_products(gpu) else 'matrix'}"
                          if compute == "int8" else DEFAULT_GROUP)
    # Each format's load_tiles has a dot-product and a matrix-fragment variant (ggml-cuda/mmq.cuh): how much more a
    # K-quant's or an IQ grid's unpacking costs than Q4_0's depends on which one runs. The interaction took
    # leave-one-GPU-out prefill p90 from 38.2 to 36.6 % (92 → 85 rows above 35 %; median 12.0 %) and
    # leave-one-source-out from 12.3 % (p90 33.6 %) to 11.8 % (33.3 %); its ridge (×4 of a level step, as a card's)
    # was chosen among ×0.5 … ×16, which all gave p90 36.6–37.1 %.
    groups["kernel_unit"] = (f"{groups['kernel']}|{groups['mmq_unit']}" if groups["mmq_unit"] != DEFAULT_GROUP
                             else DEFAULT_GROUP)
    return groups


@dataclass(frozen=True)
class Offset:
    """A fitted log-offset and what it rests on."""

    value: float
    rows: int
    sources: int


@dataclass(frozen=True)
class LayerSplitCost:
    """Seconds per decoded token a layer split adds: once for splitting at all, and at each card boundary (fitted in
    calibration/layer_split.py)."""

    fixed_s: float
    hop_s: float

    def seconds(self, boundaries: int) -> float:
        return self.fixed_s + self.hop_s * boundaries if boundaries > 0 else 0.0


NO_SPLIT_COST = LayerSplitCost(0.0, 0.0)


@dataclass(frozen=True)
class Band:
    """The 10th and 90th percentiles of log(measured / estimated) in cross-validation, for one situation."""

    low: float
    high: float
    n: int


@dataclass(frozen=True)
class DecodeFit:
    """Kept for callers that want one bandwidth efficiency (datasheet-relative) and one per-layer latency."""

    efficiency: float
    per_layer_s: float
    rows: int = 0
