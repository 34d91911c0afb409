"""The message catalog and the one rule for printing context lengths."""

from __future__ import annotations

import pytest
from pydantic import BaseModel, Field, ValidationError

from bot.daily.delivery import CatalogChanges, compose
from bot.params import BadValue, parse_tokens, people_text
from bot.render.replies import fit_reply
from bot.render.table import display_width
from bot.render.text import catalog, format_tokens, missing_keys, t
from bot.requests import FitRequest
from bot.service import Service


def test_every_english_message_has_a_chinese_one() -> None:
    assert missing_keys() == {"zh-CN": set()}
    # Chinese text uses full-width punctuation around its own words.
    assert all("(" not in v or "`" in v for v in catalog("zh-CN").values())


def test_bad_value_speaks_the_askers_language() -> None:
    err = BadValue.of("compare.needs_second")
    assert str(err) == "give gpu2 (to compare GPUs) or model2 (to compare models)"
    assert err.text("zh-CN").startswith("请提供 gpu2") and err.text("en-GB") == str(err)
    assert t("zh", "settings.scope.me") == "你的"


# k is 1024 and M is 1024², as `ctx:` reads them; a count that is no whole (or half) number of those is printed
# exactly, and 128,000 stays 128,000 (it is also 125 × 1024, but a card that says it means thousands).
@pytest.mark.parametrize(("tokens", "shown"), [
    (512, "512"), (1000, "1,000"), (1536, "1.5k"), (8192, "8k"), (40960, "40k"), (65536, "64k"), (67072, "65.5k"),
    (128000, "128,000"), (131072, "128k"), (163840, "160k"), (262144, "256k"), (1000000, "1,000,000"),
    (1048576, "1M"), (10115072, "9878k"), (50000, "50,000"), (50944, "50,944"), (51000, "51,000"),
])
def test_context_as_people_type_it(tokens: int, shown: str) -> None:
    assert format_tokens(tokens) == shown


def test_a_shown_context_keeps_the_order_of_the_counts_and_can_be_asked_for() -> None:
    # One convention for every figure: a largest context at or above the asked one never reads below it (it read
    # "50k" asked beside "49k" that holds it, from 1000 for round numbers and 1024 for others), and what is
    # shown, typed back, is the count itself.
    counts = sorted({*range(900, 140_000, 97), *range(0, 10_000_000, 9_973), 50_000, 50_944, 128_000, 10**6})
    shown = [format_tokens(n) for n in counts]
    typed = [parse_tokens(s, allow_zero=True) for s in shown]
    assert typed == sorted(typed)
    assert typed == counts


def test_a_pydantic_error_reaching_a_person_is_worded_by_the_catalog() -> None:
    class Knob(BaseModel):
        rank: int = Field(ge=1)

    with pytest.raises(ValidationError) as caught:
        Knob(rank=0)
    assert people_text(caught.value) == "rank must be at least 1"
    assert people_text(caught.value, "zh-CN") == "rank 须不小于 1"
    assert "Input should" not in people_text(caught.value)


@pytest.mark.parametrize(("locale", "line"), [
    ("en-US", "model 30.5B (3.3B active)"),
    ("zh-CN", "参数量 30.5B（激活 3.3B）"),
])
def test_a_mixture_of_experts_says_its_active_parameters_in_the_askers_language(locale: str, line: str) -> None:
    reply = fit_reply(Service(), FitRequest.of(gpu="rtx 4090", model="qwen3-30b-a3b"), locale=locale)
    description = reply.embeds[0]["description"]
    assert line in description and ("active" in description) == (locale == "en-US")


@pytest.mark.parametrize("locale", ["en-US", "zh-CN"])
def test_the_daily_summary_table_header_lines_up_with_its_rows(locale: str) -> None:
    changes = CatalogChanges(first=True, gpu_count=1, model_count=1)
    reply = compose(Service(), day="2025-06-15", gpu_ids=["nvidia-a30"], ctx=32768, locale=locale, usage=None,
                    changes=changes)
    table = next(f["value"] for f in reply.embeds[0]["fields"] if f["value"].startswith("```"))
    header, *rows = table.strip("`").strip("\n").splitlines()
    assert rows and header.split()[0] == "#"
    # Each column ends where the rows' do: the text before "tok/s" is as wide as before each speed.
    assert {display_width(line) for line in [header, *rows]} == {display_width(rows[0])}


@pytest.mark.parametrize(("locale", "words"), [("en-US", "80 % range (from cross-validation)"),
                                               ("zh-CN", "80% 区间（来自交叉验证）")])
