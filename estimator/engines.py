"""What an engine does on a GPU: the kernel family a format runs, the precision prefill computes in, the
GPU's achieved bandwidth and ALU rate, and the fitted coefficients and error band of each situation."""

from __future__ import annotations

import math
import re
from dataclasses import dataclass
from functools import cache

from catalog.schema import GPU, Model, QuantFormat
from estimator import constants as k
from estimator.calibration import constants as fitted
from estimator.calibration.model import (
    COVARIATE_LEVELS,
    DECODE_PARAMS,
    EMULATED_DOT4_INSTRUCTIONS,
    ENGINE_FAMILY,
    PREFILL_PARAMS,
    PRIOR_LOG_OFFSET,
    DecodeFit,
    LayerSplitCost,
    Offset,
    Param,
    arch_group,
    compute_capability,
    die_group,
    gpu_group,
    has_int8_dot,
    memory_family,
    memory_group,
    mmq_on_dot_products,
    situation_groups,
    watts_per_tflops,
)
from estimator.query import Backend, Engine, KVDtype, backend_of

# The format each engine reaches for when someone asks for a generic level.
DEFAULT_FORMAT: dict[Engine, dict[str, str]] = {
    "llama.cpp": {
        "int2": "q2_k",
        "int3": "q3_k_m",
        "int4": "q4_k_m",
        "int5": "q5_k_m",
        "int6": "q6_k",
        "int8": "q8_0",
        "fp8": "q8_0",
        "fp4": "mxfp4",
        "fp16": "f16",
    },
    "vllm": {"int4": "awq-int4", "int8": "int8-w8a8", "fp8": "fp8", "fp4": "nvfp4", "fp16": "bf16"},
    "mlx": {"int4": "mlx-4bit", "int8": "mlx-8bit", "fp16": "bf16"},
    "exllamav2": {"int3": "exl2-3.0bpw", "int4": "exl2-4.0bpw", "int5": "exl2-5.0bpw", "int6": "exl2-6.0bpw",
                  "int8": "exl2-8.0bpw"},
    "exllamav3": {"int2": "exl3-2.0bpw", "int3": "exl3-3.0bpw", "int4": "exl3-4.0bpw", "int5": "exl3-5.0bpw",
                  "int6": "exl3-6.0bpw", "int8": "exl3-8.0bpw"},
}
# Engines that load another engine's formats: Ollama and LM Studio run GGUF files through llama.cpp,
# SGLang and TensorRT-LLM serve the checkpoints vLLM does (TensorRT-LLM builds its engine from them).
FORMATS_OF: dict[Engine, Engine] = {"ollama": "llama.cpp", "lm studio": "llama.cpp", "sglang": "vllm",
                                    "trt-llm": "vllm"}
for _engine, _base in FORMATS_OF.items():
    DEFAULT_FORMAT[_engine] = DEFAULT_FORMAT[_base]


def format_engine(engine: Engine) -> Engine:
    """The engine whose formats this one loads."""
    return FORMATS_OF.get(engine, engine)


def runs_format(engine: Engine, fmt: QuantFormat) -> bool:
    return engine in fmt.engines or format_engine(engine) in fmt.engines


def released_for(fmt: QuantFormat, model: Model) -> bool:
    """Whether the model exists in this format: any format converted from the weights does; a trained one
    (`QuantFormat.released_for`: Gemma 3's QAT Q4_0) only for the families its publisher released it for."""
    return not fmt.released_for or model.family in fmt.released_for


# The KV-cache precisions each engine's own option takes, of those a question may name (estimator.query.KV_DTYPES);
# a server's f16 is its `auto`, the cache in the model's 16-bit dtype.
# - llama.cpp `--cache-type-k/-v` (common/arg.cpp): f32, f16, bf16, q8_0, q4_0, q4_1, iq4_nl, q5_0, q5_1; no fp8.
# - Ollama's OLLAMA_KV_CACHE_TYPE (docs/faq.md, "How can I set the quantization type for the K/V cache?"): f16, q8_0,
#   q4_0. LM Studio's llama.cpp engine (lmstudio.js LLMLlamaCacheQuantizationType): f32, f16, q8_0, q4_0, q4_1,
#   iq4_nl, q5_0, q5_1; no bf16.
# - vLLM `--kv-cache-dtype` (docs.vllm.ai engine arguments): auto, bfloat16, fp8, fp8_e4m3, fp8_e5m2; no ggml block
#   types. SGLang's (docs.sglang.io "Quantized KV Cache"): auto, bf16, fp8_e4m3, fp8_e5m2. TensorRT-LLM keeps the
#   model's dtype or FP8 (its INT8 cache is not ggml's q8_0 either).
# - MLX: mlx_lm.server keeps the model's dtype; the --kv-bits cache is mlx_lm.generate's only (ml-explore/mlx-lm#1043)
#   and MLX's own grouped format, not ggml's blocks.
# - ExLlamaV2 and V3: FP16, or caches of their own (V2's Q4/Q6/Q8, V3's 2-8 bits) whose sizes are not modelled here.
KV_DTYPES_OF: dict[Engine, tuple[KVDtype, ...]] = {
    "llama.cpp": ("f16", "bf16", "q8_0", "q4_0"),
    "ollama": ("f16", "q8_0", "q4_0"),
    "lm studio": ("f16", "q8_0", "q4_0"),
    "vllm": ("f16", "bf16", "fp8"),
    "sglang": ("f16", "bf16", "fp8"),
    "trt-llm": ("f16", "bf16", "fp8"),
    "mlx": ("f16", "bf16"),
    "exllamav2": ("f16",),
    "exllamav3": ("f16",),
}


def kv_dtypes(engine: Engine) -> tuple[KVDtype, ...]:
    """The KV-cache precisions `engine` runs (KV_DTYPES_OF)."""
    return KV_DTYPES_OF[engine]


def runs_kv(engine: Engine, kv: KVDtype) -> bool:
    return kv in KV_DTYPES_OF[engine]


def nearest_kv(engine: Engine, kv: KVDtype) -> KVDtype:
    """The precision `engine` runs whose bytes per element are nearest `kv`'s (by ratio; the first listed on a tie):
    vLLM's fp8 for a q8_0 asked of it, llama.cpp's q8_0 for an fp8."""
    size = k.KV_BYTES_PER_ELEMENT[kv]
    return min(KV_DTYPES_OF[engine], key=lambda d: abs(math.log(k.KV_BYTES_PER_ELEMENT[d] / size)))


# The formats `fit` compares when none is asked for: the seed pages' INT4 / Q8 / FP16 columns.
DEFAULT_LEVELS = ("int4", "int8", "fp16")

# llama.cpp's physical micro-batch (n_ubatch default 512, common/common.h): each pass streams the weights.
LLAMACPP_UBATCH = k.LLAMACPP_UBATCH
# Where a GPU has no published memory benchmark and no GPU of its memory type has one either, its
# datasheet figure is used as is (the weight-efficiency coefficient then absorbs the difference).
UNMEASURED_BANDWIDTH_RATIO = 1.0
# An engine with no cross-validated residuals of its own gets the all-engine band widened by this factor.
UNFITTED_BAND_WIDEN = 1.5


