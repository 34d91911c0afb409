"""`rigcheck …` given input it cannot use: one line on stderr in the language asked, status 2, never a usage dump,
a traceback, an exception's class name or a Python repr; `batch` answers every input line, in order."""

from __future__ import annotations

import io
import json
import re
import socket
from pathlib import Path
from typing import Any

import pytest

from bot import cli


def refused(argv: list[str], capsys: pytest.CaptureFixture[str]) -> str:
    """The one line `argv` is refused with (status 2, nothing on stdout)."""
    try:
        code = cli.main(argv)
    except SystemExit as stop:
        code = int(stop.code or 0)
    out, err = capsys.readouterr()
    assert (code, out) == (2, ""), (code, out, err)
    assert err.count("\n") == 1 and err.startswith("rigcheck: "), err
    assert "usage:" not in err and "Traceback" not in err and "Error" not in err, err
    return err.rstrip("\n")


@pytest.mark.parametrize(("argv", "line"), [
    (["fit", "--gpu", "t4", "--model", "qwen3-8b", "--ctx", ""],
     "rigcheck: ctx must be a token count like 8192, 32k or 1M (got '')"),
    (["fit", "--gpu", "t4", "--model", "qwen3-8b", "--ctx", "1.5"],
     "rigcheck: ctx must be a whole number of tokens, like 8192 or 32k (got '1.5')"),
    (["fit", "--gpu", "t4", "--model", "qwen3-8b", "--kv", ""], "rigcheck: kv is missing"),
    (["fit", "--gpu", "t4", "--model", "qwen3-8b", "--gpus", "1.5"], "rigcheck: gpus must be a whole number"),
    (["rank", "--gpu", "t4", "--gpus", "two"], "rigcheck: gpus must be a whole number"),
    (["rank", "--gpu", "t4", "--sort", "bogus"], "rigcheck: sort must be one of quality, speed, size"),
    (["whatgpu", "--model", "qwen3-8b", "--max-gpus", "0"], "rigcheck: max_gpus must be between 1 and 8 (got 0)"),
    # As `fit --gpu "rtx 4090" --model llama-2-7b --ctx 64k` refuses it; whatgpu once listed 156 setups.
    (["whatgpu", "--model", "llama-2-7b", "--ctx", "64k"],
     "rigcheck: 64k is past Llama 2 7B's longest documented context (4k); ask for at most 4k"),
    (["fit", "--gpu", "rtx 4090", "--model", "llama-2-7b", "--ctx", "64k"],
     "rigcheck: 64k is past Llama 2 7B's longest documented context (4k); ask for at most 4k"),
    (["gpu", "--gpu", "8x h100 nvl", "--gpus", "2"],
     "rigcheck: “8x h100 nvl” says 8 GPUs but `gpus:` says 2; give the count once"),
    (["finetune", "--gpu", "4090", "--model", "qwen3-8b", "--lora-dropout", "nan"],
     "rigcheck: lora_dropout must be a number in [0, 1) (got NaN)"),
    (["finetune", "--gpu", "4090", "--model", "qwen3-8b", "--regime", "bf16", "--precision", "fp32"],
     "rigcheck: regime bf16 means precision bf16, but precision is fp32: give only one of them"),
    (["catalog", "show", "zzz"], "rigcheck: 'zzz' matches no GPU, model or format"),
    (["catalog", "show", "rtx 4900"],
     "rigcheck: 'rtx 4900' matches no GPU, model or format; did you mean NVIDIA GeForce RTX 4090, "),
    (["--lang", "xx", "fit", "--gpu", "t4", "--model", "qwen3-8b"],
     "rigcheck: unknown language 'xx'; --lang takes en, zh-CN"),
    (["fit", "--gpu", "t4", "--model", "qwen3-8b", "--lang", "klingon"],
     "rigcheck: unknown language 'klingon'; --lang takes en, zh-CN"),
])
def test_bad_input_is_one_plain_line(argv: list[str], line: str, capsys: pytest.CaptureFixture[str]) -> None:
    said = refused(argv, capsys)
    assert said == line or (line.endswith(", ") and said.startswith(line)), said


