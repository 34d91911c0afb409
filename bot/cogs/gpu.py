"""/gpu: a GPU's spec card — capability at 4/8/16-bit, fine-tuning, recommendation, reference chart."""

from __future__ import annotations

from typing import TYPE_CHECKING

import discord
from discord import app_commands
from discord.ext import commands

from bot.cogs.common import HEAVY_COMMAND_PER_S, HEAVY_COMMAND_RATE, Tokens, gpu_autocomplete
from bot.cogs.settings import defaults_for, join_notes
from bot.params import parse_tokens
from bot.render.replies import choice_note
from estimator.query import DEFAULT_CTX

if TYPE_CHECKING:
    from bot.client import RigBot


class Gpu(commands.Cog):
    def __init__(self, bot: RigBot) -> None:
        self.bot = bot

    @app_commands.command(name="gpu", description="Spec card: VRAM, bandwidth, largest models, fine-tuning")
    @app_commands.describe(gpu="GPU, e.g. T4, RTX 4090, M2 Max 64GB", ctx="Context for the capability (default 8k)")
    @app_commands.autocomplete(gpu=gpu_autocomplete)
    @app_commands.checks.cooldown(HEAVY_COMMAND_RATE, HEAVY_COMMAND_PER_S)
    async def gpu(self, interaction: discord.Interaction, gpu: str | None = None, ctx: Tokens | None = None) -> None:
        svc = self.bot.service
        defaults = await defaults_for(self.bot, interaction)
        choice = svc.gpu_choice(defaults.require_gpu(gpu))
        found = choice.gpu
        tokens = parse_tokens(defaults.take("ctx", ctx) or DEFAULT_CTX)
        locale = str(interaction.locale.value)
        note = join_notes(choice_note(choice, locale), defaults.note(locale, {"gpu": found.name}))
        await self.bot.answer(
            interaction,
            "gpu",
            {"gpu": found.id, "ctx": tokens},
            "gpu", found.id, tokens,
            note=note,
        )


async def setup(bot: RigBot) -> None:
    await bot.add_cog(Gpu(bot))
