"""/rank: the best models that fit a GPU setup, 10 a page, with buttons only the asker can press."""

from __future__ import annotations

import io
from typing import TYPE_CHECKING

import discord
from discord import app_commands
from discord.ext import commands

from bot.commands.common import (
    ENGINE_CHOICES,
    HEAVY_COMMAND_PER_S,
    HEAVY_COMMAND_RATE,
    KV_CHOICES,
    SORT_CHOICES,
    GpuCount,
    gpu_autocomplete,
    one_of,
)
from bot.commands.settings import defaults_for
from bot.params import parse_tokens
from bot.render.embeds import locale_key
from bot.render.reply import Reply
from bot.service import RankRequest

if TYPE_CHECKING:
    from bot.client import RigBot


class RankPages(discord.ui.View):
    def __init__(self, bot: RigBot, req: RankRequest, owner_id: int, locale: str, page: int, pages: int) -> None:
        super().__init__(timeout=600)
        self.bot, self.req, self.owner_id, self.locale = bot, req, owner_id, locale
        self.page, self.pages = page, pages
        self._sync_buttons()

    def _sync_buttons(self) -> None:
        self.previous.disabled = self.page <= 1
        self.next.disabled = self.page >= self.pages

    async def interaction_check(self, interaction: discord.Interaction) -> bool:
        if interaction.user.id != self.owner_id:
            zh = locale_key(str(interaction.locale.value)) == "zh-CN"
            await interaction.response.send_message(
                "只有发起查询的人可以翻页。" if zh else "Only the person who asked can turn the pages.", ephemeral=True
            )
            return False
        return True

    async def show(self, interaction: discord.Interaction) -> None:
        reply = await self.bot.render_pool.render("rank", self.req, self.page, locale=self.locale)
        self._sync_buttons()
        files = [discord.File(io.BytesIO(f.data), filename=f.filename) for f in reply.files]
        await interaction.response.edit_message(
            embeds=[discord.Embed.from_dict(e) for e in reply.embeds], attachments=files, view=self
        )

    @discord.ui.button(label="◀", style=discord.ButtonStyle.secondary, custom_id="rank:prev")
    async def previous(self, interaction: discord.Interaction, button: discord.ui.Button[RankPages]) -> None:
        self.page -= 1
        await self.show(interaction)

    @discord.ui.button(label="▶", style=discord.ButtonStyle.secondary, custom_id="rank:next")
    async def next(self, interaction: discord.Interaction, button: discord.ui.Button[RankPages]) -> None:
        self.page += 1
        await self.show(interaction)


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
    @app_commands.choices(sort=SORT_CHOICES, kv=KV_CHOICES, engine=ENGINE_CHOICES)
    @app_commands.autocomplete(gpu=gpu_autocomplete)
    @app_commands.checks.cooldown(HEAVY_COMMAND_RATE, HEAVY_COMMAND_PER_S)
    async def rank(
        self,
        interaction: discord.Interaction,
        gpu: str | None = None,
        ctx: str | None = None,
        sort: str = "quality",
        kv: str | None = None,
        gpus: GpuCount = 1,
        engine: str | None = None,
        quant: str | None = None,
    ) -> None:
        defaults = await defaults_for(self.bot, interaction)
        req = RankRequest(
            gpu=defaults.require_gpu(gpu),
            ctx=parse_tokens(defaults.take("ctx", ctx) or 8192),
            sort=sort,
            kv=defaults.take("kv", kv) or "f16",
            gpus=gpus,
            engine=defaults.take("engine", engine) or "llama.cpp",
            quant=quant,
        )
        svc = self.bot.service
        # Everything is checked here, before any defer, so a bad option gets a private answer at once.
        found = svc.gpu(req.gpu)
        one_of("sort", sort, SORT_CHOICES)
        svc.formats(svc.engine(req.engine), quant)
        locale = str(interaction.locale.value)
        key = {**req.__dict__, "gpu": found.id, "engine": svc.engine(req.engine), "kv": svc.kv(req.kv)}

        def pages_view(reply: Reply) -> discord.ui.View | None:
            pages = int(reply.meta.get("pages", 1))
            return RankPages(self.bot, req, interaction.user.id, locale, 1, pages) if pages > 1 else None

        note = defaults.note(locale, {"gpu": found.name})
        await self.bot.answer(interaction, "rank", key, "rank", req, 1, view_for=pages_view, note=note)


async def setup(bot: RigBot) -> None:
    await bot.add_cog(Rank(bot))
