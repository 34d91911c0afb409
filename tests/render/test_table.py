"""Tables that fit a phone and the rules that shorten names for them."""

from __future__ import annotations

import pytest

from bot.render.table import (
    CODE_BLOCK_MAX,
    Column,
    display_width,
    distinct_gpu_names,
    render_table,
    setup_label,
    short_format_name,
    short_gpu_name,
    short_model_name,
)
from bot.render.text import params_b_text
from catalog.store import load_catalog

CATALOG = load_catalog()


def test_widths_count_cjk_as_two_columns() -> None:
    assert display_width("模型") == 4 and display_width("Qwen3") == 5 and display_width("（）") == 4
    lines = render_table([Column("模型", 6), Column("tok/s", 5, ">")], [["Qwen3", "51"]])
    assert lines == ["模型   tok/s", "Qwen3     51"]


def test_a_table_wider_than_a_phone_is_refused() -> None:
    with pytest.raises(ValueError, match="columns"):
        render_table([Column("x", CODE_BLOCK_MAX + 1)], [["y" * (CODE_BLOCK_MAX + 1)]])


@pytest.mark.parametrize(("model_id", "width", "short"), [
    ("qwen3-8b", 22, "Qwen3-8B"),
    ("nemotron-3-nano-30b-a3b", 22, "Nemotron 3 30B A3B"),
    ("ministral-3-14b", 22, "Ministral 3 14B"),
    ("mistral-7b-instruct-v0.2", 16, "Mistral 7B v0.2"),
    ("llama-3.1-nemotron-70b", 22, "Llama 3.1 Nemotron 70B"),
])
def test_model_names_shorten_to_family_and_size(model_id: str, width: int, short: str) -> None:
    model = CATALOG.model(model_id)
    assert short_model_name(model, width) == short


def test_every_model_name_fits_and_keeps_whole_words() -> None:
    import re

    for model in CATALOG.models:
        for width in (16, 22, 26):
            short = short_model_name(model, width)
            assert display_width(short) <= width, (model.name, short)
            # The size a name lacks is added as every reply writes it ("Kimi K2 1026B", once "Kimi K2 1.03e+03B").
            words = set(re.split(r"[\s_()-]+", model.name)) | {f"{params_b_text(model.params_b)}B"}
            assert all(w in words for w in re.split(r"[\s_()-]+", short) if w), (model.name, short)


@pytest.mark.parametrize(("gpu_id", "short"), [
    ("nvidia-rtx-3090", "RTX 3090"),
    ("nvidia-t4", "T4"),
])
def test_gpu_names_drop_vendor_words(gpu_id: str, short: str) -> None:
    gpu = CATALOG.gpu(gpu_id)
    assert short_gpu_name(gpu) == short
    assert setup_label(gpu, 2, short=True) == f"2× {short}"
    assert setup_label(gpu, 1) == gpu.name


def test_every_gpu_name_fits() -> None:
    for gpu in CATALOG.gpus:
        assert display_width(short_gpu_name(gpu, 20)) <= 20, gpu.name


# The setup column of /whatgpu is 22 to 28 wide (less 3 for "2× "); /compare's chart labels take 16.
NAME_WIDTHS = (16, 19, 20, 21, 22, 24, 25, 28)


@pytest.mark.parametrize("width", NAME_WIDTHS)
def test_no_two_boards_get_the_same_short_name(width: int) -> None:
    names = distinct_gpu_names(CATALOG.gpus, width)
    alike = {n for n in names.values() if list(names.values()).count(n) > 1}
    assert not alike, sorted(alike)
    assert all(display_width(n) <= width for n in names.values())


@pytest.mark.parametrize(("gpu_id", "width", "short"), [
    ("nvidia-rtx-pro-6000-blackwell-max-q", 21, "RTX PRO 6000 Max-Q"),
    ("nvidia-rtx-pro-6000-blackwell-server", 21, "RTX PRO 6000 Server"),
    ("nvidia-rtx-pro-6000-blackwell-max-q", 16, "RTX 6000 Max-Q"),
    ("nvidia-rtx-pro-4000-sff-blackwell", 19, "RTX PRO 4000 SFF"),
    ("nvidia-rtx-5070-ti-laptop", 19, "RTX 5070 Ti Laptop"),
    ("nvidia-rtx-3090", 19, "RTX 3090"),
])
def test_short_names_keep_the_words_that_tell_boards_apart(gpu_id: str, width: int, short: str) -> None:
    gpu = next(g for g in CATALOG.gpus if g.id == gpu_id)
    assert short_gpu_name(gpu, width, CATALOG.gpus) == short
    assert setup_label(gpu, 2, short=True, width=width + 3, among=CATALOG.gpus) == f"2× {short}"


def test_format_names_shorten_by_whole_words_and_stay_distinct() -> None:
    names = {q.id: short_format_name(q, 10) for q in CATALOG.quants}
    assert names["fp8"] == "FP8" and names["exl2-4.0bpw"] == "EXL2 4.0" and names["ud-q4_k_xl"] == "UD-Q4_K_XL"
    assert len(set(names.values())) == len(names), names
    for q in CATALOG.quants:
        assert display_width(names[q.id]) <= 10
        assert set(names[q.id].split()) <= set(q.name.split()), (q.name, names[q.id])  # never "FP8 (W8A"