EXLLAMAV3_MIN_CC = 8.0
# The serving engines' hardware floors, from their own pages. vLLM's GPU installation page (docs.vllm.ai, current):
# NVIDIA compute capability 7.5 or higher (V100 ran on releases through v0.14, whose page said 7.0); on ROCm the
# MI200s (gfx90a), MI300 (gfx942), MI350 (gfx950), Radeon RX 7900 (gfx1100/1101), RX 9000 (gfx1200/1201) and
# Ryzen AI MAX / AI 300 (gfx1151/1150); on Intel the Data Center and Arc GPUs. SGLang's ROCm builds target the
# MI300 and MI350 series. TensorRT-LLM's support matrix lists Ampere (SM80/86) and newer.
VLLM_MIN_CC = 7.5
VLLM_ROCM_TARGETS = frozenset({"gfx90a", "gfx942", "gfx950", "gfx1100", "gfx1101", "gfx1200", "gfx1201",
                               "gfx1150", "gfx1151"})
SGLANG_ROCM_TARGETS = frozenset({"gfx942", "gfx950"})
TRT_LLM_MIN_CC = 8.0
# vLLM runs FP8 checkpoints as W8A8 on FP8 matrix units and as weight-only W8A16 through FP8 Marlin from compute
# capability 7.5 (its FP8 W8A8 page); off NVIDIA only where the GPU has FP8 units. NVFP4 is NVIDIA's format.
FP8_WEIGHT_ONLY_MIN_CC = 7.5


def family(engine: str) -> str:
    return ENGINE_FAMILY.get(engine, engine)


def amd_target(gpu: GPU) -> str | None:
    """The gfx id the catalog's AMD architecture name carries ('RDNA 3 (Navi 31, gfx1100)'); None if unnamed."""
    found = re.search(r"gfx[0-9a-f]+", gpu.architecture)
    return found.group(0) if found else None


EngineFloor = tuple[str, dict[str, object]]  # why an engine does not run on a GPU, and the figures that say so

# Engines that run on Apple silicon only: one Mac at a time, whose unified memory is not pooled with another's.
APPLE_ONLY_ENGINES = frozenset({"mlx"})


def engine_floor(engine: Engine, gpu: GPU) -> EngineFloor | None:
    """None where the engine runs on the GPU; otherwise the reason ('vendor', 'cc', 'rocm_target') and its
    figures, so a refusal can say what the engine needs."""
    cc = compute_capability(gpu)
    if engine in APPLE_ONLY_ENGINES:
        return None if gpu.vendor == "apple" else ("vendor", {"vendors": "Apple"})
    if family(engine) == "server":
        floor = TRT_LLM_MIN_CC if engine == "trt-llm" else VLLM_MIN_CC
        if gpu.vendor == "nvidia":
            # An architecture newer than the table counts as new enough.
            return None if (cc or floor) >= floor else ("cc", {"need": floor, "have": cc})
        targets = SGLANG_ROCM_TARGETS if engine == "sglang" else VLLM_ROCM_TARGETS
        if gpu.vendor == "amd" and engine != "trt-llm":
            ok = amd_target(gpu) in targets
            return None if ok else ("rocm_target", {"targets": ", ".join(sorted(targets))})
        if gpu.vendor == "intel" and engine == "vllm":
            return None
        return ("vendor", {"vendors": "NVIDIA" if engine == "trt-llm" else "NVIDIA, AMD" if engine == "sglang"
                           else "NVIDIA, AMD, Intel"})
    if engine == "exllamav3":
        # TabbyAPI's hardware check (common/hardware.py at e632af41): "ExLlamaV3 requires compute capability 8.0
        # (Ampere) or higher and doesn't support ROCm"; an architecture newer than the table counts as Ampere+.
        if gpu.vendor != "nvidia":
            return ("vendor", {"vendors": "NVIDIA"})
        return None if (cc or EXLLAMAV3_MIN_CC) >= EXLLAMAV3_MIN_CC else ("cc", {"need": EXLLAMAV3_MIN_CC, "have": cc})
    if family(engine) == "exllama":
        return None if gpu.vendor in ("nvidia", "amd") else ("vendor", {"vendors": "NVIDIA, AMD"})
    return None


def supports(engine: Engine, gpu: GPU) -> bool:
    return engine_floor(engine, gpu) is None


def format_runs_on(fmt: QuantFormat, gpu: GPU) -> bool:
    """Whether a serving engine can run this checkpoint format on this GPU (see FP8_WEIGHT_ONLY_MIN_CC)."""
    if fmt.id == "nvfp4":
        return gpu.vendor == "nvidia"
    if fmt.id == "fp8":
        if gpu.vendor == "nvidia":
            return (compute_capability(gpu) or FP8_WEIGHT_ONLY_MIN_CC) >= FP8_WEIGHT_ONLY_MIN_CC
        return gpu.fp8
    return True


def runs_weight_only(fmt: QuantFormat, gpu: GPU) -> bool:
    """FP8 on a GPU without FP8 matrix units (NVIDIA below compute capability 8.9: Turing, Ampere) runs weight-only,
    W8A16 through FP8 Marlin, its multiplies in FP16 (see FP8_WEIGHT_ONLY_MIN_CC); with the units it is W8A8."""
    return fmt.compute == "fp8" and not gpu.fp8


def format_as_run(fmt: QuantFormat, gpu: GPU) -> QuantFormat:
    """The format named for what runs on this GPU ('FP8 (W8A16)' where `runs_weight_only`); the same figures."""
    if fmt.weight_only_name and runs_weight_only(fmt, gpu):
        return fmt.model_copy(update={"name": fmt.weight_only_name})
    return fmt


def tensor_parallel(engine: str) -> bool:
    """vLLM, SGLang and TensorRT-LLM shard every layer over the GPUs; llama.cpp and ExLlama split by layer."""
    return family(engine) == "server"


def layer_split_seconds(gpus: int) -> float:
    """Seconds a decoded token loses to a layer split over `gpus` cards: once for splitting at all, and at each card
    boundary (fitted on multi-GPU runs, calibration/layer_split.py)."""
    return LayerSplitCost(fitted.LAYER_SPLIT_FIXED_S, fitted.LAYER_SPLIT_HOP_S).seconds(gpus - 1)


def splits_over(engine: str, model: Model, gpus: int) -> bool:
    """Whether the engine can shard this model over `gpus` cards. Tensor parallelism gives each card whole
    attention heads: vLLM requires the query heads to divide by the group size ("Total number of attention heads
    must be divisible by tensor parallel size") and the KV heads either to divide by it or, when there are fewer
    KV heads than cards, to divide it (each KV head is then replicated)."""
    if gpus <= 1 or not tensor_parallel(engine):
        return True
    kv = model.kv_heads
    kv_ok = kv % gpus == 0 if gpus <= kv else gpus % kv == 0
    return model.attention_heads % gpus == 0 and kv_ok


