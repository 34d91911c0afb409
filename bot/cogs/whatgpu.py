"""/whatgpu: the reverse question — which GPU setups run this model, fewest cards and cheapest first."""

from __future__ import annotations

from typing import TYPE_CHECKING

import discord
from discord import app_commands
from discord.ext import commands

from bot.cogs.common import (
    ENGINE_CHOICES,
    HEAVY_COMMAND_PER_S,
    HEAVY_COMMAND_RATE,
    NumberRange,
    Tokens,
    model_autocomplete,
    prefetch_model,
    quant_autocomplete,
)
from bot.cogs.settings import defaults_for
from bot.params import parse_tokens
from bot.render.reply import Reply
from bot.ui.pages import pages_view
from estimator.query import DEFAULT_CTX, DEFAULT_ENGINE

if TYPE_CHECKING:
    from bot.client import RigBot


class WhatGpu(commands.Cog):
    def __init__(self, bot: RigBot) -> None:
        self.bot = bot

    @app_commands.command(name="whatgpu", description="Which GPU setups run a model at a context, and how fast")
    @app_commands.describe(
        model="Model, or hf:org/name for any Hugging Face model",
        ctx="Context length",
        quant="Format or level (default int4)",
        min_tps="At least this many tokens/s",
        budget="Most you would spend, USD (launch prices)",
        engine="Inference engine",
    )
    @app_commands.choices(engine=ENGINE_CHOICES)
    @app_commands.autocomplete(model=model_autocomplete, quant=quant_autocomplete)
    @app_commands.checks.cooldown(HEAVY_COMMAND_RATE, HEAVY_COMMAND_PER_S)
    async def whatgpu(
        self,
        interaction: discord.Interaction,
        model: str,
        ctx: Tokens | None = None,
        quant: str | None = None,
        min_tps: app_commands.Transform[float, NumberRange("min_tps", 0.1, 10000.0, integer=False)] | None = None,
        budget: app_commands.Transform[float, NumberRange("budget", 1.0, 10000000.0, integer=False)] | None = None,
        engine: str | None = None,
    ) -> None:
        svc = self.bot.service
        defaults = await defaults_for(self.bot, interaction)
        engine = defaults.take("engine", engine) or DEFAULT_ENGINE
        await prefetch_model(interaction, svc, model)
        found, _ = svc.model(model)
        tokens = parse_tokens(defaults.take("ctx", ctx) or DEFAULT_CTX)
        # Checked before any defer, so a bad option gets a private answer at once.
        if quant:
            svc.formats(svc.engine(engine), quant)
        key = {
            "model": found.id,
            "ctx": tokens,
            "quant": quant,
            "min_tps": min_tps,
            "budget": budget,
            "engine": svc.engine(engine),
        }
        locale = str(interaction.locale.value)
        args = (model, tokens, quant, min_tps, budget, engine)

        async def render(page: int) -> Reply:
            return await self.bot.render_pool.render("whatgpu", *args, page, locale=locale)

        def view_for(reply: Reply) -> discord.ui.View | None:
            return pages_view(reply, interaction.user.id, render, "whatgpu")

        await self.bot.answer(
            interaction, "whatgpu", key, "whatgpu", *args, 1, view_for=view_for, note=defaults.note(locale)
        )


async def setup(bot: RigBot) -> None:
    await bot.add_cog(WhatGpu(bot))
