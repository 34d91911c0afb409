"""What an engine does on a GPU: the kernel family a format runs, the precision prefill computes in, the
GPU's achieved bandwidth and ALU rate, and the fitted coefficients and error band of each situation."""

from __future__ import annotations

import math
import re
from dataclasses import dataclass
from functools import cache

from catalog.schema import GPU, QuantFormat
from estimator import constants as k
from estimator.calibration import constants as fitted
from estimator.calibration.model import (
    COVARIATE_LEVELS,
    DECODE_PARAMS,
    ENGINE_FAMILY,
    PREFILL_PARAMS,
    PRIOR_LOG_OFFSET,
    DecodeFit,
    Offset,
    Param,
    arch_group,
    memory_group,
    situation_groups,
    watts_per_tflops,
)
from estimator.query import Backend, Engine, backend_of

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
}
# Engines that load another engine's formats: Ollama and LM Studio run GGUF files through llama.cpp,
# SGLang and TensorRT-LLM serve the checkpoints vLLM does, ExLlamaV3 reads ExLlamaV2's.
FORMATS_OF: dict[Engine, Engine] = {"ollama": "llama.cpp", "lm studio": "llama.cpp", "sglang": "vllm",
                                    "trt-llm": "vllm", "exllamav3": "exllamav2"}
for _engine, _base in FORMATS_OF.items():
    DEFAULT_FORMAT[_engine] = DEFAULT_FORMAT[_base]


def format_engine(engine: Engine) -> Engine:
    """The engine whose formats this one loads."""
    return FORMATS_OF.get(engine, engine)


def runs_format(engine: Engine, fmt: QuantFormat) -> bool:
    return engine in fmt.engines or format_engine(engine) in fmt.engines


# The formats `fit` compares when none is asked for: the seed pages' INT4 / Q8 / FP16 columns.
DEFAULT_LEVELS = ("int4", "int8", "fp16")

# llama.cpp's physical micro-batch (n_ubatch default 512, common/common.h): each pass streams the weights.
LLAMACPP_UBATCH = k.LLAMACPP_UBATCH
# Where a GPU has no published memory benchmark and no GPU of its memory type has one either, its
# datasheet figure is used as is (the weight-efficiency coefficient then absorbs the difference).
UNMEASURED_BANDWIDTH_RATIO = 1.0
# An engine with no cross-validated residuals of its own gets the all-engine band widened by this factor.
UNFITTED_BAND_WIDEN = 1.5


def family(engine: str) -> str:
    return ENGINE_FAMILY.get(engine, engine)


def supports(engine: Engine, gpu: GPU) -> bool:
    if engine == "mlx":
        return gpu.vendor == "apple"
    if family(engine) == "server":
        return gpu.vendor == "nvidia" if engine == "trt-llm" else gpu.vendor in ("nvidia", "amd", "intel")
    if family(engine) == "exllama":
        return gpu.vendor in ("nvidia", "amd")
    return True


def tensor_parallel(engine: str) -> bool:
    """vLLM, SGLang and TensorRT-LLM shard every layer over the GPUs; llama.cpp and ExLlama split by layer."""
    return family(engine) == "server"


def micro_batch_tokens(engine: str) -> int | None:
    """Prompt tokens per pass over the weights; None: the whole prompt in one pass."""
    return LLAMACPP_UBATCH if family(engine) == "llama.cpp" else None


def memory_family(gpu: GPU) -> str:
    t = memory_group(gpu)
    for fam in ("hbm", "gddr", "lpddr", "ddr"):
        if t.startswith(fam):
            return fam
    return "other"


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


def alu_ops_per_s(gpu: GPU) -> float:
    """Scalar ALU lane-operations per second (an FMA is 2 FLOPs, one op), the rate dequantisation runs at."""
    fp32 = gpu.fp32_tflops or (apple_tflops(gpu) if gpu.vendor == "apple" else None)
    if fp32 is None:
        # No published FP32 figure: the vector FP16 rate is twice FP32 on every part that lists both.
        fp32 = (gpu.fp16_tflops or gpu.bf16_tflops or 1.0) / 2
    return fp32 * 1e12 / 2


def compute_tflops(engine: Engine, fmt: QuantFormat, gpu: GPU) -> float:
    """Peak dense throughput of the precision prefill's matrix multiplies are referred to.

    llama.cpp multiplies quantized weights with int8 MMQ kernels (referred to the int8 peak where the GPU lists
    one) and F16 with fp16 GEMMs; the kernel family's share of each is fitted ("compute" groups). Metal has no
    int8 matrix units and runs everything at its fp16 rate. vLLM's weight-only INT4 (Marlin) dequantizes to fp16;
    FP8 and INT8 W8A8 use those tensor cores where the GPU has them and fall back to fp16 otherwise.
    """
    if gpu.vendor == "apple":
        return apple_tflops(gpu) * (k.APPLE_NEURAL_ACCELERATOR_MATMUL_GAIN if has_neural_accelerators(gpu) else 1.0)
    fp16 = gpu.fp16_tflops or gpu.bf16_tflops or gpu.fp32_tflops or 1.0
    if family(engine) == "llama.cpp":
        # MMQ multiplies the quantized weights with int8 activations: int8 tensor cores (Turing on), dp4a
        # (Pascal sm_61: P40, GTX 10x0) or AMD's dot4/WMMA, at whatever int8 rate the vendor lists.
        return (gpu.int8_tops or fp16) if fmt.kernel != "f16" else fp16
    if fmt.compute == "fp8" and gpu.fp8 and gpu.fp8_tflops:
        return gpu.fp8_tflops
    if fmt.compute == "int8" and gpu.int8_tops:
        return gpu.int8_tops
    if fmt.compute == "fp4" and gpu.fp4_tflops:
        return gpu.fp4_tflops
    return gpu.bf16_tflops or fp16