def tensor_parallel_sizes(engine: str, model: Model, most: int) -> list[int]:
    """The GPU counts from 1 to `most` the engine can shard this model over."""
    return [n for n in range(1, most + 1) if splits_over(engine, model, n)]


def micro_batch_tokens(engine: str) -> int | None:
    """Prompt tokens per pass over the weights; None: the whole prompt in one pass."""
    return LLAMACPP_UBATCH if family(engine) == "llama.cpp" else None


def achieved_bandwidth_gbs(gpu: GPU) -> float:
    """The card's measured streaming bandwidth where a memory benchmark was published; otherwise its datasheet
    figure times the achieved/datasheet ratio fitted on measured cards of its memory type (or memory family)."""
    if gpu.achieved_bandwidth_gbs:
        return gpu.achieved_bandwidth_gbs
    return gpu.bandwidth_gbs * achieved_bandwidth_ratio(memory_group(gpu), memory_family(gpu))


@cache
def achieved_bandwidth_ratio(memory_type: str, memory_fam: str) -> float:
    ratios = fitted.ACHIEVED_BANDWIDTH_RATIO
    for key in (f"type:{memory_type}", f"family:{memory_fam}", "all"):
        if key in ratios:
            return ratios[key]
    return UNMEASURED_BANDWIDTH_RATIO


DUAL_ISSUE = 2  # FP32 operations per lane per clock counted in an RDNA 3+ datasheet FP32 figure


def dual_issue_fp32(gpu: GPU) -> bool:
    """RDNA 3 and later count two FP32 operations per lane per clock (VOPD dual issue) in their FP32 figure
    (RX 7900 XTX: 96 CUs × 64 lanes × 2 × 2 × 2.5 GHz = 61.4 TFLOPS). Only wave32 code whose instruction pairs
    meet the VOPD register-bank rules dual-issues, which compilers seldom manage (Chips and Cheese's compiled FMA
    and clpeak tests did not, quoted at techpowerup.com/forums/posts/5023246), and packed FP16 FMAs are not
    among the VOPD opcodes (RDNA 3 ISA reference): scalar code runs at half that figure, half2 code at it."""
    arch = gpu.architecture
    return gpu.vendor == "amd" and (arch.startswith("RDNA 3") or arch.startswith("RDNA 4"))


def alu_ops_per_s(gpu: GPU) -> float:
    """Scalar ALU lane-operations per second (an FMA is 2 FLOPs, one op), the rate dequantisation runs at: one
    per lane per clock, where an RDNA 3+ FP32 figure counts two."""
    fp32 = gpu.fp32_tflops or (apple_tflops(gpu) if gpu.vendor == "apple" else None)
    if fp32 is None:
        # No published FP32 figure: the vector FP16 rate is twice FP32 on every part that lists both.
        fp32 = (gpu.fp16_tflops or gpu.bf16_tflops or 1.0) / 2
    return fp32 * 1e12 / 2 / (DUAL_ISSUE if dual_issue_fp32(gpu) else 1)


# Integer lanes per FP32 lane. Unpacking quantized weights (shifts, masks, byte permutes, dp4a) is integer work. From
# GA10x on, NVIDIA's FP32 figure counts two FP32 datapaths per SM partition of which only one also runs INT32 ("one
# datapath consists of 16 FP32 CUDA Cores [...]. Another datapath consists of both 16 FP32 CUDA Cores and 16 INT32
# Cores", NVIDIA Ampere GA102 GPU Architecture whitepaper; the same SM in the Ada whitepaper; the H100 whitepaper's
# spec table lists 64 INT32 cores per SM beside 128 FP32). GP100, Volta, Turing and GA100 pair every FP32 lane with an
# INT32 one; the GeForce Blackwell SM runs FP32 or INT32 on every one of its 128 lanes (NVIDIA RTX Blackwell GPU
# Architecture whitepaper: twice Ada's INT32 rate per SM); AMD, Intel and Apple run integer instructions on the same
# lanes as FP32.
HALF_INT32_DIES = frozenset({"nvidia/Ampere GDDR", "nvidia/Ampere LPDDR", "nvidia/Ada Lovelace", "nvidia/Hopper"})


def int_ops_per_s(gpu: GPU) -> float:
    """Integer lane-operations per second: the rate quantized weights unpack at."""
    return alu_ops_per_s(gpu) * (0.5 if die_group(gpu) in HALF_INT32_DIES else 1.0)


def fp32_lane_tflops(gpu: GPU) -> float:
    """The FP32 rate scalar code reaches (an FMA as 2 FLOPs), in TFLOPS."""
    return 2 * alu_ops_per_s(gpu) / 1e12


# FP32 lanes per streaming multiprocessor / compute unit / core: NVIDIA's architecture whitepapers give 64 FP32 cores
# per SM for GP100 (P100), GV100 (V100), TU10x (Turing) and GA100 (A100) and 128 for GP10x, GA10x, Ada, Hopper and
# Blackwell; an AMD CU has 64 lanes (RDNA: two SIMD32; GCN and CDNA: four SIMD16); an Intel Xe-core 128 (Alchemist:
# 16 vector engines × 8, Xe2: 8 × 16); an Apple GPU core 128 (APPLE_ALUS_PER_CORE).
NARROW_SM_LANES = 64
NARROW_SM_CC = frozenset({6.0, 7.0, 7.5})  # GP100, Volta, Turing
NARROW_SM_DIE = "nvidia/Ampere HBM"  # GA100
WIDE_UNIT_LANES = 128
AMD_CU_LANES = 64
# CDNA 3 and 4 count packed FP32 (two operations per lane per clock) in their "FP32 vector" figure (MI300X: 304 CUs ×
# 64 lanes × 2 FLOPs × 2 × 2.1 GHz = 163.4 TFLOPS, AMD CDNA 3 white paper).
PACKED_FP32_ARCHITECTURES = ("CDNA 3", "CDNA 4")


def lanes_per_unit(gpu: GPU) -> int:
    if gpu.vendor == "amd":
        return AMD_CU_LANES
    if gpu.vendor == "nvidia":
        narrow = compute_capability(gpu) in NARROW_SM_CC or die_group(gpu) == NARROW_SM_DIE
        return NARROW_SM_LANES if narrow else WIDE_UNIT_LANES
    return WIDE_UNIT_LANES


def lane_clocks_per_s(gpu: GPU) -> float:
    """Vector lanes × clock: one instruction per lane per clock, however many operations the datasheet counts in it."""
    packed = 2 if gpu.vendor == "amd" and gpu.architecture.startswith(PACKED_FP32_ARCHITECTURES) else 1
    return alu_ops_per_s(gpu) / packed


def unit_clocks_per_s(gpu: GPU) -> float:
    """SMs (compute units, GPU cores) × clock, from the FP32 rate and the lanes of one unit: how many load instructions
    the chip issues per second, whatever its memory could deliver."""
    return lane_clocks_per_s(gpu) / lanes_per_unit(gpu)


def dot4_tops(gpu: GPU) -> float:
    """The int8 rate of a byte-wise dot product on the vector lanes (dp4a, AMD's v_dot4_i32_i8): four
    multiply-adds, 8 ops, per lane per clock: the int8 rate AMD lists for RDNA 2, which has no matrix units."""
    return 8 * lane_clocks_per_s(gpu) / 1e12


