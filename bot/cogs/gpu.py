"""/gpu: a GPU's spec card — capability at 4/8/16-bit, fine-tuning, recommendation, reference chart."""

from __future__ import annotations

from typing import TYPE_CHECKING

import discord
from discord import app_commands
from discord.ext import commands

from bot.cogs.common import HEAVY_COMMAND_PER_S, HEAVY_COMMAND_RATE
from bot.cogs.settings import defaults_note, join_notes
from bot.render.replies import choice_note
from bot.requests import GpuRequest
from bot.transformers import GpuOption, Tokens, given

if TYPE_CHECKING:
    from bot.client import RigBot


class Gpu(commands.Cog):
    def __init__(self, bot: RigBot) -> None:
        self.bot = bot

    @app_commands.command(name="gpu", description="Spec card: VRAM, bandwidth, largest models, fine-tuning")
    @app_commands.describe(gpu="GPU, e.g. T4, RTX 4090, M2 Max 64GB", ctx="Context for the capability (default 8k)")
    @app_commands.checks.cooldown(HEAVY_COMMAND_RATE, HEAVY_COMMAND_PER_S)
    async def gpu(self, interaction: discord.Interaction, gpu: GpuOption | None = None,
                  ctx: Tokens | None = None) -> None:
        built = await self.bot.build(interaction, GpuRequest, gpu=given(gpu), ctx=ctx)
        choice = self.bot.service.gpu_choice(built.request.gpu, built.request.gpus)
        # The card is of the GPU picked (for a chip family, its smallest memory option), named by its id, for as
        # many cards as the text wrote (`8x h100 nvl`).
        req = built.request.model_copy(update={"gpu": choice.gpu.id, "gpus": choice.count})
        locale = str(interaction.locale.value)
        note = join_notes(choice_note(choice, locale), defaults_note(built, locale, {"gpu": choice.gpu.name}))
        await self.bot.answer(interaction, req, note=note)


async def setup(bot: RigBot) -> None:
    await bot.add_cog(Gpu(bot))
