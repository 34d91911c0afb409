"""/help: how to read the numbers."""

from __future__ import annotations

from typing import TYPE_CHECKING

import discord
from discord import app_commands
from discord.ext import commands

from bot.render.replies import help_reply

if TYPE_CHECKING:
    from bot.client import RigBot


class Help(commands.Cog):
    def __init__(self, bot: RigBot) -> None:
        self.bot = bot

    @app_commands.command(name="help", description="How to read rigcheck's numbers: assumptions, engines, errors")
    async def help(self, interaction: discord.Interaction) -> None:
        reply = help_reply(str(interaction.locale.value))
        await interaction.response.send_message(
            embeds=[discord.Embed.from_dict(e) for e in reply.embeds], ephemeral=True
        )


async def setup(bot: RigBot) -> None:
    await bot.add_cog(Help(bot))
