"""In-process: the real cogs, the real error handler and real discord.py Interaction objects built from
payloads; only the HTTP calls discord.py would make to Discord are captured instead of sent."""

from __future__ import annotations

import asyncio
import itertools
import json
from collections.abc import AsyncIterator
from typing import Any

import discord
import pytest
from discord.webhook.async_ import AsyncWebhookAdapter, async_context

from bot.client import EXTENSIONS, RigBot
from bot.render.reply import Reply
from bot.settings import Settings
from bot.ui.pages import Pages

APPLICATION_ID = 1_000_000_000_000_001
USER = {"id": "2000000000000002", "username": "asker", "discriminator": "0", "global_name": "Asker", "avatar": None}
_ids = itertools.count(3_000_000_000_000_000)


class Captured(AsyncWebhookAdapter):
    """Answers discord.py's interaction calls the way Discord's API shapes them, and keeps what was sent."""

    def __init__(self) -> None:
        super().__init__()
        self.sent: list[tuple[str, str, dict[str, Any], list[str]]] = []

    async def request(self, route: Any, session: Any, *, payload: dict[str, Any] | None = None,
                      multipart: list[dict[str, Any]] | None = None, files: Any = None, **_: Any) -> Any:
        body = payload or {}
        if multipart:
            body = json.loads(next(p["value"] for p in multipart if p["name"] == "payload_json"))
        names = [f.filename for f in files or []]
        self.sent.append((route.method, route.path, body, names))
        if route.path.endswith("/callback"):
            return {"interaction": {"id": str(route.webhook_id), "type": 2}}
        if route.method in ("POST", "PATCH"):
            return message(body.get("data", body), names)
        return None


def message(body: dict[str, Any], names: list[str]) -> dict[str, Any]:
    return {"id": str(next(_ids)), "channel_id": "4000000000000004", "type": 0, "content": body.get("content") or "",
            "author": {**USER, "id": str(APPLICATION_ID), "bot": True}, "embeds": body.get("embeds") or [],
            "attachments": [{"id": str(next(_ids)), "filename": n, "size": 1, "url": f"https://x/{n}",
                             "proxy_url": f"https://x/{n}"} for n in names],
            "mentions": [], "mention_roles": [], "pinned": False, "mention_everyone": False, "tts": False,
            "timestamp": "2026-01-01T00:00:00+00:00", "edited_timestamp": None, "flags": body.get("flags", 0),
            "components": []}


@pytest.fixture
async def bot(tmp_path: Any) -> AsyncIterator[RigBot]:
    rig = RigBot(Settings(rigcheck_data_dir=str(tmp_path), rigcheck_render_workers=0, discord_token=None))
    for ext in EXTENSIONS:
        await rig.load_extension(ext)
    yield rig
    # As the bot's shutdown does (never connected, it cannot run the whole of it): extensions unloaded
    # first, so each cog closes what it opened, like the daily job's HTTP session.
    for ext in EXTENSIONS:
        await rig.unload_extension(ext)
    rig.render_pool.close()
    await rig.http.close()


def interaction(bot: RigBot, kind: int, data: dict[str, Any], **extra: Any) -> discord.Interaction:
    """An interaction payload as Discord sends it, from the asker in a DM channel."""
    payload = {
        "id": str(next(_ids)), "application_id": str(APPLICATION_ID), "type": kind, "token": "t", "version": 1,
        "locale": "en-US", "channel_id": "4000000000000004", "user": USER, "app_permissions": "0",
        "attachment_size_limit": 10 * 1024 * 1024, "entitlements": [],
        "channel": {"id": "4000000000000004", "type": 1}, "context": 1, "data": data, **extra,
    }
    return discord.Interaction(data=payload, state=bot._connection)  # type: ignore[arg-type]


def slash(bot: RigBot, name: str, **options: Any) -> discord.Interaction:
    typed = [{"name": k, "type": 4 if isinstance(v, int) else 3, "value": v} for k, v in options.items()]
    return interaction(bot, 2, {"id": str(next(_ids)), "name": name, "type": 1, "options": typed})


async def run(bot: RigBot, interaction: discord.Interaction) -> Captured:
    """Dispatch as the gateway handler does (CommandTree._call), then wait for what the answer left running
    (a chart edited in after the answer): tasks copy the context, so they report to the same capture."""
    captured = Captured()
    token = async_context.set(captured)
    try:
        await bot.tree._call(interaction)
        while bot.background:
            await asyncio.gather(*bot.background)
    finally:
        async_context.reset(token)
    return captured


DEFERRED, MESSAGE, EPHEMERAL = 5, 4, 1 << 6


def callbacks(sent: Captured) -> list[dict[str, Any]]:
    return [body for method, path, body, _ in sent.sent if path.endswith("/callback")]


def private_error(sent: Captured) -> dict[str, Any]:
    """The one immediate, ephemeral answer an error gets: its embed."""
    [answer] = callbacks(sent)
    assert answer["type"] == MESSAGE and answer["data"]["flags"] & EPHEMERAL, answer
    [embed] = answer["data"]["embeds"]
    return dict(embed)


