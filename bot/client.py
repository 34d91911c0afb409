"""The Bot: opens its stores in `setup_hook`, loads one extension per feature, syncs commands only when
their payload changed, and closes everything in `close()`."""

from __future__ import annotations

import asyncio
import errno
import hashlib
import io
import json
import logging
import os
import shutil
import socket
import time
import uuid
from collections.abc import Callable, Mapping
from datetime import UTC, datetime
from pathlib import Path
from typing import TYPE_CHECKING, Any, TypeVar

import discord
import yarl
from discord import app_commands
from discord.ext import commands

from bot.i18n import RigTranslator, interaction_locale
from bot.params import BadValue, NotAllowed, echo, people_text
from bot.render.pool import RenderPool
from bot.render.replies import error_reply
from bot.render.reply import Reply, ReplyFile
from bot.render.text import locale_key, t
from bot.requests import NOTHING_STORED, Built, Request, Scope, Stored, stored_values
from bot.service import Service
from bot.settings import Settings
from bot.sharding import resolve_shards
from catalog.resolve import NotFound, UnknownGgufRepo

if TYPE_CHECKING:
    from aiohttp import web

    from bot.store.cache import ReplyCache
    from bot.store.state import StateStore
    from bot.web.metrics import Metrics

log = logging.getLogger(__name__)

R = TypeVar("R", bound=Request)
# Where `RigTree.interaction_check` leaves an interaction's stored defaults for the command to merge.
STORED_EXTRA = "stored_defaults"

EXTENSIONS = (
    "bot.cogs.fit",
    "bot.cogs.rank",
    "bot.cogs.gpu",
    "bot.cogs.compare",
    "bot.cogs.finetune",
    "bot.cogs.browse",
    "bot.cogs.help",
    "bot.cogs.settings",
    "bot.cogs.whatgpu",
    "bot.cogs.daily",
    "bot.cogs.report",
)


LAG_PROBE_S = 0.01


def point_at(settings: Settings) -> None:
    """discord.py has no option for its endpoints; the sandbox (or a proxy) is reached by setting them."""
    if settings.discord_api_base:
        discord.http.Route.BASE = settings.discord_api_base.rstrip("/")
    if settings.discord_gateway_url:
        discord.gateway.DiscordWebSocket.DEFAULT_GATEWAY = yarl.URL(settings.discord_gateway_url)


# Below this much free space SQLite's journal and the cache cannot be written reliably.
DATA_DIR_MIN_FREE_BYTES = 8 * 1024 * 1024


def prepare_data_dir(path: Path) -> None:
    """Prove the data directory can take the bot's files, or raise DataDirError with one line that says
    which directory and what to do (instead of a traceback from deep inside SQLite). Nothing is created
    here: a directory that does not exist yet is made after Discord has been reached."""
    from bot.store.errors import DataDirError

    target = path
    while not target.exists() and target.parent != target:
        target = target.parent
    try:
        if not target.is_dir():
            raise OSError(errno.ENOTDIR, "not a directory", str(target))
        if os.statvfs(target).f_flag & os.ST_RDONLY:
            raise OSError(errno.EROFS, "read-only file system", str(target))
        if not os.access(target, os.W_OK | os.X_OK):
            raise OSError(errno.EACCES, "permission denied", str(target))
        if target == path:
            probe = path / ".write-test"
            with open(probe, "wb") as handle:
                handle.write(b"ok")
                handle.flush()
                os.fsync(handle.fileno())
            probe.unlink()
        free = shutil.disk_usage(target).free
    except OSError as exc:
        reason = {errno.EROFS: "is on a read-only file system", errno.EACCES: "is not writable by this user",
                  errno.EPERM: "is not writable by this user", errno.ENOSPC: "has no free space left",
                  errno.ENOTDIR: "is not a directory (a file is in the way)",
                  errno.EDQUOT: "is over its disk quota"}.get(exc.errno or 0, f"cannot be written ({exc.strerror})")
        raise DataDirError(f"data directory {path} {reason}; fix it or point RIGCHECK_DATA_DIR elsewhere") from exc
    if free < DATA_DIR_MIN_FREE_BYTES:
        raise DataDirError(f"data directory {path} has only {free // 1024} kB free; free some space "
                           "or point RIGCHECK_DATA_DIR elsewhere")