@pytest.mark.parametrize(("argv", "start"), [
    (["rank", "--gpu", "t4", "--limit", "0"], "rigcheck: argument --limit: must be at least 1 (got 0)"),
    (["fit", "--gpu", "t4"], "rigcheck: the following arguments are required: --model"),
    (["fit", "--gpu", "t4", "--model", "qwen3-8b", "--colour", "red"], "rigcheck: unrecognized arguments: --colour"),
    (["fitt"], "rigcheck: argument command: invalid choice: 'fitt'"),
])
def test_what_the_flag_parser_refuses_is_one_line_too(argv: list[str], start: str,
                                                      capsys: pytest.CaptureFixture[str]) -> None:
    said = refused(argv, capsys)
    assert said.startswith(start) and said.endswith("--help`)"), said


@pytest.mark.parametrize(("argv", "words"), [
    (["--lang", "zh-CN", "rank", "--gpu", "t4", "--sort", "bogus"], "sort 须为 quality, speed, size 之一"),
    (["--lang", "zh-CN", "whatgpu", "--model", "qwen3-8b", "--max-gpus", "9"], "max_gpus 须在 1 到 8 之间"),
    (["--lang", "zh-CN", "catalog", "show", "zzz"], "不对应任何显卡、模型或量化格式"),
    (["--lang", "zh-CN", "finetune", "--gpu", "4090", "--model", "qwen3-8b", "--lora-dropout", "nan"],
     "lora_dropout 须为 [0, 1) 之间的数"),
    (["--lang", "zh-CN", "fit", "--gpu", "t4"], "（参见 `rigcheck fit --help`）"),
])
def test_the_refusals_follow_lang(argv: list[str], words: str, capsys: pytest.CaptureFixture[str]) -> None:
    assert words in refused(argv, capsys)


@pytest.mark.parametrize("lang", ["en", "en-US", "zh-CN", "zh_CN", "ZH-cn", "zh"])
def test_lang_takes_each_language_as_its_tags_spell_it(lang: str, capsys: pytest.CaptureFixture[str]) -> None:
    assert cli.main(["--lang", lang, "fit", "--gpu", "t4", "--model", "qwen3-8b", "--quant", "q4_k_m"]) == 0
    assert capsys.readouterr().err == ""


# --- Hugging Face ----------------------------------------------------------------------------------------


@pytest.fixture
def no_hub(monkeypatch: pytest.MonkeyPatch, tmp_path: Path) -> None:
    """A Hub base URL on a loopback port nothing listens on: every connection is refused, as with no network."""
    with socket.socket() as sock:
        sock.bind(("127.0.0.1", 0))
        port = sock.getsockname()[1]
    monkeypatch.setenv("RIGCHECK_HF_BASE_URL", f"http://127.0.0.1:{port}")
    monkeypatch.setenv("RIGCHECK_DATA_DIR", str(tmp_path))


@pytest.mark.usefixtures("no_hub")
@pytest.mark.parametrize(("argv", "line"), [
    (["fit", "--gpu", "4090", "--model", "hf:nobody/unlisted"],
     "rigcheck: could not connect to Hugging Face; try again later"),
    (["catalog", "import-hf", "nobody/unlisted"], "rigcheck: could not connect to Hugging Face; try again later"),
    (["--lang", "zh-CN", "fit", "--gpu", "4090", "--model", "hf:nobody/unlisted"],
     "rigcheck: 无法连接 Hugging Face，请稍后再试"),
])
def test_an_unreachable_hub_is_said_plainly(argv: list[str], line: str, capsys: pytest.CaptureFixture[str]) -> None:
    assert refused(argv, capsys) == line


@pytest.mark.usefixtures("no_hub")
@pytest.mark.parametrize("typed", ["hf:Qwen/Qwen3-8B", "hf:qwen/qwen3-8b"])
def test_a_repo_the_catalog_lists_needs_no_hub(typed: str, capsys: pytest.CaptureFixture[str]) -> None:
    assert cli.main(["fit", "--gpu", "4090", "--model", typed, "--quant", "q4_k_m", "--json"]) == 0
    out, err = capsys.readouterr()
    assert err == "" and json.loads(out)["model"]["id"] == "qwen3-8b"
    assert cli.main(["whatgpu", "--model", typed, "--json"]) == 0
    assert json.loads(capsys.readouterr().out)["model"]["id"] == "qwen3-8b"