# When llama.cpp's CUDA/HIP backend stopped dequantising weights to F16 for a BLAS GEMM during prefill and
# multiplied them with its int8 MMQ kernels instead (dates of the merged commits, ggml-org/ggml history):
MMQ_DEFAULT_SINCE = "2023-08-22"  # llama.cpp#2683 "CUDA: use mul_mat_q kernels by default" (no tensor cores)
MMQ_TENSOR_CORES_SINCE = "2024-06-24"  # llama.cpp#8075: MMQ on int8 tensor cores (Turing on) instead of cuBLAS
# Until llama.cpp#11244 (2025-01-27) an AMD device's compute capability was 100·major + 10·minor (gfx942: 940), which
# matched none of the gfx ids ggml compared it with, and until #10498 (2024-11-27) only RDNA 3 avoided MMQ: every GCN
# and CDNA chip ran its dp4a MMQ at any batch. #11244 parsed the gfx id, sending gfx906 and gfx908 to hipBLAS;
# #11601 (GGML_CUDA_CC_IS_CDNA/IS_GCN) every GCN and CDNA chip.
AMD_GFX_ID_SINCE = "2025-01-27"
AMD_IDS_NAMED_BY_GFX_ID = ("Vega 20", "gfx906", "gfx908")  # as the catalog's architecture names them
AMD_FAMILY_CHECKS_SINCE = "2025-02-02"
MMQ_GCN_SINCE = "2025-02-12"  # llama.cpp#11831 "HIP: Remove GCN from list of devices that avoid MMQ"
# llama.cpp#4697 (2023-12-30) "CUDA: fixed tensor cores not being used on RDNA3": before it HIP builds never defined
# CUDA_USE_TENSOR_CORES on the host side, so RDNA 3 ran MMQ at any batch too.
RDNA3_BLAS_SINCE = "2023-12-30"
# llama.cpp#3776 (2023-10-27) sent batches above MMQ_MAX_BATCH_SIZE (32) to cuBLAS on tensor-core cards; from
# MMQ_DEFAULT_SINCE until then every batch ran MMQ.
CUBLAS_TENSOR_CORES_SINCE = "2023-10-27"
MMQ_CDNA3_SINCE = "2025-07-26"  # llama.cpp#14624: matrix-core (MFMA) MMQ on CDNA 3
MMQ_CDNA_SINCE = "2025-07-30"  # llama.cpp#14949: MFMA MMQ on gfx908/gfx90a for legacy quants and small batches
MMQ_CDNA_MOE_SINCE = "2025-12-28"  # llama.cpp#18202: MMQ for MUL_MAT_ID with more than 64 experts on MFMA parts
MMQ_RDNA4_SINCE = "2025-11-24"  # llama.cpp#17156 "HIP: WMMA-MMQ kernels for RDNA 4"
MMQ_RDNA3_SINCE = "2025-12-05"  # llama.cpp#17576 "HIP: enable WMMA-MMQ INT kernels for RDNA 3"
MMQ_RDNA3_TUNED_SINCE = "2026-01-06"  # llama.cpp#18537/#18666: hipBLAS again for Q2_K, Q6_K, IQ2 at large batches
# llama.cpp#12801 (merged 2025-04-15) runs DeepSeek-style MLA absorbed, prompt batches included: each head's query
# is projected into the latent space and attends to the cached latent directly (MQA over a 576-wide key and a
# 512-wide value), with no n_tokens condition (src/models/deepseek2.cpp). Servers decompress the latent into
# heads for prefill, where the absorbed form costs more FLOPs, and absorb it only for decode.
MLA_ABSORBED_SINCE = "2025-04-15"


def mla_absorbed(engine: Engine, date: str = "") -> bool:
    """Whether a prompt batch's MLA attention runs in the absorbed (latent-space) form on this engine and build."""
    return family(engine) == "llama.cpp" and (date or "9999") >= MLA_ABSORBED_SINCE


# llama.cpp's SYCL backend multiplies a prompt batch by dequantising each quantized matrix and handing it to a
# oneDNN/oneMKL GEMM (ggml_sycl_op_mul_mat_sycl; its MMQ kernels take batches of 32 tokens or fewer on XMX parts).
# The copy is F16 on the XMX matrix engines in a GGML_SYCL_F16 build, F32 on the vector lanes otherwise; the option
# was off by default (docs/backend/SYCL.md, examples/sycl/build.sh) until llama.cpp#23996 "Make GGML_SYCL_F16=ON
# the default" (opened 2026-06-01; measured on a B70: F16/F32 prompt speed 2.43x on average, 1.48x to 3.41x).
SYCL_F16_DEFAULT_SINCE = "2026-06-01"
ONEDNN_COPY_BYTES: dict[str, int] = {"onednn-f16": 2, "onednn-f32": 4}  # bytes per weight of the dequantised copy
# llama.cpp's SYCL backend decodes a token (matrix × vector) with "reorder" kernels for the GGML types that have one:
# at load the quantized blocks are rearranged so that values and scales are read as separate coalesced streams. A
# type without one goes through the generic MMVQ/DMMV kernels over the interleaved blocks, whose odd-sized blocks
# break coalescing: llama.cpp#21527 measured Q8_0 on a B70 at 21 % of the bandwidth before its reorder kernel and
# 66 % after. The day each type's reorder kernel landed on master (a type absent here has none):
SYCL_REORDER_SINCE: dict[str, str] = {
    "q4_0": "2025-05-09",  # llama.cpp#12858 (b5330)
    "q4_k": "2025-05-15",  # #13109 (b5396)
    "q6_k": "2025-06-09",  # #13885 (b5609)
    "q8_0": "2026-04-07",  # #21527 (b8685)
    "q5_k": "2026-05-09",  # #22152 (b9087)
    "q3_k": "2026-06-01",  # #23725 (b9446)
    "q2_k": "2026-08-22",  # #27490 (b10576), re-landing #26336 after its revert (#27486)
}
SYCL_GENERIC_KERNEL = "sycl-generic"
MMQ_DP4A_MAX_BATCH_SIZE = 64  # ggml-cuda/mmq.cuh: the batch below which MMQ is kept over BLAS on those builds
# The batch sizes at which prefill_gemm's choice can change: it compares a batch with 32, 64, 128 and 256 only.
PREFILL_GEMM_BATCH_EDGES: tuple[int, ...] = (33, MMQ_DP4A_MAX_BATCH_SIZE, 129, 257)


# Unsloth's "Q8_K_XL" is Q8_0 matrices with a few kept in BF16: GGML's Q8_K only ever holds activations.
_GGML_TYPE_OF_NAME = {"q8_k": "q8_0"}


def _ggml_type(fmt: QuantFormat) -> str:
    """The GGML type of most of a GGUF's matrices ("ud-q6_k_xl" and "q6_k" are Q6_K, "q4_k_m" is Q4_K)."""
    m = re.match(r"(?:ud-)?((?:iq|q)\d_(?:k|\d|xxs|xs|s|nl)|mxfp4)", fmt.id)
    return _GGML_TYPE_OF_NAME.get(m.group(1), m.group(1)) if m else fmt.id


