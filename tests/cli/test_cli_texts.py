"""`rigcheck … --lang`: the terminal's tables and refusals come from the message catalog, in English unless
asked otherwise, with columns that line up in Chinese too; `--json` is the same in every language."""

from __future__ import annotations

import argparse
import re
from collections.abc import Iterator
from pathlib import Path

import pytest

from bot import cli
from bot.cli.main import build_parser
from bot.render.table import display_width
from bot.render.text import DEFAULT_LOCALE, LOCALES, cli_help_texts
from bot.requests import FitRequest
from bot.service import Service
from estimator.units import GIB, MIB

FIT = ["fit", "--gpu", "t4", "--model", "qwen3-8b"]


def run(argv: list[str], capsys: pytest.CaptureFixture[str]) -> tuple[int, str, str]:
    code = cli.main(argv)
    out, err = capsys.readouterr()
    return code, out, err


def table_lines(out: str) -> list[str]:
    """The header, the dashes and the rows of the one table in `out` (the line above it is the title)."""
    lines = out.splitlines()
    dashes = next(i for i, line in enumerate(lines) if line and set(line) <= {"-", " "})
    return lines[dashes - 1:]


def test_the_fit_table_is_english_by_default(capsys: pytest.CaptureFixture[str]) -> None:
    code, out, _ = run(FIT, capsys)
    assert code == 0
    assert out.splitlines()[0].startswith("Qwen3-8B (8.19B) on 1× NVIDIA T4 — llama.cpp, ctx 8k, prompt 2048, KV f16")
    header = table_lines(out)[0].split()
    assert header[:5] == ["format", "verdict", "weights", "GiB", "KV"]
    assert " RoPE-scaled)" in out


def test_the_fit_table_in_chinese_lines_up_as_a_terminal_shows_it(capsys: pytest.CaptureFixture[str]) -> None:
    code, out, err = run([*FIT, "--lang", "zh-CN"], capsys)
    assert code == 0 and err == ""
    assert out.splitlines()[0] == "Qwen3-8B（8.19B）在 1× NVIDIA T4 上 — llama.cpp，上下文 8k，提示词 2048，KV f16"
    lines = table_lines(out)
    assert lines[0].split()[:4] == ["量化", "结论", "权重", "GiB"] and "首字延迟" in lines[0]
    # Padded by terminal columns, every line (the last column padded too) is as wide as the dashes.
    assert {display_width(line) for line in lines} == {len(lines[1])}
    verdicts = {line.split()[1] for line in lines[2:]}
    assert verdicts <= {"可运行", "勉强", "显存不足"} and "显存不足" in verdicts  # F16 does not fit a T4
    assert "RoPE 缩放后" in out and "RoPE-scaled" not in out


def test_a_rope_scaled_context_is_named_only_where_it_says_more(capsys: pytest.CaptureFixture[str]) -> None:
    """F16 Qwen3-8B on a T4 fits 623 tokens natively and with RoPE scaling alike: one figure, as the embed shows it."""
    code, out, _ = run(FIT, capsys)
    assert code == 0
    f16 = next(line for line in table_lines(out) if line.startswith("F16"))
    assert f16.split()[-1] == "623" and "RoPE" not in f16
    q4 = next(line for line in table_lines(out) if line.startswith("Q4_K_M"))
    assert "RoPE-scaled)" in q4


def test_lang_may_come_before_or_after_the_command(capsys: pytest.CaptureFixture[str]) -> None:
    argv = ["rank", "--gpu", "a30", "--ctx", "32k", "--limit", "3"]
    _, before, _ = run(["--lang", "zh-CN", *argv], capsys)
    _, after, _ = run([*argv, "--lang", "zh-CN"], capsys)
    assert before == after
    assert before.splitlines()[0] == "1× NVIDIA A30 上 32k 上下文的最佳模型（按质量排序）"


@pytest.mark.parametrize("argv", [
    FIT,
    ["rank", "--gpu", "a30", "--limit", "3"],
    ["gpu", "--gpu", "t4"],
    ["whatgpu", "--model", "qwen3-32b", "--limit", "3"],
    ["finetune", "--gpu", "4090", "--model", "llama-3.1-8b", "--method", "lora"],
])
def test_json_is_the_same_in_every_language(argv: list[str], capsys: pytest.CaptureFixture[str]) -> None:
    _, english, _ = run([*argv, "--json"], capsys)
    _, chinese, _ = run([*argv, "--json", "--lang", "zh-CN"], capsys)
    assert english == chinese and english.startswith("{")


