"""/models and /gpus: browse the catalog."""

from __future__ import annotations

from typing import TYPE_CHECKING

import discord
from discord import app_commands
from discord.ext import commands

from bot.commands.common import NumberRange, echo, one_of
from bot.params import format_tokens
from bot.render.embeds import locale_key
from bot.render.views import list_reply

if TYPE_CHECKING:
    from bot.client import RigBot

ROWS = 40
VENDORS = [app_commands.Choice(name=v, value=v) for v in ("nvidia", "amd", "apple", "intel")]


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
        cat = self.bot.service.catalog
        picked = [
            m
            for m in cat.models
            if (not family or family.lower().replace(" ", "") in m.family.lower().replace(" ", ""))
            and (max_params is None or m.params_b <= max_params)
        ]
        picked.sort(key=lambda m: (m.family, m.params_b))
        lines = [
            f"{m.name[:30]:30s} {m.params_b:>7.2f}B"
            + (f" ({m.active_params_b:g}B act)" if m.moe else "")
            + f" {format_tokens(m.max_context):>5s}"
            for m in picked[:ROWS]
        ]
        zh = locale_key(str(interaction.locale.value)) == "zh-CN"
        more = len(picked) - len(lines)
        footer = (
            (f"另有 {more} 个" if zh else f"…and {more} more")
            if more > 0
            else ("来源见 /fit" if zh else "Sources: rigcheck catalog")
        )
        title = "模型目录" if zh else "Models"
        intro = (f"共 {len(picked)} 个" if zh else f"{len(picked)} models") + (f" · {echo(family)}" if family else "")
        reply = list_reply(title, intro, lines or ["—"], footer, str(interaction.locale.value))
        await interaction.response.send_message(embeds=[discord.Embed.from_dict(e) for e in reply.embeds])

    @app_commands.command(name="gpus", description="Browse the GPUs in the catalog")
    @app_commands.describe(vendor="Vendor")
    @app_commands.choices(vendor=VENDORS)
    async def gpus(self, interaction: discord.Interaction, vendor: str | None = None) -> None:
        if vendor:
            one_of("vendor", vendor, VENDORS)
        cat = self.bot.service.catalog
        picked = sorted((g for g in cat.gpus if not vendor or g.vendor == vendor), key=lambda g: (-g.vram_gb, g.name))
        lines = [f"{g.name[:32]:32s} {g.vram_gb:>5g} GB {g.bandwidth_gbs:>6.0f} GB/s" for g in picked[:ROWS]]
        zh = locale_key(str(interaction.locale.value)) == "zh-CN"
        more = len(picked) - len(lines)
        footer = (f"另有 {more} 个" if zh else f"…and {more} more") if more > 0 else "rigcheck"
        reply = list_reply(
            "显卡目录" if zh else "GPUs",
            f"{len(picked)}" + (f" · {vendor}" if vendor else ""),
            lines or ["—"],
            footer,
            str(interaction.locale.value),
        )
        await interaction.response.send_message(embeds=[discord.Embed.from_dict(e) for e in reply.embeds])


async def setup(bot: RigBot) -> None:
    await bot.add_cog(Browse(bot))
