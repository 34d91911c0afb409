"""/fit says only what holds together: a format that does not fit quotes no all-in-VRAM speed, an offload with
every layer on the GPU says what stays in RAM, and each figure reads like the one beside it."""

from __future__ import annotations

import re

import pytest

from bot.render.embeds import _secs, _secs_span
from bot.render.replies import fit_reply
from bot.render.text import format_tokens, tps_text
from bot.requests import FitRequest
from bot.service import Service
from estimator.advice import fit_answer

SVC = Service()


def fields(req: FitRequest, locale: str = "en-US") -> dict[str, str]:
    return {f["name"]: f["value"] for f in fit_reply(SVC, req, locale=locale).embeds[0]["fields"]}


def description(req: FitRequest, locale: str = "en-US") -> str:
    return str(fit_reply(SVC, req, locale=locale).embeds[0]["description"])


# --- a format that does not fit --------------------------------------------------------------------------


def test_a_format_that_does_not_fit_quotes_the_offload_speed_not_an_all_in_vram_one() -> None:
    req = FitRequest.of(gpu="rtx 4090", model="llama-3.1-70b")
    plan = fit_answer(*SVC.base_query(req), SVC.catalog).offload
    assert plan is not None
    got = fields(req)
    q4, q8 = got["Q4_K_M · does not fit"], got["Q8_0 · does not fit"]
    assert f"~{tps_text(plan.decode_tps)} tok/s only with partial offload (below)" in q4
    speed_line = next(line for line in q4.splitlines() if "tok/s" in line)
    assert "TTFT" not in q4 and "(" not in speed_line.split("tok/s")[0], q4  # no band of a speed it cannot reach
    assert "Speed —: it does not fit in VRAM" in q8 and "tok/s" not in q8 and "TTFT" not in q8
    zh = fields(req, "zh-CN")
    assert f"约 {tps_text(plan.decode_tps)} tok/s，仅在部分卸载时" in zh["Q4_K_M · 显存不足"]
    assert "速度 —：显存放不下" in zh["Q8_0 · 显存不足"] and "首字延迟" not in zh["Q8_0 · 显存不足"]


def test_a_format_that_fits_keeps_its_speed_and_band() -> None:
    got = fields(FitRequest.of(gpu="rtx 4090", model="qwen3-8b", quant="Q4_K_M"))["Q4_K_M · fits"]
    assert re.search(r"~\d+ tok/s \(\d+–\d+\)", got) and "TTFT" in got


# --- partial offload ---------------------------------------------------------------------------------------


@pytest.mark.parametrize(("gpu", "model", "quant", "layers"), [
    ("t4", "llama-3.1-8b", "fp16", 32),
    ("t4", "qwen3-8b", "fp16", 36),
])
def test_an_offload_with_every_layer_on_the_gpu_says_what_stays_in_ram(gpu: str, model: str, quant: str,
                                                                        layers: int) -> None:
    req = FitRequest.of(gpu=gpu, model=model, quant=quant)
    plan = fit_answer(*SVC.base_query(req), SVC.catalog).offload
    assert plan is not None and plan.gpu_layers == plan.total_layers == layers
    text = fields(req)["Partial offload"]
    assert f"{layers} of {layers}" not in text and "the rest" not in text, text
    assert f"fits with all {layers} layers on the GPU; only the embedding and output weights" in text
    assert f"({plan.ram_bytes / 2**30:.1f} GiB) go to system RAM" in text and f"`-ngl {layers}`" in text
    zh = fields(req, "zh-CN")["部分卸载"]
    assert f"全部 {layers} 层放在显卡上" in zh and "嵌入层和输出层权重" in zh


def test_a_partial_offload_counts_the_layers_left_in_ram() -> None:
    text = fields(FitRequest.of(gpu="rtx 4090", model="llama-3.1-70b"))["Partial offload"]
    found = re.search(r"with (\d+) of (\d+) layers on the GPU; the other (\d+) layers", text)
    assert found, text
    on, total, cpu = map(int, found.groups())
    assert on + cpu == total == 80 and f"`-ngl {on}`" in text


def test_a_moe_model_that_does_not_fit_keeps_its_layers_and_moves_experts() -> None:
    req = FitRequest.of(gpu="3060 12gb", model="qwen3-30b-a3b", quant="q4_k_m")
    plan = fit_answer(*SVC.base_query(req), SVC.catalog).offload
    assert plan is not None and plan.cpu_moe_layers is not None
    text = fields(req)["Partial offload"]
    assert f"routed experts of {plan.cpu_moe_layers} of its {plan.moe_layers} MoE layers" in text, text
    assert plan.n_cpu_moe == plan.cpu_moe_layers  # Qwen3's layers are all MoE
    assert f"`-ngl 99 --n-cpu-moe {plan.n_cpu_moe}`" in text and "KV cache stays on the GPU" in text
    assert f"~{plan.decode_tps:.0f} tok/s only with partial offload" in description(req) + "".join(fields(req).values())
    zh = fields(req, "zh-CN")["部分卸载"]
    assert f"--n-cpu-moe {plan.cpu_moe_layers}" in zh and "路由专家" in zh