def storage_failure(exc: BaseException) -> bool:
    """A database or disk failure at run time (full disk, read-only volume), not a bug in a command."""
    import sqlite3

    import asyncpg

    from bot.store.errors import StateStoreError

    # A PostgreSQL state that is unreachable or restarting is the same kind of trouble for the person asking.
    postgres = isinstance(exc, asyncpg.PostgresConnectionError | asyncpg.InterfaceError
                          | asyncpg.CannotConnectNowError | asyncpg.ReadOnlySQLTransactionError
                          | asyncpg.DiskFullError | ConnectionError)
    return postgres or isinstance(exc, sqlite3.OperationalError | StateStoreError) or (
        isinstance(exc, OSError) and exc.errno in (errno.ENOSPC, errno.EROFS, errno.EDQUOT, errno.EIO))


async def send_reply(interaction: discord.Interaction, reply: Reply, view: discord.ui.View | None = None) -> None:
    """First response if there has been none, a follow-up after a defer."""
    embeds = [discord.Embed.from_dict(e) for e in reply.embeds]
    files = [discord.File(io.BytesIO(f.data), filename=f.filename) for f in reply.files]
    kwargs: dict[str, Any] = {"embeds": embeds, "ephemeral": reply.ephemeral}
    if view is not None:
        kwargs["view"] = view
    if reply.content:
        kwargs["content"] = reply.content
    if files:
        kwargs["files"] = files
    if interaction.response.is_done():
        await interaction.followup.send(**kwargs)
    else:
        await interaction.response.send_message(**kwargs)


def transformer_text(interaction: discord.Interaction, error: app_commands.TransformerError, locale: str) -> str:
    """discord.py's own refusal of an option ("Failed to convert …") in the asker's words: which option, and
    what it takes when that is a fixed set."""
    command = interaction.command
    params = command.parameters if isinstance(command, app_commands.Command) else []
    named = next((p for p in params if getattr(interaction.namespace, p.name, None) == error.value), None)
    name = named.display_name if named is not None else "value"
    choices = error.transformer.choices or []
    if choices:
        return t(locale, "bad.one_of", name=name, values=", ".join(str(c.value) for c in choices))
    return t(locale, "bad.value", name=name)


async def send_private(interaction: discord.Interaction, reply: Reply) -> None:
    """An error reply only the asker sees. After a public defer the first follow-up would inherit the
    public "thinking…" message, so that message goes first and the error follows as a private message."""
    deferred = interaction.response.type == discord.InteractionResponseType.deferred_channel_message
    if deferred and not interaction.extras.get("deferred_ephemeral"):
        try:
            await interaction.delete_original_response()
        except discord.HTTPException:
            log.debug("no original response to remove", exc_info=True)
    await send_reply(interaction, reply)


def _placeholder_names(reply: Reply) -> set[str]:
    from bot.render.charts import placeholder_index

    return {f.filename for f in reply.files if placeholder_index(f.data) is not None}


def noted(reply: Reply, note: str | None, extra_fields: list[dict[str, Any]] | None = None) -> Reply:
    """`note` (which stored defaults filled in options) and `extra_fields` (community reports, which change
    between identical questions) on the sent reply, never on the cached one."""
    if extra_fields and reply.embeds:
        first = dict(reply.embeds[0])
        first["fields"] = [*first.get("fields", []), *extra_fields][:25]
        reply = reply.model_copy(update={"embeds": [first, *reply.embeds[1:]]})
    if not note:
        return reply
    from bot.cogs.settings import with_note

    return reply.model_copy(update={"embeds": with_note(reply.embeds, note)})


def without_charts(reply: Reply) -> Reply:
    """The answer before its charts are drawn: no placeholder files, no embed image pointing at one."""
    pending = _placeholder_names(reply)
    embeds = []
    for embed in reply.embeds:
        embeds.append({k: v for k, v in embed.items()
                       if not (k in ("image", "thumbnail") and isinstance(v, dict)
                               and str(v.get("url", "")).removeprefix("attachment://") in pending)})
    return reply.model_copy(update={"embeds": embeds, "files": [f for f in reply.files if f.filename not in pending]})


def with_charts(reply: Reply, pngs: list[bytes]) -> Reply:
    from bot.render.charts import placeholder_index

    files = []
    for f in reply.files:
        index = placeholder_index(f.data)
        files.append(f if index is None else ReplyFile(filename=f.filename, data=pngs[index]))
    return reply.model_copy(update={"files": files})


async def edit_in_charts(interaction: discord.Interaction, reply: Reply) -> None:
    await interaction.edit_original_response(
        embeds=[discord.Embed.from_dict(e) for e in reply.embeds],
        attachments=[discord.File(io.BytesIO(f.data), filename=f.filename) for f in reply.files])


