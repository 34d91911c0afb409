"""/models family:… lists that family, matched by its whole name or a maker's word, and names the near ones instead
of mixing them in."""

from __future__ import annotations

import pytest

from bot.render.replies import family_key, models_reply
from bot.requests import ModelsRequest
from bot.service import Service

SVC = Service()


def description(family: str, locale: str = "en-US") -> str:
    reply = models_reply(SVC, ModelsRequest.of(family=family), locale=locale, family_label=family)
    return str(reply.embeds[0]["description"])


@pytest.mark.parametrize("asked", ["qwen3", "Qwen3", "qwen 3"])
def test_a_family_is_matched_whole_not_by_its_first_letters(asked: str) -> None:
    text = description(asked)
    table = text.split("```")[1]
    assert "Qwen3-8B" in table and "Qwen3.5" not in table and "Qwen3-VL" not in table, table
    qwen3 = [m for m in SVC.catalog.models if m.family == "Qwen3"]
    assert text.startswith(f"{len(qwen3)} models · {asked}\n")
    # The near families are named, each in a form `family:` takes.
    assert "Other families: `Qwen3-2507`, `Qwen3-Coder`" in text and "`Qwen3.5`" in text


QWEN = ["Qwen QwQ", "Qwen1.5", "Qwen2", "Qwen2.5", "Qwen2.5 (QwQ)", "Qwen2.5-Coder", "Qwen2.5-Math", "Qwen3",
        "Qwen3-2507", "Qwen3-Coder", "Qwen3-Next", "Qwen3-VL", "Qwen3.5", "Qwen3.6", "Qwen3.8"]
LLAMA = ["LLaMA", "Llama 2", "Llama 3", "Llama 3.1", "Llama 3.1 Nemotron", "Llama 3.2", "Llama 3.3", "Llama 4"]


@pytest.mark.parametrize(("asked", "has", "lacks"), [
    ("qwen", QWEN, ["DeepSeek-R1-Distill (Qwen2.5)", "OpenThinker (Qwen2.5)"]),
    ("Llama", LLAMA, ["Code Llama", "Dolphin (Llama 3.1)"]),
])
def test_a_makers_word_lists_every_family_it_begins(asked: str, has: list[str], lacks: list[str]) -> None:
    families = {m.family for m in SVC.catalog.models}
    assert set(lacks) <= families
    meant = [m for m in SVC.catalog.models if m.family in has]
    reply = models_reply(SVC, ModelsRequest.of(family=asked), locale="en-US", family_label=asked)
    assert not reply.ephemeral
    text = str(reply.embeds[0]["description"])
    assert text.startswith(f"{len(meant)} models · {asked}\n"), text
    # What the word does not begin is named beside, not mixed in; a name it is only inside (TinyLlama) is neither.
    assert all(f"`{f}`" in text for f in lacks) and not any(f"`{f}`" in text for f in has)
    assert "TinyLlama" not in text.split("```")[0] or asked != "Llama"


@pytest.mark.parametrize(("asked", "meant"), [("qwen3vi", "`Qwen3-VL`"), ("gema 3", "`Gemma 3`"),
                                             ("qwen9", "`Qwen3`")])
def test_a_near_miss_gets_a_private_did_you_mean(asked: str, meant: str) -> None:
    # A filter nothing matches is the asker's mistake: answered privately, never as a public "0 models" listing.
    reply = models_reply(SVC, ModelsRequest.of(family=asked), locale="en-US", family_label=asked)
    assert reply.ephemeral and reply.embeds[0]["title"] == "No models match"
    text = description(asked)
    assert text.startswith(f"No models match family {asked}.\n\nDid you mean: ") and meant in text
    assert "0 models" not in text and "```" not in text
    assert "没有属于" in description(asked, "zh-CN") and meant in description(asked, "zh-CN")


def test_a_name_near_nothing_says_so() -> None:
    assert description("zzzz") == "No models match family zzzz; `/models` without `family:` lists every family."


@pytest.mark.parametrize(("family", "said"), [
    (None, "No model has at most 0.1B parameters; the smallest is SmolLM2 135M (0.135B)."),
    ("qwen3", "No qwen3 model has at most 0.1B parameters; its smallest is Qwen3-0.6B (0.6B)."),
])
def test_a_size_nothing_is_under_says_what_the_smallest_is(family: str | None, said: str) -> None:
    reply = models_reply(SVC, ModelsRequest.of(family=family, max_params=0.1), locale="en-US", family_label=family)
    assert reply.ephemeral and reply.embeds[0]["description"] == said


def test_family_names_stay_distinct_when_matched_whole() -> None:
    families = {m.family for m in SVC.catalog.models}
    assert len({family_key(f) for f in families}) == len(families)


def test_one_model_is_one_model() -> None:
    assert description("Codestral").startswith("1 model · Codestral")


def test_a_word_inside_another_is_not_a_near_family() -> None:
    text = description("phi")
    assert "Dolphin" not in text.split("```")[0], text
