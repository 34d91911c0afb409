"""Option types shared by the commands: autocomplete served from memory, choices, localisation."""

from __future__ import annotations

import asyncio
from typing import TYPE_CHECKING

import discord
from discord import app_commands

from bot.params import parse_tokens

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
    for n, v in (("llama.cpp (Ollama, LM Studio)", "llama.cpp"), ("vLLM", "vllm"), ("MLX (Apple)", "mlx"))
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

    async def transform(self, interaction: discord.Interaction, value: str) -> int:
        return parse_tokens(value)


Tokens = app_commands.Transform[int, TokensTransformer]
GpuCount = app_commands.Range[int, 1, 8]
Batch = app_commands.Range[int, 1, 256]


async def prefetch_model(interaction: discord.Interaction, svc: Service, text: str) -> None:
    """Fetch an `hf:org/name` model (cached after the first time) before the answer is computed."""
    if not text.strip().lower().startswith("hf:") or text.strip() in svc.extra_models:
        return
    task = asyncio.ensure_future(svc.resolve_hf(text))
    done, _ = await asyncio.wait({task}, timeout=HF_DEFER_AFTER_S)
    if not done:
        await interaction.response.defer(thinking=True, ephemeral=True)
    await task