class RigTree(app_commands.CommandTree["RigBot"]):
    """Every command error becomes a friendly ephemeral reply; unexpected ones get an id in the log."""

    async def interaction_check(self, interaction: discord.Interaction[RigBot], /) -> bool:
        """Stored defaults are read here, once, before any command runs; autocomplete (served from memory)
        never reads them. A store that cannot be read fails only the commands that needed a default."""
        if interaction.type is discord.InteractionType.application_command:
            try:
                interaction.extras[STORED_EXTRA] = await self.client.stored_defaults(interaction)
            except Exception as exc:
                if not storage_failure(exc):
                    raise
                interaction.extras[STORED_EXTRA] = exc
        return True

    async def on_error(self, interaction: discord.Interaction[RigBot], error: app_commands.AppCommandError) -> None:
        original = getattr(error, "original", error)
        if isinstance(original, app_commands.TransformerError) and isinstance(original.__cause__,
                                                                              BadValue | NotFound):
            original = original.__cause__  # the transformer's own sentence, not "Failed to convert …"
        locale = interaction_locale(interaction)
        bot = interaction.client
        bot.metrics_outcome(interaction, "error")
        if isinstance(original, NotFound):
            kind = t(locale, f"err.kind.{original.kind}")
            which = "ambiguous" if original.ambiguous else "unknown"
            message = t(locale, f"err.{which}", query=echo(original.query, 80))
            if isinstance(original, UnknownGgufRepo):  # what to ask instead: the model, or its format
                message += t(locale, f"err.gguf_{original.reason}", tag=echo(original.tag, 30))
            reply = error_reply(t(locale, f"err.{which}.title", kind=kind), message, locale,
                                [s.label for s in original.suggestions[:8]])
        elif isinstance(original, BadValue | app_commands.TransformerError | ValueError) and not isinstance(
            original, app_commands.CommandInvokeError
        ):
            if isinstance(original, BadValue):
                text = original.text(locale, markdown=True)
            elif isinstance(original, app_commands.TransformerError):
                text = transformer_text(interaction, original, locale)
            else:
                text = people_text(original, locale)
            reply = error_reply(t(locale, "err.option.title"), text[:1500], locale)
        elif isinstance(original, app_commands.CommandOnCooldown):
            reply = error_reply(t(locale, "err.cooldown.title"),
                                t(locale, "err.cooldown", seconds=f"{original.retry_after:.0f}"), locale)
        elif storage_failure(original):
            log.warning("storage failed during /%s: %s", interaction.command and interaction.command.qualified_name,
                        original)
            reply = error_reply(t(locale, "err.storage.title"), t(locale, "err.storage"), locale)
        elif isinstance(original, app_commands.CheckFailure):
            reply = error_reply(t(locale, "err.denied.title"), t(locale, "err.denied"), locale)
        elif isinstance(original, NotAllowed):
            reply = error_reply(t(locale, "err.denied.title"), original.text(locale, markdown=True), locale)
        else:
            error_id = uuid.uuid4().hex[:8]
            log.error(
                "command failed [%s] %s",
                error_id,
                interaction.command and interaction.command.qualified_name,
                exc_info=original,
            )
            reply = error_reply(t(locale, "err.internal.title"), t(locale, "err.internal"), locale,
                                error_id=error_id)
        try:
            await send_private(interaction, reply)
        except discord.HTTPException:
            log.warning("could not deliver the error reply", exc_info=True)