def test_the_daily_summary_states_its_widest_range(locale: str, words: str) -> None:
    changes = CatalogChanges(first=True, gpu_count=1, model_count=1)
    reply = compose(Service(), day="2025-06-15", gpu_ids=["nvidia-a30", "nvidia-t4"], ctx=32768, locale=locale,
                    usage=None, changes=changes)
    assert words in reply.embeds[0]["description"]


@pytest.mark.parametrize("locale", ["en-US", "zh-CN"])
def test_the_gpu_cards_reference_speeds_carry_their_range(locale: str) -> None:
    import re

    from bot.render.replies import gpu_reply
    from bot.requests import GpuRequest

    reply = gpu_reply(Service(), GpuRequest.of(gpu="t4"), locale=locale)
    text = "\n".join(f["value"] for f in reply.embeds[0]["fields"])
    found = re.findall(r"≈ ([\d.]+) tok/s[ (（]+([\d.]+)–([\d.]+)", text)
    assert len(found) == 2, text
    for point, low, high in found:
        assert float(low) < float(point) < float(high)
        # Below 10 tok/s a whole number would fold the range into its point ("5 (4–5)"): one decimal there; a
        # range is rounded as its point is ("11 (9–13)", not "11 (8.8–13)").
        assert all(("." in x) == (float(point) < 10) for x in (point, low, high)), text


@pytest.mark.parametrize(("value", "text"), [(9.94, "9.9"), (9.96, "10"), (10.4, "10"), (123.6, "124")])
def test_a_speed_that_rounds_to_ten_prints_as_a_whole_number(value: float, text: str) -> None:
    from bot.render.text import tps_text

    assert tps_text(value) == text


def test_thousands_are_grouped_as_every_other_count() -> None:
    # "Weights 1909.7 GiB" and "12481 tok/s" stood beside "71,054 with RoPE scaling" and "2,048 GiB of CPU memory".
    from bot.render.memory_figures import parts_adding_up
    from bot.render.text import tps_text
    from estimator.units import GIB, gib_text

    assert (tps_text(12480.7), tps_text(999.6), gib_text(1909.74 * GIB), gib_text(14.26 * GIB)) == (
        "12,481", "1,000", "1,909.7", "14.3")
    assert parts_adding_up([1909.66 * GIB, 0.54 * GIB, 0.9 * GIB], 1911.1 * GIB) == ["1,909.7", "0.5", "0.9"]


@pytest.mark.parametrize(("value", "point", "text"), [(8.84, 10.88, "9"), (50.8, 58.0, "51"), (99.4, 130.0, "99"),
                                                      (10.4, 9.2, "10.4"), (4.44, 5.0, "4.4")])
def test_a_range_end_is_rounded_as_its_point(value: float, point: float, text: str) -> None:
    from bot.render.text import tps_text

    assert tps_text(value, point) == text


@pytest.mark.parametrize(("params_b", "shown"), [
    (8.19, "8.19"), (8.190427, "8.19"), (8.029995, "8.03"), (30.5, "30.5"), (3.3, "3.3"), (0.6, "0.6"),
    (685.0, "685"), (1026.41, "1026"), (999.6, "1000"), (8.0, "8"), (0.135, "0.135"),
])
def test_one_rounding_rule_for_parameter_counts(params_b: float, shown: str) -> None:
    from bot.render.text import params_b_text

    assert params_b_text(params_b) == shown


def test_a_hub_model_built_from_its_config_shows_its_size_as_the_catalog_does() -> None:
    """A config adds up to 8,029,995,008 parameters: "8.03B" like the catalog's Llama 3.1 8B, not "8.02999B"."""
    import json
    from pathlib import Path

    from catalog.huggingface.config import model_from_config

    repo = "meta-llama/Llama-3.1-8B"
    config = json.loads((Path(__file__).parents[1] / "data" / "hf" / "meta-llama__Llama-3.1-8B" / "config.json")
                        .read_text())
    svc = Service()
    svc.extra_models[f"hf:{repo}"] = model_from_config(repo, config)
    for model in (f"hf:{repo}", "llama-3.1-8b"):
        text = fit_reply(svc, FitRequest.of(gpu="t4", model=model), locale="en-US").embeds[0]["description"]
        assert "· model 8.03B" in text, text
    from bot.render.embeds import params_text

    assert params_text("en-US", 30.532122, 3.3) == "30.5B (3.3B active)"