def _fit_rows(out: str) -> list[list[str]]:
    """The table's rows split at its two-space column gaps (a cell such as '~36 (29–42)' holds single spaces)."""
    return [re.split(r"\s{2,}", line.strip()) for line in table_lines(out)[2:]]


def test_a_total_that_prints_as_the_usable_memory_says_by_how_much_it_misses(
        capsys: pytest.CaptureFixture[str]) -> None:
    """One token past F16's largest context on a T4 misses by a fraction of a MiB: '15.00 / 15.00' beside
    'does not fit' read as a contradiction; the cell says by how much, in /fit's words."""
    svc = Service()
    req = FitRequest.of(gpu="t4", model="qwen3-8b", quant="f16")
    over_ctx = svc.fit(req).options[0].max_ctx + 1
    memory = svc.fit(FitRequest.of(gpu="t4", model="qwen3-8b", quant="f16", ctx=over_ctx)).options[0].memory
    mib = (memory.total_bytes - memory.usable_bytes) / MIB
    assert 0 < mib < 5, "the case needs a miss that rounds away at two decimals"
    argv = ["fit", "--gpu", "t4", "--model", "qwen3-8b", "--quant", "f16", "--ctx", str(over_ctx)]
    _, out, _ = run(argv, capsys)
    row = _fit_rows(out)[0]
    assert row[1] == "does not fit" and row[5] == f"15.00 / 15.00 ({mib:.1f} MiB more than usable)", row
    _, out, _ = run([*argv, "--lang", "zh-CN"], capsys)
    assert f"15.00 / 15.00（比可用显存多 {mib:.1f} MiB）" in out
    _, out, _ = run(FIT, capsys)
    assert "more than usable" not in out  # F16's 16.05 / 15.00 says it already


def test_the_fit_table_parts_add_up_to_its_total(capsys: pytest.CaptureFixture[str]) -> None:
    result = Service().fit(FitRequest.of(gpu="t4", model="acereason-nemotron-7b"))
    q4 = next(o.memory for o in result.options if o.quant.id == "q4_k_m")
    alone = sum(round(b / GIB, 2) for b in (q4.weights_bytes, q4.kv_cache_bytes, q4.overhead_bytes))
    assert round(alone, 2) != round(q4.total_bytes / GIB, 2), "the case needs parts that miss when rounded alone"
    for argv in (FIT, ["fit", "--gpu", "t4", "--model", "acereason-nemotron-7b"]):
        _, out, _ = run(argv, capsys)
        for row in _fit_rows(out):
            weights, kv, runtime = (round(float(c) * 100) for c in row[2:5])
            assert weights + kv + runtime == round(float(row[5].split(" / ")[0]) * 100), row


def test_a_fine_tuning_answer_in_chinese(capsys: pytest.CaptureFixture[str]) -> None:
    code, out, _ = run(["finetune", "--gpu", "3090", "--model", "qwen3-32b", "--lang", "zh-CN"], capsys)
    assert code == 0
    first = out.splitlines()[0]
    assert first.startswith("在 1× NVIDIA GeForce RTX 3090 上对 Qwen3-32B 做 qlora 微调：放不下（每块显卡需 ")
    terms = [line.split()[0] for line in out.splitlines()[2:] if line.endswith(" GiB") and line.startswith("  ")]
    # The parts the peak holds come first (the gradients, made after the loss's peak, are named apart).
    assert terms[:3] == ["权重", "可训练参数", "优化器状态"]
    assert "  峰值时（" in out and "峰值时不占用（训练步骤的其他时刻）：" in out
    assert "  最大序列长度 " in out and "largest" not in out and "GiB usable" not in out


def test_a_name_the_catalog_does_not_know_is_refused_in_the_language_asked(
        capsys: pytest.CaptureFixture[str]) -> None:
    code, out, err = run(["fit", "--gpu", "h100", "--model", "qwen3-8b", "--lang", "zh-CN"], capsys)
    assert code == 2 and out == ""
    assert err.startswith("rigcheck: 'h100' 匹配到多款显卡；你是否想找：NVIDIA H100") and err.count("\n") == 1
    assert "、" in err, "the suggestions are listed the Chinese way"
    code, _, err = run(["fit", "--gpu", "h100", "--model", "qwen3-8b"], capsys)
    assert err.startswith("rigcheck: 'h100' matches several gpus; did you mean NVIDIA H100")


