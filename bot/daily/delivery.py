"""Daily summaries: compose one message per subscription and deliver it exactly once.

A summary shows, for each subscribed GPU, the best models at the subscription's context with their
speed (one stitched chart for the message), what changed in the catalog, and the previous day's
questions in that server.

Delivery is idempotent and durable: a delivery row is claimed with `begin_delivery` before anything
is posted and marked sent or failed afterwards. A process killed in between leaves the row pending;
whoever takes it over (the restarted process at once, any other process of the fleet once the claim's
lease has run out) looks for the post in the channel (each post carries its delivery id in the footer)
and only posts when it is not there, so a crash neither loses a summary nor posts it twice.

Any process may deliver any subscription: posting goes through Discord's REST API, which does not care
which shard a guild is on. Several processes triggered together each walk the subscriptions, starting
at different places, and the database's claims decide who posts each one.
"""

from __future__ import annotations

import asyncio
import io
import logging
import random
import re
import time
from collections.abc import Awaitable, Callable, Mapping, Sequence
from dataclasses import dataclass
from datetime import UTC, date, datetime, timedelta
from datetime import time as dtime
from typing import TYPE_CHECKING, Any
from urllib.parse import urlsplit

import aiohttp
import discord

from bot.params import BadValue
from bot.render import charts
from bot.render.embeds import COLORS, FIELD_VALUE_MAX, FOOTER_MAX, render_embed
from bot.render.replies import range_note, rank_rows_view
from bot.render.reply import Reply, ReplyFile
from bot.render.table import setup_label
from bot.render.text import format_tokens, t
from bot.requests import DAILY_MAX_GPUS, RankRequest
from bot.service import Service
from catalog.resolve import NotFound
from estimator.query import DEFAULT_CTX
from estimator.speed import Speed

if TYPE_CHECKING:
    from bot.client import RigBot
    from bot.store.records import CatalogSnapshot, Delivery, QueryStats, Subscription
    from bot.store.state import StateStore

log = logging.getLogger(__name__)

TOP_MODELS = 5
MAX_GPUS = DAILY_MAX_GPUS
CHART_NAME = "daily.png"
DEFAULT_GPU = "rtx 4090"
# 429s and 5xx are retried until this long after the first attempt; a trigger answers within it.
RETRY_DEADLINE_S = 45.0
FIRST_BACKOFF_S = 0.5
MAX_BACKOFF_S = 8.0
# How far back a restart looks for a post it may have made before it was killed.
HISTORY_LOOKBACK = 50

_WEBHOOK_PATH = re.compile(r"/api(?:/v\d+)?/webhooks/(?P<id>\d{15,21})/(?P<token>[A-Za-z0-9._-]{20,200})/?")
_DISCORD_HOSTS = frozenset({"discord.com", "discordapp.com", "ptb.discord.com", "canary.discord.com"})


# --- webhook URLs ----------------------------------------------------------------------------------


def parse_webhook_url(url: str, api_base: str | None = None) -> tuple[int, str]:
    """(webhook id, token) of a channel webhook URL; raises BadValue (a ValueError) with a readable reason.

    Discord's own hosts are accepted over https; the configured API base's host too, so a stand-in
    Discord (or a proxy) can hand out its own webhook URLs.
    """
    parts = urlsplit(url.strip())
    allowed = parts.scheme == "https" and parts.hostname in _DISCORD_HOSTS
    if api_base and not allowed:
        base = urlsplit(api_base)
        allowed = (parts.scheme, parts.netloc) == (base.scheme, base.netloc)
    if not allowed:
        raise BadValue.of("daily.webhook_not_discord")
    match = _WEBHOOK_PATH.fullmatch(parts.path)
    if match is None or parts.query or parts.fragment:
        raise BadValue.of("daily.webhook_shape")
    return int(match["id"]), match["token"]


# --- what goes into a summary ----------------------------------------------------------------------


@dataclass(frozen=True)
class CatalogChanges:
    first: bool
    gpu_count: int
    model_count: int
    added_gpus: tuple[str, ...] = ()
    removed_gpus: tuple[str, ...] = ()
    added_models: tuple[str, ...] = ()
    removed_models: tuple[str, ...] = ()

    @property
    def empty(self) -> bool:
        return not (self.added_gpus or self.removed_gpus or self.added_models or self.removed_models)


