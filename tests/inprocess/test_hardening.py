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


async def test_models_family_is_bounded_and_escaped_in_the_embed(sb: Sandbox) -> None:
    family = "[click me](https://evil.example/x) @everyone " + "A" * 4000
    reply = await sb.driver.invoke_raw("models", [opt("family", family)])
    assert reply.error is None and reply.ephemeral  # no family is called that: a private answer
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


# --- what a person typed, repeated in a refusal ------------------------------------------------------------

ESCAPE = re.compile(r"\\(.)")


def shown(text: str) -> str:
    """The text as Discord shows it: a backslash before a character shows the bare character."""
    return ESCAPE.sub(r"\1", text)


def live_markup(text: str) -> str:
    """What is left that Discord would read as markup once every escaped character is taken out."""
    return "".join(c for c in ESCAPE.sub("", text) if c in "`*_~|[<")


@pytest.mark.parametrize(("options", "typed", "title"), [
    ([opt("gpu", "T4"), opt("model", "a` **x** `b")], "a` **x** `b", "Unknown model"),
    ([opt("gpu", "```x"), opt("model", "qwen3-8b")], "```x", "Unknown GPU"),
    ([opt("gpu", "||x|| ~~y~~ __z__"), opt("model", "qwen3-8b")], "||x|| ~~y~~ __z__", "Unknown GPU"),
    ([opt("gpu", "[click](https://evil.example)"), opt("model", "qwen3-8b")], "[click](https://evil.example)",
     "Unknown GPU"),
])
async def test_a_name_not_found_is_repeated_as_typed_and_cannot_break_out(
        sb: Sandbox, options: list[dict[str, Any]], typed: str, title: str) -> None:
    reply = await sb.driver.invoke_raw("fit", options)
    assert_private_and_readable(reply, title)
    description = reply.embeds[0]["description"]
    sentence = description.splitlines()[0]
    assert shown(sentence) == f"“{typed}” is not in the catalog.", sentence
    assert live_markup(sentence) == "", sentence
    assert "https://" not in description, "the echo must not form a link"


async def test_a_refusal_in_chinese_escapes_the_same_way(sb: Sandbox) -> None:
    reply = await sb.driver.invoke_raw("fit", [opt("gpu", "T4"), opt("model", "a` **x** `b")], locale="zh-CN")
    sentence = reply.embeds[0]["description"].splitlines()[0]
    assert shown(sentence) == "“a` **x** `b”不在目录中。" and live_markup(sentence) == "", sentence


@pytest.mark.parametrize(("options", "typed"), [
    ([opt("gpu", "T4"), opt("model", "qwen3-8b"), opt("quant", "**q**_x_")], "'**q**_x_'"),
    ([opt("gpu", "T4"), opt("model", "qwen3-8b"), opt("ctx", "`lots`")], "'`lots`'"),
])
async def test_a_bad_value_is_repeated_as_typed_and_cannot_break_out(
        sb: Sandbox, options: list[dict[str, Any]], typed: str) -> None:
    reply = await sb.driver.invoke_raw("fit", options)
    description = assert_private_and_readable(reply)
    assert typed in shown(description), description
    assert live_markup(description.split("(got ")[-1].split(";")[0]) == "" and "**q**" not in description


@pytest.mark.parametrize("typed", ["@everyone", "@here x", "<@123456789012345678>", "<@&123456789012345678>"])
async def test_mentions_in_a_name_not_found_are_made_inert(sb: Sandbox, typed: str) -> None:
    reply = await sb.driver.invoke_raw("fit", [opt("gpu", "T4"), opt("model", typed)])
    description = reply.embeds[0]["description"]
    assert "@everyone" not in description and "@here" not in description, description
    assert re.search(r"(?<!\\)<@", description) is None, "an escaped '<' shows the text, not a mention"
