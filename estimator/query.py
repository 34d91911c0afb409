"""The question every estimate answers, and the names of its knobs."""

from __future__ import annotations

from typing import Any, Literal

from pydantic import BaseModel, ConfigDict, Field, model_validator

from catalog.schema import GPU, Model, QuantFormat

# Ollama and LM Studio run llama.cpp with their own defaults; SGLang and TensorRT-LLM are servers like vLLM.
Engine = Literal["llama.cpp", "vllm", "mlx", "ollama", "lm studio", "sglang", "trt-llm", "exllamav2", "exllamav3"]
KVDtype = Literal["f16", "bf16", "q8_0", "q4_0", "fp8"]
Level = Literal["int2", "int3", "int4", "int5", "int6", "int8", "fp8", "fp4", "fp16"]
Backend = Literal["cuda", "rocm", "metal", "sycl"]

# The engines a question may name (Ollama: llama.cpp with Ollama's defaults; SGLang and TensorRT-LLM: servers
# like vLLM; ExLlamaV2: EXL2/GPTQ on CUDA and ROCm; ExLlamaV3: EXL3 on CUDA). Those with too few published runs
# of their own borrow their family's constants and answer with a wider range (`engines.UNFITTED_BAND_WIDEN`).
ENGINES: tuple[Engine, ...] = ("llama.cpp", "ollama", "vllm", "sglang", "trt-llm", "exllamav2", "exllamav3", "mlx")
KV_DTYPES: tuple[KVDtype, ...] = ("f16", "bf16", "q8_0", "q4_0", "fp8")
MAX_GPUS = 8
MAX_BATCH = 256

# What a question means when it leaves a knob out; the bot, the CLI and the estimator all start from these.
DEFAULT_CTX = 8192
DEFAULT_PROMPT_TOKENS = 2048
DEFAULT_ENGINE: Engine = "llama.cpp"
DEFAULT_KV: KVDtype = "f16"

# The compute backend llama.cpp and vLLM use on each vendor's GPUs.
BACKEND_OF_VENDOR: dict[str, Backend] = {"nvidia": "cuda", "amd": "rocm", "apple": "metal", "intel": "sycl"}


class Query(BaseModel):
    """One normalised question: this model, in this format, on these GPUs, with this workload."""

    model_config = ConfigDict(frozen=True)

    gpu: GPU
    gpus: int = Field(default=1, ge=1, le=MAX_GPUS)
    model: Model
    quant: QuantFormat
    engine: Engine = DEFAULT_ENGINE
    ctx: int = Field(default=DEFAULT_CTX, ge=1, description="context the KV cache is sized for, tokens")
    prompt_tokens: int = Field(
        default=DEFAULT_PROMPT_TOKENS, ge=0, description="prompt length for TTFT; decode runs after it"
    )
    kv: KVDtype = DEFAULT_KV
    batch: int = Field(default=1, ge=1, le=MAX_BATCH, description="concurrent sequences")

    @model_validator(mode="before")
    @classmethod
    def _default_prompt_fits(cls, data: Any) -> Any:
        if isinstance(data, dict) and "prompt_tokens" not in data and isinstance(data.get("ctx", DEFAULT_CTX), int):
            return {**data, "prompt_tokens": prompt_for(data.get("ctx", DEFAULT_CTX))}
        return data


def prompt_for(ctx: int, asked: int = DEFAULT_PROMPT_TOKENS) -> int:
    """The prompt a question is answered at. One asked for is kept, up to the context. The default is nobody's
    request: in a short window it takes at most half, leaving the rest for the reply (a 2k prompt in a 2k window
    would leave room for no answer at all)."""
    if asked == DEFAULT_PROMPT_TOKENS:
        return min(asked, ctx // 2)
    return min(asked, ctx)


def backend_of(gpu: GPU) -> Backend:
    """The compute backend llama.cpp and vLLM use on this vendor's GPUs."""
    return BACKEND_OF_VENDOR[gpu.vendor]