def attention_tflops(gpu: GPU) -> float:
    """Attention multiplies fp16/bf16 queries, keys and values (flash-attention kernels on tensor cores where
    there are any), whatever the format of the weights."""
    if gpu.vendor == "apple":
        return apple_tflops(gpu)
    return gpu.fp16_tflops or gpu.bf16_tflops or gpu.fp32_tflops or 1.0


def apple_tflops(gpu: GPU) -> float:
    """Apple publishes no FLOPS for most chips; its GPU cores scale with its memory channels, so the
    throughput is taken as bandwidth × a FLOP-per-byte ratio from the chips Apple did quote."""
    if gpu.fp16_tflops or gpu.fp32_tflops:
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


def compute_class(engine: str, fmt: QuantFormat, gpu: GPU) -> str:
    if gpu.vendor == "apple":
        return "fp16"
    if family(engine) == "llama.cpp":
        return "fp16" if fmt.kernel == "f16" else "int8"
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


@dataclass(frozen=True)
class PrefillCoefficients:
    inv_matmul_utilisation: float
    inv_attention_utilisation: float
    inv_pass_efficiency: float
    moe_matmul_extra: float
    request_overhead_s: float
    tile_dequant_ops_per_weight: float
    recurrent_step_s: float
    prefill_layer_overhead_s: float
    inv_kv_reread_efficiency: float


def covariates(gpu: GPU) -> dict[str, float]:
    """The continuous GPU properties some coefficients scale with.

    `power_per_flop`: log of the board's watts per peak TFLOPS over its architecture's median (over the
    catalog). Within one architecture, a board with few watts for its datasheet FLOPS (T4, A30, RTX 6000 Ada,
    H100 PCIe) cannot hold its boost clock under a long matrix load, and one with many (GeForce flagships) can.
    """
    w = watts_per_tflops(gpu)
    ref = fitted.ARCH_WATTS_PER_TFLOPS.get(arch_group(gpu))
    return {"power_per_flop": math.log(w / ref) if w and ref else 0.0}


def floor_of(p: Param, gpu: GPU) -> float:
    return achieved_bandwidth_gbs(gpu) / gpu.bandwidth_gbs if p.datasheet_floor else p.floor


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


# Ranking asks for coefficients for every model × format: memoised per (engine, GPU entry, kernel, precision).
# Keyed on the entry's identity (hashing a pydantic entry walks every field); the entry is kept beside the
# value so a recycled id can never be confused with another GPU.
_MEMO: dict[tuple[str, int, str, str], tuple[GPU, DecodeCoefficients, PrefillCoefficients]] = {}


def _coefficients(engine: Engine, fmt: QuantFormat, gpu: GPU) -> tuple[DecodeCoefficients, PrefillCoefficients]:
    key = (engine, id(gpu), fmt.kernel, compute_class(engine, fmt, gpu))
    hit = _MEMO.get(key)
    if hit is not None and hit[0] is gpu:
        return hit[1], hit[2]
    groups = situation_groups(engine, gpu, key[2], key[3])
    cov = covariates(gpu)

    def values(params: tuple[Param, ...], offsets: dict[tuple[str, str, str], Offset]) -> dict[str, float]:
        return {p.name: coefficient(p, groups, offsets, floor_of(p, gpu), cov) for p in params}

    decode = DecodeCoefficients(**values(DECODE_PARAMS, fitted.DECODE_OFFSETS))
    prefill = PrefillCoefficients(**values(PREFILL_PARAMS, fitted.PREFILL_OFFSETS))
    _MEMO[key] = (gpu, decode, prefill)
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


def gpu_known(gpu: GPU, kind: str) -> bool:
    """Whether this GPU owns fitted offsets of its own (it had enough calibration rows), which decides the band."""
    return gpu.id in fitted.KNOWN_GPUS.get(kind, ())


def model_class(moe: bool) -> str:
    return "moe" if moe else "dense"


def band_for(kind: str, engine: Engine, gpu: GPU, moe: bool) -> tuple[float, float]:
    """The 80 % band of log(measured / estimated) for this situation, from cross-validated residuals."""
    return _band_for(kind, engine, arch_group(gpu), gpu_known(gpu, kind), moe)


@cache
def _band_for(kind: str, engine: str, gpu_family: str, known: bool, moe: bool) -> tuple[float, float]:
    known_key = "known" if known else "unseen"
    cls = model_class(moe)
    fam = family(engine)
    for key in (
        (kind, fam, gpu_family, known_key, cls),
        (kind, fam, gpu_family, known_key, "*"),
        (kind, fam, "*", known_key, cls),
        (kind, fam, "*", known_key, "*"),
        (kind, fam, "*", "*", "*"),
    ):
        band = fitted.BANDS.get(key)
        if band is not None:
            return band.low, band.high
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
