"""/rank: the best models that fit a GPU setup, 10 a page, with buttons only the asker can press."""

from __future__ import annotations

from typing import TYPE_CHECKING

import discord
from discord import app_commands
from discord.ext import commands

from bot.cogs.common import HEAVY_COMMAND_PER_S, HEAVY_COMMAND_RATE, SORT_CHOICES
from bot.cogs.report import rank_community_field
from bot.cogs.settings import defaults_note, join_notes
from bot.render.replies import choice_note
from bot.render.reply import Reply
from bot.requests import RankRequest
from bot.transformers import EngineOption, GpuCount, GpuOption, KvOption, QuantOption, Tokens, given
from bot.ui.pages import pages_view

if TYPE_CHECKING:
    from bot.client import RigBot


class Rank(commands.Cog):
    def __init__(self, bot: RigBot) -> None:
        self.bot = bot

    @app_commands.command(name="rank", description="Best models that run on a GPU, with speed and memory")
    @app_commands.describe(
        gpu="GPU, e.g. A30, RTX 4090",
        ctx="Context length: 8k, 32k, 128K",
        sort="Order: quality, speed or size",
        kv="KV cache precision",
        gpus="Number of GPUs",
        engine="Inference engine",
        quant="Only this format or level (e.g. int4, Q8_0)",
    )
    @app_commands.choices(sort=SORT_CHOICES)
    @app_commands.checks.cooldown(HEAVY_COMMAND_RATE, HEAVY_COMMAND_PER_S)
    async def rank(
        self,
        interaction: discord.Interaction,
        gpu: GpuOption | None = None,
        ctx: Tokens | None = None,
        sort: str | None = None,
        kv: KvOption | None = None,
        gpus: GpuCount = 1,
        engine: EngineOption | None = None,
        quant: QuantOption | None = None,
    ) -> None:
        # Everything is checked here, before any defer, so a bad option gets a private answer at once.
        built = await self.bot.build(interaction, RankRequest, gpu=given(gpu), ctx=ctx, sort=sort, kv=kv, gpus=gpus,
                                     engine=engine, quant=quant)
        req, svc = built.request, self.bot.service
        choice = svc.gpu_choice(req.gpu, req.gpus)
        found = choice.gpu
        formats = svc.formats(req.engine, req.quant)
        locale = str(interaction.locale.value)

        async def render(page: int) -> Reply:
            return await self.bot.render_pool.render(req, page, locale=locale)

        def view_for(reply: Reply) -> discord.ui.View | None:
            return pages_view(reply, interaction.user.id, render, "rank")

        note = join_notes(choice_note(choice, locale), defaults_note(built, locale, {"gpu": found.name}))
        community = await rank_community_field(self.bot, interaction.guild_id, found.id, choice.count,
                                               req.engine, formats, locale)
        await self.bot.answer(interaction, req, view_for=view_for, note=note,
                              extra_fields=[community] if community else None)


async def setup(bot: RigBot) -> None:
    await bot.add_cog(Rank(bot))