async def test_fit_defers_then_answers_with_its_embed_and_chart(bot: RigBot) -> None:
    sent = await run(bot, slash(bot, "fit", gpu="T4", model="qwen3-8b", quant="q4_k_m"))
    assert [c["type"] for c in callbacks(sent)] == [DEFERRED]
    messages = [(body, files) for method, path, body, files in sent.sent if "/webhooks/" in path]
    assert messages, sent.sent
    body, _ = messages[0]
    [embed] = body["embeds"]
    assert "Qwen3-8B" in embed["title"] and "T4" in embed["title"], embed["title"]
    assert any("Q4_K_M" in f["name"] + f["value"] for f in embed["fields"]), embed["fields"]
    assert any("vram.png" in files for _, files in messages), "the chart is attached (at once or edited in)"


async def test_an_unknown_gpu_gets_a_private_did_you_mean(bot: RigBot) -> None:
    embed = private_error(await run(bot, slash(bot, "fit", gpu="rtx 4900", model="qwen3-8b")))
    assert embed["title"] == "Unknown GPU"
    assert "rtx 4900" in embed["description"] and "RTX 4090" in json.dumps(embed, ensure_ascii=False)


async def test_a_bad_context_is_refused_by_its_transformer_in_words(bot: RigBot) -> None:
    embed = private_error(await run(bot, slash(bot, "fit", gpu="T4", model="qwen3-8b", ctx="32q")))
    assert embed["title"] == "That option does not work"
    assert embed["description"].startswith("ctx must be a token count") and "'32q'" in embed["description"]


async def test_fit_without_a_gpu_or_a_stored_default_says_how_to_give_one(bot: RigBot) -> None:
    embed = private_error(await run(bot, slash(bot, "fit", model="qwen3-8b")))
    assert embed["description"].startswith("gpu is missing: give `gpu:`"), embed


async def test_gpu_card_lists_what_it_can_fine_tune(bot: RigBot) -> None:
    sent = await run(bot, slash(bot, "gpu", gpu="T4"))
    bodies = [body for method, path, body, _ in sent.sent if "/webhooks/" in path]
    [embed, *_] = bodies[0]["embeds"]
    assert embed["title"].endswith("T4"), embed["title"]
    assert any(f["name"].startswith("Fine-tuning") for f in embed["fields"]), embed["fields"]


def press(bot: RigBot, custom_id: str) -> discord.Interaction:
    return interaction(bot, 3, {"custom_id": custom_id, "component_type": 2},
                       message=message({"embeds": [{"description": "page 1"}]}, []))


UPDATE_MESSAGE, DEFERRED_UPDATE = 7, 6


@pytest.mark.parametrize("draw_s, first_callback", [(0.0, UPDATE_MESSAGE), (0.3, DEFERRED_UPDATE)])
async def test_a_page_slower_than_the_deadline_is_acknowledged_first(
    bot: RigBot, monkeypatch: pytest.MonkeyPatch, draw_s: float, first_callback: int
) -> None:
    """A press is answered within Discord's 3 s: a page drawn in time replaces the message in the answer;
    a slower one is acknowledged first and the message edited when it is drawn."""
    import bot.ui.pages as pages_module

    monkeypatch.setattr(pages_module, "ANSWER_PRESS_WITHIN_S", 0.1)

    async def page(number: int) -> Reply:
        await asyncio.sleep(draw_s)
        return Reply(embeds=[{"description": f"page {number}"}])

    pages = Pages(owner_id=int(USER["id"]), page=1, pages=3, render=page, prefix="rank")
    pages.page = 2
    captured = Captured()
    token = async_context.set(captured)
    try:
        await pages.show(press(bot, "rank:next"))
    finally:
        async_context.reset(token)
    [answer] = callbacks(captured)
    assert answer["type"] == first_callback
    edits = [body for method, path, body, _ in captured.sent if method == "PATCH" and "@original" in path]
    shown = answer["data"]["embeds"] if first_callback == UPDATE_MESSAGE else edits[0]["embeds"]
    assert [e["description"] for e in shown] == ["page 2"]
    assert len(edits) == (first_callback == DEFERRED_UPDATE)


async def test_only_the_asker_may_turn_the_pages(bot: RigBot) -> None:
    async def page(number: int) -> Reply:
        return Reply(content=f"page {number}")

    pages = Pages(owner_id=int(USER["id"]) + 1, page=1, pages=3, render=page, prefix="rank")
    captured = Captured()
    token = async_context.set(captured)
    try:
        allowed = await pages.interaction_check(press(bot, "rank:next"))
    finally:
        async_context.reset(token)
    assert allowed is False
    [answer] = callbacks(captured)
    assert answer["data"]["flags"] & EPHEMERAL
    assert answer["data"]["content"] == "Only the person who asked can turn the pages."
