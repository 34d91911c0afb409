"""/settings: a server's (Manage Server) or your own default GPU, engine, context and KV cache.

Each option given updates only itself; a bare `/settings me|server` shows what is stored; `/settings reset`
clears. The stored values fill in every command's options that were left out, and the reply says so.
"""

from __future__ import annotations

from collections.abc import Mapping
from typing import TYPE_CHECKING, Any

import discord
from discord import app_commands
from discord.ext import commands

from bot.params import BadValue
from bot.render.replies import error_reply
from bot.render.text import Message, engine_name, format_tokens, t
from bot.requests import STORED_KEYS, Built, Scope, SettingsRequest, stored_values
from bot.service import check_engine, kv_refusal
from bot.store.records import GuildSettings, UserSettings
from bot.transformers import EngineOption, GpuOption, KvOption, Tokens, given
from catalog.schema import GPU
from estimator.engines import supports
from estimator.query import DEFAULT_ENGINE, Engine

if TYPE_CHECKING:
    from bot.client import RigBot


def defaults_note(built: Built[Any], locale: str, label: Mapping[str, str] | None = None) -> str | None:
    """'Defaults used: GPU NVIDIA T4 (yours), context 32k (server) (/settings)', or None when the asker's
    options left nothing to a stored default. `label` shows a value by its name (the GPU's, not its id)."""
    if not built.used:
        return None
    items = [
        t(locale, "defaults.item", name=t(locale, f"setting.{k}"),
          value=(label or {}).get(k) or built.shown.get(k) or _shown(k, built.used[k]),
          source=t(locale, f"defaults.source.{built.sources[k]}"))
        for k in STORED_KEYS if k in built.used
    ]
    return t(locale, "defaults.used", items=t(locale, "list_sep").join(items))


def _shown(key: str, value: Any) -> str:
    return format_tokens(int(value)) if key == "ctx" else str(value)


def _engine_refusal(engine: Engine, gpu: GPU) -> Message:
    """Why `engine` does not run on `gpu`, worded as a command refusing it words it."""
    try:
        check_engine(engine, gpu)
    except BadValue as err:
        if err.key is not None:
            return Message(err.key, err.values)
    return Message("bad.engine_gpu", {"engine": engine_name(engine), "gpu": gpu.name})


def join_notes(*notes: str | None) -> str | None:
    """Notes for the sent reply (defaults used, which memory option of a chip), one a line."""
    kept = [n for n in notes if n]
    return "\n".join(kept) if kept else None


def with_note(embeds: list[dict[str, Any]], note: str | None) -> list[dict[str, Any]]:
    """The first embed with the defaults note on top of its footer (outside the cached reply)."""
    if not note or not embeds:
        return embeds
    first = dict(embeds[0])
    footer = first.get("footer", {}).get("text", "")
    first["footer"] = {"text": (note + ("\n" + footer if footer else ""))[:2048]}
    return [first, *embeds[1:]]


def _setter(scope: Scope, description: str) -> app_commands.Command[Any, ..., None]:
    """`/settings server` and `/settings me`: the same options, stored for the server or for the asker."""

    async def store(
        self: SettingsCog,
        interaction: discord.Interaction,
        gpu: GpuOption | None = None,
        engine: EngineOption | None = None,
        ctx: Tokens | None = None,
        kv: KvOption | None = None,
    ) -> None:
        await self._save(interaction, scope, given(gpu), engine, ctx, kv)

    # discord.py tells a cog's method from a plain function by its qualified name.
    store.__name__, store.__qualname__ = scope, f"SettingsCog.{scope}"
    callback: Any = app_commands.describe(gpu="Default GPU", engine="Default engine", ctx="Default context, e.g. 32k",
                                          kv="Default KV cache precision")(store)
    if scope == "server":
        callback = app_commands.checks.has_permissions(manage_guild=True)(callback)
        callback = app_commands.default_permissions(manage_guild=True)(callback)
        callback = app_commands.guild_only()(callback)
    command: app_commands.Command[Any, ..., None] = app_commands.command(name=scope, description=description)(callback)
    return command