def sycl_reordered(fmt: QuantFormat, date: str = "", reorder: bool | None = None) -> bool:
    """Whether a SYCL build of that date ("" = current) decodes this format with a reorder kernel (see
    SYCL_REORDER_SINCE); `reorder` is what a measured row says its build did, where it says (a branch adding one)."""
    if reorder is not None:
        return reorder
    since = SYCL_REORDER_SINCE.get(_ggml_type(fmt))
    return since is not None and (date or "9999") >= since


def decode_kernel(engine: Engine, fmt: QuantFormat, gpu: GPU, *, date: str = "", sycl_reorder: bool | None = None
                  ) -> str:
    """The decode kernel group of a format: its own (`QuantFormat.kernel`), except under llama.cpp's SYCL backend,
    where a quantized type without a reorder kernel in the build of that date ("" = current) runs the generic one."""
    if (family(engine) != "llama.cpp" or backend_of(gpu) != "sycl" or fmt.kernel == "f16"
            or sycl_reordered(fmt, date, sycl_reorder)):
        return fmt.kernel
    return SYCL_GENERIC_KERNEL


def sycl_f16_build(date: str = "", sycl_f16: bool | None = None) -> bool:
    """Whether a SYCL build of that date ("" = current) multiplies prompt batches in F16 (see SYCL_F16_DEFAULT_SINCE);
    `sycl_f16` is what a measured row says its build was, where it says."""
    return sycl_f16 if sycl_f16 is not None else (date or "9999") >= SYCL_F16_DEFAULT_SINCE


def prefill_gemm(
    fmt: QuantFormat, gpu: GPU, *, date: str = "", ubatch: int | None = None, experts: int = 0,
    sycl_f16: bool | None = None, mmq: bool | None = None,
) -> str:
    """Which matrix kernel llama.cpp's CUDA/HIP backend runs prefill's quantized matmuls with: "mmq" (int8
    tiles straight from the quantized weights) or "blas" (each weight matrix dequantised to an F16 buffer,
    then cuBLAS/hipBLAS), as ggml_cuda_should_use_mmq decided in the build of that date ("" = current), or as
    `mmq` says a measured row's build did (a PR branch that changed the choice before it was merged).
    F16/BF16 weights always go to BLAS. SYCL dequantises to a copy for oneDNN: "onednn-f16" or "onednn-f32" by
    its build; Metal and Vulkan have kernels of their own ("native")."""
    if fmt.kernel == "f16":
        return "blas"
    backend = backend_of(gpu)
    if backend == "sycl":
        return "onednn-f16" if sycl_f16_build(date, sycl_f16) else "onednn-f32"
    if backend not in ("cuda", "rocm"):
        return "native"
    if mmq is not None:
        return "mmq" if mmq else "blas"
    now = date or "9999"
    batch = ubatch or LLAMACPP_UBATCH
    arch = gpu.architecture
    small = batch < MMQ_DP4A_MAX_BATCH_SIZE  # below it MMQ beats dequantising for BLAS wherever dp4a exists
    if gpu.vendor == "nvidia":
        cc = compute_capability(gpu) or 8.6
        if cc < 6.1 or now < MMQ_DEFAULT_SINCE:
            return "blas"  # no dp4a: the int8 tiles have no instruction to run on
        if now < CUBLAS_TENSOR_CORES_SINCE:
            return "mmq"
        if cc >= 7.5:
            # Before llama.cpp#8075 cuBLAS took every batch above 32 tokens on tensor-core cards.
            return "mmq" if now >= MMQ_TENSOR_CORES_SINCE or batch <= 32 else "blas"
        # Volta: FP16 tensor cores but no int8 MMA; Pascal sm_61: dp4a and nothing faster.
        return "mmq" if cc < 7.0 or small else "blas"
    kind = _ggml_type(fmt)
    if arch.startswith(("GCN", "CDNA")) and now < AMD_FAMILY_CHECKS_SINCE:
        if now < AMD_GFX_ID_SINCE or not any(name in arch for name in AMD_IDS_NAMED_BY_GFX_ID):
            return "mmq"
    if arch.startswith("RDNA 3") and now < RDNA3_BLAS_SINCE:
        return "mmq"
    if arch.startswith("CDNA 3"):
        return "mmq" if now >= MMQ_CDNA3_SINCE or small else "blas"
    if arch.startswith("CDNA"):
        if now < MMQ_CDNA_SINCE:
            return "mmq" if small else "blas"
        if batch <= 128 or kind in ("q4_0", "q4_1", "q5_0", "q5_1") or (experts > 64 and now >= MMQ_CDNA_MOE_SINCE):
            return "mmq"
        return "mmq" if batch <= 256 and kind in ("q4_k", "q5_k") else "blas"
    if arch.startswith("RDNA 4"):
        return "mmq" if now >= MMQ_RDNA4_SINCE or small else "blas"
    if arch.startswith("RDNA 3"):
        if now < MMQ_RDNA3_SINCE:
            return "mmq" if small else "blas"
        if now < MMQ_RDNA3_TUNED_SINCE or experts >= 64:
            return "mmq"
        rdna35 = arch.startswith("RDNA 3.5")
        limit = {"q2_k": 128, "q6_k": 256 if rdna35 else 128}.get(kind)
        if kind in ("iq2_xs", "iq2_s"):
            limit = None if rdna35 else 128
        return "mmq" if limit is None or batch <= limit else "blas"
    if "GCN" in arch and now < MMQ_GCN_SINCE:
        return "mmq" if small else "blas"
    return "mmq"


# When llama.cpp's CUDA/HIP flash attention ran a prompt batch on matrix units rather than its vector "tile"
# kernel (ggml_cuda_get_best_fattn_kernel; dates of the merged commits, ggml-org/ggml history):
FA_ROCWMMA_SINCE = "2025-03-04"  # llama.cpp#12032: rocWMMA kernel for CDNA, RDNA 3+ (GGML_HIP_ROCWMMA_FATTN builds)
FA_ROCWMMA_UNTIL = "2026-07-24"  # llama.cpp#26046 removed it
FA_MMA_RDNA4_SINCE = "2026-01-13"  # llama.cpp#18481 "HIP: add fattn-mma-f16 for RDNA4"
FA_MMA_CDNA_SINCE = "2026-02-28"  # llama.cpp#19806: MFMA in the MMA kernel
FA_MMA_RDNA3_SINCE = "2026-05-14"  # llama.cpp#22880 "HIP: RDNA3 mma FA"
FA_MMA_WMMA_MAX_HEAD_DIM = 128  # RDNA's WMMA path takes head sizes up to 128 and only with the GQA batching