# --- batch -----------------------------------------------------------------------------------------------


def batch(lines: list[Any], monkeypatch: pytest.MonkeyPatch, capsys: pytest.CaptureFixture[str],
          end: str = "\n") -> list[dict[str, Any]]:
    text = "\n".join(line if isinstance(line, str) else json.dumps(line) for line in lines) + end
    monkeypatch.setattr("sys.stdin", io.StringIO(text))
    assert cli.main(["batch"]) == 0
    out, err = capsys.readouterr()
    assert err == ""
    return [json.loads(line) for line in out.splitlines()]


GOOD = {"gpu": "t4", "model": "qwen3-8b", "quant": "q4_k_m"}


def test_every_input_line_gets_its_answer_on_the_same_line(monkeypatch: pytest.MonkeyPatch,
                                                           capsys: pytest.CaptureFixture[str]) -> None:
    answers = batch([GOOD, "", "   \t", {**GOOD, "ctx": "16k"}, "", ""], monkeypatch, capsys, end="\n\n")
    assert len(answers) == 4, "blank lines at the end ask nothing; every other line is answered"
    assert answers[0]["ctx"] == 8192 and answers[3]["ctx"] == 16384
    assert answers[1]["error"].startswith("line 2 is empty; give one query a line, e.g. {")
    assert answers[2]["error"].startswith("line 3 is empty")


@pytest.mark.parametrize(("value", "words"), [
    ({"ctx": True}, "ctx must be a token count like 8192, 32k or 1M (got true)"),
    ({"ctx": 1.5}, "ctx must be a whole number of tokens, like 8192 or 32k (got 1.5)"),
    ({"ctx": "1.5"}, "ctx must be a whole number of tokens"),
    ({"ctx": 0}, "ctx must be a positive number of tokens"),
    ({"ctx": 10**400}, "ctx is too large"),  # no float holds it
    ({"ctx": ""}, "ctx must be a token count"),
    ({"prompt": False}, "prompt must be a token count"),
    ({"gpus": True}, "gpus must be a whole number"),
    ({"model": ["x"]}, 'model must be text, such as a name in quotes (got ["x"])'),
    ({"gpu": 4090}, "gpu must be text, such as a name in quotes (got 4090)"),
    ({"quant": {"q": 4}}, 'quant must be text, such as a name in quotes (got {"q": 4})'),
    ({"engine": 1}, "engine must be text"),
])
def test_a_value_of_the_wrong_kind_is_refused_not_read_as_something_else(
        value: dict[str, Any], words: str, monkeypatch: pytest.MonkeyPatch,
        capsys: pytest.CaptureFixture[str]) -> None:
    (answer,) = batch([{**GOOD, **value}], monkeypatch, capsys)
    assert set(answer) == {"error"} and answer["error"].startswith(f"line 1: {words}"), answer
    assert "['" not in answer["error"] and "True" not in answer["error"]


def test_every_error_line_names_its_input_line(monkeypatch: pytest.MonkeyPatch,
                                               capsys: pytest.CaptureFixture[str]) -> None:
    lines = [GOOD, "", {"gpu": "t4", "model": "zzz"}, {**GOOD, "contex": 1}, "junk", {**GOOD, "quant": "bogus"},
             {"finetune": {"gpu": "t4"}}, {**GOOD, "gpus": 9}]
    answers = batch(lines, monkeypatch, capsys)
    assert "error" not in answers[0] and len(answers) == len(lines)
    for number, answer in enumerate(answers[1:], start=2):
        assert re.match(rf"line {number}[ :]", answer["error"]), answer
    assert answers[2]["error"] == "line 3: 'zzz' matches no models"
    assert answers[6]["error"] == "line 7: finetune needs gpu and model"


def test_a_whole_number_written_with_a_point_is_still_that_number(monkeypatch: pytest.MonkeyPatch,
                                                                  capsys: pytest.CaptureFixture[str]) -> None:
    (answer,) = batch([{**GOOD, "ctx": 4096.0}], monkeypatch, capsys)
    assert answer["ctx"] == 4096