class SettingsCog(commands.GroupCog, group_name="settings", group_description="Default GPU, engine and context"):
    def __init__(self, bot: RigBot) -> None:
        self.bot = bot
        super().__init__()

    def _describe(self, locale: str, values: dict[str, Any]) -> str:
        shown = dict(values)
        if "gpu" in shown:
            try:
                shown["gpu"] = self.bot.service.catalog.gpu(shown["gpu"]).name
            except KeyError:
                pass  # an id from an older catalog still shows, as stored
        parts = [f"{t(locale, f'setting.{k}')} {_shown(k, shown[k])}" for k in STORED_KEYS if k in shown]
        return t(locale, "list_sep").join(parts) or t(locale, "settings.none")

    async def _unavailable(self, interaction: discord.Interaction, locale: str) -> None:
        reply = error_reply(t(locale, "settings.unavailable_title"), t(locale, "settings.unavailable"), locale)
        await interaction.response.send_message(embeds=[discord.Embed.from_dict(reply.embeds[0])], ephemeral=True)

    async def _load(self, scope: Scope, interaction: discord.Interaction) -> GuildSettings | UserSettings:
        state = self.bot.state
        assert state is not None, "checked by the caller"
        if scope == "server":
            assert interaction.guild_id is not None
            return await state.get_guild_settings(interaction.guild_id)
        return await state.get_user_settings(interaction.user.id)

    async def _save(
        self, interaction: discord.Interaction, scope: Scope, gpu: str | None, engine: str | None, ctx: int | None,
        kv: str | None,
    ) -> None:
        locale = str(interaction.locale.value)
        # Validate everything before anything is written, so a typo changes nothing.
        asked = SettingsRequest.of(gpu=gpu, engine=engine, ctx=ctx, kv=kv).given()
        update: dict[str, Any] = {k: v for k, v in asked.items() if k != "gpu"}
        if "gpu" in asked:
            choice = self.bot.service.gpu_choice(asked["gpu"])
            if choice.count > 1:
                # Every command reads one stored GPU id; a count kept nowhere would be dropped without a word.
                raise BadValue.of("settings.gpu_count", count=choice.count, gpu=choice.gpu.id, cmd=scope)
            update["gpu_ids"] = (choice.gpu.id,)
        if self.bot.state is None:
            await self._unavailable(interaction, locale)
            return
        record = await self._load(scope, interaction)
        scope_name = t(locale, f"settings.scope.{scope}")
        if not update:
            text = t(locale, "settings.current", scope=scope_name, values=self._describe(locale, stored_values(record)))
            text += "\n" + t(locale, "settings.hint", cmd=scope)
            await interaction.response.send_message(text, ephemeral=True)
            return
        record = record.model_copy(update=update)
        if {"gpu_ids", "engine", "kv"} & update.keys():
            await self._refuse_mismatch(interaction, scope, record)
        if isinstance(record, GuildSettings):
            assert interaction.guild_id is not None
            await self.bot.state.set_guild_settings(interaction.guild_id, record)
        else:
            await self.bot.state.set_user_settings(interaction.user.id, record)
        text = t(locale, "settings.saved", scope=scope_name, values=self._describe(locale, stored_values(record)))
        await interaction.response.send_message(text, ephemeral=True)

    async def _refuse_mismatch(self, interaction: discord.Interaction, scope: Scope,
                               record: GuildSettings | UserSettings) -> None:
        """Refuse, saving nothing, defaults whose engine does not run on their GPU or does not run their KV cache:
        every later command would fail on options the asker never typed. Yours are checked as commands will use
        them, over the server's."""
        values = stored_values(record)
        if scope == "me" and interaction.guild_id and self.bot.state is not None:
            values = {**stored_values(await self.bot.state.get_guild_settings(interaction.guild_id)), **values}
        gpu = next((g for g in self.bot.service.catalog.gpus if g.id == values.get("gpu")), None)
        engine = values.get("engine")
        # A KV cache is checked against the engine commands will use: the stored one, else the default.
        kv = values.get("kv")
        refusal = kv_refusal(engine or DEFAULT_ENGINE, kv) if kv is not None else None
        if refusal is not None and refusal.key is not None:
            raise BadValue.of("settings.mismatch_kv", reason=Message(refusal.key, refusal.values), cmd=scope)
        if gpu is None or engine is None or supports(engine, gpu):
            return
        raise BadValue.of("settings.mismatch", reason=_engine_refusal(engine, gpu), cmd=scope)

    server = _setter("server", "Defaults for everyone in this server (Manage Server)")
    me = _setter("me", "Your own defaults (override the server's)")

    @app_commands.command(name="reset", description="Clear your defaults, or this server's (Manage Server)")
    @app_commands.describe(scope="Whose defaults: yours (me) or this server's")
    async def reset(self, interaction: discord.Interaction, scope: Scope = "me") -> None:
        locale = str(interaction.locale.value)
        if self.bot.state is None:
            await self._unavailable(interaction, locale)
            return
        if scope == "server":
            perms = interaction.permissions
            if interaction.guild_id is None:
                raise app_commands.NoPrivateMessage()
            if not perms.manage_guild:
                raise app_commands.MissingPermissions(["manage_guild"])
            cleared = await self.bot.state.clear_guild_settings(interaction.guild_id)
        else:
            cleared = await self.bot.state.clear_user_settings(interaction.user.id)
        scope_name = t(locale, f"settings.scope.{scope}")
        key = "settings.cleared" if cleared else "settings.nothing_to_clear"
        await interaction.response.send_message(t(locale, key, scope=scope_name), ephemeral=True)


async def setup(bot: RigBot) -> None:
    await bot.add_cog(SettingsCog(bot))
