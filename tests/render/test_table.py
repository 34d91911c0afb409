"""Tables that fit a phone and the rules that shorten names for them."""

from __future__ import annotations

import pytest

from bot.render.table import (
    CODE_BLOCK_MAX,
    Column,
    display_width,
    render_table,
    setup_label,
    short_gpu_name,
    short_model_name,
)
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
            words = set(re.split(r"[\s_()-]+", model.name)) | {f"{model.params_b:.3g}B"}
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
