"""A format's catalog name shown to a zh-CN user: the name proper (Q3_K_XL, UD-Q4_K_XL) as it is, the words that
describe it in parentheses in Chinese, in refusals' format lists as in replies."""

from __future__ import annotations

import re

import pytest

from bot.params import BadValue
from bot.render.replies import fit_reply
from bot.render.text import FORMAT_WORDS_TABLE, _document, format_label
from bot.requests import FitRequest
from bot.service import Service

SVC = Service()
# A tag in parentheses that is no English to translate: a group size (g128), a scheme (W8A8).
TECHNICAL = re.compile(r"[A-Za-z]?\d+[A-Za-z0-9]*")


def described(name: str) -> str | None:
    m = re.fullmatch(r".+? \((.+)\)", name)
    return m.group(1) if m else None


def test_every_describing_phrase_has_a_translation_and_every_translation_a_phrase() -> None:
    phrases = {d for q in SVC.catalog.quants if (d := described(q.name)) and not TECHNICAL.fullmatch(d)}
    assert phrases  # 'Unsloth Dynamic', 'Q3_K_L with Q8_0 embedding and output'
    assert set(_document("zh-CN")[FORMAT_WORDS_TABLE]) == phrases


def test_the_name_proper_stays_and_english_is_unchanged() -> None:
    assert format_label("UD-Q4_K_XL (Unsloth Dynamic)", "zh-CN") == "UD-Q4_K_XL (Unsloth 动态量化)"
    assert format_label("AWQ INT4 (g128)", "zh-CN") == "AWQ INT4 (g128)"
    assert format_label("Q4_K_M", "zh-CN") == "Q4_K_M"
    for q in SVC.catalog.quants:
        assert format_label(q.name, "en-US") == q.name


@pytest.mark.parametrize(("quant", "engine"), [("bogus", "llama.cpp"), ("UD-Q4_K_XL", "vllm")])
def test_a_refusals_format_list_is_in_the_askers_language(quant: str, engine: str) -> None:
    with pytest.raises(BadValue) as refused:
        SVC.quant(quant, engine)  # type: ignore[arg-type]
    zh = refused.value.text("zh-CN", markdown=True)
    assert "Unsloth Dynamic" not in zh and "embedding and output" not in zh, zh
    assert "UD-Q4_K_XL (Unsloth 动态量化)" in zh
    english = str(refused.value)
    assert "UD-Q4_K_XL (Unsloth Dynamic)" in english


def test_fit_names_the_format_in_the_askers_language() -> None:
    req = FitRequest.of(gpu="4090", model="qwen3-8b", quant="ud-q4_k_xl")
    [field, *_] = fit_reply(SVC, req, locale="zh-CN").embeds[0]["fields"]
    assert field["name"].startswith("UD-Q4_K_XL (Unsloth 动态量化) · ")
    [field, *_] = fit_reply(SVC, req, locale="en-US").embeds[0]["fields"]
    assert field["name"].startswith("UD-Q4_K_XL (Unsloth Dynamic) · ")