def prefill_attention_kernel(
    engine: Engine, gpu: GPU, model: Model, *, date: str = "", rocwmma: bool | None = None,
    fa_matrix: bool | None = None,
) -> str:
    """ "matrix" (tensor cores, MFMA/WMMA, Metal's simdgroup matrices, or unfused BLAS products) or "vector"
    (the tile kernel's FP16/FP32 lanes) for prompt-batch attention, as the build of that date chose, or as
    `fa_matrix` says a measured row's build did (a PR branch that added a matrix-unit kernel before it was merged)."""
    if family(engine) != "llama.cpp" or backend_of(gpu) not in ("cuda", "rocm"):
        return "matrix"
    if fa_matrix is not None:
        return "matrix" if fa_matrix else "vector"
    if gpu.vendor == "nvidia":
        return "matrix" if (compute_capability(gpu) or 8.6) >= 7.0 else "vector"
    now = date or "9999"
    arch = gpu.architecture
    cdna, rdna3, rdna4 = arch.startswith("CDNA"), arch.startswith("RDNA 3"), arch.startswith("RDNA 4")
    if rocwmma and FA_ROCWMMA_SINCE <= now < FA_ROCWMMA_UNTIL and (cdna or rdna3 or rdna4):
        return "matrix"
    if cdna and now >= FA_MMA_CDNA_SINCE:
        return "matrix"
    grouped = model.attention_heads // model.kv_heads >= 2
    if grouped and model.head_dim <= FA_MMA_WMMA_MAX_HEAD_DIM and (
            (rdna4 and now >= FA_MMA_RDNA4_SINCE) or (rdna3 and now >= FA_MMA_RDNA3_SINCE)):
        return "matrix"
    return "vector"


def flash_attention_walks_window_view(engine: Engine, gpu: GPU) -> bool:
    """Whether a prompt's sliding-window layers cost their window plus the micro-batch, not the window alone.
    llama.cpp keeps a sliding layer's cache as window + n_ubatch cells, and ggml-cuda's flash-attention kernels (CUDA
    and HIP) skip only the fully masked tail of that view (flash_attn_mask_to_KV_max in fattn-common.cuh scans back
    from the end): the cells a query's window has left behind are read and scored under the mask. Metal marks every
    fully masked block and skips it (kernel_flash_attn_ext_blk); servers' kernels bound the window themselves."""
    return family(engine) == "llama.cpp" and backend_of(gpu) in ("cuda", "rocm")


BF16_FORMAT = "bf16"


def compute_tflops(engine: Engine, fmt: QuantFormat, gpu: GPU, gemm: str | None = None, *, date: str = "") -> float:
    """Peak dense throughput of the precision prefill's matrix multiplies are referred to.

    llama.cpp multiplies quantized weights with int8 MMQ kernels (referred to the int8 peak where the GPU lists
    one) unless `gemm` (by default the current build's choice, see `prefill_gemm`) sends them to BLAS, and F16
    with fp16 GEMMs; the kernel family's share of each is fitted ("compute" groups). Metal has no
    int8 matrix units and runs everything at its fp16 rate. vLLM's weight-only INT4 (Marlin) dequantizes to fp16;
    FP8 and INT8 W8A8 use those tensor cores where the GPU has them and fall back to fp16 otherwise.
    """
    if gpu.vendor == "apple":
        return apple_tflops(gpu) * (k.APPLE_NEURAL_ACCELERATOR_MATMUL_GAIN if has_neural_accelerators(gpu) else 1.0)
    fp16 = matrix_tflops(gpu)
    if family(engine) == "llama.cpp":
        # MMQ multiplies the quantized weights with int8 activations: int8 tensor cores (Turing on), dp4a
        # (Pascal sm_61: P40, GTX 10x0) or AMD's dot4/WMMA, at whatever int8 rate the vendor lists.
        if gemm is None:
            gemm = prefill_gemm(fmt, gpu)
        if gemm == "onednn-f32":
            return fp32_lane_tflops(gpu)
        if gemm == "onednn-f16":
            return fp16
        if gemm == "blas" and fmt.id == BF16_FORMAT and not has_bf16_math(gpu):
            # No BF16 matrix or dot instructions: the BLAS GEMM of BF16 weights runs on the FP32 lanes.
            return fp32_lane_tflops(gpu)
        if gemm == "blas":
            return fp16
        if date and _dot4_mmq(gpu, date):
            return dot4_tops(gpu) / (1 if has_int8_dot(gpu, date) else EMULATED_DOT4_INSTRUCTIONS)
        if int8 := int8_matrix_tops(gpu):
            return int8 * MMA_SYNC_SHARE_OF_PEAK.get(compute_capability(gpu) or 0.0, 1.0)
        # Without int8 matrix units, MMQ multiplies with the byte dot product (dp4a, gfx906's v_dot4_i32_i8) at its
        # own rate, where the vendor lists none (V100, MI50): twice their FP16 rate, not the FP16 rate.
        return dot4_tops(gpu) if mmq_on_dot_products(gpu) and has_int8_dot(gpu) else fp16
    if fmt.compute == "fp8" and not runs_weight_only(fmt, gpu) and gpu.fp8_tflops:
        return gpu.fp8_tflops
    if fmt.compute == "int8" and (int8 := int8_matrix_tops(gpu)):
        return int8
    if fmt.compute == "fp4" and gpu.fp4_tflops:
        return gpu.fp4_tflops
    return gpu.bf16_tflops or fp16


# Hopper's tensor cores reach their listed rate only through wgmma, the asynchronous warpgroup instruction. The
# warp-level mma.sync that llama.cpp's MMQ kernels issue (ggml-cuda/mma.cuh; llama.cpp#24777's opt-in wgmma path for
# one type was closed unmerged) reaches about 2/3 of it (FlashAttention-3, arXiv:2407.08608, section 2.2). cuBLAS,
# which prefill's F16 GEMMs and the servers use, issues wgmma.
MMA_SYNC_SHARE_OF_PEAK: dict[float, float] = {9.0: 2 / 3}


def mmq_tile_tokens(gpu: GPU, date: str = "") -> int:
    """Prompt tokens per MMQ weight tile: fewer where the int8 tiles run on dot products, not matrix units."""
    dot = mmq_on_dot_products(gpu) or bool(date and _dot4_mmq(gpu, date))
    return k.DOT_PRODUCT_MMQ_TILE_TOKENS if dot else k.PREFILL_WEIGHT_TILE_TOKENS


def _dot4_mmq(gpu: GPU, date: str) -> bool:
    """A CDNA chip's MMQ ran on dp4a-style dot products, not its matrix cores (the int8 rate AMD lists), in builds
    before MFMA MMQ."""
    arch = gpu.architecture
    if gpu.vendor != "amd" or not arch.startswith("CDNA") or arch.startswith("CDNA 4"):
        return False
    return date < (MMQ_CDNA3_SINCE if arch.startswith("CDNA 3") else MMQ_CDNA_SINCE)


def has_bf16_math(gpu: GPU) -> bool:
    """BF16 tensor or dot-product instructions: NVIDIA from Ampere (compute capability 8.0; Volta and Turing tensor
    cores take FP16 only, Pascal has none), AMD from CDNA (MI100's MFMA) and RDNA 3 (WMMA); GCN 5 (Vega 20, MI50)
    and RDNA 1/2 have none. Apple and Intel Arc GPUs are taken to have them."""
    cc = compute_capability(gpu)
    if cc is not None:
        return cc >= 8.0
    if gpu.vendor == "amd":
        return gpu.architecture.startswith(("CDNA", "RDNA 3", "RDNA 4"))
    return True


