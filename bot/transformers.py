"""Options as typed values: what people type becomes a catalog entry, a token count or an engine on
receipt, or a private refusal in their language (with "did you mean" for names).

Each transformer also serves its option's autocomplete (from memory, at most 25 choices) or its fixed
choices, so a command states an option once: `gpu: GpuOption | None = None`. Discord's client enforces
choices and ranges, discord.py does not re-check them on receipt, so every value is checked here again.
"""

from __future__ import annotations

import asyncio
import math
from dataclasses import dataclass
from typing import TYPE_CHECKING, Any, ClassVar

import discord
from discord import app_commands

from bot.params import BadValue, level_alias, parse_engine, parse_kv, parse_tokens
from bot.render.table import setup_label
from catalog.resolve import GPUSetup, setup_text, typed_count
from catalog.schema import Model, QuantFormat
from estimator.engines import DEFAULT_FORMAT, DEFAULT_LEVELS
from estimator.query import ENGINES, MAX_BATCH, MAX_GPUS, Engine, KVDtype

if TYPE_CHECKING:
    from bot.client import RigBot
    from bot.service import Service

MAX_CHOICES = 25
# A Hugging Face fetch that has not finished by then is answered with a private "thinking…" first, so
# Discord's 3-second deadline never passes and a failure stays private. The answer to such a slow first
# fetch is private too (Discord fixes that with the defer); asked again, it comes from the cache, public.
HF_DEFER_AFTER_S = 2.0

ENGINE_CHOICES = [
    app_commands.Choice(name=n, value=v)
    for n, v in (("llama.cpp (LM Studio)", "llama.cpp"), ("Ollama", "ollama"), ("vLLM", "vllm"),
                 ("SGLang", "sglang"), ("TensorRT-LLM", "trt-llm"), ("ExLlamaV2 (EXL2, GPTQ)", "exllamav2"),
                 ("ExLlamaV3 (EXL3)", "exllamav3"), ("MLX (Apple)", "mlx"))
]
KV_CHOICES = [app_commands.Choice(name=n, value=n) for n in ("f16", "q8_0", "q4_0", "fp8")]


@dataclass(frozen=True)
class NamedGpu:
    """A GPU option: the text as typed (a request reads its card count, and for a chip family picks the
    memory option per question) and the GPU setup the catalog found for it."""

    text: str
    setup: GPUSetup


@dataclass(frozen=True)
class NamedModel:
    """A model option: the text as typed and the catalog's (or Hugging Face's) model; `quant` is the
    format an Ollama tag names (`qwen3:8b-q8_0`)."""

    text: str
    model: Model
    quant: QuantFormat | None


def _service(interaction: discord.Interaction[RigBot]) -> Service:
    return interaction.client.service


async def prefetch_model(interaction: discord.Interaction, svc: Service, text: str) -> None:
    """Fetch an `hf:org/name` model (cached after the first time) before the answer is computed."""
    if not svc.needs_hub(text):
        return
    task = asyncio.ensure_future(svc.resolve_hf(text))
    done, _ = await asyncio.wait({task}, timeout=HF_DEFER_AFTER_S)
    if not done:
        interaction.extras["deferred_ephemeral"] = True
        await interaction.response.defer(thinking=True, ephemeral=True)
    await task


class GpuTransformer(app_commands.Transformer["RigBot"]):
    """`T4`, `rtx 4090`, `2x 3090`, `m2 ultra` → the GPU setup; an unknown name → "did you mean"."""

    async def transform(self, interaction: discord.Interaction[RigBot], value: str, /) -> NamedGpu:
        # NotFound carries the suggestions the central error handler words.
        return NamedGpu(value, _service(interaction).resolver.gpu_setup(value))

    async def autocomplete(self, interaction: discord.Interaction[RigBot], value: int | float | str, /
                           ) -> list[app_commands.Choice[int | float | str]]:
        # A count typed with the name ('2x 309') stays in the value every GPU option reads ('2x nvidia-rtx-3090'):
        # picking a choice must not drop it.
        svc = _service(interaction)
        count = typed_count(str(value))
        found = svc.resolver.complete_gpu(str(value), MAX_CHOICES)
        return [app_commands.Choice(name=setup_label(svc.catalog.gpu(s.id), count)[:100], value=setup_text(s.id, count))
                for s in found]


class ModelTransformer(app_commands.Transformer["RigBot"]):
    """`qwen3-8b`, `Qwen/Qwen3-8B`, `llama3.1:8b-instruct-q4_K_M`, `hf:org/name` → the model."""

    async def transform(self, interaction: discord.Interaction[RigBot], value: str, /) -> NamedModel:
        svc = _service(interaction)
        await prefetch_model(interaction, svc, value)
        model, quant = svc.model(value)
        return NamedModel(value, model, quant)

    async def autocomplete(self, interaction: discord.Interaction[RigBot], value: int | float | str, /
                           ) -> list[app_commands.Choice[int | float | str]]:
        found = _service(interaction).resolver.complete_model(str(value), MAX_CHOICES)
        return [app_commands.Choice(name=s.label[:100], value=s.id) for s in found]


