"""What a GPU setup can run: the largest catalog model at 4-, 8- and 16-bit, and its size class."""

from __future__ import annotations

from typing import Literal

from pydantic import BaseModel, ConfigDict

from catalog.schema import GPU, Model, QuantFormat
from estimator.calibration.model import compute_capability
from estimator.engines import has_neural_accelerators
from estimator.memory import Verdict, memory
from estimator.query import DEFAULT_CTX, Engine, KVDtype, Query

# Size classes people talk in ("a 14B model"), from the sizes open models are released at.
SIZE_CLASSES_B = (
    0.5,
    1,
    1.5,
    2,
    3,
    4,
    7,
    8,
    9,
    12,
    14,
    20,
    24,
    27,
    32,
    34,
    40,
    70,
    72,
    110,
    120,
    180,
    235,
    405,
    480,
    671,
    1000,
)


def size_class_b(params_b: float) -> float:
    """The nearest released size at or below the parameter count (8.19B → 8B; 7.61B → 7B)."""
    below = [c for c in SIZE_CLASSES_B if c <= params_b * 1.05]
    return below[-1] if below else SIZE_CLASSES_B[0]


class LargestModel(BaseModel):
    model_config = ConfigDict(frozen=True)

    level: str
    quant: QuantFormat
    model: Model | None
    size_class_b: float | None


def largest_that_fits(
    models: tuple[Model, ...],
    fmt: QuantFormat,
    level: str,
    gpu: GPU,
    *,
    gpus: int = 1,
    ctx: int = DEFAULT_CTX,
    engine: Engine = "llama.cpp",
    kv: KVDtype = "f16",
    with_headroom: bool = False,
) -> LargestModel:
    """The largest catalog model that runs in `fmt` at `ctx`. `with_headroom`: only one /fit would call
    "fits" (not "tight"), for picks the card calls comfortable; the verdict is `memory`'s, never a second
    threshold, so the card and /fit cannot disagree."""
    accepted: tuple[Verdict, ...] = ("fits",) if with_headroom else ("fits", "tight")
    best: Model | None = None
    for model in sorted(models, key=lambda m: -m.params_b):
        if model.past_every_window(ctx):
            continue
        q = Query(gpu=gpu, gpus=gpus, model=model, quant=fmt, engine=engine, ctx=ctx, kv=kv)
        if memory(q).verdict in accepted:
            best = model
            break
    return LargestModel(level=level, quant=fmt, model=best, size_class_b=size_class_b(best.params_b) if best else None)


# NVIDIA generations before Ampere have no bfloat16 (tensor cores or ALUs): trainers fall back to fp16
# with loss scaling there (Hugging Face Trainer refuses `bf16=True` on them).
_NO_BF16_ARCHITECTURES = ("kepler", "maxwell", "pascal", "volta", "turing")


def supports_bf16(gpu: GPU) -> bool:
    """Whether the GPU computes in bfloat16: by generation for NVIDIA, by a published bf16 rate elsewhere
    (Apple silicon runs bf16 in MLX and PyTorch's MPS backend)."""
    arch = gpu.architecture.lower()
    if gpu.vendor == "nvidia":
        return not any(arch.startswith(a) for a in _NO_BF16_ARCHITECTURES)
    if gpu.vendor == "apple":
        return True
    return gpu.bf16_tflops is not None


# FlashAttention-2 (Dao-AILab/flash-attention README): NVIDIA Ampere, Ada and Hopper or newer ("Turing GPUs:
# use FlashAttention 1.x for now"); on ROCm its composable-kernel backend runs on MI200/MI300/MI350 and its
# Triton backend on RDNA 3/4 as well. Elsewhere trainers take PyTorch's SDPA (memory-efficient kernel).
FLASH_ATTENTION_2_MIN_CC = 8.0
FLASH_ATTENTION_2_ROCM = ("gfx90a", "gfx942", "gfx950", "gfx1100", "gfx1101", "gfx1200", "gfx1201")


def supports_flash_attention_2(gpu: GPU) -> bool:
    if gpu.vendor == "nvidia":
        cc = compute_capability(gpu)
        return cc is None or cc >= FLASH_ATTENTION_2_MIN_CC
    if gpu.vendor == "amd":
        return any(target in gpu.architecture for target in FLASH_ATTENTION_2_ROCM)
    return False


def training_precision(gpu: GPU) -> Literal["bf16", "fp16"]:
    """The 16-bit format a trainer uses on this GPU by default."""
    return "bf16" if supports_bf16(gpu) else "fp16"


# The first NVIDIA generation with tensor cores (Volta, compute capability 7.0); AMD's matrix cores arrive with
# CDNA (MFMA) and RDNA 3 (WMMA).
TENSOR_CORES_MIN_CC = 7.0
AMD_MATRIX_ARCHITECTURES = ("CDNA", "RDNA 3", "RDNA 4")


def has_matrix_units(gpu: GPU) -> bool:
    """Whether the GPU has FP16 matrix units (tensor cores, MFMA/WMMA, Intel's XMX, Apple's neural accelerators),
    which its FP16 figure then rates. Pascal, GCN and RDNA 1/2 have none: the catalog lists their packed vector
    FP16 rate there (see the entries' notes)."""
    if gpu.vendor == "nvidia":
        cc = compute_capability(gpu)
        return cc is None or cc >= TENSOR_CORES_MIN_CC
    if gpu.vendor == "amd":
        return gpu.architecture.startswith(AMD_MATRIX_ARCHITECTURES)
    if gpu.vendor == "apple":
        return has_neural_accelerators(gpu)
    return True  # every Intel Arc part in the catalog (Xe-HPG, Xe2) has XMX engines


# The size classes people compare cards by, each stood for by one well-known model of that size
# (the calculator pages' "14B model (Q4)"); /gpu charts the middle four.
REFERENCE_CLASSES: tuple[tuple[str, str], ...] = (
    ("1B", "llama-3.2-1b"),
    ("3B", "llama-3.2-3b"),
    ("8B", "llama-3.1-8b"),
    ("14B", "qwen3-14b"),
    ("32B", "qwen3-32b"),
    ("70B", "llama-3.3-70b"),
    ("235B", "qwen3-235b-a22b"),
    ("405B", "llama-3.1-405b"),
    ("671B", "deepseek-v3"),
)
CHART_CLASSES = ("8B", "14B", "32B", "70B")


def reference_models(models: tuple[Model, ...], classes: tuple[str, ...] | None = None) -> list[tuple[str, Model]]:
    """(class, model) for each reference class the catalog has, smallest first."""
    by_id = {m.id: m for m in models}
    return [(c, by_id[i]) for c, i in REFERENCE_CLASSES if i in by_id and (classes is None or c in classes)]


def largest_class_that_fits(
    models: tuple[Model, ...], fmt: QuantFormat, gpu: GPU, *, gpus: int = 1, ctx: int = DEFAULT_CTX,
    engine: Engine = "llama.cpp", kv: KVDtype = "f16",
) -> tuple[str, Model] | None:
    """The largest reference class whose model fits at `ctx` in `fmt`, or None."""
    best = None
    for label, model in reference_models(models):
        if model.past_every_window(ctx):
            continue
        q = Query(gpu=gpu, gpus=gpus, model=model, quant=fmt, engine=engine, ctx=ctx, kv=kv)
        if memory(q).verdict != "does_not_fit":
            best = (label, model)
    return best
