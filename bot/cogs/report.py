"""/report: what your GPU really does. Add a measurement (typed or pasted from llama-bench or Ollama),
confirm it, list and delete your own; server managers hide or opt out, bot owners moderate.

Parsing and rules live in `bot.reports`, storage in `bot.store.reports`; this is the Discord shell.
"""

from __future__ import annotations

import functools
from datetime import timedelta
from typing import TYPE_CHECKING, Any, get_args

import discord
from discord import app_commands
from discord.ext import commands

from bot.cogs.common import echo
from bot.i18n import interaction_locale
from bot.params import BadValue, NotAllowed
from bot.render.text import format_tokens, t, tps_text
from bot.reports.rules import BUILD_MAX_CHARS, NOTES_MAX_CHARS, OUTLIER_FACTOR, is_outlier, reporter_hash, summarize
from bot.requests import (
    REPORT_ID_MAX,
    ModerateAction,
    ReportAddRequest,
    ReportHideRequest,
    ReportMineRequest,
    ReportModerateRequest,
    ReportOptOutRequest,
    Request,
)
from bot.store.reports import ReportDraft
from bot.transformers import EngineOption, GpuCount, GpuOption, ModelOption, QuantOption
from bot.ui.report import MINE_MAX, ConfirmReport, MineView, report_embed
from estimator import ESTIMATOR_VERSION
from estimator.query import Query

if TYPE_CHECKING:
    from bot.client import RigBot
    from catalog.schema import QuantFormat

class ReportContext:
    """What a report needs from the bot: the store, the salt, the limits."""

    def __init__(self, bot: RigBot) -> None:
        self.bot = bot
        self._salt: str | None = None

    @property
    def state(self) -> Any:
        if self.bot.state is None:
            raise BadValue.of("report.unavailable")
        return self.bot.state

    async def reporter(self, user_id: int) -> str:
        if self._salt is None:
            configured = self.bot.settings.rigcheck_report_salt
            self._salt = await self.state.report_salt(configured.get_secret_value() if configured else None)
        return reporter_hash(self._salt, user_id)

    @property
    def window(self) -> timedelta:
        return timedelta(seconds=self.bot.settings.rigcheck_report_window_s)

    def limit_error(self, scope: str, limit: int) -> BadValue:
        hours = f"{self.window.total_seconds() / 3600:g}"
        return BadValue.of(f"report.limit_{scope}", limit=limit, hours=hours)


def describe_report(locale: str, r: ReportDraft, names: tuple[str, str, str]) -> str:
    gpu, model, quant = names
    count = f"{r.gpu_count}× " if r.gpu_count > 1 else ""
    line = t(locale, "report.what", gpu=f"{count}{gpu}", model=model, quant=quant, engine=r.engine)
    speeds = t(locale, "report.decode", tps=tps_text(r.decode_tps))
    if r.prefill_tps is not None:
        speeds += " · " + t(locale, "report.prefill", tps=tps_text(r.prefill_tps))
    return f"{line}\n{speeds}"


