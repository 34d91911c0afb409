"""Named constants the estimate rests on, each with where it comes from.

Fitted constants (efficiencies, utilisations, per-token latencies) live in
`estimator/calibration/constants.py`, written by `python -m estimator.calibration.fit`.
"""

from __future__ import annotations

from estimator.units import GIB

# Bytes per cached K or V element. q8_0 / q4_0 are ggml blocks of 32 (34 and 18 bytes).
KV_BYTES_PER_ELEMENT: dict[str, float] = {"f16": 2.0, "bf16": 2.0, "fp8": 1.0, "q8_0": 34 / 32, "q4_0": 18 / 32}

# Recurrent (SSM / linear-attention) state is kept in fp32 by llama.cpp (ggml_ssm_scan, rs cache) and
# by vLLM's mamba cache by default.
RECURRENT_STATE_BYTES_PER_ELEMENT = 4.0

# One CUDA context per process: the driver's structures and the kernels a process loads, plus cuBLAS's
# workspace. Nothing the process allocates counts it, nvidia-smi does. Its size depends on what is loaded, so
# the two kinds of process get their own figures (kept apart on purpose: the fine-tuning constants in
# estimator/finetune.py were fitted with TORCH_CUDA_CONTEXT_BYTES added to every nvidia-smi and capacity row).
# - An inference engine (llama.cpp, vLLM) loads few kernels, and the engine's own memory log leaves the
#   context out: 250–500 MiB per process on Ampere/Hopper before any allocation, growing with the SM count
#   (a bare context takes 107 MiB on an RTX 4060 Ti and 555 MiB on an RTX PRO 6000 Blackwell,
#   https://github.com/ggml-org/llama.cpp/pull/23604, 2026-05-24).
ENGINE_CUDA_CONTEXT_BYTES = 0.45 * GIB
# - A PyTorch training process loads more into it (its own kernels, cuBLAS and cuDNN): the context alone is
#   about 300 MB with CUDA ≥ 11.7's lazy kernel loading and over 1000 MB before it
#   (https://github.com/pytorch/pytorch/issues/107667, 2023-08-28); with the libraries' handles and
#   workspaces, 0.5 GiB is the figure the fine-tuning constants were fitted with. It never appears in
#   torch.cuda.memory_allocated or memory_reserved, so fine-tuning peaks add it on top of what the
#   allocator holds.
TORCH_CUDA_CONTEXT_BYTES = 0.5 * GIB
# Metal and ROCm runtimes reserve less outside the engine's buffers.
OTHER_CONTEXT_BYTES = 0.25 * GIB

# llama.cpp's physical micro-batch (n_ubatch default 512, common/common.h) sizes its compute buffer and
# how many prompt tokens share one pass over the weights.
LLAMACPP_UBATCH = 512
# Prompt tokens that share one read of a weight tile in the prefill matrix multiplies (llama.cpp's MMQ
# kernels take up to 128 token columns per tile, mmq_x in ggml-cuda/mmq.cuh; cuBLAS tiles are 128–256). Its
# dot-product kernels take at most 64 (get_mmq_x_max_host: 128 only with int8 MMA, MFMA or WMMA; Volta's dp4a
# MMQ stops at MMQ_DP4A_MAX_BATCH_SIZE, 64), so they unpack each weight tile twice as often.
PREFILL_WEIGHT_TILE_TOKENS = 128
DOT_PRODUCT_MMQ_TILE_TOKENS = 64
# Flash attention walks a cached head once for each tile of (query token, head) columns it holds (64 in llama.cpp's
# CUDA/HIP kernels for prompts, ggml-cuda/fattn-tile.cuh); the share the L2 cache spares is fitted per backend.
ATTENTION_QUERY_TILE_TOKENS = 64
# Without flash attention each score is an F32 written by KQ, read by the softmax, written again and read by
# KQV (ggml's mul_mat, soft_max_ext, mul_mat in llama-graph.cpp build_attn_mha).
SCORE_MATRIX_BYTES_PER_SCORE = 16
# A prompt token's F32 activations go through memory between a layer's kernels: the attention and FFN norms (each reads
# and writes the hidden state), the Q/K/V and output projections' results, RoPE on the queries and keys, two residual
# adds (two reads, one write each), the int8 (q8_1) copies MMQ makes of each matmul's input, and the FFN's gate and up
# results, read by the gated product, which writes its own for the down projection. About 16 hidden-state vectors and
# 5 FFN-width vectors per layer, 4 bytes each.
ACTIVATION_HIDDEN_VECTORS_PER_LAYER = 16
ACTIVATION_FFN_VECTORS_PER_LAYER = 5
# An MoE layer moves the hidden state once more for each expert a token is routed to: read for the int8 copies of the
# gate and up matmuls' input (2), the expert's down-projection output written (1), scaled by its router weight (a read
# and a write, 2) and summed into the layer's output (two reads and a write, 3) (llama-graph.cpp build_moe_ffn).
ACTIVATION_ROUTED_HIDDEN_VECTORS = 8
ACTIVATION_BYTES_PER_ELEMENT = 4
# A MoE layer's routed experts are three matrices (gate, up, down), each its own mul_mat_id.
EXPERT_MATRICES_PER_LAYER = 3
# llama.cpp compute buffer: logits for a micro-batch in fp32 plus the FFN and attention intermediates
# of one layer (flash attention on: no n_ctx x n_ubatch score matrix).
COMPUTE_BUFFER_FLOATS_PER_TOKEN_FACTOR = 1.0