def catalog_changes(svc: Service, snapshot: CatalogSnapshot | None) -> CatalogChanges:
    gpus = {g.id: g.name for g in svc.catalog.gpus}
    models = {m.id: m.name for m in svc.catalog.models}
    if snapshot is None:
        return CatalogChanges(first=True, gpu_count=len(gpus), model_count=len(models))
    old_gpus, old_models = set(snapshot.gpu_ids), set(snapshot.model_ids)
    return CatalogChanges(
        first=False, gpu_count=len(gpus), model_count=len(models),
        added_gpus=tuple(gpus[i] for i in sorted(gpus.keys() - old_gpus)),
        removed_gpus=tuple(sorted(old_gpus - gpus.keys())),
        added_models=tuple(models[i] for i in sorted(models.keys() - old_models)),
        removed_models=tuple(sorted(old_models - models.keys())),
    )


# The kinds of catalog change, in the order the summary lists them.
CHANGE_KINDS = ("added_models", "added_gpus", "removed_models", "removed_gpus")
# Characters a change line holds besides its name ("− model `…`" and the newline), in either language.
CHANGE_LINE_EXTRA = 12
# The longest line saying how many of one kind were left out ("− 1000 more models").
CHANGE_MORE_LINE = 24


@dataclass(frozen=True)
class ShownChanges:
    """One kind of catalog change as the summary lists it: the names shown and how many more there are."""

    names: tuple[str, ...]
    more: int


def shown_changes(changes: CatalogChanges, room: int = FIELD_VALUE_MAX) -> dict[str, ShownChanges]:
    """Each kind's share of the field: names are taken a round at a time, one of every kind with more to show,
    while they fit, so a long list of added models never hides an added GPU or a removed entry; each kind cut
    short says how many it left out."""
    lists = {kind: getattr(changes, kind) for kind in CHANGE_KINDS}
    budget = room - len(CHANGE_KINDS) * CHANGE_MORE_LINE
    taken = dict.fromkeys(CHANGE_KINDS, 0)
    grew = True
    while grew:
        grew = False
        for kind, names in lists.items():
            if taken[kind] < len(names) and len(names[taken[kind]]) + CHANGE_LINE_EXTRA <= budget:
                budget -= len(names[taken[kind]]) + CHANGE_LINE_EXTRA
                taken[kind] += 1
                grew = True
    return {kind: ShownChanges(names[: taken[kind]], len(names) - taken[kind]) for kind, names in lists.items()}


def asked_pairs(svc: Service, usage: QueryStats | None) -> list[dict[str, Any]]:
    """The most asked GPU/model pairs by the names replies show; an id the catalog no longer lists, as logged."""
    if usage is None:
        return []
    gpus = {g.id: g.name for g in svc.catalog.gpus}
    models = {m.id: m.name for m in (*svc.catalog.models, *svc.extra_models.values())}
    return [{"gpu": gpus.get(p.gpu, p.gpu), "model": models.get(p.model, p.model), "count": p.count}
            for p in usage.top_pairs]


def stats_window(day: str) -> tuple[datetime, datetime]:
    """The UTC day before `day`: a summary dated today reports yesterday's questions."""
    start = datetime.combine(date.fromisoformat(day), dtime.min, tzinfo=UTC)
    return start - timedelta(days=1), start


def _stitch(pngs: Sequence[bytes]) -> bytes:
    """One image per message, so several GPUs' charts are stacked into one PNG."""
    if len(pngs) == 1:
        return pngs[0]
    from PIL import Image  # matplotlib's own dependency

    images = [Image.open(io.BytesIO(p)).convert("RGB") for p in pngs]
    canvas = Image.new("RGB", (max(i.width for i in images), sum(i.height for i in images)), images[0].getpixel((0, 0)))
    y = 0
    for image in images:
        canvas.paste(image, (0, y))
        y += image.height
    out = io.BytesIO()
    canvas.save(out, format="PNG", optimize=True)
    return out.getvalue()