class ReportCog(commands.GroupCog, group_name="report",
                group_description="Community speed reports: what GPUs really do"):
    def __init__(self, bot: RigBot) -> None:
        self.bot = bot
        self.ctx = ReportContext(bot)
        super().__init__()

    def names(self, r: ReportDraft) -> tuple[str, str, str]:
        """Catalog names for stored ids; an id a newer catalog dropped still shows, as stored."""
        catalog = self.bot.service.catalog
        found = []
        for lookup, ident in ((catalog.gpu, r.gpu_id), (catalog.model, r.model_id), (catalog.quant, r.quant_id)):
            try:
                found.append(lookup(ident).name)
            except (KeyError, LookupError):
                found.append(ident)
        return found[0], found[1], found[2]

    @app_commands.command(name="add", description="Report the speed you measured; you confirm before it is stored")
    @app_commands.describe(
        gpu="GPU you ran on, e.g. T4, RTX 4090",
        model="Model, e.g. qwen3-8b",
        quant="Format you ran, e.g. Q4_K_M, Q8_0, AWQ",
        engine="Inference engine (Ollama and LM Studio run llama.cpp)",
        decode_tps="Generation speed, tokens/s (e.g. 35.2); or give paste",
        prefill_tps="Prompt processing speed, tokens/s",
        ctx="Context length you ran with, e.g. 8k",
        gpus="Number of GPUs (1-8)",
        build="Engine version or build, e.g. b4446",
        notes="Anything else worth knowing (200 characters)",
        paste="llama-bench table or `ollama run --verbose` timings",
    )
    async def add(
        self,
        interaction: discord.Interaction,
        gpu: GpuOption,
        model: ModelOption,
        quant: QuantOption,
        engine: EngineOption,
        decode_tps: str | None = None,
        prefill_tps: str | None = None,
        ctx: str | None = None,
        gpus: GpuCount = 1,
        build: app_commands.Range[str, 1, BUILD_MAX_CHARS] | None = None,
        notes: app_commands.Range[str, 1, NOTES_MAX_CHARS] | None = None,
        paste: app_commands.Range[str, 1, 4000] | None = None,
    ) -> None:
        state = self.ctx.state
        if await state.reports_opted_out(interaction.guild_id):
            raise BadValue.of("report.opted_out")
        await self.respond(ReportAddRequest.of(
            gpu=gpu.text, model=model.text, quant=quant, engine=engine, decode_tps=decode_tps,
            prefill_tps=prefill_tps, ctx=ctx or None, gpus=gpus, engine_build=build, notes=notes, paste=paste,
        ), interaction)

    @functools.singledispatchmethod
    async def respond(self, request: Request, interaction: discord.Interaction) -> None:
        raise TypeError(f"/report has no answer for {type(request).__name__}")

    @respond.register
    async def _add(self, request: ReportAddRequest, interaction: discord.Interaction) -> None:
        locale = interaction_locale(interaction)
        state = self.ctx.state
        measured = request.measured()
        build_text = request.engine_build or measured.build
        ctx_tokens = request.ctx
        svc = self.bot.service
        req = request.fit_request()
        q, formats = svc.base_query(req)
        option = svc.fit(req).options[0]
        reporter = await self.ctx.reporter(interaction.user.id)
        settings = self.bot.settings
        mine, server = await state.report_counts(reporter, interaction.guild_id, self.ctx.window)
        if mine >= settings.rigcheck_report_user_limit:
            raise self.ctx.limit_error("user", settings.rigcheck_report_user_limit)
        if interaction.guild_id is not None and server >= settings.rigcheck_report_guild_limit:
            raise self.ctx.limit_error("guild", settings.rigcheck_report_guild_limit)
        sp = option.speed
        draft = ReportDraft(
            gpu_id=q.gpu.id, gpu_count=q.gpus, model_id=q.model.id, quant_id=formats[0].id, engine=q.engine,
            build=build_text, ctx=ctx_tokens, decode_tps=measured.decode_tps, prefill_tps=measured.prefill_tps,
            prompt_tokens=measured.prompt_tokens, generated_tokens=measured.generated_tokens,
            source=measured.source, notes=request.notes, estimate_decode_tps=sp.decode_tps,
            estimate_decode_tps_low=sp.decode_tps_low, estimate_decode_tps_high=sp.decode_tps_high,
            estimate_prefill_tps=sp.prefill_tps, estimator_version=f"{ESTIMATOR_VERSION}",
        )
        held = is_outlier(draft.decode_tps, sp.decode_tps_low, sp.decode_tps_high)
        names = (q.gpu.name, q.model.name, formats[0].name)
        fields = [
            (t(locale, "report.measured"), describe_report(locale, draft, names)
             + "\n" + t(locale, "report.via", source=t(locale, f"report.source.{draft.source}"))
             + (f" · {t(locale, 'report.build', build=echo(build_text, BUILD_MAX_CHARS))}" if build_text else "")
             + (f" · {t(locale, 'report.ctx', ctx=format_tokens(ctx_tokens))}" if ctx_tokens else "")),
            (t(locale, "report.estimate"), t(locale, "report.estimate_line", tps=tps_text(sp.decode_tps),
                                             low=tps_text(sp.decode_tps_low, sp.decode_tps),
                                             high=tps_text(sp.decode_tps_high, sp.decode_tps))),
        ]
        if request.notes:
            fields.append((t(locale, "report.notes"), echo(request.notes, NOTES_MAX_CHARS)))
        if held:
            fields.append((t(locale, "report.held_title"), t(locale, "report.held_text", factor=f"{OUTLIER_FACTOR:g}")))
        summary = report_embed(t(locale, "report.confirm_title"), t(locale, "report.confirm_text"),
                         "tight" if held else "info", fields, t(locale, "report.privacy_short"))
        view = ConfirmReport(self.ctx, interaction.user.id, reporter, interaction.guild_id, draft, held, summary)
        view.confirm.label = t(locale, "report.button_submit")
        view.cancel.label = t(locale, "report.button_cancel")
        await interaction.response.send_message(embeds=[summary], view=view, ephemeral=True)

    async def mine_reply(self, user_id: int, reporter: str, locale: str,
                         note: str | None = None) -> tuple[discord.Embed, discord.ui.View | None]:
        reports = await self.ctx.state.reports_by(reporter, MINE_MAX)
        lines = [
            t(locale, "report.mine_line", id=r.id, day=r.created_at.date().isoformat(),
              what=describe_report(locale, r, self.names(r)).replace("\n", " · "),
              status=t(locale, f"report.status.{r.status}"))
            for r in reports
        ]
        body = "\n".join(lines) if lines else t(locale, "report.mine_none")
        if note:
            body = f"{note}\n\n{body}"
        embed = report_embed(t(locale, "report.mine_title"), body, footer=t(locale, "report.privacy_short"))
        return embed, (MineView(self, user_id, reporter, reports, locale) if reports else None)

    @app_commands.command(name="mine", description="Your reports; pick one to delete it (only you see this)")
    async def mine(self, interaction: discord.Interaction) -> None:
        await self.respond(ReportMineRequest.of(), interaction)

    @respond.register
    async def _mine(self, request: ReportMineRequest, interaction: discord.Interaction) -> None:
        locale = interaction_locale(interaction)
        reporter = await self.ctx.reporter(interaction.user.id)
        embed, view = await self.mine_reply(interaction.user.id, reporter, locale)
        if view is None:
            await interaction.response.send_message(embeds=[embed], ephemeral=True)
        else:
            await interaction.response.send_message(embeds=[embed], view=view, ephemeral=True)

    @app_commands.command(name="hide", description="Hide a report made in this server (Manage Server)")
    @app_commands.describe(id="Report number, as /report shows it")
    @app_commands.checks.has_permissions(manage_guild=True)
    async def hide(self, interaction: discord.Interaction, id: app_commands.Range[int, 1, REPORT_ID_MAX]) -> None:
        if interaction.guild_id is None:
            raise BadValue.of("report.server_only")
        await self.respond(ReportHideRequest.of(id=id), interaction)

    @respond.register
    async def _hide(self, request: ReportHideRequest, interaction: discord.Interaction) -> None:
        locale = interaction_locale(interaction)
        done = await self.ctx.state.set_report_status(request.id, "hidden", "hidden by a manager of its server",
                                                      guild_id=interaction.guild_id)
        key = "report.hidden" if done else "report.not_in_guild"
        await interaction.response.send_message(t(locale, key, id=request.id), ephemeral=True)

    @app_commands.command(name="optout", description="Turn community reports off or on here (Manage Server)")
    @app_commands.describe(off="True: no reports from here and none shown here; False: back on")
    @app_commands.checks.has_permissions(manage_guild=True)
    async def optout(self, interaction: discord.Interaction, off: bool) -> None:
        if interaction.guild_id is None:
            raise BadValue.of("report.server_only")
        await self.respond(ReportOptOutRequest.of(off=off), interaction)

    @respond.register
    async def _optout(self, request: ReportOptOutRequest, interaction: discord.Interaction) -> None:
        assert interaction.guild_id is not None, "checked by the command"
        await self.ctx.state.set_reports_opt_out(interaction.guild_id, request.off)
        locale = interaction_locale(interaction)
        key = "report.opted_out_now" if request.off else "report.opted_in_now"
        await interaction.response.send_message(t(locale, key), ephemeral=True)

    @app_commands.command(name="moderate", description="Bot owners: list held reports, accept, hide or remove one")
    @app_commands.describe(action="held (list), accept, hide or remove", id="Report number")
    @app_commands.choices(action=[app_commands.Choice(name=a, value=a) for a in get_args(ModerateAction)])
    async def moderate(self, interaction: discord.Interaction, action: str,
                       id: app_commands.Range[int, 1, REPORT_ID_MAX] | None = None) -> None:
        if interaction.user.id not in self.bot.settings.owner_ids:
            raise NotAllowed.of("report.owner_only")
        await self.respond(ReportModerateRequest.of(action=action, id=id), interaction)

    @respond.register
    async def _moderate(self, request: ReportModerateRequest, interaction: discord.Interaction) -> None:
        locale = interaction_locale(interaction)
        state = self.ctx.state
        if request.action == "held":
            held = await state.reports_with_status("held", 20)
            lines = [
                t(locale, "report.held_line", id=r.id,
                  what=describe_report(locale, r, self.names(r)).replace("\n", " · "),
                  estimate=tps_text(r.estimate_decode_tps or 0))
                for r in held
            ]
            embed = report_embed(t(locale, "report.held_list"), "\n".join(lines) or t(locale, "report.held_none"))
            await interaction.response.send_message(embeds=[embed], ephemeral=True)
            return
        assert request.id is not None, "the request needs an id for every other action"
        if request.action == "remove":
            done = await state.delete_report(request.id)
        else:
            status = "accepted" if request.action == "accept" else "hidden"
            done = await state.set_report_status(request.id, status, f"{request.action} by a bot owner")
        key = f"report.moderated_{request.action}" if done else "report.not_found"
        await interaction.response.send_message(t(locale, key, id=request.id), ephemeral=True)


