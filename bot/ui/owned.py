"""A view only the person it was made for may use: anyone else pressing it is told so, privately."""

from __future__ import annotations

import discord

from bot.i18n import interaction_locale
from bot.render.text import t


class OwnedView(discord.ui.View):
    def __init__(self, owner_id: int, *, refusal: str, timeout: float) -> None:
        super().__init__(timeout=timeout)
        self.owner_id, self.refusal = owner_id, refusal

    async def interaction_check(self, interaction: discord.Interaction) -> bool:
        if interaction.user.id != self.owner_id:
            await interaction.response.send_message(t(interaction_locale(interaction), self.refusal), ephemeral=True)
            return False
        return True
