"""Option types shared by the commands: autocomplete served from memory, choices, localisation."""

from __future__ import annotations

import asyncio
import math
from typing import TYPE_CHECKING

import discord
from discord import app_commands

from bot.params import BadValue, parse_tokens
from estimator.query import MAX_BATCH

if TYPE_CHECKING:
    from bot.client import RigBot
    from bot.service import Service

# A Hugging Face fetch that has not finished by then is answered with a private "thinking…" first, so
# Discord's 3-second deadline never passes and a failure stays private. The answer to such a slow first
# fetch is private too (Discord fixes that with the defer); asked again, it comes from the cache, public.
HF_DEFER_AFTER_S = 2.0

MAX_CHOICES = 25
# Per-user limit on commands that render charts: generous for a person, a brake on a script.
HEAVY_COMMAND_RATE = 20
HEAVY_COMMAND_PER_S = 60.0
ENGINE_CHOICES = [
    app_commands.Choice(name=n, value=v)
    for n, v in (("llama.cpp (LM Studio)", "llama.cpp"), ("Ollama", "ollama"), ("vLLM", "vllm"),
                 ("SGLang", "sglang"), ("ExLlamaV2 (EXL2, GPTQ)", "exllamav2"), ("MLX (Apple)", "mlx"))
]
KV_CHOICES = [app_commands.Choice(name=n, value=n) for n in ("f16", "q8_0", "q4_0", "fp8")]
SORT_CHOICES = [app_commands.Choice(name=n, value=n) for n in ("quality", "speed", "size")]


async def gpu_autocomplete(interaction: discord.Interaction, current: str) -> list[app_commands.Choice[str]]:
    bot: RigBot = interaction.client  # type: ignore[assignment]
    return [
        app_commands.Choice(name=s.label[:100], value=s.id)
        for s in bot.service.resolver.complete_gpu(current, MAX_CHOICES)
    ]


async def model_autocomplete(interaction: discord.Interaction, current: str) -> list[app_commands.Choice[str]]:
    bot: RigBot = interaction.client  # type: ignore[assignment]
    return [
        app_commands.Choice(name=s.label[:100], value=s.id)
        for s in bot.service.resolver.complete_model(current, MAX_CHOICES)
    ]


async def quant_autocomplete(interaction: discord.Interaction, current: str) -> list[app_commands.Choice[str]]:
    bot: RigBot = interaction.client  # type: ignore[assignment]
    names = ["int4", "int8", "fp16"] + [q.name for q in bot.service.catalog.quants]
    needle = current.lower().replace("_", "")
    return [app_commands.Choice(name=n, value=n) for n in names if needle in n.lower().replace("_", "")][:MAX_CHOICES]


class TokensTransformer(app_commands.Transformer):
    """`32k`, `128K`, `1M`, `32768` → tokens, with a message people understand when it is not."""

    def __init__(self, name: str = "ctx", *, allow_zero: bool = False) -> None:
        self.name, self.allow_zero = name, allow_zero

    async def transform(self, interaction: discord.Interaction, value: str) -> int:
        return parse_tokens(value, name=self.name, allow_zero=self.allow_zero)


# A context length option, and a prompt length (which may be 0: an empty context).
Tokens = app_commands.Transform[int, TokensTransformer("ctx")]
PromptTokens = app_commands.Transform[int, TokensTransformer("prompt", allow_zero=True)]


class NumberRange(app_commands.Transformer):
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

    async def transform(self, interaction: discord.Interaction, value: float) -> float:
        if isinstance(value, bool) or not isinstance(value, int | float) or not math.isfinite(value) \
                or (self.integer and not float(value).is_integer()):
            raise BadValue.of("bad.whole_number" if self.integer else "bad.number", name=self.name)
        if not self.low <= value <= self.high:
            raise BadValue.of("bad.range", name=self.name, low=f"{self.low:g}", high=f"{self.high:g}", got=f"{value:g}")
        return int(value) if self.integer else float(value)


def one_of(name: str, value: str, allowed: list[app_commands.Choice[str]] | tuple[str, ...]) -> str:
    """A choice option's value checked on receipt, for the same reason as NumberRange."""
    values = [c.value if isinstance(c, app_commands.Choice) else c for c in allowed]
    if value not in values:
        raise BadValue.of("bad.one_of", name=name, values=", ".join(values))
    return value


ECHO_MAX_CHARS = 40


def echo(text: str, limit: int = ECHO_MAX_CHARS) -> str:
    """User text shown back in a public embed: bounded, with markdown (masked links included) and mentions
    made inert, so an option cannot post a link or a wall of text under the bot's name."""
    clipped = " ".join(text.split())
    clipped = clipped[:limit] + ("…" if len(clipped) > limit else "")
    return discord.utils.escape_mentions(discord.utils.escape_markdown(clipped))


GpuCount = app_commands.Transform[int, NumberRange("gpus", 1, 8)]
Batch = app_commands.Transform[int, NumberRange("batch", 1, MAX_BATCH)]


async def prefetch_model(interaction: discord.Interaction, svc: Service, text: str) -> None:
    """Fetch an `hf:org/name` model (cached after the first time) before the answer is computed."""
    if not text.strip().lower().startswith("hf:") or text.strip() in svc.extra_models:
        return
    task = asyncio.ensure_future(svc.resolve_hf(text))
    done, _ = await asyncio.wait({task}, timeout=HF_DEFER_AFTER_S)
    if not done:
        interaction.extras["deferred_ephemeral"] = True
        await interaction.response.defer(thinking=True, ephemeral=True)
    await task
