"""The paste parser: llama-bench tables and Ollama timings, with or without their line breaks."""

from __future__ import annotations

import pytest

from bot.params import BadValue
from bot.reports.paste import parse_paste, parse_rate

LLAMA_BENCH = """\
| model                          |       size |     params | backend    | ngl |          test |                  t/s |
| ------------------------------ | ---------: | ---------: | ---------- | --: | ------------: | -------------------: |
| qwen3 8B Q4_K - Medium         |   4.68 GiB |     8.19 B | CUDA       |  99 |         pp512 |      1234.56 ± 12.34 |
| qwen3 8B Q4_K - Medium         |   4.68 GiB |     8.19 B | CUDA       |  99 |         tg128 |         35.21 ± 0.11 |

build: 8e672efe (4446)
"""

OLLAMA = """\
total duration:       9.1s
load duration:        12ms
prompt eval count:    26 token(s)
prompt eval duration: 123ms
prompt eval rate:     211.38 tokens/s
eval count:           298 token(s)
eval duration:        8.4s
eval rate:            35.2 tokens/s
"""


def test_llama_bench_table() -> None:
    m = parse_paste(LLAMA_BENCH)
    assert (m.source, m.decode_tps, m.prefill_tps) == ("llama-bench", 35.21, 1234.56)
    assert (m.prompt_tokens, m.generated_tokens, m.build, m.backend) == (512, 128, "8e672efe (4446)", "CUDA")


def test_llama_bench_joined_into_one_line_as_discord_sends_it() -> None:
    assert parse_paste(" ".join(LLAMA_BENCH.split("\n"))) == parse_paste(LLAMA_BENCH)


def test_llama_bench_skips_rows_at_a_depth() -> None:
    deep = LLAMA_BENCH.replace("tg128 |         35.21", "tg128 @ d4096 |  30.00 |\n| qwen3 8B Q4_K - Medium | "
                               "4.68 GiB | 8.19 B | CUDA | 99 | tg128 | 35.21")
    assert parse_paste(deep).decode_tps == 35.21


def test_ollama_timings() -> None:
    m = parse_paste(OLLAMA)
    assert (m.source, m.decode_tps, m.prefill_tps, m.prompt_tokens, m.generated_tokens) == (
        "ollama", 35.2, 211.38, 26, 298)
    assert parse_paste(" ".join(OLLAMA.split())) == m


@pytest.mark.parametrize(("text", "key"), [
    ("hello there", "report.paste_unknown"),
    ("| a | b |", "report.paste_table"),
    (LLAMA_BENCH.replace("tg128", "tgx"), "report.paste_row"),
    (LLAMA_BENCH.replace("35.21 ± 0.11", "-35.21"), "report.paste_row"),
    (LLAMA_BENCH.replace("35.21 ± 0.11", "99999.0"), "report.rate_too_high"),
    (LLAMA_BENCH.replace("| t/s", "| speed").replace("t/s |", "spd |"), "report.paste_column"),
    (LLAMA_BENCH.replace("build: 8e672efe (4446)", "rm -rf"), "report.paste_table"),
    ("\n".join(LLAMA_BENCH.splitlines()[:3]), "report.paste_no_decode"),
    (LLAMA_BENCH.replace("CUDA       |  99 |         tg128", "Vulkan |  99 |         tg128"),
     "report.paste_one_model"),
    (OLLAMA.replace("35.2 tokens/s", "35.2 tokens/min"), "report.paste_row"),
    (OLLAMA.replace("eval rate:            35.2", "eval rate: 0"), "report.rate_positive"),
    (OLLAMA + OLLAMA, "report.paste_twice"),
    (OLLAMA.replace("eval rate:            35.2 tokens/s", ""), "report.paste_no_decode"),
    ("x" * 10_000, "report.paste_too_long"),
])
def test_malformed_pastes_are_refused_with_the_reason(text: str, key: str) -> None:
    with pytest.raises(BadValue) as raised:
        parse_paste(text)
    assert raised.value.key == key


@pytest.mark.parametrize(("text", "value"), [("35.2", 35.2), ("35 tok/s", 35.0), ("35.2t/s", 35.2),
                                             (" 7 tokens/s ", 7.0)])
def test_rates(text: str, value: float) -> None:
    assert parse_rate(text, "decode_tps", 10_000) == value


@pytest.mark.parametrize("text", ["-3", "0", "1e9", "nan", "35 GB/s", "35,2", "", "<@123>"])
def test_bad_rates(text: str) -> None:
    with pytest.raises(BadValue):
        parse_rate(text, "decode_tps", 10_000)


@pytest.mark.parametrize("text", ["0.001", "0.009 tok/s"])
def test_a_rate_too_small_to_be_measured_is_refused(text: str) -> None:
    with pytest.raises(BadValue) as raised:
        parse_rate(text, "prefill_tps", 1_000_000)
    assert raised.value.key == "report.rate_too_low"
    assert parse_rate("0.01", "prefill_tps", 1_000_000) == 0.01