async def community_field(bot: RigBot, guild_id: int | None, q: Query, formats: list[QuantFormat],
                          locale: str) -> dict[str, Any] | None:
    """The /fit field of measured speeds for the same GPU setup, model, formats and engine, or None.

    Read on every answer, never from the reply cache, so a new report shows in the next /fit."""
    state = bot.state
    if state is None or await state.reports_opted_out(guild_id):
        return None
    values = await state.community_values(q.gpu.id, q.gpus, q.model.id, [f.id for f in formats], q.engine)
    lines = []
    for fmt in formats:
        found = summarize(values.get(fmt.id, []))
        if found is None:
            continue
        key = "report.community_one" if found.count == 1 else "report.community_many"
        lines.append(t(locale, key, quant=fmt.name, tps=tps_text(found.median_tps), count=found.count,
                       low=tps_text(found.low_tps, found.median_tps), high=tps_text(found.high_tps, found.median_tps)))
    if not lines:
        return None
    return {"name": t(locale, "report.community_title"), "value": "\n".join(lines)[:1024], "inline": False}


RANK_COMMUNITY_LINES = 8


async def rank_community_field(bot: RigBot, guild_id: int | None, gpu_id: str, gpu_count: int, engine: str,
                               formats: list[QuantFormat], locale: str) -> dict[str, Any] | None:
    """/rank's field: measured speeds on this GPU setup and engine, the most reported models first."""
    state = bot.state
    if state is None or await state.reports_opted_out(guild_id):
        return None
    by_format = {f.id: f.name for f in formats}
    values = await state.community_on_gpu(gpu_id, gpu_count, list(by_format), engine)
    catalog = bot.service.catalog
    found = []
    for (model_id, quant_id), speeds in values.items():
        summary = summarize(speeds)
        if summary is None:
            continue
        try:
            model = catalog.model(model_id).name
        except (KeyError, LookupError):
            model = model_id
        found.append((summary, f"{model} {by_format[quant_id]}"))
    found.sort(key=lambda item: (-item[0].count, item[1]))
    lines = []
    for summary, label in found[:RANK_COMMUNITY_LINES]:
        key = "report.community_one" if summary.count == 1 else "report.community_many"
        lines.append(t(locale, key, quant=label, tps=tps_text(summary.median_tps), count=summary.count,
                       low=tps_text(summary.low_tps, summary.median_tps),
                       high=tps_text(summary.high_tps, summary.median_tps)))
    if not lines:
        return None
    return {"name": t(locale, "report.community_title"), "value": "\n".join(lines)[:1024], "inline": False}


async def setup(bot: RigBot) -> None:
    await bot.add_cog(ReportCog(bot))
