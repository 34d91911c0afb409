"""Option types shared by the commands: autocomplete served from memory, choices, localisation."""

from __future__ import annotations

from typing import TYPE_CHECKING

import discord
from discord import app_commands

from bot.params import parse_tokens

if TYPE_CHECKING:
    from bot.client import RigBot

MAX_CHOICES = 25
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
