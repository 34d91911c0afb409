"""Probes that once failed, replayed against the real bot: every bad option gets a private,
readable answer before anything public happens, and nothing the bot posts can ping or link."""

from __future__ import annotations

import re
from typing import Any

import pytest

from bot.sandbox import Sandbox
from bot.sandbox.models import Reply

pytestmark = pytest.mark.asyncio(loop_scope="module")


def opt(name: str, value: Any) -> dict[str, Any]:
    kind = 4 if isinstance(value, int) and not isinstance(value, bool) else 10 if isinstance(value, float) else 3
    return {"name": name, "type": kind, "value": value}


def assert_private_and_readable(reply: Reply, *words: str) -> str:
    assert reply.error is None, reply.error
    assert reply.ephemeral, "an error reply must be visible only to the asker"
    assert not reply.deferred, "the option must be checked before a public 'thinking…' appears"
    text = " ".join([reply.embeds[0].get("title", ""), reply.embeds[0].get("description", "")])
    assert "validation error" not in text and "pydantic" not in text and "Failed to convert" not in text, text
    for word in words:
        assert word in text, text
    return text


@pytest.mark.parametrize(("command", "options", "words"), [
    ("rank", [opt("gpu", "a30"), opt("quant", "nonsense")], ["quantization"]),
    ("rank", [opt("gpu", "a30"), opt("sort", "bogus")], ["sort must be one of"]),
    ("rank", [opt("gpu", "a30"), opt("gpus", 9)], ["gpus must be between 1 and 8"]),
    ("rank", [opt("gpu", "a30"), opt("kv", "f64")], ["kv must be one of"]),
    ("whatgpu", [opt("model", "qwen3-8b"), opt("quant", "nonsense")], ["quantization"]),
    ("whatgpu", [opt("model", "qwen3-8b"), opt("min_tps", -5.0)], ["min_tps must be between"]),
    ("fit", [opt("gpu", "t4"), opt("model", "qwen3-8b"), opt("batch", 0)], ["batch must be between 1 and 256"]),
    ("fit", [opt("gpu", "t4"), opt("model", "qwen3-8b"), opt("batch", -4)], ["batch must be between 1 and 256"]),
    ("fit", [opt("gpu", "t4"), opt("model", "qwen3-8b"), opt("gpus", 0)], ["gpus must be between 1 and 8"]),
    ("finetune", [opt("gpu", "t4"), opt("model", "qwen3-8b"), opt("method", "bogus")], ["method must be one of"]),
    ("finetune", [opt("gpu", "t4"), opt("model", "qwen3-8b"), opt("batch", 0)], ["batch must be between 1 and 128"]),
    ("gpus", [opt("vendor", "<@123>")], ["vendor must be one of"]),
])
async def test_bad_options_are_refused_privately_before_any_defer(
        sb: Sandbox, command: str, options: list[dict[str, Any]], words: list[str]) -> None:
    reply = await sb.driver.invoke_raw(command, options)
    assert_private_and_readable(reply, *words)


async def test_models_family_is_bounded_and_escaped_in_the_public_embed(sb: Sandbox) -> None:
    family = "[click me](https://evil.example/x) @everyone " + "A" * 4000
    reply = await sb.driver.invoke_raw("models", [opt("family", family)])
    assert reply.error is None and not reply.ephemeral
    description = reply.embeds[0]["description"]
    assert "A" * 60 not in description, "the echo must be bounded"
    assert re.search(r"(?<!\\)\[click me\]\(", description) is None and "\\[click me]" in description
    assert "@everyone" not in description


async def test_mentions_in_the_echo_are_made_inert(sb: Sandbox) -> None:
    reply = await sb.driver.invoke_raw("models", [opt("family", "@everyone")])
    assert "@everyone" not in reply.embeds[0]["description"]


async def test_every_message_the_bot_sends_disables_mentions(sb: Sandbox) -> None:
    reply = await sb.invoke("/help")
    bodies = [r.json_body for r in reply.requests if isinstance(r.json_body, dict)]
    datas = [b.get("data", b) for b in bodies]
    assert datas and all(d.get("allowed_mentions") == {"parse": []} for d in datas), datas
