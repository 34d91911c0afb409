"""Names people paste for a format or a model: a bit width ('4-bit') is the level it spells, a GGUF repository
named after a catalog model is that model (its ':Q8_0' tag the format), and a tag's format beside another asked
with --quant is overridden out loud, never silently."""

from __future__ import annotations

import json
from typing import Any

import pytest

from bot import cli
from bot.params import level_alias


def fit_json(capsys: pytest.CaptureFixture[str], *argv: str) -> Any:
    assert cli.main(["fit", "--gpu", "t4", *argv, "--json"]) == 0
    return json.loads(capsys.readouterr().out)


def fit_text(capsys: pytest.CaptureFixture[str], *argv: str) -> str:
    assert cli.main(["fit", "--gpu", "t4", *argv]) == 0
    return capsys.readouterr().out


@pytest.mark.parametrize(("typed", "level"), [
    ("4bit", "int4"), ("4-bit", "int4"), ("4 bit", "int4"), ("4BIT", "int4"), ("3-bits", "int3"),
    ("8bit", "int8"), ("8-bit", "int8"), ("16bit", "fp16"), ("16-bit", "fp16"), ("fp16", "fp16"),
])
def test_a_bit_width_is_the_level_it_spells(typed: str, level: str, capsys: pytest.CaptureFixture[str]) -> None:
    got = fit_json(capsys, "--model", "qwen3-8b", "--quant", typed)
    want = fit_json(capsys, "--model", "qwen3-8b", "--quant", level)
    assert [o["quant"] for o in got["options"]] == [o["quant"] for o in want["options"]]


def test_level_alias_leaves_other_names_alone() -> None:
    assert level_alias("q4_k_m") == "q4_k_m" and level_alias("exl2-4.0bpw") == "exl2-4.0bpw"
    assert level_alias("int4") == "int4" and level_alias("4-bit") == "int4"


@pytest.mark.parametrize(("typed", "quants"), [
    ("unsloth/Qwen3-8B-GGUF", ["q4_k_m", "q8_0", "f16"]),
    ("Qwen/Qwen3-8B-GGUF", ["q4_k_m", "q8_0", "f16"]),
    ("bartowski/Qwen_Qwen3-8B-GGUF", ["q4_k_m", "q8_0", "f16"]),
    ("https://huggingface.co/unsloth/Qwen3-8B-GGUF", ["q4_k_m", "q8_0", "f16"]),
    ("hf:unsloth/Qwen3-8B-GGUF", ["q4_k_m", "q8_0", "f16"]),
    ("hf.co/unsloth/Qwen3-8B-GGUF:Q8_0", ["q8_0"]),
    ("hf.co/unsloth/Qwen3-8B-GGUF:UD-Q4_K_XL", ["ud-q4_k_xl"]),
])
def test_a_gguf_repo_named_after_a_catalog_model_is_that_model(typed: str, quants: list[str],
                                                                capsys: pytest.CaptureFixture[str]) -> None:
    data = fit_json(capsys, "--model", typed)
    assert data["model"]["id"] == "qwen3-8b"
    assert [o["quant"] for o in data["options"]] == quants


@pytest.mark.parametrize(("typed", "says"), [
    ("unsloth/Foo-9B-GGUF", "(a GGUF repository: give the model it quantizes by its name, or its original "
                            "repository as hf:org/name)"),
    ("hf.co/unsloth/Qwen3-8B-GGUF:Q9_X", "(its tag Q9_X names no format rigcheck knows: give the model's name and "
                                         "the format with --quant); did you mean Qwen3-8B?"),
])
def test_a_gguf_repo_it_cannot_read_says_what_to_ask_instead(typed: str, says: str,
                                                              capsys: pytest.CaptureFixture[str]) -> None:
    assert cli.main(["fit", "--gpu", "t4", "--model", typed]) == 2
    err = capsys.readouterr().err
    assert err.startswith(f"rigcheck: {typed!r} matches no models ") and err.rstrip().endswith(says), err


def test_a_tags_format_overridden_by_quant_is_said(capsys: pytest.CaptureFixture[str]) -> None:
    out = fit_text(capsys, "--model", "llama3.1:8b-instruct-q4_K_M", "--quant", "Q8_0")
    assert out.splitlines()[-1] == ("The model name's tag asks for Q4_K_M; answering for Q8_0, the format the quant "
                                    "option names.")
    assert "tag asks for" not in fit_text(capsys, "--model", "llama3.1:8b-instruct-q4_K_M", "--quant", "q4_k_m")
    assert "tag asks for" not in fit_text(capsys, "--model", "llama3.1:8b", "--quant", "Q8_0")
    assert cli.main(["fit", "--gpu", "t4", "--model", "llama3.1:8b-instruct-q4_K_M", "--quant", "Q8_0",
                     "--lang", "zh-CN"]) == 0
    assert capsys.readouterr().out.splitlines()[-1] == "模型名的标签指定了 Q4_K_M；按 quant 选项指定的 Q8_0 作答。"


def test_a_prompt_longer_than_the_context_is_said_to_be_capped(capsys: pytest.CaptureFixture[str]) -> None:
    out = fit_text(capsys, "--model", "qwen3-8b", "--ctx", "1k", "--prompt", "4k")
    assert out.splitlines()[-1] == "The prompt of 4k tokens is longer than the 1k context: capped to 1k tokens."
    assert "capped" not in fit_text(capsys, "--model", "qwen3-8b", "--ctx", "8k", "--prompt", "4k")
