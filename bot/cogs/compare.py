"""/compare: two GPUs for one model, or two models on one GPU, side by side."""

from __future__ import annotations

from typing import TYPE_CHECKING

import discord
from discord import app_commands
from discord.ext import commands

from bot.cogs.common import (
    ENGINE_CHOICES,
    HEAVY_COMMAND_PER_S,
    HEAVY_COMMAND_RATE,
    Tokens,
    gpu_autocomplete,
    model_autocomplete,
    quant_autocomplete,
)
from bot.cogs.settings import defaults_note
from bot.requests import CompareRequest

if TYPE_CHECKING:
    from bot.client import RigBot


class Compare(commands.Cog):
    def __init__(self, bot: RigBot) -> None:
        self.bot = bot

    @app_commands.command(name="compare", description="Two GPUs for one model, or two models on one GPU")
    @app_commands.describe(
        gpu="First GPU",
        model="First model",
        gpu2="Second GPU (compare GPUs)",
        model2="Second model (compare models)",
        ctx="Context length",
        engine="Inference engine",
        quant="One format for both sides (default: the best that fits both)",
    )
    @app_commands.choices(engine=ENGINE_CHOICES)
    @app_commands.autocomplete(
        gpu=gpu_autocomplete, gpu2=gpu_autocomplete, model=model_autocomplete, model2=model_autocomplete,
        quant=quant_autocomplete,
    )
    @app_commands.checks.cooldown(HEAVY_COMMAND_RATE, HEAVY_COMMAND_PER_S)
    async def compare(
        self,
        interaction: discord.Interaction,
        model: str,
        gpu: str | None = None,
        gpu2: str | None = None,
        model2: str | None = None,
        ctx: Tokens | None = None,
        engine: str | None = None,
        quant: str | None = None,
    ) -> None:
        built = await self.bot.build(interaction, CompareRequest, gpu=gpu, model=model, gpu2=gpu2, model2=model2,
                                     ctx=ctx, engine=engine, quant=quant)
        req = built.request
        note = defaults_note(built, str(interaction.locale.value), {"gpu": self.bot.service.gpu(req.gpu).name})
        await self.bot.answer(interaction, req, note=note)


async def setup(bot: RigBot) -> None:
    await bot.add_cog(Compare(bot))