# vLLM: the share of GPU memory it takes (gpu_memory_utilization default 0.9, vllm/config), the prompt
# tokens of its profiling pass (max_num_batched_tokens default 8192 with chunked prefill) and the memory
# its CUDA graphs keep (≈0.5 GiB logged as "Graph capturing finished ... took 0.5 GiB" for 7–8B models).
VLLM_GPU_MEMORY_UTILIZATION = 0.90
VLLM_PROFILE_TOKENS = 8192
VLLM_CUDA_GRAPH_BYTES = 0.5 * GIB

# NVIDIA: enabling ECC on GDDR6 data-center boards (T4, A2, A10, A16, A40, L4, L40, L40S) sets aside
# 1/16 of memory for check bits — nvidia-smi shows 15360 MiB on a 16 GiB T4.
GDDR_ECC_RESERVE_FRACTION = 1 / 16
# Display-attached consumer cards lose a little to the desktop compositor; headless servers do not.
DESKTOP_RESERVE_BYTES = 0.3 * GIB

# Apple silicon: by default macOS lets the GPU wire about 2/3 of unified memory up to 36 GB and 3/4
# above it (recommendedMaxWorkingSetSize; llama.cpp ggml-metal logs it at start-up).
APPLE_GPU_FRACTION_SMALL = 2 / 3
APPLE_GPU_FRACTION_LARGE = 3 / 4
APPLE_FRACTION_THRESHOLD_GB = 36
# NVIDIA's unified-memory SoCs under Linux (DGX Spark's GB10 on DGX OS, Jetson on L4T): CUDA allocates from the memory
# the kernel manages, and reports that as the device's total; the rest of the DRAM is firmware carve-out. On a GB10,
# NVML has no memory figures ("Not Supported", DGX Spark known issues) and tools fall back to sysinfo's total:
# 128,501,256,192 bytes of its 128 GiB (leptonai/gpud#1170, "NVML memory APIs not supported for unified memory
# device, falling back to system memory", product NVIDIA-GB10), which llama.cpp's CUDA backend also reads on UMA
# devices (ggml-org/llama.cpp#17368, "DGX Spark: UMA support"). No Jetson figure is published: theirs is taken alike.
LINUX_CUDA_UMA_FRACTION = 128_501_256_192 / (128 * GIB)
# AMD's APUs under Linux (Strix Halo, MI300A): the GPU maps system memory as GTT, up to TTM's page limit. The kernel's
# default is half of memory (drm/amdgpu "Adjust logic around GTT size": max(3G, 1/2 of system ram)); a machine set
# up for LLMs raises it (ttm.pages_limit or `amd-ttm --set`, ROCm's "AMD Strix Halo system optimization" page) to
# all but what the OS keeps, 120 of 128 GiB in the usual setting (ttm pages_limit=31457280 4-KiB pages). Under Windows
# only the BIOS carve-out is the GPU's, at most 96 of 128 GB (AMD's Ryzen AI Max+ 395 page).
LINUX_GTT_OS_RESERVE_BYTES = 8 * GIB

