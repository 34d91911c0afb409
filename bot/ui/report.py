"""The buttons and menus of /report: Submit / Cancel on a preview, and the menu that deletes one's own."""

from __future__ import annotations

from typing import TYPE_CHECKING

import discord

from bot.i18n import interaction_locale
from bot.render.embeds import COLORS
from bot.render.text import t
from bot.store.reports import RateLimited
from bot.ui.owned import OwnedView

if TYPE_CHECKING:
    from bot.cogs.report import ReportCog, ReportContext
    from bot.store.reports import Report, ReportDraft

CONFIRM_TIMEOUT_S = 600
MINE_MAX = 25


def report_embed(title: str, description: str, color: str = "info", fields: list[tuple[str, str]] | None = None,
           footer: str | None = None) -> discord.Embed:
    embed = discord.Embed(title=title[:256], description=description[:4096], color=COLORS[color])
    for name, value in fields or []:
        embed.add_field(name=name[:256], value=value[:1024], inline=False)
    if footer:
        embed.set_footer(text=footer[:2048])
    return embed


class ConfirmReport(OwnedView):
    """Submit / Cancel on the private preview; only the reporter sees (and can press) them."""

    def __init__(self, ctx: ReportContext, owner_id: int, reporter: str, guild_id: int | None, draft: ReportDraft,
                 held: bool, summary: discord.Embed) -> None:
        super().__init__(owner_id, refusal="report.not_yours", timeout=CONFIRM_TIMEOUT_S)
        self.ctx, self.reporter, self.guild_id = ctx, reporter, guild_id
        self.draft, self.held, self.summary = draft, held, summary

    @discord.ui.button(label="Submit", style=discord.ButtonStyle.success, custom_id="report:confirm")
    async def confirm(self, interaction: discord.Interaction, button: discord.ui.Button[ConfirmReport]) -> None:
        locale = interaction_locale(interaction)
        self.stop()
        try:
            stored = await self.ctx.state.add_report(
                self.draft, reporter=self.reporter, guild_id=self.guild_id,
                status="held" if self.held else "accepted",
                reason="outside the estimate's range" if self.held else None,
                user_limit=self.ctx.bot.settings.rigcheck_report_user_limit,
                guild_limit=self.ctx.bot.settings.rigcheck_report_guild_limit, window=self.ctx.window,
            )
        except RateLimited as exc:
            text = self.ctx.limit_error(exc.scope, exc.limit).text(locale)
            embed = report_embed(t(locale, "report.not_stored"), text, "does_not_fit")
            await interaction.response.edit_message(embeds=[embed], view=None)
            return
        key = "report.stored_held" if stored.status == "held" else "report.stored"
        embed = self.summary.copy()
        embed.title = t(locale, key, id=stored.id)[:256]
        embed.colour = discord.Colour(COLORS["tight" if self.held else "fits"])
        await interaction.response.edit_message(embeds=[embed], view=None)

    @discord.ui.button(label="Cancel", style=discord.ButtonStyle.secondary, custom_id="report:cancel")
    async def cancel(self, interaction: discord.Interaction, button: discord.ui.Button[ConfirmReport]) -> None:
        self.stop()
        locale = interaction_locale(interaction)
        await interaction.response.edit_message(
            embeds=[report_embed(t(locale, "report.cancelled"), t(locale, "report.cancelled_text"))], view=None
        )


class MineView(OwnedView):
    """A menu of one's own reports; picking one deletes it."""

    def __init__(self, cog: ReportCog, owner_id: int, reporter: str, reports: list[Report], locale: str) -> None:
        super().__init__(owner_id, refusal="report.not_yours", timeout=CONFIRM_TIMEOUT_S)
        self.cog, self.reporter = cog, reporter
        # discord.py types a decorated select's attributes loosely; these are a Select's own fields.
        self.delete.placeholder = t(locale, "report.delete_placeholder")  # type: ignore[assignment]
        self.delete.options = [  # type: ignore[assignment]
            discord.SelectOption(label=f"#{r.id} {cog.names(r)[0]} · {cog.names(r)[1]}"[:100], value=str(r.id))
            for r in reports[:MINE_MAX]
        ]

    @discord.ui.select(custom_id="report:delete", min_values=1, max_values=1,
                       options=[discord.SelectOption(label="-", value="0")])
    async def delete(self, interaction: discord.Interaction, select: discord.ui.Select[MineView]) -> None:
        locale = interaction_locale(interaction)
        report_id = int(select.values[0])
        deleted = await self.cog.ctx.state.delete_report(report_id, self.reporter)
        note = t(locale, "report.deleted" if deleted else "report.not_found", id=report_id)
        embed, view = await self.cog.mine_reply(interaction.user.id, self.reporter, locale, note)
        await interaction.response.edit_message(embeds=[embed], view=view)
