"""Probes that once failed, replayed against the real bot process: every bad option gets a private,
readable answer before anything public happens, and nothing the bot posts can ping or link."""

from __future__ import annotations

import re
import sys
from collections.abc import AsyncIterator
from typing import Any

import pytest
import pytest_asyncio

from bot.sandbox import Sandbox
from bot.sandbox.models import Reply

pytestmark = [pytest.mark.e2e, pytest.mark.asyncio(loop_scope="module")]


@pytest_asyncio.fixture(loop_scope="module", scope="module")
async def sandbox(tmp_path_factory: pytest.TempPathFactory) -> AsyncIterator[Sandbox]:
    data_dir = tmp_path_factory.mktemp("botdata")
    async with Sandbox() as sb:
        await sb.start_bot([sys.executable, "-m", "bot"], env={
            "RIGCHECK_DATA_DIR": str(data_dir), "RIGCHECK_HTTP_ENABLED": "false",
            "RIGCHECK_GUILD_READY_TIMEOUT": "0.2"}, ready_timeout=60)
        yield sb


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
        sandbox: Sandbox, command: str, options: list[dict[str, Any]], words: list[str]) -> None:
    reply = await sandbox.driver.invoke_raw(command, options)
    assert_private_and_readable(reply, *words)


async def test_models_family_is_bounded_and_escaped_in_the_public_embed(sandbox: Sandbox) -> None:
    family = "[click me](https://evil.example/x) @everyone " + "A" * 4000
    reply = await sandbox.driver.invoke_raw("models", [opt("family", family)])
    assert reply.error is None and not reply.ephemeral
    description = reply.embeds[0]["description"]
    assert "A" * 60 not in description, "the echo must be bounded"
    assert re.search(r"(?<!\\)\[click me\]\(", description) is None and "\\[click me]" in description
    assert "@everyone" not in description


async def test_mentions_in_the_echo_are_made_inert(sandbox: Sandbox) -> None:
    reply = await sandbox.driver.invoke_raw("models", [opt("family", "@everyone")])
    assert "@everyone" not in reply.embeds[0]["description"]


async def test_every_message_the_bot_sends_disables_mentions(sandbox: Sandbox) -> None:
    reply = await sandbox.invoke("/help")
    bodies = [r.json_body for r in reply.requests if isinstance(r.json_body, dict)]
    datas = [b.get("data", b) for b in bodies]
    assert datas and all(d.get("allowed_mentions") == {"parse": []} for d in datas), datas