def compose(
    svc: Service,
    *,
    day: str,
    gpu_ids: Sequence[str],
    ctx: int,
    locale: str,
    usage: QueryStats | None,
    changes: CatalogChanges,
    guild_name: str | None = None,
    theme: charts.Theme = "dark",
) -> Reply:
    """The summary as a Reply: one embed and one PNG. CPU-bound; callers run it off the event loop."""
    gpus: list[dict[str, Any]] = []
    missing: list[str] = []
    pngs: list[bytes] = []
    speeds: list[Speed] = []
    for gpu_id in list(gpu_ids)[:MAX_GPUS]:
        # A stored setup is a GPU id, or `setup_text`'s '2x nvidia-a30' for several cards.
        try:
            count = svc.gpu_choice(gpu_id).count
            gpu, rows = svc.rank(RankRequest(gpu=gpu_id, ctx=ctx))
        except NotFound:
            missing.append(gpu_id)
            continue
        top = rows[:TOP_MODELS]
        speeds += [r.best.speed for r in top]
        name = setup_label(gpu, count)
        gpus.append({"name": name, "rows": rank_rows_view(top, 0)})
        pngs.append(charts.rank_chart(top, title=f"{name} · {format_tokens(ctx)}", limit=TOP_MODELS,
                                      locale=locale, theme=theme))
    since, _ = stats_window(day)
    embed = render_embed(
        "daily", locale, day=day, guild_name=guild_name, ctx=ctx, gpus=gpus, missing=missing, changes=changes,
        shown=shown_changes(changes), usage=usage, asked=asked_pairs(svc, usage), stats_day=since.date().isoformat(),
        color=COLORS["info"], image=CHART_NAME if pngs else None, ranges=range_note(speeds, locale),
    )
    files = [ReplyFile(filename=CHART_NAME, data=_stitch(pngs))] if pngs else []
    return Reply(embeds=[embed], files=files)


def with_ref(reply: Reply, delivery_id: int) -> Reply:
    """Stamp the delivery id into the footer: how a restart recognises a post it already made."""
    embeds = [dict(e) for e in reply.embeds]
    if embeds:
        footer = embeds[0].get("footer", {}).get("text", "")
        tag = _ref_tag(delivery_id)
        embeds[0]["footer"] = {"text": (footer[: FOOTER_MAX - len(tag)] + tag).strip()}
    return reply.model_copy(update={"embeds": embeds})


def _ref_tag(delivery_id: int) -> str:
    return f" · #{delivery_id}"


def _carries_ref(message: Mapping[str, Any], delivery_id: int) -> bool:
    tag = _ref_tag(delivery_id)
    return any(str((e.get("footer") or {}).get("text", "")).endswith(tag) for e in message.get("embeds") or [])


def _retry_after(exc: discord.HTTPException) -> float | None:
    response = getattr(exc, "response", None)
    header = response.headers.get("Retry-After") if response is not None else None
    try:
        return float(header) if header else None
    except ValueError:
        return None


# --- delivery --------------------------------------------------------------------------------------


