"""/models family:… lists that family, matched by its whole name, and names the near ones instead of mixing them in."""

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


@pytest.mark.parametrize(("asked", "meant"), [("qwen3vi", "`Qwen3-VL`"), ("gema 3", "`Gemma 3`")])
def test_a_near_miss_gets_a_did_you_mean(asked: str, meant: str) -> None:
    text = description(asked)
    assert text.startswith(f"0 models · {asked}\nNo family is called {asked}; did you mean ") and meant in text
    assert "没有名为" in description(asked, "zh-CN") and meant in description(asked, "zh-CN")


def test_a_name_near_nothing_says_so() -> None:
    assert "No family is called zzzz; `/models` lists them all" in description("zzzz")


def test_family_names_stay_distinct_when_matched_whole() -> None:
    families = {m.family for m in SVC.catalog.models}
    assert len({family_key(f) for f in families}) == len(families)


def test_one_model_is_one_model() -> None:
    assert description("LLaMA").startswith("1 model · LLaMA")