class QuantTransformer(app_commands.Transformer["RigBot"]):
    """A format (`q4_k_m`, `AWQ`) or a level (`int4`, `fp8`) some engine has, kept as typed. Whether the
    engine asked runs it is the request's question (the engine may come from a stored default)."""

    async def transform(self, interaction: discord.Interaction[RigBot], value: str, /) -> str:
        svc = _service(interaction)
        key = level_alias(value.strip().lower())
        if any(key in levels for levels in DEFAULT_FORMAT.values()) or svc.resolver.quant_or_none(key):
            return value
        raise svc.bad_quant(value, _engine_asked(interaction))

    async def autocomplete(self, interaction: discord.Interaction[RigBot], value: int | float | str, /
                           ) -> list[app_commands.Choice[int | float | str]]:
        names = [*DEFAULT_LEVELS, *(q.name for q in _service(interaction).catalog.quants)]
        needle = str(value).lower().replace("_", "")
        offered: list[app_commands.Choice[int | float | str]] = [
            app_commands.Choice(name=n, value=n) for n in names if needle in n.lower().replace("_", "")]
        return offered[:MAX_CHOICES]


def _engine_asked(interaction: discord.Interaction[RigBot]) -> Engine:
    """The engine the same command names, for wording a refusal; llama.cpp when it names none."""
    try:
        return parse_engine(str(getattr(interaction.namespace, "engine", None) or ENGINES[0]))
    except BadValue:
        return ENGINES[0]


class _Fixed(app_commands.Transformer["RigBot"]):
    """A small fixed set offered as choices, still checked (and aliases read) on receipt."""

    offered: ClassVar[list[app_commands.Choice[str]]] = []

    @property
    def choices(self) -> list[app_commands.Choice[int | float | str]]:
        return list(self.offered)  # type: ignore[arg-type]


class EngineTransformer(_Fixed):
    """`llama.cpp`, `LM Studio`, `vllm` … → the engine."""

    offered = ENGINE_CHOICES

    async def transform(self, interaction: discord.Interaction[RigBot], value: str, /) -> Engine:
        return parse_engine(value)


class KvTransformer(_Fixed):
    """`f16`, `fp16`, `q8`, `q4_0`, `fp8` → the KV cache precision."""

    offered = KV_CHOICES

    async def transform(self, interaction: discord.Interaction[RigBot], value: str, /) -> KVDtype:
        return parse_kv(value)


class TokensTransformer(app_commands.Transformer["RigBot"]):
    """`32k`, `128K`, `1M`, `32768` → tokens, with a message people understand when it is not."""

    def __init__(self, name: str = "ctx", *, allow_zero: bool = False) -> None:
        self.name, self.allow_zero = name, allow_zero

    async def transform(self, interaction: discord.Interaction[RigBot], value: str, /) -> int:
        return parse_tokens(value, name=self.name, allow_zero=self.allow_zero)


class NumberRange(app_commands.Transformer["RigBot"]):
    """`app_commands.Range` that also holds on receipt: Discord's client enforces min/max, but discord.py
    does not re-check what arrives, so a replayed or scripted `batch: 0` would otherwise pass silently."""

    def __init__(self, name: str, low: float, high: float, *, integer: bool = True) -> None:
        self.name, self.low, self.high, self.integer = name, low, high, integer

    @property
    def type(self) -> discord.AppCommandOptionType:
        return discord.AppCommandOptionType.integer if self.integer else discord.AppCommandOptionType.number

    @property
    def min_value(self) -> float:
        return self.low

    @property
    def max_value(self) -> float:
        return self.high

    async def transform(self, interaction: discord.Interaction[RigBot], value: Any, /) -> float:
        if isinstance(value, bool) or not isinstance(value, int | float) or not math.isfinite(value) \
                or (self.integer and not float(value).is_integer()):
            raise BadValue.of("bad.whole_number" if self.integer else "bad.number", name=self.name)
        if not self.low <= value <= self.high:
            raise BadValue.of("bad.range", name=self.name, low=f"{self.low:.10g}", high=f"{self.high:.10g}",
                              got=f"{value:.10g}")
        return int(value) if self.integer else float(value)


GpuOption = app_commands.Transform[NamedGpu, GpuTransformer]
ModelOption = app_commands.Transform[NamedModel, ModelTransformer]
QuantOption = app_commands.Transform[str, QuantTransformer]
EngineOption = app_commands.Transform[Engine, EngineTransformer]
KvOption = app_commands.Transform[KVDtype, KvTransformer]
# A context length option, and a prompt length (which may be 0: an empty context).
Tokens = app_commands.Transform[int, TokensTransformer("ctx")]
PromptTokens = app_commands.Transform[int, TokensTransformer("prompt", allow_zero=True)]
GpuCount = app_commands.Transform[int, NumberRange("gpus", 1, MAX_GPUS)]
Batch = app_commands.Transform[int, NumberRange("batch", 1, MAX_BATCH)]


def given(option: NamedGpu | NamedModel | None) -> str | None:
    """What a request takes from a catalog option: the text as typed (None when left out)."""
    return None if option is None else option.text