class DailyJob:
    """Composes and delivers summaries for one bot; owns the HTTP session webhook posts go through."""

    def __init__(self, bot: RigBot) -> None:
        self.bot = bot
        self.session: aiohttp.ClientSession | None = None

    async def open(self) -> None:
        self.session = aiohttp.ClientSession()

    async def close(self) -> None:
        if self.session is not None:
            await self.session.close()
            self.session = None

    @property
    def svc(self) -> Service:
        return self.bot.service

    @property
    def state(self) -> StateStore:
        # The daily commands refuse before reaching here when the bot runs without a state store.
        assert self.bot.state is not None, "daily summaries need the state store"
        return self.bot.state

    def _count(self, outcome: str) -> None:
        if self.bot.metrics is not None:
            self.bot.metrics.delivery(outcome)

    @property
    def owner(self) -> str:
        return str(getattr(self.bot, "claim_owner", "local#0"))

    @property
    def lease(self) -> timedelta:
        # Keep it well above composing plus RETRY_DEADLINE_S, so a live holder never loses its claim.
        return timedelta(seconds=float(self.bot.settings.rigcheck_daily_lease_s))

    # -- composing --

    async def changes_for(self, day: str) -> CatalogChanges:
        # Compared with what was known before the summary's day, so every run that day (other
        # servers, forced re-sends, resumed deliveries) reports the same changes.
        start = datetime.combine(date.fromisoformat(day), dtime.min, tzinfo=UTC)
        return catalog_changes(self.svc, await self.state.last_catalog_snapshot(before=start))

    async def compose_for(
        self, *, guild_id: int, day: str, gpu_ids: Sequence[str], ctx: int, locale: str, changes: CatalogChanges
    ) -> Reply:
        since, until = stats_window(day)
        usage = await self.state.query_stats(guild_id, since, until, top=5)
        guild = self.bot.get_guild(guild_id)
        return await asyncio.to_thread(
            compose, self.svc, day=day, gpu_ids=gpu_ids, ctx=ctx, locale=locale, usage=usage, changes=changes,
            guild_name=guild.name if guild is not None else None,
        )

    async def preview(self, guild_id: int, locale: str, day: str | None = None) -> Reply:
        """What this server's summary would look like today, without claiming or posting anything."""
        day = day or datetime.now(UTC).date().isoformat()
        subs = await self.state.list_subscriptions(guild_id)
        note: str | None = None
        if subs:
            gpu_ids, ctx, locale = list(subs[0].gpus), subs[0].ctx, subs[0].locale
        else:
            settings = await self.state.get_guild_settings(guild_id)
            gpu_ids = list(settings.gpu_ids) or [self.svc.gpu(DEFAULT_GPU).id]
            ctx = settings.ctx or DEFAULT_CTX
            # `/daily subscribe` without gpus: takes the server's GPU and refuses without one, so a preview of the
            # default card says it is an example, not what a subscription would post.
            note = t(locale, "daily.preview_server" if settings.gpu_ids else "daily.preview_example",
                     gpu=setup_label(self.svc.gpu(gpu_ids[0]), 1))
        reply = await self.compose_for(guild_id=guild_id, day=day, gpu_ids=gpu_ids, ctx=ctx, locale=locale,
                                       changes=await self.changes_for(day))
        return reply.model_copy(update={"content": note}) if note else reply

    # -- running --

    async def run(self, day: str, guild_id: int | None = None, *, dry_run: bool = False, force: bool = False,
                  progress: Callable[[dict[str, Any]], Awaitable[None]] | None = None,
                  on_total: Callable[[int], Awaitable[None]] | None = None) -> list[dict[str, Any]]:
        """Deliver `day`'s summary to every active subscription (of one guild, if given).

        Returns one result per subscription, by subscription id; `progress` hears each as it is known.
        """
        state = self.state
        subs = await state.list_subscriptions(guild_id)
        if on_total is not None:
            await on_total(len(subs))
        if len(subs) > 1:
            # Processes triggered together start at different places, so they mostly compose different
            # summaries instead of all composing the same one and all but one skipping it.
            start = random.randrange(len(subs))
            subs = subs[start:] + subs[:start]
        changes = await self.changes_for(day)
        results: list[dict[str, Any]] = []
        for sub in subs:
            result = await self._run_one(sub, day, changes, dry_run=dry_run, force=force)
            results.append(result)
            if progress is not None:
                await progress(result)
        if not dry_run and any(r["status"] == "sent" for r in results):
            await state.record_catalog_version(self.svc.catalog.version, (g.id for g in self.svc.catalog.gpus),
                                               (m.id for m in self.svc.catalog.models), datetime.now(UTC))
        if not dry_run:
            await self.sweep()
        return sorted(results, key=lambda r: int(r["subscription"]))

    async def sweep(self) -> int:
        """Take over and finish pending deliveries whose holder is gone; returns how many were taken.

        Gone means: the lease ran out, no holder was recorded (a claim from before leases), or the holder
        is an earlier incarnation of this instance (this process's own predecessor, restarted).
        """
        state = self.state
        now = datetime.now(UTC)
        name = self.owner.split("#", 1)[0]
        taken: list[Delivery] = []
        for delivery in await state.pending_deliveries():
            holder = delivery.claimed_by
            if holder == self.owner:
                continue
            orphaned = (holder is None or delivery.lease_until is None or delivery.lease_until <= now
                        or holder.split("#", 1)[0] == name)
            if not orphaned:
                continue
            mine = await state.take_over_delivery(delivery, self.owner, self.lease)
            if mine is not None:
                log.info("took over daily delivery %d from %s", delivery.id, holder or "an unrecorded holder")
                if self.bot.metrics is not None:
                    self.bot.metrics.takeover()
                taken.append(mine)
        if taken:
            await self.resume(taken)
        return len(taken)

    async def _run_one(self, sub: Subscription, day: str, changes: CatalogChanges, *, dry_run: bool,
                       force: bool) -> dict[str, Any]:
        result = _describe(sub)
        if not dry_run:
            # A cheap look first: in a fleet, most subscriptions were already taken by another process.
            statuses = await self.state.delivery_status(sub.id, day)
            if "pending" in statuses or ("sent" in statuses and not force):
                self._count("skipped")
                return {**result, "status": "skipped", "reason": "already sent (or in progress) for this day"}
        try:
            # Composed before the delivery is claimed, to keep the claimed-but-unsent window short.
            reply = await self.compose_for(guild_id=sub.guild_id, day=day, gpu_ids=sub.gpus, ctx=sub.ctx,
                                           locale=sub.locale, changes=changes)
        except Exception as exc:
            log.exception("could not compose the %s summary for subscription %d", day, sub.id)
            self._count("failed")
            return {**result, "status": "failed", "reason": f"composing failed: {type(exc).__name__}"}
        if dry_run:
            self._count("dry_run")
            return {**result, "status": "would_send", "title": reply.embeds[0].get("title") if reply.embeds else None}
        delivery = await self.state.begin_delivery(sub.id, day, force=force, owner=self.owner, lease=self.lease)
        if delivery is None:
            self._count("skipped")
            return {**result, "status": "skipped", "reason": "already sent (or in progress) for this day"}
        return await self._send(sub, delivery, reply, result)

    async def _send(self, sub: Subscription, delivery: Delivery, reply: Reply,
                    result: dict[str, Any]) -> dict[str, Any]:
        state = self.state
        result = {**result, "delivery": delivery.id}
        try:
            message_id = await self._post_with_retry(sub, with_ref(reply, delivery.id))
        except (discord.NotFound, discord.Forbidden) as exc:
            reason = f"{'channel or webhook is gone' if isinstance(exc, discord.NotFound) else 'not allowed to post'}" \
                     f" (HTTP {exc.status}, code {exc.code})"
            await state.mark_failed(delivery.id, reason)
            await state.disable_subscription(sub.id, reason)
            log.warning("daily subscription %d of guild %d disabled: %s", sub.id, sub.guild_id, reason)
            self._count("disabled")
            return {**result, "status": "disabled", "reason": reason}
        except (discord.HTTPException, aiohttp.ClientError, TimeoutError) as exc:
            reason = f"{type(exc).__name__}: {str(exc)[:200]}"
            await state.mark_failed(delivery.id, reason)
            log.warning("daily delivery %d (subscription %d) failed: %s", delivery.id, sub.id, reason)
            self._count("failed")
            return {**result, "status": "failed", "reason": reason}
        except Exception as exc:
            await state.mark_failed(delivery.id, f"unexpected {type(exc).__name__}")
            log.exception("daily delivery %d (subscription %d) failed", delivery.id, sub.id)
            self._count("failed")
            return {**result, "status": "failed", "reason": f"unexpected {type(exc).__name__}"}
        await state.mark_sent(delivery.id, message_id)
        self._count("sent")
        log.info("daily summary %s posted for subscription %d (message %s)", delivery.day, sub.id, message_id)
        return {**result, "status": "sent", "message_id": str(message_id) if message_id else None}

    async def _post_with_retry(self, sub: Subscription, reply: Reply) -> int | None:
        """Post, retrying rate limits and server errors with backoff until RETRY_DEADLINE_S."""
        deadline = time.monotonic() + RETRY_DEADLINE_S
        delay = FIRST_BACKOFF_S
        attempt = 0
        while True:
            attempt += 1
            try:
                return await self._post(sub, reply)
            except (discord.NotFound, discord.Forbidden):
                raise
            except discord.HTTPException as exc:
                if exc.status != 429 and exc.status < 500:
                    raise
                wait = _retry_after(exc) or delay
                if time.monotonic() + wait > deadline:
                    raise
                problem = f"HTTP {exc.status}"
            except (aiohttp.ClientError, TimeoutError) as exc:
                wait = delay
                if time.monotonic() + wait > deadline:
                    raise
                problem = type(exc).__name__
            log.warning("daily post for subscription %d: %s on attempt %d; retrying in %.1fs", sub.id, problem,
                        attempt, wait)
            await asyncio.sleep(wait)
            delay = min(delay * 2, MAX_BACKOFF_S)

    async def _post(self, sub: Subscription, reply: Reply) -> int | None:
        # Files are rebuilt per attempt: a discord.File is consumed by the upload.
        embeds = [discord.Embed.from_dict(e) for e in reply.embeds]
        files = [discord.File(io.BytesIO(f.data), filename=f.filename) for f in reply.files]
        if sub.webhook_url is not None:
            webhook = self._webhook(sub.webhook_url.get_secret_value())
            sent = await webhook.send(embeds=embeds, files=files, wait=True)
            return sent.id
        assert sub.channel_id is not None
        channel = self.bot.get_partial_messageable(sub.channel_id, guild_id=sub.guild_id)
        message = await channel.send(embeds=embeds, files=files)
        return message.id

    def _webhook(self, url: str) -> discord.Webhook:
        # Webhook.from_url only knows discord.com; partial() goes through the configured API base.
        webhook_id, token = parse_webhook_url(url, self.bot.settings.discord_api_base)
        assert self.session is not None
        return discord.Webhook.partial(webhook_id, token, session=self.session)

    # -- after a restart --

    async def resume(self, pending: Sequence[Delivery]) -> None:
        """Finish deliveries a previous process claimed but never marked: find the post, or post it."""
        state = self.state
        for delivery in pending:
            try:
                sub = await state.get_subscription(delivery.subscription_id)
                if sub is None or not sub.active:
                    await state.mark_failed(delivery.id, "subscription inactive when the delivery was resumed")
                    self._count("failed")
                    continue
                found = await self._find_post(sub, delivery.id)
                if found is not None:
                    await state.mark_sent(delivery.id, found)
                    log.info("daily delivery %d had been posted before the restart (message %d)", delivery.id, found)
                    self._count("recovered")
                    continue
                reply = await self.compose_for(guild_id=sub.guild_id, day=delivery.day, gpu_ids=sub.gpus, ctx=sub.ctx,
                                               locale=sub.locale, changes=await self.changes_for(delivery.day))
                result = await self._send(sub, delivery, reply, _describe(sub))
                log.info("resumed daily delivery %d: %s", delivery.id, result["status"])
            except Exception:
                log.exception("could not resume daily delivery %d; it stays pending", delivery.id)

    async def _find_post(self, sub: Subscription, delivery_id: int) -> int | None:
        """The id of a message carrying this delivery's reference, if one is in the channel."""
        try:
            author_id: int | None
            channel_id = sub.channel_id
            if sub.webhook_url is not None:
                webhook = await self._webhook(sub.webhook_url.get_secret_value()).fetch()
                channel_id, author_id = webhook.channel_id, webhook.id
            else:
                author_id = self.bot.user.id if self.bot.user else None
            if channel_id is None:
                return None
            messages = await self.bot.http.logs_from(channel_id, HISTORY_LOOKBACK)
        except (discord.HTTPException, aiohttp.ClientError, TimeoutError) as exc:
            # Unverifiable: posting again risks a duplicate, not posting risks a gap; a gap is worse.
            log.warning("could not check channel history for delivery %d: %s", delivery_id, exc)
            return None
        for message in messages:
            author = str((message.get("author") or {}).get("id"))
            if str(author_id) in (author, str(message.get("webhook_id"))) and _carries_ref(message, delivery_id):
                return int(message["id"])
        return None


def _describe(sub: Subscription) -> dict[str, Any]:
    return {
        "subscription": sub.id,
        "guild": str(sub.guild_id),
        "channel": str(sub.channel_id) if sub.channel_id else None,
        "via": "webhook" if sub.webhook_url is not None else "channel",
    }