def test_a_refusal_worded_by_the_catalog_follows_lang(capsys: pytest.CaptureFixture[str]) -> None:
    code, _, err = run([*FIT, "--ctx", "lots", "--lang", "zh-CN"], capsys)
    assert code == 2 and err.startswith("rigcheck: ctx 须为 token 数")
    code, _, err = run(["catalog", "show", "--lang", "zh-CN"], capsys)
    assert code == 2 and err.startswith("rigcheck: catalog show 需要显卡、模型或量化格式的 ID")


def _help_texts(parser: argparse.ArgumentParser) -> Iterator[str]:
    """Every description, epilog and help a person reads in `--help`, the subcommands' included; argparse's own
    (-h's) and texts already worded by the message catalog (--lang's) left out."""
    own = {"show this help message and exit"}
    if parser.description:
        yield parser.description
    if parser.epilog:
        yield parser.epilog
    for action in parser._actions:
        if isinstance(action.help, str) and action.help not in own and "--lang" not in action.option_strings:
            yield action.help
        if isinstance(action, argparse._SubParsersAction):
            yield from (c.help for c in action._choices_actions if isinstance(c.help, str))
            for subparser in action.choices.values():
                yield from _help_texts(subparser)


def test_every_help_text_is_translated_and_every_translation_is_used() -> None:
    english = set(_help_texts(build_parser()))
    assert len(english) > 60
    for loc in LOCALES:
        if loc == DEFAULT_LOCALE:
            assert cli_help_texts(loc) == {}  # English is the definitions' own text
            continue
        assert english - set(cli_help_texts(loc)) == set(), loc
        assert set(cli_help_texts(loc)) - english == set(), loc
        assert not any("%" in text for text in cli_help_texts(loc).values()), "argparse formats help with %"


@pytest.mark.parametrize("argv", [["--lang", "zh-CN", "fit", "--help"], ["fit", "--help", "--lang", "zh-CN"]])
def test_help_in_chinese(argv: list[str], capsys: pytest.CaptureFixture[str]) -> None:
    with pytest.raises(SystemExit) as done:
        cli.main(argv)
    out = capsys.readouterr().out
    assert done.value.code == 0
    assert "--gpus GPUS      显卡数量（1–8）" in out and "number of GPUs" not in out


def test_trigger_daily_help_epilog_is_in_the_language_asked(capsys: pytest.CaptureFixture[str]) -> None:
    """The secret file, exit status, crontab and systemd notes follow --lang like the options do; the config lines
    themselves are the same in every language."""
    for argv, said, unsaid in ((["--lang", "zh-CN", "trigger-daily", "--help"], "退出状态：", "Exit status:"),
                               (["trigger-daily", "--help"], "Exit status:", "退出状态：")):
        with pytest.raises(SystemExit):
            cli.main(argv)
        out = capsys.readouterr().out
        assert said in out and unsaid not in out, out
        assert "0 9 * * *  /opt/rigcheck/venv/bin/rigcheck trigger-daily --secret-file" in out
        assert "OnCalendar=*-*-* 09:00:00" in out
        assert "ExecStart=/opt/rigcheck/venv/bin/rigcheck trigger-daily \\\n" in out


def test_help_is_english_by_default(capsys: pytest.CaptureFixture[str]) -> None:
    with pytest.raises(SystemExit):
        cli.main(["fit", "--help"])
    assert "number of GPUs (1-8)" in capsys.readouterr().out


def test_trigger_daily_says_why_it_did_not_call_in_the_language_asked(
        tmp_path: Path, capsys: pytest.CaptureFixture[str]) -> None:
    secret = tmp_path / "secret"
    secret.write_text("  \n", encoding="utf-8")
    argv = ["trigger-daily", "--secret-file", str(secret), "--url", "http://127.0.0.1:9/hooks/daily"]
    code, out, err = run([*argv, "--lang", "zh-CN"], capsys)
    assert (code, out, err) == (1, "", f"rigcheck: 密钥文件 {secret} 为空\n")
    code, _, err = run(argv, capsys)
    assert (code, err) == (1, f"rigcheck: the secret file {secret} is empty\n")


def test_the_table_says_what_a_partial_offload_runs_at_when_nothing_fits(capsys: pytest.CaptureFixture[str]) -> None:
    code, out, _ = run(["fit", "--gpu", "rtx 4090", "--model", "llama-3.1-70b"], capsys)
    assert code == 0
    assert out.splitlines()[-1].startswith("Q4_K_M: fits with 44 of 80 layers on the GPU")
    assert "(llama.cpp `-ngl 44`)" in out
    code, out, _ = run(FIT, capsys)
    assert "-ngl" not in out  # Q4_K_M fits a T4: nothing to offload
