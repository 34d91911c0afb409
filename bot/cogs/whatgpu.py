"""/whatgpu: the reverse question — which GPU setups run this model, fewest cards and cheapest first."""

from __future__ import annotations

from typing import TYPE_CHECKING

import discord
from discord import app_commands
from discord.ext import commands

from bot.cogs.common import HEAVY_COMMAND_PER_S, HEAVY_COMMAND_RATE
from bot.cogs.settings import defaults_note
from bot.render.reply import Reply
from bot.requests import BUDGET_USD_RANGE, MIN_TPS_RANGE, WhatGpuRequest
from bot.transformers import EngineOption, KvOption, ModelOption, NumberRange, QuantOption, Tokens, given
from bot.ui.pages import pages_view

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
        kv="KV cache precision",
    )
    @app_commands.checks.cooldown(HEAVY_COMMAND_RATE, HEAVY_COMMAND_PER_S)
    async def whatgpu(
        self,
        interaction: discord.Interaction,
        model: ModelOption,
        ctx: Tokens | None = None,
        quant: QuantOption | None = None,
        min_tps: app_commands.Transform[float, NumberRange("min_tps", *MIN_TPS_RANGE, integer=False)] | None = None,
        budget: app_commands.Transform[float, NumberRange("budget", *BUDGET_USD_RANGE, integer=False)] | None = None,
        engine: EngineOption | None = None,
        kv: KvOption | None = None,
    ) -> None:
        built = await self.bot.build(interaction, WhatGpuRequest, model=given(model), ctx=ctx, quant=quant,
                                     min_tps=min_tps, budget=budget, engine=engine, kv=kv)
        req = built.request
        locale = str(interaction.locale.value)

        async def render(page: int) -> Reply:
            return await self.bot.render_pool.render(req, page, locale=locale)

        def view_for(reply: Reply) -> discord.ui.View | None:
            return pages_view(reply, interaction.user.id, render, "whatgpu")

        await self.bot.answer(interaction, req, view_for=view_for, note=defaults_note(built, locale))


async def setup(bot: RigBot) -> None:
    await bot.add_cog(WhatGpu(bot))
