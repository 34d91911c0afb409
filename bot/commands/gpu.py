"""/gpu: a GPU's spec card — capability at 4/8/16-bit, fine-tuning, recommendation, reference chart."""

from __future__ import annotations

from typing import TYPE_CHECKING

import discord
from discord import app_commands
from discord.ext import commands

from bot.commands.common import gpu_autocomplete
from bot.params import parse_tokens
from bot.render.views import gpu_reply

if TYPE_CHECKING:
    from bot.client import RigBot


class Gpu(commands.Cog):
    def __init__(self, bot: RigBot) -> None:
        self.bot = bot

    @app_commands.command(name="gpu", description="Spec card: VRAM, bandwidth, largest models, fine-tuning")
    @app_commands.describe(gpu="GPU, e.g. T4, RTX 4090, M2 Max 64GB", ctx="Context for the capability (default 8k)")
    @app_commands.autocomplete(gpu=gpu_autocomplete)
    async def gpu(self, interaction: discord.Interaction, gpu: str, ctx: str | None = None) -> None:
        svc = self.bot.service
        tokens = parse_tokens(ctx or 8192)
        found = svc.gpu(gpu)
        await self.bot.answer(
            interaction,
            "gpu",
            {"gpu": found.id, "ctx": tokens},
            lambda locale: gpu_reply(svc, found.id, locale, tokens),
        )


async def setup(bot: RigBot) -> None:
    await bot.add_cog(Gpu(bot))
