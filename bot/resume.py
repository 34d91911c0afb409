"""Finishing, after a restart, the commands a crash left "thinking…".

`encode_request` turns a command's typed request (and the page asked for) into JSON for the unanswered
interactions in the state store (`bot.store.pending`); `resume_pending` takes over each still-valid one
whose holder is gone, recomputes it and delivers it as a follow-up with the interaction's token. Only the
request types in `bot.requests` are accepted on the way back.
"""

from __future__ import annotations

import asyncio
import io
import logging
from datetime import UTC, datetime, timedelta
from typing import TYPE_CHECKING, Any

import aiohttp
import discord

from bot.requests import REQUEST_TYPES, Request

if TYPE_CHECKING:
    from bot.client import RigBot
    from bot.store.pending import Pending

log = logging.getLogger(__name__)

# Discord's message flag for a deferred response still "thinking…".
FLAG_LOADING = 1 << 7


class NotResumable(TypeError):
    """A request of a type the store does not keep, or a record this build cannot read back; that command
    is simply not resumed."""


def encode_request(request: Request, page: int, key: str | None) -> dict[str, Any]:
    name = type(request).__name__
    if REQUEST_TYPES.get(name) is not type(request):
        raise NotResumable(f"cannot keep a {name}")
    # Only what was set: an option left to its default stays "not asked" (a default context yields to a short window).
    return {"request": {"type": name, "fields": request.model_dump(mode="json", exclude_unset=True)}, "page": page,
            "key": key}


def decode_request(record: dict[str, Any]) -> tuple[Request, int]:
    """The request and page a record holds; a record from an older build (no typed request) is not resumed."""
    stored = record.get("request")
    if not isinstance(stored, dict) or stored.get("type") not in REQUEST_TYPES:
        raise NotResumable("the record holds no request this build knows")
    return REQUEST_TYPES[stored["type"]](**stored.get("fields", {})), int(record.get("page") or 1)


async def _still_thinking(application_id: int, token: str) -> bool:
    """Whether the deferred message is still "thinking…" on Discord's side (not answered before a crash)."""
    url = f"{discord.http.Route.BASE}/webhooks/{application_id}/{token}/messages/@original"
    async with aiohttp.ClientSession() as http, http.get(url) as response:
        if response.status == 404:
            return True  # no original message is visible yet; a follow-up creates the answer
        response.raise_for_status()
        message = await response.json()
    return bool(int(message.get("flags") or 0) & FLAG_LOADING)


def lease(bot: RigBot) -> timedelta:
    """How long a claim on an unanswered interaction holds before another process may take it over."""
    return timedelta(seconds=float(bot.settings.rigcheck_resume_lease_s))


def renew_claim(bot: RigBot, interaction_id: int) -> asyncio.Task[None]:
    """Keep this process's claim on an interaction it is answering, renewed every third of the lease until
    the task is cancelled: an answer slower than one lease (a long chart queue, a slow hub fetch) is then
    never taken for orphaned by another process and answered twice. A process that dies stops renewing,
    so its claims still run out one lease later."""
    return asyncio.create_task(_renewing(bot, interaction_id), name=f"renew-claim-{interaction_id}")


async def _renewing(bot: RigBot, interaction_id: int) -> None:
    state = bot.state
    if state is None:
        return
    while True:
        await asyncio.sleep(lease(bot).total_seconds() / 3)
        try:
            held = await state.renew_pending(interaction_id, bot.claim_owner, lease(bot))
        except Exception:
            # The next renewal may get through before the lease runs out; the answer goes on either way.
            log.warning("could not renew the claim on interaction %s", interaction_id, exc_info=True)
            continue
        if not held:  # answered, or taken over: nothing left to hold
            return


def orphaned(row: Pending, owner: str, now: datetime) -> bool:
    """Whether nobody is answering `row`: its holder's lease ran out, or the holder is an earlier
    incarnation of this instance (this process's own predecessor, restarted)."""
    holder = row.claimed_by
    if holder == owner:
        return False  # this process is answering it live
    return (holder is None or row.lease_until is None or row.lease_until <= now
            or holder.split("#", 1)[0] == owner.split("#", 1)[0])


async def resume_one(bot: RigBot, row: Pending) -> bool:
    """Take `row` over and answer it; False when another process took it first."""
    state = bot.state
    assert state is not None, "resuming needs the state store it reads from"
    mine = await state.take_over_pending(row, bot.claim_owner, lease(bot))
    if mine is None:
        return False
    renewing = renew_claim(bot, mine.interaction_id)
    try:
        if not await _still_thinking(mine.application_id, mine.token):
            log.info("interaction %s was answered before the restart", mine.interaction_id)
            await state.finish_pending(mine.interaction_id)
            return True
        request, page = decode_request(mine.request)
        reply = await bot.render_pool.render(request, page, locale=mine.locale)
        webhook = discord.Webhook.partial(mine.application_id, mine.token, client=bot)
        await webhook.send(
            embeds=[discord.Embed.from_dict(e) for e in reply.embeds],
            files=[discord.File(io.BytesIO(f.data), filename=f.filename) for f in reply.files],
            ephemeral=reply.ephemeral, wait=True,
        )
        await state.finish_pending(mine.interaction_id)
        log.info("finished /%s (interaction %s) after a restart", mine.command, mine.interaction_id)
    except discord.NotFound:
        await state.finish_pending(mine.interaction_id)  # the token expired or the interaction is gone
    except NotResumable:
        # Kept by an older build in a shape this one does not read: retrying would never succeed.
        log.info("interaction %s cannot be finished by this build", mine.interaction_id)
        await state.finish_pending(mine.interaction_id)
    except Exception:
        log.warning("could not finish interaction %s after a restart", mine.interaction_id, exc_info=True)
    finally:
        renewing.cancel()
    return True


async def resume_pending(bot: RigBot) -> int:
    """Answer every interaction deferred and left unanswered by a process that is gone; returns how many
    this process took over."""
    if bot.state is None:
        return 0
    now = datetime.now(UTC)
    taken = 0
    for row in await bot.state.unanswered_interactions():
        if orphaned(row, bot.claim_owner, now):
            taken += await resume_one(bot, row)
    return taken


__all__ = ["NotResumable", "decode_request", "encode_request", "lease", "orphaned", "renew_claim", "resume_pending"]