class RigBot(commands.AutoShardedBot):
    def __init__(self, settings: Settings, service: Service | None = None) -> None:
        kwargs: dict[str, Any] = {}
        # Explicit shard settings win; otherwise a StatefulSet pod derives its shards from its ordinal.
        shard_ids, shard_count = resolve_shards({
            **os.environ,
            "RIGCHECK_SHARD_IDS": settings.rigcheck_shard_ids or "",
            "RIGCHECK_SHARD_COUNT": str(settings.rigcheck_shard_count or ""),
        })
        if shard_ids is not None:
            kwargs["shard_ids"] = shard_ids
        if shard_count is not None:
            kwargs["shard_count"] = shard_count
        super().__init__(
            command_prefix=commands.when_mentioned,
            intents=discord.Intents.none() | discord.Intents(guilds=True),
            tree_cls=RigTree,
            help_command=None,
            guild_ready_timeout=settings.rigcheck_guild_ready_timeout,
            # Nothing the bot sends may ping anyone, whatever text ends up in it.
            allowed_mentions=discord.AllowedMentions.none(),
            **kwargs,
        )
        self.settings = settings
        self.service = service or Service()
        self.started_at = time.monotonic()
        self.cache: ReplyCache | None = None
        self.state: StateStore | None = None
        self.metrics: Metrics | None = None
        self.web_runner: web.AppRunner | None = None
        self.lag_watch: asyncio.Task[None] | None = None
        self.resume_task: asyncio.Task[None] | None = None
        self.render_pool = RenderPool(self.service, settings.rigcheck_render_workers)
        # "name#incarnation": the name survives a restart (a StatefulSet pod keeps its name), the
        # incarnation does not, so a restarted process knows its predecessor's claims are orphaned.
        # Without a pod name, the host plus this process's shards: every shard runs in exactly one process,
        # so two processes on one host (a unit per shard block) never take each other for a predecessor.
        shards = "all" if shard_ids is None else ",".join(map(str, shard_ids))
        self.instance = (settings.rigcheck_instance or os.environ.get("POD_NAME")
                         or f"{socket.gethostname()}/shards-{shards}")
        self.claim_owner = f"{self.instance}#{uuid.uuid4().hex[:8]}"
        self.background: set[asyncio.Task[Any]] = set()

    def metrics_outcome(self, interaction: discord.Interaction, outcome: str) -> None:
        if self.metrics is not None and interaction.command is not None:
            self.metrics.command(interaction.command.qualified_name, outcome)

    async def setup_hook(self) -> None:
        data_dir = Path(self.settings.rigcheck_data_dir)
        await self.open_stores(data_dir)
        from bot.huggingface_client import HubClient

        self.service.hub = HubClient.from_settings(self.settings, cache_path=data_dir / "hf_models.sqlite3",
                                                   total_timeout_s=self.settings.rigcheck_hf_timeout_s)
        for ext in EXTENSIONS:
            await self.load_extension(ext)
        await self.tree.set_translator(RigTranslator())
        await self.sync_if_changed(data_dir)
        await self.render_pool.warm()
        await self.start_web()
        self.lag_watch = asyncio.create_task(self.watch_loop_lag())
        self.resume_task = asyncio.create_task(self.resume_after_ready())

    async def resume_after_ready(self) -> None:
        """Finish what a previous run deferred and never answered (a crash between defer and answer),
        then keep looking: in a fleet, a process that died may not come back under its own name."""
        from bot.resume import lease, resume_pending

        await self.wait_until_ready()
        while True:
            try:
                count = await resume_pending(self)
            except Exception:
                log.warning("could not look for unanswered commands", exc_info=True)
            else:
                if count:
                    log.info("took over %d command(s) a previous run left unanswered", count)
            await asyncio.sleep(lease(self).total_seconds() / 2)

    async def watch_loop_lag(self) -> None:
        """Measure how late the loop wakes a short sleep: anything that blocks it shows up here."""
        loop = asyncio.get_running_loop()
        while True:
            started = loop.time()
            await asyncio.sleep(LAG_PROBE_S)
            if self.metrics is not None:
                self.metrics.loop_lag(loop.time() - started - LAG_PROBE_S)

    async def open_stores(self, data_dir: Path) -> None:
        from bot.store.cache import ReplyCache
        from bot.store.state import StateStore

        url = self.settings.database_url
        if url:
            # First, before anything is written locally: a wrong URL stops start-up with nothing changed.
            self.state = await StateStore.open(url)
        await asyncio.to_thread(data_dir.mkdir, parents=True, exist_ok=True)
        if not url:
            self.state = await StateStore.open(data_dir / "state.sqlite3")
        # The reply cache stays local and disposable in every layout: answers are the same on every process.
        self.cache = await ReplyCache.open(
            data_dir / "cache.sqlite3", max_bytes=self.settings.rigcheck_cache_max_mb * 1024 * 1024
        )
        log.info("state in %s; reply cache in %s", "PostgreSQL" if url else data_dir / "state.sqlite3",
                 data_dir / "cache.sqlite3")

    async def start_web(self) -> None:
        if not self.settings.rigcheck_http_enabled:
            return
        from bot.web.app import start_web

        self.web_runner = await start_web(self)

    async def sync_if_changed(self, data_dir: Path) -> None:
        """Sync when the payload hash differs from the last sync, or when Discord does not have our
        commands (a new application, a fresh sandbox, commands deleted by hand)."""
        guild = discord.Object(self.settings.rigcheck_dev_guild) if self.settings.rigcheck_dev_guild else None
        if guild is not None:
            self.tree.copy_global_to(guild=guild)
        translator = self.tree.translator
        commands_ = self.tree.get_commands(guild=guild)
        if translator is not None:
            payload = [await c.get_translated_payload(self.tree, translator) for c in commands_]
        else:
            payload = [c.to_dict(self.tree) for c in commands_]
        digest = hashlib.sha256(json.dumps(payload, sort_keys=True).encode()).hexdigest()
        marker = data_dir / f"commands-{self.application_id}-{guild.id if guild else 'global'}.sha256"
        known = await asyncio.to_thread(lambda: marker.read_text().strip() if marker.exists() else "")
        if known == digest:
            remote = {c.name for c in await self.tree.fetch_commands(guild=guild)}
            if remote == {c["name"] for c in payload}:
                log.info("commands unchanged; not syncing")
                return
        await self.tree.sync(guild=guild)
        await asyncio.to_thread(marker.write_text, digest)
        log.info("synced %d commands", len(payload))

    def spawn(self, coro: Any, name: str) -> asyncio.Task[Any]:
        """A task the bot keeps hold of (and cancels at close), e.g. a daily run started by the hook."""
        task = asyncio.create_task(coro, name=name)
        self.background.add(task)
        task.add_done_callback(self.background.discard)
        return task

    async def close(self) -> None:
        for task in (self.lag_watch, self.resume_task):
            if task is not None:
                task.cancel()
        for task in list(self.background):
            task.cancel()
        if self.background:
            await asyncio.gather(*self.background, return_exceptions=True)
        if self.web_runner is not None:
            await self.web_runner.cleanup()
        await super().close()
        if self.service.hub is not None:
            await self.service.hub.close()
        self.render_pool.close()
        for store in (self.cache, self.state):
            if store is not None:
                await store.close()

    async def stored_defaults(self, interaction: discord.Interaction) -> Stored:
        """The server's and the asker's stored defaults (the asker's win); none without a state store."""
        if self.state is None:
            return NOTHING_STORED
        layers: list[tuple[Scope, Mapping[str, Any]]] = []
        if interaction.guild_id:
            layers.append(("server", stored_values(await self.state.get_guild_settings(interaction.guild_id))))
        layers.append(("me", stored_values(await self.state.get_user_settings(interaction.user.id))))
        return Stored.layered(layers)

    async def build(self, interaction: discord.Interaction, kind: type[R], **options: Any) -> Built[R]:
        """The command's request from its options (None: left out) and the stored defaults read before it
        ran, with every name resolved: a bad option is refused here, before anything is deferred."""
        stored = interaction.extras.get(STORED_EXTRA, NOTHING_STORED)
        if isinstance(stored, Exception):
            if any(options.get(k) is None for k in kind.STORED):
                raise stored  # a default was needed and could not be read: the storage answer, privately
            stored = NOTHING_STORED
        built = kind.build(stored, **options)
        built.check(self.service)
        return built

    async def remember_before_defer(self, interaction: discord.Interaction, request: Request, page: int,
                                    key: str | None, locale: str) -> bool:
        """Record the interaction before "thinking…" is shown, so a restart can still answer it."""
        if self.state is None:
            return False
        from bot.resume import NotResumable, encode_request, lease

        try:
            await self.state.record_pending(
                interaction_id=interaction.id, application_id=interaction.application_id, token=interaction.token,
                command=request.COMMAND, request=encode_request(request, page, key), locale=locale,
                created_at=interaction.created_at, owner=self.claim_owner, lease=lease(self))
        except NotResumable:
            return False
        except Exception as exc:
            if not storage_failure(exc):
                raise
            # The answer matters more than its insurance against a crash.
            log.warning("could not record /%s for a restart: %s", request.COMMAND, exc)
            return False
        return True

    async def forget_pending(self, interaction_id: int) -> None:
        if self.state is None:  # nothing was recorded without a state store
            return
        try:
            await self.state.finish_pending(interaction_id)
        except Exception as exc:
            if not storage_failure(exc):
                raise
            log.warning("could not mark interaction %s answered: %s", interaction_id, exc)

    async def compute_and_send(
        self, interaction: discord.Interaction, request: Request, page: int, locale: str,
        key: str | None, started: float, view_for: Callable[[Reply], discord.ui.View | None] | None,
        note: str | None, extra_fields: list[dict[str, Any]] | None = None,
    ) -> tuple[Reply | None, bool]:
        """The uncached answer: computed, sent at once if its chart is quick, else sent and the chart edited
        in; stored in the cache. Returns the reply still to send (None when done) and whether it was sent."""
        sent = False
        command = request.COMMAND
        first, charts_to_draw = await self.render_pool.render_split(request, page, locale=locale)
        wait_s = self.settings.rigcheck_chart_wait_s
        if self.render_pool.expected_draw_s(charts_to_draw) > wait_s:
            wait_s = 0  # queued behind other charts: waiting would only hold the answer back
        drawing = asyncio.ensure_future(self.render_pool.draw(charts_to_draw))
        done, _ = await asyncio.wait({drawing}, timeout=wait_s)
        if done:
            reply = with_charts(first, drawing.result())
        else:
            # The answer is ready and its chart is not: post the answer now, edit the chart in.
            await send_reply(interaction, noted(without_charts(first), note, extra_fields),
                             view_for(first) if view_for else None)
            sent = True
            self.observe_first(command, started)
            try:
                reply = with_charts(first, await drawing)
                await edit_in_charts(interaction, noted(reply, note, extra_fields))
            except Exception:  # the answer is out; a failed chart must not turn it into an error reply
                log.warning("chart for /%s not delivered; the answer stands without it", command, exc_info=True)
                return None, True
        if self.cache is not None and key is not None:
            from bot.store.cache import CachedReply

            await self.cache.put(key, CachedReply.model_validate(reply.model_dump()))
        return reply, sent

    def observe_first(self, command: str, started: float) -> None:
        if self.metrics is not None:
            self.metrics.observe(command, time.perf_counter() - started, False)

    async def answer(
        self,
        interaction: discord.Interaction,
        request: Request,
        page: int = 1,
        *,
        view_for: Callable[[Reply], discord.ui.View | None] | None = None,
        note: str | None = None,
        extra_fields: list[dict[str, Any]] | None = None,
    ) -> None:
        """Serve from the cache, or defer, render the reply the request's type has off the event loop,
        store, and follow up.

        `note` (which stored defaults filled in options) goes on the sent reply only: the cached answer
        is the same for everyone who asks the same question."""
        started = time.perf_counter()
        command = request.COMMAND
        key_parts = request.cache_key(self.service)
        locale = interaction_locale(interaction)
        key = None
        reply: Reply | None = None
        if self.cache is not None:
            from bot.store.cache import make_key

            key = make_key(
                {"command": command, "locale": locale_key(locale), **key_parts},
                self.service.catalog.version,
                self.service.version,
            )
            cached = await self.cache.get(key)
            if cached is not None:
                reply = Reply.model_validate(cached.model_dump(exclude={"components"}))
        hit = reply is not None
        sent = False
        recorded = False
        renewing: asyncio.Task[None] | None = None
        try:
            if reply is None:
                if not interaction.response.is_done():
                    recorded = await self.remember_before_defer(interaction, request, page, key, locale)
                    if recorded:
                        from bot.resume import renew_claim

                        renewing = renew_claim(self, interaction.id)
                    await interaction.response.defer(thinking=True)
                reply, sent = await self.compute_and_send(interaction, request, page, locale, key, started,
                                                          view_for, note, extra_fields)
                if reply is None:
                    return
            reply = noted(reply, note, extra_fields)
            if not sent:
                await send_reply(interaction, reply, view_for(reply) if view_for else None)
            latency_ms = (time.perf_counter() - started) * 1000
            if self.metrics is not None and not sent:
                self.metrics.observe(command, latency_ms / 1000, hit)
            self.metrics_outcome(interaction, "ok")
        finally:
            if renewing is not None:
                renewing.cancel()
            # Marked answered only once the answer is out: a crash before this line is finished on restart.
            if recorded:
                await self.forget_pending(interaction.id)
        if self.state is not None:
            try:
                await self.state.log_query(
                    command=command,
                    args=key_parts,
                    guild_id=interaction.guild_id,
                    user_id=interaction.user.id,
                    latency_ms=latency_ms,
                    cache_hit=hit,
                    outcome="ok",
                    at=datetime.now(UTC),
                )
            except Exception as exc:
                # At shutdown an answer still in flight finds the store closed: say so in one line.
                quiet = self.is_closed() or storage_failure(exc)
                log.warning("query log write failed: %s", exc, exc_info=not quiet)
