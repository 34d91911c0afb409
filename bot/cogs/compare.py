"""/compare: two GPUs for one model, or two models on one GPU, side by side."""

from __future__ import annotations

from typing import TYPE_CHECKING

import discord
from discord import app_commands
from discord.ext import commands

from bot.cogs.common import HEAVY_COMMAND_PER_S, HEAVY_COMMAND_RATE
from bot.cogs.settings import defaults_note
from bot.requests import CompareRequest
from bot.transformers import EngineOption, GpuOption, ModelOption, QuantOption, Tokens, given

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
    @app_commands.checks.cooldown(HEAVY_COMMAND_RATE, HEAVY_COMMAND_PER_S)
    async def compare(
        self,
        interaction: discord.Interaction,
        model: ModelOption,
        gpu: GpuOption | None = None,
        gpu2: GpuOption | None = None,
        model2: ModelOption | None = None,
        ctx: Tokens | None = None,
        engine: EngineOption | None = None,
        quant: QuantOption | None = None,
    ) -> None:
        built = await self.bot.build(interaction, CompareRequest, gpu=given(gpu), model=given(model),
                                     gpu2=given(gpu2), model2=given(model2),
                                     ctx=ctx, engine=engine, quant=quant)
        req = built.request
        note = defaults_note(built, str(interaction.locale.value), {"gpu": self.bot.service.gpu(req.gpu).name})
        await self.bot.answer(interaction, req, note=note)


async def setup(bot: RigBot) -> None:
    await bot.add_cog(Compare(bot))