def attention_tflops(gpu: GPU, kernel: str = "matrix") -> float:
    """Attention multiplies fp16/bf16 queries, keys and values (flash-attention kernels on tensor cores where
    there are any), whatever the format of the weights; the vector tile kernel runs on the FP32 lanes."""
    if gpu.vendor == "apple":
        return apple_tflops(gpu)
    if kernel == "vector":
        # The tile kernel computes in half2 where FP16 runs at twice FP32 (FAST_FP16_AVAILABLE in
        # ggml-cuda/common.cuh: every AMD part and NVIDIA except sm_61, whose FP16 runs at 1/64), else in FP32.
        return fp32_lane_tflops(gpu) * (FP16_PACKED_SPEEDUP if fast_fp16(gpu) else 1.0)
    return matrix_tflops(gpu)


def matrix_tflops(gpu: GPU) -> float:
    """Peak dense FP16 rate of the matrix units, as the vendor lists it; where it lists only FP32 (laptop parts,
    the A10G), FP32 times the ratio its die's listed siblings show (fitted.TENSOR_RATIOS: 4 on GA10x, AD10x and
    GB20x); else FP32."""
    listed = gpu.fp16_tflops or gpu.bf16_tflops
    if listed:
        return listed
    if not gpu.fp32_tflops:
        return 1.0
    return gpu.fp32_tflops * (die_tensor_ratio(gpu, "fp16") or 1.0)


def die_tensor_ratio(gpu: GPU, kind: str) -> float | None:
    """The rule its die's listed siblings show (fitted.TENSOR_RATIOS): "fp16" matrix over FP32, "int8" over FP16."""
    return fitted.TENSOR_RATIOS.get(f"{kind}:{die_group(gpu)}")


def int8_matrix_tops(gpu: GPU) -> float | None:
    """Peak dense int8 rate of the matrix units: as listed; on a GPU that has such units (not one whose MMQ runs on
    dot products) but lists no rate, its FP16 matrix rate times the int8/FP16 ratio of its die's listed siblings (2
    on every NVIDIA die from Turing to Blackwell); None where no sibling of its die lists one."""
    if gpu.int8_tops:
        return gpu.int8_tops
    if gpu.vendor == "apple" or mmq_on_dot_products(gpu):
        return None
    ratio = die_tensor_ratio(gpu, "int8")
    return matrix_tflops(gpu) * ratio if ratio else None


FP16_PACKED_SPEEDUP = 2.0  # two FP16 lanes per 32-bit lane (half2 / packed math)


def fast_fp16(gpu: GPU) -> bool:
    """Packed FP16 at twice the FP32 rate: all AMD GPUs, NVIDIA's P100 (sm_60) and every NVIDIA part from
    Volta; not the other Pascal chips (sm_61), whose FP16 runs at 1/64 of FP32."""
    if gpu.vendor == "amd":
        return True
    if gpu.vendor != "nvidia":
        return False
    cc = compute_capability(gpu) or 8.6
    return cc == 6.0 or cc >= 7.0


def peak_is_estimated(gpu: GPU) -> bool:
    """An Apple chip whose FLOPS Apple does not quote: `apple_tflops` estimates them (a lower bound, not a ceiling)."""
    return gpu.vendor == "apple" and not (gpu.fp16_tflops or gpu.fp32_tflops)


def apple_tflops(gpu: GPU) -> float:
    """Apple publishes no FLOPS for most chips; its GPU cores scale with its memory channels, so the
    throughput is taken as bandwidth × a FLOP-per-byte ratio from the chips Apple did quote."""
    if not peak_is_estimated(gpu):
        return gpu.fp16_tflops or gpu.fp32_tflops or 0.0
    cores = apple_gpu_cores(gpu)
    if cores is None:
        return gpu.bandwidth_gbs * k.APPLE_FLOPS_PER_BYTE / 1000
    clock = k.APPLE_GPU_CLOCK_GHZ.get(gpu.architecture.split()[1], k.APPLE_GPU_CLOCK_GHZ["later"])
    return cores * k.APPLE_ALUS_PER_CORE * 2 * clock / 1000


def has_neural_accelerators(gpu: GPU) -> bool:
    """Apple's M5 generation and later name them in the GPU's architecture ("10-core, Neural Accelerators")."""
    return gpu.vendor == "apple" and "neural accelerator" in gpu.architecture.lower()


def apple_gpu_cores(gpu: GPU) -> int | None:
    """The GPU core count in the catalog's architecture ("Apple M3 Max GPU (40-core)"); of two configurations
    sold under one memory size ("24- or 32-core") the larger, the one most published runs use."""
    counts = [int(n) for n in re.findall(r"(\d+)-(?:core|\s)", gpu.architecture.split("(", 1)[-1])]
    return max(counts) if counts else None


def compute_class(engine: str, fmt: QuantFormat, gpu: GPU, gemm: str | None = None) -> str:
    """The precision prefill's matmuls run in: a quantized GGUF that llama.cpp sends to BLAS is an F16 GEMM."""
    if gpu.vendor == "apple":
        return "fp16"
    if family(engine) == "llama.cpp":
        if gemm is None:
            gemm = prefill_gemm(fmt, gpu)
        return {"blas": "fp16", "onednn-f16": "fp16", "onednn-f32": "fp32"}.get(gemm, "int8")
    return fmt.compute


@dataclass(frozen=True)
class DecodeCoefficients:
    inv_weight_efficiency: float
    expert_extra: float
    inv_kv_efficiency: float
    dequant_ops_per_weight: float
    layer_overhead_s: float
    moe_layer_overhead_s: float
    recurrent_layer_overhead_s: float
    token_overhead_s: float
    sampling_s_per_100k_vocab: float


@dataclass(frozen=True)
class PrefillCoefficients:
    inv_matmul_utilisation: float
    inv_attention_utilisation: float
    inv_vector_attention_utilisation: float
    inv_pass_efficiency: float
    moe_matmul_extra: float
    request_overhead_s: float
    tile_dequant_ops_per_weight: float
    recurrent_step_s: float
    prefill_layer_overhead_s: float
    inv_kv_reread_efficiency: float
    inv_vector_kv_reread_efficiency: float
    expert_matmul_launch_s: float
    inv_score_matrix_efficiency: float
    inv_activation_efficiency: float


def board_watts_per_tflops(gpu: GPU) -> float | None:
    """Board watts per peak matrix TFLOPS; for a card that lists only FP32 (the A10G, laptop parts), per the tensor
    rate its die's siblings give it (matrix_tflops), so it is not taken for its architecture's median."""
    listed = watts_per_tflops(gpu)
    if listed is not None or not gpu.tdp_w or die_tensor_ratio(gpu, "fp16") is None:
        return listed
    return gpu.tdp_w / matrix_tflops(gpu)


