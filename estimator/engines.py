"""What an engine does on a GPU: the kernel family a format runs, the precision prefill computes in,
and the calibrated efficiency of each."""

from __future__ import annotations

from functools import cache
from typing import TypeVar

from catalog.schema import GPU, QuantFormat
from estimator import constants as k
from estimator.calibration import constants as fitted
from estimator.calibration.model import DecodeFit, PrefillFit
from estimator.query import Backend, Engine, backend_of

LLAMACPP_PREFILL_PEAK = "fp16"
T = TypeVar("T", DecodeFit, PrefillFit)

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
}
# The formats `fit` compares when none is asked for: the seed pages' INT4 / Q8 / FP16 columns.
DEFAULT_LEVELS = ("int4", "int8", "fp16")


def supports(engine: Engine, gpu: GPU) -> bool:
    if engine == "mlx":
        return gpu.vendor == "apple"
    if engine == "vllm":
        return gpu.vendor in ("nvidia", "amd", "intel")
    return True


def compute_tflops(engine: Engine, fmt: QuantFormat, gpu: GPU) -> float:
    """Peak dense throughput of the precision prefill's matrix multiplies actually run in.

    llama.cpp on CUDA/ROCm multiplies quantized weights with int8 dot products (MMQ kernels) and F16
    with fp16 GEMMs; Metal has no int8 matrix units and runs everything at its fp16 rate. vLLM's
    weight-only INT4 (Marlin) dequantizes to fp16; FP8 and INT8 W8A8 use those tensor cores where the
    GPU has them and fall back to fp16 otherwise.
    """
    if gpu.vendor == "apple":
        return apple_tflops(gpu)
    fp16 = gpu.fp16_tflops or gpu.bf16_tflops or gpu.fp32_tflops or 1.0
    if engine == "llama.cpp":
        if fmt.kernel in ("f16",):
            return fp16
        return fp16 if LLAMACPP_PREFILL_PEAK == "fp16" else (gpu.int8_tops or fp16)
    if fmt.compute == "fp8" and gpu.fp8 and gpu.fp8_tflops:
        return gpu.fp8_tflops
    if fmt.compute == "int8" and gpu.int8_tops:
        return gpu.int8_tops
    if fmt.compute == "fp4" and gpu.fp4_tflops:
        return gpu.fp4_tflops
    return gpu.bf16_tflops or fp16


def apple_tflops(gpu: GPU) -> float:
    """Apple publishes no FLOPS for most chips; its GPU cores scale with its memory channels, so the
    throughput is taken as bandwidth × a FLOP-per-byte ratio from the chips Apple did quote."""
    return gpu.fp16_tflops or gpu.fp32_tflops or gpu.bandwidth_gbs * k.APPLE_FLOPS_PER_BYTE / 1000


def compute_class(engine: Engine, fmt: QuantFormat, gpu: GPU) -> str:
    if gpu.vendor == "apple":
        return "fp16"
    if engine == "llama.cpp":
        return "fp16" if fmt.kernel == "f16" else "int8"
    return fmt.compute


def _lookup(table: dict[tuple[str, str, str], T], engine: str, backend: str, cls: str) -> T:
    for key in (
        (engine, backend, cls),
        (engine, backend, "*"),
        (engine, "*", cls),
        (engine, "*", "*"),
        ("llama.cpp", backend, "*"),
        ("llama.cpp", "*", "*"),
    ):
        if key in table:
            return table[key]
    raise LookupError(f"no calibration for {engine}/{backend}/{cls}")


def decode_fit(engine: Engine, fmt: QuantFormat, gpu: GPU) -> DecodeFit:
    return _decode_fit(engine, gpu.vendor, fmt.kernel)


@cache
def _decode_fit(engine: str, vendor: str, kernel: str) -> DecodeFit:
    # Keyed on strings alone: ranking asks this for every model × format, and the answer only depends on these.
    backend = {"nvidia": "cuda", "amd": "rocm", "apple": "metal", "intel": "sycl"}[vendor]
    return _lookup(fitted.DECODE, engine, backend, kernel)


def forget_fits() -> None:
    """After the fit script rewrites and reloads the constants."""
    _decode_fit.cache_clear()
    _prefill_fit.cache_clear()


def prefill_group(gpu: GPU) -> str:
    """Prefill kernels reach very different shares of the datasheet peak per GPU generation (llama.cpp's
    mma.sync kernels use none of Hopper's wgmma), so utilisation is fitted per backend and architecture."""
    return f"{backend_of(gpu)}/{gpu.architecture.split(' (')[0]}"


def prefill_fit(engine: Engine, fmt: QuantFormat, gpu: GPU) -> PrefillFit:
    return _prefill_fit(engine, backend_of(gpu), prefill_group(gpu), compute_class(engine, fmt, gpu))


@cache
def _prefill_fit(engine: str, backend: str, group: str, cls: str) -> PrefillFit:
    table = fitted.PREFILL
    for key in ((engine, group, cls), (engine, group, "*")):
        if key in table:
            return table[key]
    return _lookup(table, engine, backend, cls)


def backend(gpu: GPU) -> Backend:
    return backend_of(gpu)
