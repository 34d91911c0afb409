"""/models and /gpus: browse the catalog."""

from __future__ import annotations

from collections.abc import Awaitable, Callable
from typing import TYPE_CHECKING, get_args

import discord
from discord import app_commands
from discord.ext import commands

from bot.cogs.common import echo
from bot.render.replies import gpus_reply, models_reply
from bot.render.reply import Reply
from bot.requests import GpusRequest, ModelsRequest, Vendor
from bot.transformers import NumberRange
from bot.ui.pages import pages_view

if TYPE_CHECKING:
    from bot.client import RigBot

VENDORS = [app_commands.Choice(name=v, value=v) for v in get_args(Vendor)]


class Browse(commands.Cog):
    def __init__(self, bot: RigBot) -> None:
        self.bot = bot

    @app_commands.command(name="models", description="Browse the models in the catalog")
    @app_commands.describe(family="Family, e.g. Qwen3, Llama, Gemma", max_params="At most this many billion parameters")
    async def models(
        self,
        interaction: discord.Interaction,
        family: str | None = None,
        max_params: app_commands.Transform[float, NumberRange("max_params", 0.1, 5000.0, integer=False)] | None = None,
    ) -> None:
        req = ModelsRequest.of(family=family, max_params=max_params)
        locale = str(interaction.locale.value)
        label = echo(req.family) if req.family else None

        async def render(page: int) -> Reply:
            return models_reply(self.bot.service, req, page, locale=locale, family_label=label)

        await self._send(interaction, await render(1), render, "models")

    @app_commands.command(name="gpus", description="Browse the GPUs in the catalog")
    @app_commands.describe(vendor="Vendor")
    @app_commands.choices(vendor=VENDORS)
    async def gpus(self, interaction: discord.Interaction, vendor: str | None = None) -> None:
        req = GpusRequest.of(vendor=vendor)
        locale = str(interaction.locale.value)

        async def render(page: int) -> Reply:
            return gpus_reply(self.bot.service, req, page, locale=locale)

        await self._send(interaction, await render(1), render, "gpus")

    async def _send(
        self, interaction: discord.Interaction, reply: Reply, render: Callable[[int], Awaitable[Reply]], prefix: str
    ) -> None:
        embeds = [discord.Embed.from_dict(e) for e in reply.embeds]
        view = pages_view(reply, interaction.user.id, render, prefix)
        # A filter nothing matches is answered privately (the reply says so): only the asker needs to see it.
        if view is None:
            await interaction.response.send_message(embeds=embeds, ephemeral=reply.ephemeral)
        else:
            await interaction.response.send_message(embeds=embeds, view=view, ephemeral=reply.ephemeral)


async def setup(bot: RigBot) -> None:
    await bot.add_cog(Browse(bot))
