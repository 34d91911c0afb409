"""/daily: subscribe a channel (or a channel webhook) to the daily summary (Manage Server)."""

from __future__ import annotations

import asyncio
import contextlib
import functools
import logging
from typing import TYPE_CHECKING

import discord
from discord import app_commands
from discord.ext import commands

from bot.daily.delivery import DailyJob, parse_webhook_url
from bot.i18n import interaction_locale
from bot.params import BadValue
from bot.render.table import setup_label
from bot.render.text import format_tokens, t
from bot.requests import DailyPreviewRequest, DailyRequest, DailyUnsubscribeRequest, Request

if TYPE_CHECKING:
    from bot.client import RigBot
    from bot.store.state import StateStore

log = logging.getLogger(__name__)


def _locale(interaction: discord.Interaction) -> str:
    # The summary is read by the whole server, so its language follows the server's, not the caller's.
    chosen = interaction.guild_locale or interaction.locale
    return str(chosen.value if chosen else "en-US")


@app_commands.guild_only()
@app_commands.default_permissions(manage_guild=True)
class DailyCog(
    commands.GroupCog,
    name="Daily",
    group_name="daily",
    group_description="A daily summary of the best models for your GPUs",
):
    def __init__(self, bot: RigBot) -> None:
        self.bot = bot
        self.job = DailyJob(bot)
        self._resume: asyncio.Task[None] | None = None
        super().__init__()

    async def cog_load(self) -> None:
        if self.bot.metrics is None:
            from bot.web.metrics import Metrics

            self.bot.metrics = Metrics()
        await self.job.open()
        if self.bot.state is None:
            return
        # Claims this process holds are never swept, so sweeping while the hook delivers is safe.
        self._resume = asyncio.create_task(self._sweep_forever())

    async def cog_unload(self) -> None:
        if self._resume is not None:
            self._resume.cancel()
            with contextlib.suppress(asyncio.CancelledError):
                await self._resume
        await self.job.close()

    async def _sweep_forever(self) -> None:
        """Finish deliveries a dead process left: at start (a restart's own), then every so often (others')."""
        await self.bot.wait_until_ready()
        while True:
            try:
                taken = await self.job.sweep()
                if taken:
                    log.info("resumed %d unfinished daily deliveries", taken)
            except Exception:
                log.exception("sweeping unfinished daily deliveries failed; trying again later")
            await asyncio.sleep(self.bot.settings.rigcheck_daily_sweep_s)

    def _state(self) -> StateStore:
        if self.bot.state is None:
            raise BadValue.of("daily.unavailable")
        return self.bot.state

    # default_permissions only hides the commands; server admins can grant them to anyone, so the
    # permission is checked again on every call.
    @app_commands.command(name="subscribe", description="Post the daily summary to a channel or channel webhook")
    @app_commands.describe(
        channel="Channel to post in (default: this one)",
        gpus="GPUs to cover, comma-separated (up to 4), e.g. 't4, a30'",
        ctx="Context length to rank at, e.g. 32k",
        webhook_url="A channel webhook URL to post through instead of the bot",
    )
    @app_commands.checks.has_permissions(manage_guild=True)
    async def subscribe(
        self,
        interaction: discord.Interaction,
        channel: discord.TextChannel | None = None,
        gpus: str | None = None,
        ctx: str | None = None,
        webhook_url: app_commands.Range[str, 1, 300] | None = None,
    ) -> None:
        assert interaction.guild_id is not None
        if channel is None and webhook_url is None and isinstance(interaction.channel, discord.TextChannel):
            channel = interaction.channel  # asked in a text channel: that is where it is meant to go
        if webhook_url is not None:
            parse_webhook_url(webhook_url, self.bot.settings.discord_api_base)
        state = self._state()
        # The summary is the server's: its GPUs and context default to the server's, never the caller's own.
        settings = await state.get_guild_settings(interaction.guild_id)
        req = DailyRequest.for_server(settings.model_dump(), channel_id=channel.id if channel else None,
                                      webhook_url=webhook_url, gpus=gpus, ctx=ctx)
        await self.respond(req, interaction)

    @functools.singledispatchmethod
    async def respond(self, request: Request, interaction: discord.Interaction) -> None:
        raise TypeError(f"/daily has no answer for {type(request).__name__}")

    @respond.register
    async def _subscribe(self, request: DailyRequest, interaction: discord.Interaction) -> None:
        assert interaction.guild_id is not None
        state = self._state()
        # Raises catalog.resolve.NotFound with suggestions, which the central handler words.
        gpu_ids = request.cache_key(self.bot.service)["gpus"]
        sub = await state.add_subscription(
            interaction.guild_id,
            request.channel_id,
            request.webhook_url,
            gpu_ids,
            request.ctx,
            request.locale or _locale(interaction),
        )
        locale = interaction_locale(interaction)
        where = f"<#{request.channel_id}>" if request.channel_id is not None else t(locale, "daily.the_webhook")
        svc = self.bot.service
        names = ", ".join(setup_label(choice.gpu, choice.count) for choice in map(svc.gpu_choice, sub.gpus))
        text = t(locale, "daily.subscribed", where=where, names=names, ctx=format_tokens(sub.ctx))
        await interaction.response.send_message(text, ephemeral=True)
        self.bot.metrics_outcome(interaction, "ok")

    @app_commands.command(name="unsubscribe", description="Stop the daily summary (in one channel, or everywhere)")
    @app_commands.describe(channel="Only this channel's subscription; leave empty for all of this server's")
    @app_commands.checks.has_permissions(manage_guild=True)
    async def unsubscribe(
        self, interaction: discord.Interaction, channel: app_commands.AppCommandChannel | None = None
    ) -> None:
        await self.respond(DailyUnsubscribeRequest.of(channel_id=channel.id if channel else None), interaction)

    @respond.register
    async def _unsubscribe(self, request: DailyUnsubscribeRequest, interaction: discord.Interaction) -> None:
        assert interaction.guild_id is not None
        removed = await self._state().remove_subscription(interaction.guild_id, request.channel_id)
        key = "daily.removed_none" if not removed else "daily.removed_one" if removed == 1 else "daily.removed"
        text = t(interaction_locale(interaction), key, count=removed)
        await interaction.response.send_message(text, ephemeral=True)
        self.bot.metrics_outcome(interaction, "ok")

    @app_commands.command(name="preview", description="See today's summary for this server (only you see it)")
    @app_commands.checks.has_permissions(manage_guild=True)
    async def preview(self, interaction: discord.Interaction) -> None:
        await self.respond(DailyPreviewRequest.of(), interaction)

    @respond.register
    async def _preview(self, request: DailyPreviewRequest, interaction: discord.Interaction) -> None:
        assert interaction.guild_id is not None
        self._state()  # refuses at once when there is no store to read subscriptions from
        # Rendering the charts can take longer than the 3 s an interaction allows.
        interaction.extras["deferred_ephemeral"] = True
        await interaction.response.defer(ephemeral=True, thinking=True)
        reply = await self.job.preview(interaction.guild_id, _locale(interaction))
        from bot.client import send_reply

        await send_reply(interaction, reply.model_copy(update={"ephemeral": True}))
        self.bot.metrics_outcome(interaction, "ok")


async def setup(bot: RigBot) -> None:
    await bot.add_cog(DailyCog(bot))
