"""◀ ▶ buttons for every long answer: only the person who asked can turn the pages."""

from __future__ import annotations

import asyncio
import io
from collections.abc import Awaitable, Callable

import discord

from bot.render.reply import Reply
from bot.ui.owned import OwnedView

PAGE_TIMEOUT_S = 600
# Discord drops a button press not answered within 3 s; a page slower than this (its chart queued behind
# others on a busy machine) is acknowledged first and edited in when drawn.
ANSWER_PRESS_WITHIN_S = 2.0


class Pages(OwnedView):
    """Buttons `<prefix>:prev` and `<prefix>:next`; `render(page)` draws the page asked for."""

    def __init__(
        self, owner_id: int, page: int, pages: int, render: Callable[[int], Awaitable[Reply]], prefix: str
    ) -> None:
        super().__init__(owner_id, refusal="pages.not_yours", timeout=PAGE_TIMEOUT_S)
        self.page, self.pages, self.render = page, pages, render
        self.previous.custom_id = f"{prefix}:prev"
        self.next.custom_id = f"{prefix}:next"
        self._sync_buttons()

    def _sync_buttons(self) -> None:
        self.previous.disabled = self.page <= 1
        self.next.disabled = self.page >= self.pages

    async def show(self, interaction: discord.Interaction) -> None:
        drawing = asyncio.ensure_future(self.render(self.page))
        done, _ = await asyncio.wait({drawing}, timeout=ANSWER_PRESS_WITHIN_S)
        if not done:
            await interaction.response.defer()
        reply = await drawing
        self._sync_buttons()
        files = [discord.File(io.BytesIO(f.data), filename=f.filename) for f in reply.files]
        embeds = [discord.Embed.from_dict(e) for e in reply.embeds]
        if interaction.response.is_done():
            await interaction.edit_original_response(embeds=embeds, attachments=files, view=self)
        else:
            await interaction.response.edit_message(embeds=embeds, attachments=files, view=self)

    @discord.ui.button(label="◀", style=discord.ButtonStyle.secondary, custom_id="pages:prev")
    async def previous(self, interaction: discord.Interaction, button: discord.ui.Button[Pages]) -> None:
        self.page = max(1, self.page - 1)
        await self.show(interaction)

    @discord.ui.button(label="▶", style=discord.ButtonStyle.secondary, custom_id="pages:next")
    async def next(self, interaction: discord.Interaction, button: discord.ui.Button[Pages]) -> None:
        self.page = min(self.pages, self.page + 1)
        await self.show(interaction)


def pages_view(
    reply: Reply, owner_id: int, render: Callable[[int], Awaitable[Reply]], prefix: str
) -> discord.ui.View | None:
    """Buttons when the reply has more than one page (its `meta["pages"]`), else none."""
    pages = int(reply.meta.get("pages", 1))
    return Pages(owner_id, 1, pages, render, prefix) if pages > 1 else None