# --- context figures -----------------------------------------------------------------------------------------


def figure(text: str, label: str) -> str:
    found = re.search(rf"{label} ([\d.,]+[kM]?)", text)
    assert found, (label, text)
    return found.group(1)


def tokens_of(shown: str) -> float:
    return float(shown.rstrip("kM").replace(",", "")) * {"k": 1024, "M": 1024**2}.get(shown[-1], 1)


@pytest.mark.parametrize(("ctx", "headline", "field"), [(55000, "Runs, with little headroom", "Q8_0 · tight"),
                                                         (56000, "Does not fit", "Q8_0 · does not fit")])
def test_the_largest_context_reads_in_the_asked_contexts_units(ctx: int, headline: str, field: str) -> None:
    req = FitRequest.of(gpu="t4", model="llama-3.1-8b", ctx=ctx, quant="q8_0")
    text = description(req)
    option = fit_answer(*SVC.base_query(req), SVC.catalog).result.options[0]
    asked, largest = figure(text, "context"), figure(fields(req)[field], "Max context")
    assert headline in text and asked == format_tokens(ctx) and largest == format_tokens(option.max_ctx)
    # It ran at 50000 with "context 50k" beside "Max context 49k"; the shown figures keep the counts' order.
    assert (tokens_of(largest) >= tokens_of(asked)) == (option.max_ctx >= ctx), (asked, largest)


def test_a_rope_window_the_memory_cuts_to_the_native_figure_is_not_repeated() -> None:
    got = fields(FitRequest.of(gpu="rtx 3060 12gb", model="qwen3-14b", quant="Q4_K_M"))["Q4_K_M · fits"]
    assert re.search(r"Max context [\d.,]+k?$", got, re.M) and "RoPE" not in got, got


# --- smaller words ----------------------------------------------------------------------------------------------


def test_one_unit_per_time_and_its_range() -> None:
    # Q4_K_M's TTFT here is under a second and its band reaches one: it read "686 ms (0.5–1.0 s)".
    got = fields(FitRequest.of(gpu="t4", model="qwen3-8b", ctx="1k"))
    times = [m for value in got.values() for m in re.findall(r"TTFT [\d.]+ (ms|s) \([\d.]+–[\d.]+ (ms|s)\)", value)]
    assert len(times) == 2 and all(unit == span_unit for unit, span_unit in times), times
    # Where the range reaches a second, the figure under it follows the range's unit.
    assert (_secs(0.686, 1.02), _secs_span(0.49, 1.02)) == ("0.7 s", "0.5–1.0 s")
    assert (_secs(0.663, 0.98), _secs_span(0.484, 0.98)) == ("663 ms", "484–980 ms")


def test_a_speed_range_is_rounded_as_its_point() -> None:
    req = FitRequest.of(gpu="p40", model="gemma-3-27b", quant="Q4_K_M")
    speed = fit_answer(*SVC.base_query(req), SVC.catalog).result.options[0].speed
    assert speed.decode_tps_low < 10 <= speed.decode_tps, "the case needs a point of 10+ with a low end under 10"
    found = re.search(r"~([\d.]+) tok/s \(([\d.]+)–([\d.]+)\)", fields(req)["Q4_K_M · fits"])
    assert found and "." not in "".join(found.groups()), found  # it read "~11 (8.8–13)"


@pytest.mark.parametrize(("prompt", "words"), [("1", "prompt 1 token ·"), ("0", "prompt 0 tokens ·"),
                                               ("2k", "prompt 2k tokens ·"), ("5000", "prompt 5,000 tokens ·")])
def test_a_prompt_of_one_token_is_singular(prompt: str, words: str) -> None:
    assert words in description(FitRequest.of(gpu="t4", model="qwen3-8b", quant="Q4_K_M", prompt=prompt))


@pytest.mark.parametrize("locale", ["en-US", "zh-CN"])
def test_the_default_prompt_shrinks_to_a_short_context_without_a_note(locale: str) -> None:
    text = description(FitRequest.of(gpu="t4", model="qwen3-8b", quant="Q4_K_M", ctx="1k"), locale)
    # Half the window: a prompt filling it would leave no room for the reply.
    assert ("prompt 512 tokens" if locale == "en-US" else "提示 512 tokens") in text
    assert "capped" not in text and "2k" not in text and "截断" not in text, text


