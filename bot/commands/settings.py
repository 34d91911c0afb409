"""/settings: a server's (Manage Server) or your own default GPU, engine and context."""

from __future__ import annotations

from typing import TYPE_CHECKING, Any

import discord
from discord import app_commands
from discord.ext import commands

from bot.commands.common import ENGINE_CHOICES, gpu_autocomplete
from bot.params import format_tokens, parse_tokens
from bot.render.embeds import locale_key
from bot.render.views import error_reply

if TYPE_CHECKING:
    from bot.client import RigBot


async def defaults_for(bot: RigBot, interaction: discord.Interaction) -> dict[str, Any]:
    """User settings override the server's; both are optional."""
    out: dict[str, Any] = {}
    if bot.state is None:
        return out
    if interaction.guild_id:
        g = await bot.state.get_guild_settings(interaction.guild_id)
        out.update(
            {k: v for k, v in (("gpu", g.gpu_ids[0] if g.gpu_ids else None), ("engine", g.engine), ("ctx", g.ctx)) if v}
        )
    u = await bot.state.get_user_settings(interaction.user.id)
    out.update(
        {k: v for k, v in (("gpu", u.gpu_ids[0] if u.gpu_ids else None), ("engine", u.engine), ("ctx", u.ctx)) if v}
    )
    return out


class SettingsCog(commands.GroupCog, group_name="settings", group_description="Default GPU, engine and context"):
    def __init__(self, bot: RigBot) -> None:
        self.bot = bot
        super().__init__()

    async def _save(
        self, interaction: discord.Interaction, scope: str, gpu: str | None, engine: str | None, ctx: str | None
    ) -> None:
        svc = self.bot.service
        gpu_id = svc.gpu(gpu).id if gpu else None
        eng = svc.engine(engine) if engine else None
        tokens = parse_tokens(ctx) if ctx else None
        zh = locale_key(str(interaction.locale.value)) == "zh-CN"
        if self.bot.state is None:
            reply = error_reply("Unavailable", "Settings storage is not available.", str(interaction.locale.value))
            await interaction.response.send_message(embeds=[discord.Embed.from_dict(reply.embeds[0])], ephemeral=True)
            return
        from bot.store.records import GuildSettings, UserSettings

        gpu_ids: tuple[str, ...] = (gpu_id,) if gpu_id else ()
        if scope == "server":
            assert interaction.guild_id is not None
            await self.bot.state.set_guild_settings(
                interaction.guild_id, GuildSettings(gpu_ids=gpu_ids, engine=eng, ctx=tokens)
            )
        else:
            await self.bot.state.set_user_settings(
                interaction.user.id, UserSettings(gpu_ids=gpu_ids, engine=eng, ctx=tokens)
            )
        parts = [p for p in (gpu_id, eng, format_tokens(tokens) if tokens else None) if p]
        text = ("已保存：" if zh else "Saved: ") + (", ".join(parts) or ("已清除" if zh else "cleared"))
        await interaction.response.send_message(text, ephemeral=True)

    @app_commands.command(name="server", description="Defaults for everyone in this server (Manage Server)")
    @app_commands.describe(gpu="Default GPU", engine="Default engine", ctx="Default context, e.g. 32k")
    @app_commands.choices(engine=ENGINE_CHOICES)
    @app_commands.autocomplete(gpu=gpu_autocomplete)
    @app_commands.guild_only()
    @app_commands.default_permissions(manage_guild=True)
    @app_commands.checks.has_permissions(manage_guild=True)
    async def server(
        self,
        interaction: discord.Interaction,
        gpu: str | None = None,
        engine: str | None = None,
        ctx: str | None = None,
    ) -> None:
        await self._save(interaction, "server", gpu, engine, ctx)

    @app_commands.command(name="me", description="Your own defaults (override the server's)")
    @app_commands.describe(gpu="Default GPU", engine="Default engine", ctx="Default context, e.g. 32k")
    @app_commands.choices(engine=ENGINE_CHOICES)
    @app_commands.autocomplete(gpu=gpu_autocomplete)
    async def me(
        self,
        interaction: discord.Interaction,
        gpu: str | None = None,
        engine: str | None = None,
        ctx: str | None = None,
    ) -> None:
        await self._save(interaction, "user", gpu, engine, ctx)


async def setup(bot: RigBot) -> None:
    await bot.add_cog(SettingsCog(bot))