# A fit is "tight" when less than this share of usable memory is left over.
TIGHT_HEADROOM_FRACTION = 0.05

# Prefill attention: QK^T and AV each cost 2·P·P·d FLOPs per head; the causal mask halves both.
ATTENTION_FLOPS_CAUSAL_FACTOR = 0.5

# The fixed per-layer cost is priced in Llama layers: a layer whose graph has more kernels pays in proportion. Nodes of
# llama.cpp's Llama layer (src/models/llama.cpp) as the CUDA graph runs them: the attention norm (norm, weight
# multiply), the Q, K and V matmuls, two RoPEs, two KV-cache writes, the attention, the output matmul, the residual
# add, the MLP norm (two), the gate and up matmuls, the gated activation, the down matmul, the residual add: 19.
LLAMA_LAYER_NODES = 19
QK_NORM_NODES = 4  # an RMS norm and its weight multiply on the queries, and on the keys
SANDWICH_NORM_NODES = 4  # the same after the attention and after the MLP
PER_LAYER_INPUT_NODES = 7  # Gemma's per-layer input: gate matmul, GELU, multiply, projection matmul, norm (2), add
SHARED_EXPERT_NODES = 5  # an MoE layer's always-on MLP: gate, up, activation, down, and the add to the experts' sum
BRANCH_NORM_NODES = 6  # Gemma 4's MoE layers norm each MLP branch: ffn_pre_norm_2, ffn_post_norm_1, ffn_post_norm_2

# One all-reduce over the interconnect per attention block and per FFN block in tensor parallel
# (Megatron-LM, Shoeybi et al. 2019), each a fixed latency for the small decode activations.
ALLREDUCES_PER_LAYER = 2
ALLREDUCE_LATENCY_S = {"nvlink": 8e-6, "pcie": 25e-6, "infinity fabric": 10e-6}

# Apple GPU FP32 throughput per byte/s of memory bandwidth where Apple quotes no TFLOPS: the M1 Max
# (32 cores × 128 ALUs × 2 FLOPs × 1.296 GHz = 10.6 TFLOPS, 400 GB/s) gives 26.5 FLOP/byte; M1 (2.6
# TFLOPS announced, 68.25 GB/s) gives 38. Metal runs FP16 at the FP32 rate on M1–M3.
APPLE_FLOPS_PER_BYTE = 26.5
# Where the catalog names the GPU core count: 128 FP32 ALUs per core, an FMA as 2 FLOPs, at the GPU clock
# measured per generation (philipturner/metal-benchmarks, "Overview of Apple-designed GPUs": M1 family
# 1278–1296 MHz, M2 1398 MHz; later generations are taken at M2's clock, a lower bound).
APPLE_ALUS_PER_CORE = 128
# M5-generation GPUs carry a Neural Accelerator in each core for matrix multiplies: "over 4x the peak GPU
# compute for AI" of the M4's same 10-core GPU (Apple newsroom, 15 Oct 2025). llama.cpp's Metal backend uses
# them through the Metal 4 tensor API (ggml-org/llama.cpp#16634) and MLX from 0.30; attention and
# dequantisation stay on the ALUs.
APPLE_NEURAL_ACCELERATOR_MATMUL_GAIN = 4.0
APPLE_GPU_CLOCK_GHZ: dict[str, float] = {"M1": 1.296, "M2": 1.398, "later": 1.398}