def test_a_total_that_prints_as_the_usable_memory_says_by_how_much_it_is_over() -> None:
    req = FitRequest.of(gpu="t4", model="llama-3.1-8b", ctx=55260, quant="q8_0")
    option = fit_answer(*SVC.base_query(req), SVC.catalog).result.options[0]
    over = (option.memory.total_bytes - option.memory.usable_bytes) / 2**20
    assert 0 < over < 10 and f"{option.memory.total_bytes / 2**30:.1f}" == f"{option.memory.usable_bytes / 2**30:.1f}"
    assert f"**Total 15.0 GiB** ({over:.1f} MiB more than usable)" in fields(req)["Q8_0 · does not fit"]
    assert f"（比可用显存多 {over:.1f} MiB）" in fields(req, "zh-CN")["Q8_0 · 显存不足"]
    roomy = fields(FitRequest.of(gpu="t4", model="llama-3.1-8b", quant="q8_0"))["Q8_0 · fits"]
    assert "more than usable" not in roomy


def test_llamacpp_weights_leave_the_token_embedding_in_system_ram_and_say_so() -> None:
    got = fields(FitRequest.of(gpu="t4", model="qwen3-8b", quant="q4_k_m"))["Q4_K_M · fits"]
    assert re.search(r"^Weights [\d.]+ GiB \(\+0\.3 GiB token embeddings in system RAM\)$", got, re.M), got
    zh = fields(FitRequest.of(gpu="t4", model="qwen3-8b", quant="q4_k_m"), "zh-CN")
    assert any("GiB 词嵌入在系统内存" in v for v in zh.values()), zh
    served = fields(FitRequest.of(gpu="t4", model="qwen3-8b", quant="awq", engine="vllm"))
    assert not any("system RAM" in v for v in served.values())


# --- figures that agree with each other ------------------------------------------------------------------

GIB_LINE = re.compile(r"^(?:\*\*)?(Weights|KV cache|Runtime|Total) ([\d.]+) GiB", re.M)


def test_the_shown_parts_add_up_to_the_shown_total() -> None:
    req = FitRequest.of(gpu="t4", model="acereason-nemotron-7b", quant="q4_k_m")
    memory = fit_answer(*SVC.base_query(req), SVC.catalog).result.options[0].memory
    alone = [round(b / 2**30, 1) for b in (memory.weights_bytes, memory.kv_cache_bytes, memory.overhead_bytes)]
    assert round(sum(alone), 1) != float(f"{memory.total_bytes / 2**30:.1f}"), "the case needs parts that miss"
    for locale in ("en-US", "zh-CN"):
        text = next(iter(fields(req, locale).values()))
        if locale == "zh-CN":
            text = text.replace("权重", "Weights").replace("KV 缓存", "KV cache").replace("运行时", "Runtime")
            text = text.replace("合计", "Total")
        shown = {name: float(v) for name, v in GIB_LINE.findall(text)}
        assert round(shown["Weights"] + shown["KV cache"] + shown["Runtime"], 1) == shown["Total"], text
        assert shown["Total"] == float(f"{memory.total_bytes / 2**30:.1f}")  # the total itself is unchanged


def test_the_largest_context_is_the_one_the_chart_marks() -> None:
    """The tester's case: F16 misses at 8k on a T4 but fits 623 tokens; the field says so, as the legend does."""
    req = FitRequest.of(gpu="t4", model="qwen3-8b")
    answer = fit_answer(*SVC.base_query(req), SVC.catalog)
    got = fields(req)
    for option, curve in zip(answer.result.options, answer.curves.curves, strict=True):
        assert option.max_ctx == curve.max_ctx  # the chart's legend reads `curve.max_ctx`
        name = f"{option.quant.name} · {'does not fit' if not option.fits else 'fits'}"
        shown = "—" if not curve.max_ctx else format_tokens(curve.max_ctx)
        assert re.search(rf"^Max context {re.escape(shown)}( |$)", got[name], re.M), got[name]
    assert not answer.result.options[-1].fits and answer.result.options[-1].max_ctx > 0


@pytest.mark.parametrize(("gpu", "name"), [("t4", "FP8 (W8A16)"), ("a100 80gb sxm", "FP8 (W8A16)"),
                                           ("l4", "FP8 (W8A8)"), ("h100 sxm", "FP8 (W8A8)")])