def covariates(gpu: GPU) -> dict[str, float]:
    """The continuous GPU properties some coefficients scale with.

    `power_per_flop`: log of the board's watts per peak TFLOPS over its architecture's median (over the
    catalog). Within one architecture, a board with few watts for its datasheet FLOPS (T4, A30, RTX 6000 Ada,
    H100 PCIe) cannot hold its boost clock under a long matrix load, and one with many (GeForce flagships) can.
    `bytes_per_unit_clock`: log of the achieved bandwidth per SM per clock over REFERENCE_BYTES_PER_UNIT_CLOCK.
    """
    w = board_watts_per_tflops(gpu)
    ref = fitted.ARCH_WATTS_PER_TFLOPS.get(arch_group(gpu))
    per_unit = achieved_bandwidth_gbs(gpu) * 1e9 / unit_clocks_per_s(gpu)
    return {"power_per_flop": math.log(w / ref) if w and ref else 0.0,
            "bytes_per_unit_clock": math.log(per_unit / k.REFERENCE_BYTES_PER_UNIT_CLOCK)}


def floor_of(p: Param, gpu: GPU) -> float:
    if p.datasheet_floor:
        return achieved_bandwidth_gbs(gpu) / gpu.bandwidth_gbs
    if p.peak_floor:
        # Without a floor the GEMM's share and the MMQ tile unpacking (both grow with tokens × weights) traded
        # against each other, and the fit had llama.cpp's int8 GEMMs on RTX 3090/4090 run at twice the int8 peak
        # while the unpacking took the time. An estimated peak is no ceiling, so it carries no floor.
        return 0.0 if peak_is_estimated(gpu) else 1.0
    return p.floor


def coefficient(
    p: Param, groups: dict[str, str], offsets: dict[tuple[str, str, str], Offset], floor: float = 0.0,
    values: dict[str, float] | None = None,
) -> float:
    """floor + (prior − floor) × exp(Σ over the levels of the group offsets this situation has); a covariate
    level's fitted slope is multiplied by the situation's value of it."""
    log = 0.0
    for level in p.levels:
        key = (p.name, level, groups[level])
        log += PRIOR_LOG_OFFSET.get(key, 0.0)
        hit = offsets.get(key)
        if hit is not None:
            log += hit.value * ((values or {}).get(level, 0.0) if level in COVARIATE_LEVELS else 1.0)
    return floor + (p.prior - floor) * math.exp(log)


# Ranking asks for coefficients for every model × format: memoised per (engine, GPU entry, format entry), so the
# format's kernel and precision (a per-GPU kernel choice since MMQ/BLAS depends on the chip) are only worked out
# on a miss. Keyed on the entries' identity (hashing a pydantic entry walks every field); the entries are kept
# beside the value so a recycled id can never be confused with another GPU or format.
_MEMO: dict[tuple[str, int, int], tuple[GPU, QuantFormat, DecodeCoefficients, PrefillCoefficients]] = {}


def _coefficients(engine: Engine, fmt: QuantFormat, gpu: GPU) -> tuple[DecodeCoefficients, PrefillCoefficients]:
    key = (engine, id(gpu), id(fmt))
    hit = _MEMO.get(key)
    if hit is not None and hit[0] is gpu and hit[1] is fmt:
        return hit[2], hit[3]
    groups = situation_groups(engine, gpu, decode_kernel(engine, fmt, gpu), compute_class(engine, fmt, gpu))
    cov = covariates(gpu)

    def values(params: tuple[Param, ...], offsets: dict[tuple[str, str, str], Offset]) -> dict[str, float]:
        return {p.name: coefficient(p, groups, offsets, floor_of(p, gpu), cov) for p in params}

    decode = DecodeCoefficients(**values(DECODE_PARAMS, fitted.DECODE_OFFSETS))
    prefill = PrefillCoefficients(**values(PREFILL_PARAMS, fitted.PREFILL_OFFSETS))
    _MEMO[key] = (gpu, fmt, decode, prefill)
    return decode, prefill


def decode_coefficients(engine: Engine, fmt: QuantFormat, gpu: GPU) -> DecodeCoefficients:
    return _coefficients(engine, fmt, gpu)[0]


def prefill_coefficients(engine: Engine, fmt: QuantFormat, gpu: GPU) -> PrefillCoefficients:
    return _coefficients(engine, fmt, gpu)[1]


def decode_fit(engine: Engine, fmt: QuantFormat, gpu: GPU) -> DecodeFit:
    """One datasheet-relative bandwidth efficiency and one per-layer latency, for callers (CPU offload) that
    model a step as bytes / bandwidth + layers × latency."""
    c = decode_coefficients(engine, fmt, gpu)
    efficiency = achieved_bandwidth_gbs(gpu) / gpu.bandwidth_gbs / c.inv_weight_efficiency
    return DecodeFit(efficiency=efficiency, per_layer_s=c.layer_overhead_s)


def gpu_known(gpu: GPU, kind: str, engine: Engine = "llama.cpp") -> bool:
    """Whether this GPU owns fitted offsets of its own (it had enough calibration rows), which decides the band."""
    return gpu_group(engine, gpu) in fitted.KNOWN_GPUS.get(kind, ())


def model_class(moe: bool) -> str:
    return "moe" if moe else "dense"


def band_for(kind: str, engine: Engine, gpu: GPU, moe: bool, gpus: int = 1) -> tuple[float, float]:
    """The 80 % band of log(measured / estimated) for this situation, from cross-validated residuals; an engine
    with too few runs of its own borrows its family's band widened (its constants are the family's too), and an
    estimate for several GPUs widens it by what splitting a model added to the multi-GPU runs' misses."""
    low, high = _band_for(kind, engine, arch_group(gpu), gpu_known(gpu, kind, engine), moe)
    if gpus > 1:
        widen = fitted.MULTI_GPU_BAND_WIDEN.get(kind, 1.0)
        return low * widen, high * widen
    return low, high


@cache
def _band_for(kind: str, engine: str, gpu_family: str, known: bool, moe: bool) -> tuple[float, float]:
    known_key = "known" if known else "unseen"
    cls = model_class(moe)
    fam = family(engine)
    widen = 1.0 if engine in fitted.MEASURED_ENGINES.get(kind, ()) else UNFITTED_BAND_WIDEN
    for key in (
        (kind, fam, gpu_family, known_key, cls),
        (kind, fam, gpu_family, known_key, "*"),
        (kind, fam, "*", known_key, cls),
        (kind, fam, "*", known_key, "*"),
        (kind, fam, "*", "*", "*"),
    ):
        band = fitted.BANDS.get(key)
        if band is not None:
            return band.low * widen, band.high * widen
    band = fitted.BANDS.get((kind, "*", "*", known_key, cls)) or fitted.BANDS.get((kind, "*", "*", "*", "*"))
    if band is None:
        return (-0.5, 0.5)
    return band.low * UNFITTED_BAND_WIDEN, band.high * UNFITTED_BAND_WIDEN


def forget_fits() -> None:
    """After the fit script rewrites and reloads the constants."""
    _MEMO.clear()
    _band_for.cache_clear()
    achieved_bandwidth_ratio.cache_clear()


def backend(gpu: GPU) -> Backend:
    return backend_of(gpu)