# llama.cpp k-quants pack rows in blocks of 256; a tensor whose rows are not a multiple of that (Qwen2.5-72B's
# ffn_down, 29568 wide) is stored in a fallback type instead (src/llama-quant.cpp, convert_incompatible_tensor:
# Q4_K → Q5_0, Q5_K → Q5_1, Q6_K → Q8_0, Q2_K/Q3_K/IQ4_XS → IQ4_NL). Extra bits per ffn_down weight over the
# format's usual ffn_down mix (Q4_K_M keeps half of them in Q6_K: 5.53 → 7.0 with the fallbacks).
KQUANT_ROW_BLOCK = 256
FFN_DOWN_FALLBACK_EXTRA_BITS: dict[str, float] = {
    "q4_k_m": (5.5 + 8.5) / 2 - (4.5 + 6.5625) / 2,
    "q4_k_s": 5.5 - 4.5,
    "q5_k_m": (6.0 + 8.5) / 2 - (5.5 + 6.5625) / 2,
    "q5_k_s": 6.0 - 5.5,
    "q6_k": 8.5 - 6.5625,
    "q3_k_m": 5.5 - 4.5,
    "q3_k_s": 4.5 - 3.4375,
    "q3_k_l": 6.0 - 5.5,
    "q2_k": 4.5 - 3.4375,
    "iq4_xs": 4.5 - 4.25,
    # The i-quant mixes (quants.toml): their 256-block types (IQ1_S/M, IQ2_XS/S, IQ3_XXS/S) fall back to IQ4_NL,
    # Q4_K to Q5_0, Q2_K to Q4_0 (4.5 bits); the usual ffn_down mix keeps the first eighth of layers higher.
    "iq3_m": (5.5 + 7 * 4.5) / 8 - (4.5 + 7 * 3.4375) / 8,
    "iq3_s": 4.5 - 3.4375,
    "iq3_xs": 4.5 - 3.4375,
    "iq3_xxs": 4.5 - 3.0625,
    "iq2_m": 4.5 - (3.4375 + 7 * 2.5625) / 8,
    "iq2_s": 4.5 - (3.4375 + 7 * 2.3125) / 8,
    "iq2_xs": 4.5 - (2.625 + 7 * 2.3125) / 8,
    "iq1_m": 4.5 - (2.625 + 7 * 1.75) / 8,
    "iq1_s": 4.5 - (2.625 + 7 * 1.5625) / 8,
}

# A format stated per tensor class (QuantFormat.tensor_bits) gives each class an average; a class whose rows
# are not whole k-quant blocks takes the same fallbacks. The average is read as a mix of the two neighbouring
# rungs of this ladder (ggml-common.h block sizes: Q2_K 84, Q3_K 110, Q4_K 144, Q5_K 176, Q6_K 210 bytes per
# 256 weights; Q8_0 34 per 32; F16 2 bytes), each rung stored as its fallback (Q5_0 22, Q5_1 24, IQ4_NL 18
# bytes per 32 weights: 5.5, 6.0 and 4.5 bits).
KQUANT_LADDER_BITS: tuple[tuple[float, float], ...] = (  # (bits, bits after the fallback)
    (2.625, 4.5),  # Q2_K -> IQ4_NL
    (3.4375, 4.5),  # Q3_K -> IQ4_NL
    (4.5, 5.5),  # Q4_K -> Q5_0
    (5.5, 6.0),  # Q5_K -> Q5_1
    (6.5625, 8.5),  # Q6_K -> Q8_0
    (8.5, 8.5),  # Q8_0 packs rows in blocks of 32
    (16.0, 16.0),  # F16/BF16
)
# The _M mixes skip a rung (Q4_K_M is Q4_K with 14 % of a body in Q6_K, quants.toml), so the ladder would
# read their average as Q4_K/Q5_K; their bodies fall back as the mix they are: 0.86 x Q5_0 + 0.14 x Q8_0.
KQUANT_MIX_FALLBACK_BITS: dict[str, float] = {
    "q4_k_m": 0.86 * 5.5 + 0.14 * 8.5,
    "q5_k_m": 0.86 * 6.0 + 0.14 * 8.5,
}

# Memory bytes per SM (compute unit, GPU core) per clock that an RTX 3090-class card streams (936 GB/s over 82 SMs at
# 1.7 GHz): the zero of the `bytes_per_unit_clock` covariate.
REFERENCE_BYTES_PER_UNIT_CLOCK = 6.0

# Ollama's default context (ollama/ollama server/routes.go, as of August 2026; since early 2026): by the memory all
# its GPUs report (less OLLAMA_GPU_OVERHEAD), 256k from 47 GiB, 32k from 23 GiB, 4k below; thresholds a GiB under 48
# and 24 for cards that report a little less. The scheduler then caps it at the model's trained window
# (server/sched.go, effectiveContext).
OLLAMA_DEFAULT_CONTEXT_TIERS: tuple[tuple[float, int], ...] = ((47 * GIB, 262_144), (23 * GIB, 32_768), (0.0, 4_096))
