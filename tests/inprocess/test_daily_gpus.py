"""/daily subscribe reads its GPUs as every GPU option does: one GPU named twice is one GPU, and a card count
typed with a name is the setup the summary ranks for. Through the real bot and the loopback Discord."""

from __future__ import annotations

import pytest

from bot.sandbox import Sandbox

pytestmark = pytest.mark.asyncio(loop_scope="module")

MANAGE_GUILD = 1 << 5


async def subscribe(sb: Sandbox, gpus: str) -> str:
    reply = await sb.invoke(f"/daily subscribe channel:general gpus:{gpus}", user=7101,
                            member_permissions=MANAGE_GUILD)
    assert reply.error is None and reply.ephemeral, reply
    return reply.content or str(reply.embeds[0].get("description", ""))


async def test_one_gpu_named_five_times_is_one_gpu(sb: Sandbox) -> None:
    said = await subscribe(sb, "t4,t4,t4,t4,t4")
    assert said.startswith("Subscribed") and "(NVIDIA T4, 8k context)" in said, said
    assert await subscribe(sb, "t4, a30, l4, a10, h100 sxm") == "At most 4 GPUs."


async def test_a_typed_count_is_kept_and_summarised_for(sb: Sandbox) -> None:
    said = await subscribe(sb, "t4, 2x a30")
    assert "(NVIDIA T4, 2× NVIDIA A30, 8k context)" in said, said
    preview = await sb.invoke("/daily preview", user=7101, member_permissions=MANAGE_GUILD)
    assert preview.error is None, preview
    names = [f["name"] for f in preview.embeds[0]["fields"]]
    assert names[:2] == ["NVIDIA T4", "2× NVIDIA A30"], names


async def test_no_channel_means_the_channel_it_was_asked_in(sb: Sandbox) -> None:
    reply = await sb.invoke("/daily subscribe gpus:t4", user=7101, member_permissions=MANAGE_GUILD)
    assert reply.error is None, reply
    said = reply.content or ""
    assert said.startswith("Subscribed: the daily summary goes to <#") and "(NVIDIA T4, 8k context)" in said, said
    removed = await sb.invoke("/daily unsubscribe", user=7101, member_permissions=MANAGE_GUILD)
    assert removed.error is None


async def test_a_preview_before_any_subscription_says_whose_summary_it_shows(sb: Sandbox) -> None:
    # It showed an RTX 4090's summary that `/daily subscribe` (no gpus, no server GPU) would refuse to post.
    assert (await sb.invoke("/daily unsubscribe", user=7101, member_permissions=MANAGE_GUILD)).error is None
    example = await sb.invoke("/daily preview", user=7101, member_permissions=MANAGE_GUILD)
    assert example.error is None and (example.content or "").startswith("No subscription yet"), example
    assert "RTX 4090, as an example" in (example.content or "") and "gpus:…" in (example.content or "")
    saved = await sb.invoke("/settings server gpu:a30", user=7101, member_permissions=MANAGE_GUILD)
    assert saved.error is None, saved
    try:
        server = await sb.invoke("/daily preview", user=7101, member_permissions=MANAGE_GUILD)
        assert "this server's GPU" in (server.content or "") and server.embeds[0]["fields"][0]["name"] == "NVIDIA A30"
        await subscribe(sb, "t4")
        subscribed = await sb.invoke("/daily preview", user=7101, member_permissions=MANAGE_GUILD)
        assert not subscribed.content, subscribed.content
    finally:
        await sb.invoke("/settings reset scope:server", user=7101, member_permissions=MANAGE_GUILD)
        await sb.invoke("/daily unsubscribe", user=7101, member_permissions=MANAGE_GUILD)