def test_fp8_is_named_for_what_vllm_runs_on_the_card(gpu: str, name: str) -> None:
    req = FitRequest.of(gpu=gpu, model="llama-3.1-8b", engine="vllm", quant="fp8")
    assert [n.split(" · ")[0] for n in fields(req)] == [name]
    other = "FP8 (W8A8)" if name == "FP8 (W8A16)" else "FP8 (W8A16)"
    assert other not in str(fit_reply(SVC, req, locale="en-US").embeds[0])


def test_an_ollama_gpt_oss_tag_is_answered_for_the_mxfp4_build_ollama_ships() -> None:
    for tag in ("gpt-oss:20b", "gpt-oss:120b"):
        names = [n.split(" · ")[0] for n in fields(FitRequest.of(gpu="h100 sxm", model=tag))]
        assert names == ["MXFP4"], (tag, names)
    ladder = [n.split(" · ")[0] for n in fields(FitRequest.of(gpu="h100 sxm", model="gpt-oss-20b"))]
    assert ladder == ["Q4_K_M", "Q8_0", "F16"]  # the catalog's name is no Ollama tag


def test_engine_ollama_answers_a_model_ollama_ships_in_one_build_for_that_build() -> None:
    for model in ("gpt-oss-20b", "openai/gpt-oss-120b"):
        names = [n.split(" · ")[0] for n in fields(FitRequest.of(gpu="h100 sxm", model=model, engine="ollama"))]
        assert names == ["MXFP4"], (model, names)
    # A model Ollama's library ships in several builds keeps the engine's ladder.
    ladder = [n.split(" · ")[0] for n in fields(FitRequest.of(gpu="h100 sxm", model="qwen3-8b", engine="ollama"))]
    assert ladder == ["Q4_K_M", "Q8_0", "F16"]
    # An asked format still wins: Ollama can import a GGUF of another type.
    asked = [n.split(" · ")[0] for n in fields(FitRequest.of(gpu="h100 sxm", model="gpt-oss-20b", engine="ollama",
                                                             quant="q8_0"))]
    assert asked == ["Q8_0"]


# --- what to change names only KV caches the engine runs ------------------------------------------------


def test_fit_and_rank_offer_only_a_kv_cache_the_engine_runs() -> None:
    from bot.render.replies import rank_reply
    from bot.requests import RankRequest

    vllm = FitRequest.of(gpu="H100 SXM", model="llama3.1:8b", engine="vllm", quant="fp8", batch=64)
    advice = fields(vllm)["What to change"]
    assert "`kv:fp8`" in advice and "q8_0" not in advice, advice
    assert "`kv:fp8`" in fields(vllm, "zh-CN")["调整建议"]
    for engine, offered in (("vllm", "`kv:fp8`"), ("llama.cpp", "`kv:q8_0`")):
        for locale in ("en-US", "zh-CN"):
            said = rank_reply(SVC, RankRequest.of(gpu="T4", engine=engine, ctx="1M"), locale=locale).embeds[0]
            text = str(said["description"])
            assert offered in text and text.count("`kv:") == 1, text
    # Already at its engine's smallest 8-bit cache: no KV cache to offer.
    text = str(rank_reply(SVC, RankRequest.of(gpu="T4", ctx="1M", kv="q8_0"), locale="en-US").embeds[0]["description"])
    assert "`kv:" not in text and "shorter `ctx`" in text, text


@pytest.mark.parametrize(("locale", "said"), [("en-US", "TTFT: no prompt to process (prompt 0)"),
                                              ("zh-CN", "首字延迟：没有需要处理的提示词（提示 0）")])
def test_no_prompt_has_no_time_to_first_token_to_quote(locale: str, said: str) -> None:
    # "TTFT 0 ms (0–0 ms)" read as a measured instant; with nothing to prefill there is no figure to give.
    shown = fields(FitRequest.of(gpu="t4", model="qwen3-8b", prompt="0"), locale)
    fitting = [v for v in shown.values() if "tok/s" in v]
    assert fitting and all(said in v and " ms" not in v for v in fitting), fitting
    assert all(said not in v for v in fields(FitRequest.of(gpu="t4", model="qwen3-8b"), locale).values())


def test_cli_says_there_is_no_prompt_rather_than_zero_seconds(capsys: pytest.CaptureFixture[str]) -> None:
    from bot import cli

    assert cli.main(["fit", "--gpu", "t4", "--model", "qwen3-8b", "--prompt", "0"]) == 0
    rows = capsys.readouterr().out.splitlines()[3:]
    assert rows and all("0.00 (0.00–0.00)" not in r for r in rows)
    assert all("no prompt" in r for r in rows if " fits " in r), rows
