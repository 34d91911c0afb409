"""`rigcheck …` in-process: the JSON contracts other tools read, token parsing, and one-line errors."""

from __future__ import annotations

import io
import json
import re
import subprocess
import sys
from pathlib import Path
from typing import Any

import pytest

from bot import cli
from bot.cli.estimate import tps_cell
from bot.render.replies import fit_reply
from bot.requests import FitRequest
from bot.service import Service
from catalog import load_catalog
from estimator.speed import Speed

CAT = load_catalog()


def run(argv: list[str], capsys: pytest.CaptureFixture[str]) -> tuple[int, str, str]:
    code = cli.main(argv)
    out, err = capsys.readouterr()
    return code, out, err


def run_json(argv: list[str], capsys: pytest.CaptureFixture[str]) -> Any:
    code, out, err = run([*argv, "--json"], capsys)
    assert code == 0, err
    assert err == ""
    assert out.count("\n") == 1, "one JSON document on one line"
    return json.loads(out)


# --- fit -------------------------------------------------------------------------------------------

FIT_KEYS = {"gpu", "model", "engine", "ctx", "prompt_tokens", "kv_dtype", "options"}
FIT_GPU_KEYS = {"id", "name", "count", "vram_gb", "bandwidth_gbs"}
FIT_MODEL_KEYS = {"id", "name", "params_b", "active_params_b"}
OPTION_KEYS = {"quant", "fits", "memory_gb", "decode_tps", "prefill_tps", "ttft_s", "max_ctx"}
MEMORY_KEYS = {"weights", "kv_cache", "overhead", "total"}
# Keys the output carries beyond the contract above (the table view reads them). Pinned so that any
# addition or removal is a visible change.
FIT_EXTRA = {"batch", "partial_offload", "notes"}
OPTION_EXTRA = {"quant_name", "verdict", "max_ctx_scaled", "aggregate_tps", "decode_tps_low", "decode_tps_high",
                "prefill_tps_low", "prefill_tps_high", "ttft_s_low", "ttft_s_high", "ttft_last_s", "ttft_last_s_low",
                "ttft_last_s_high"}
MEMORY_EXTRA = {"usable", "headroom", "host_weights"}


def test_fit_json_contract(capsys: pytest.CaptureFixture[str]) -> None:
    data = run_json(["fit", "--gpu", "t4", "--model", "qwen3-8b"], capsys)
    assert set(data) == FIT_KEYS | FIT_EXTRA
    assert data["notes"] == []  # nothing typed was read otherwise
    assert set(data["gpu"]) == FIT_GPU_KEYS
    assert set(data["model"]) == FIT_MODEL_KEYS
    assert data["gpu"]["id"] == "nvidia-t4" and data["gpu"]["count"] == 1
    assert data["model"]["id"] == "qwen3-8b"
    assert data["engine"] == "llama.cpp"
    assert data["ctx"] == 8192 and data["prompt_tokens"] == 2048 and data["kv_dtype"] == "f16"
    assert [o["quant"] for o in data["options"]] == ["q4_k_m", "q8_0", "f16"]
    for option in data["options"]:
        assert set(option) == OPTION_KEYS | OPTION_EXTRA
        assert option["decode_tps_low"] < option["decode_tps"] < option["decode_tps_high"]
        assert option["ttft_s_low"] < option["ttft_s"] < option["ttft_s_high"]
        assert set(option["memory_gb"]) == MEMORY_KEYS | MEMORY_EXTRA
        assert isinstance(option["fits"], bool)
        assert isinstance(option["max_ctx"], int)
        mem = option["memory_gb"]
        assert mem["total"] == pytest.approx(mem["weights"] + mem["kv_cache"] + mem["overhead"], abs=0.02)
        assert option["decode_tps"] > 0
        assert option["fits"] == (mem["total"] <= mem["usable"])
        # llama.cpp keeps Qwen3-8B's untied token embedding (151,936 × 4,096) in system RAM.
        assert 0 < mem["host_weights"] < mem["weights"]


def test_a_model_that_fits_nowhere_says_what_a_partial_offload_runs_at(capsys: pytest.CaptureFixture[str]) -> None:
    # Each option's decode_tps is for the whole model on the GPU; where none fits, the split is the speed to quote.
    data = run_json(["fit", "--gpu", "rtx 4090", "--model", "llama-3.1-70b"], capsys)
    assert not any(o["fits"] for o in data["options"])
    plan = data["partial_offload"]
    assert plan["quant"] == "q4_k_m" and 0 < plan["gpu_layers"] < plan["total_layers"] == 80
    q4 = next(o for o in data["options"] if o["quant"] == "q4_k_m")
    assert plan["decode_tps"] < q4["decode_tps"] / 3  # system RAM streams the rest at a fraction of the GPU's rate
    assert plan["vram_gb"] <= data["options"][0]["memory_gb"]["usable"]
    assert run_json(["fit", "--gpu", "rtx 4090", "--model", "llama-3.1-8b"], capsys)["partial_offload"] is None
    assert plan["cpu_moe_layers"] is None  # a dense model is split by layers


def test_a_moe_model_that_fits_nowhere_moves_experts_not_layers(capsys: pytest.CaptureFixture[str]) -> None:
    data = run_json(["fit", "--gpu", "3060 12gb", "--model", "qwen3-30b-a3b", "--quant", "q4_k_m"], capsys)
    plan = data["partial_offload"]
    assert plan["gpu_layers"] == plan["total_layers"] == 48 and 0 < plan["cpu_moe_layers"] < 48
    assert plan["vram_gb"] <= data["options"][0]["memory_gb"]["usable"]


def test_fit_contract_keys_are_the_documented_subset(capsys: pytest.CaptureFixture[str]) -> None:
    data = run_json(["fit", "--gpu", "rtx 4090", "--model", "llama-3.1-8b", "--quant", "q8_0"], capsys)
    assert FIT_KEYS <= set(data)
    assert OPTION_KEYS <= set(data["options"][0])
    assert MEMORY_KEYS <= set(data["options"][0]["memory_gb"])


def test_largest_context_is_the_same_whatever_context_is_asked(capsys: pytest.CaptureFixture[str]) -> None:
    argv = ["fit", "--gpu", "t4", "--model", "qwen3-8b", "--quant", "Q4_K_M", "--ctx"]
    short, long = run_json([*argv, "8k"], capsys)["options"][0], run_json([*argv, "128k"], capsys)["options"][0]
    assert (short["max_ctx"], short["max_ctx_scaled"]) == (long["max_ctx"], long["max_ctx_scaled"])
    assert short["max_ctx"] == 32768 and short["max_ctx_scaled"] > 32768


def test_fit_with_one_quant_gives_one_option(capsys: pytest.CaptureFixture[str]) -> None:
    data = run_json(["fit", "--gpu", "t4", "--model", "qwen3-8b", "--quant", "Q4_K_M"], capsys)
    assert [o["quant"] for o in data["options"]] == ["q4_k_m"]


def test_ollama_tag_picks_the_quant(capsys: pytest.CaptureFixture[str]) -> None:
    data = run_json(["fit", "--gpu", "4090", "--model", "llama3.1:8b-instruct-q4_K_M"], capsys)
    assert data["model"]["id"] == "llama-3.1-8b"
    assert [o["quant"] for o in data["options"]] == ["q4_k_m"]


def test_prompt_zero_is_allowed(capsys: pytest.CaptureFixture[str]) -> None:
    data = run_json(["fit", "--gpu", "t4", "--model", "qwen3-8b", "--quant", "q4_k_m", "--prompt", "0"], capsys)
    assert data["prompt_tokens"] == 0
    assert data["options"][0]["ttft_s"] == 0
    assert data["options"][0]["decode_tps"] > 0


def test_prompt_is_capped_at_context(capsys: pytest.CaptureFixture[str]) -> None:
    data = run_json(["fit", "--gpu", "t4", "--model", "qwen3-8b", "--ctx", "1k", "--prompt", "4k"], capsys)
    assert data["prompt_tokens"] == 1024


@pytest.mark.parametrize(("text", "tokens"), [("16k", 16384), ("32K", 32768), ("128k", 131072), ("1M", 1048576),
                                              ("32768", 32768)])
def test_ctx_forms(text: str, tokens: int, capsys: pytest.CaptureFixture[str]) -> None:
    # A model with a 1M window, so every form is within it (past the window is refused, tested below).
    data = run_json(["fit", "--gpu", "h100 sxm", "--model", "glm-4-9b-chat-1m", "--quant", "q4_k_m", "--ctx", text],
                    capsys)
    assert data["ctx"] == tokens


def test_ctx_past_the_models_window_is_one_line(capsys: pytest.CaptureFixture[str]) -> None:
    code, out, err = run(["fit", "--gpu", "h100 sxm", "--model", "llama-3.1-8b", "--ctx", "1M"], capsys)
    assert code == 2 and out == ""
    assert err.strip() == "rigcheck: 1M is past Llama 3.1 8B's longest documented context (128k); ask for at most 128k"


def test_fit_table_view(capsys: pytest.CaptureFixture[str]) -> None:
    code, out, err = run(["fit", "--gpu", "t4", "--model", "qwen3-8b"], capsys)
    assert code == 0 and err == ""
    assert "Qwen3-8B" in out and "NVIDIA T4" in out
    assert "Q4_K_M" in out and "Q8_0" in out
    # Each time to first token and its range at the same precision (three significant digits).
    ttft_cells = re.findall(r"  (\d[\d.]*) \((\d[\d.]*)–(\d[\d.]*)\)  ", out)
    assert ttft_cells
    for cell in ttft_cells:
        for value in cell:
            assert len(value.replace(".", "").lstrip("0")) <= 3, (value, out)


# --- errors ----------------------------------------------------------------------------------------

BAD = [
    ["fit", "--gpu", "t4", "--model", "qwen3-8b", "--ctx", "-1"],
    ["fit", "--gpu", "t4", "--model", "qwen3-8b", "--ctx", "9999999k"],
    ["fit", "--gpu", "t4", "--model", "qwen3-8b", "--ctx", "0"],
    ["fit", "--gpu", "t4", "--model", "qwen3-8b", "--ctx", "lots"],
    ["fit", "--gpu", "no such gpu", "--model", "qwen3-8b"],
    ["fit", "--gpu", "t4", "--model", "no such model"],
    ["fit", "--gpu", "a100", "--model", "qwen3-8b"],  # several boards, not one chip's memory options
    ["fit", "--gpu", "t4", "--model", "qwen3-8b", "--quant", "q9_z"],
    ["fit", "--gpu", "t4", "--model", "qwen3-8b", "--engine", "mlx"],
    ["fit", "--gpu", "t4", "--model", "qwen3-8b", "--engine", "tgi"],
    ["fit", "--gpu", "t4", "--model", "qwen3-8b", "--kv", "q2"],
    ["fit", "--gpu", "t4", "--model", "qwen3-8b", "--gpus", "9"],
    ["fit", "--gpu", "t4", "--model", "qwen3-8b", "--gpus", "0"],
    ["fit", "--gpu", "t4", "--model", "qwen3-8b", "--batch", "0"],
    ["fit", "--gpu", "t4", "--model", "qwen3-8b", "--batch", "300"],
    ["fit", "--gpu", "t4", "--model", "qwen3-8b", "--prompt", "-5"],
    ["fit", "--gpu", "'; DROP TABLE gpus; --", "--model", "qwen3-8b"],
    ["rank", "--gpu", "no such gpu"],
    ["rank", "--gpu", "t4", "--ctx", "-1"],
    ["gpu", "--gpu", "no such gpu"],
    ["whatgpu", "--model", "qwen3-8b", "--budget", "-3"],
    ["whatgpu", "--model", "qwen3-8b", "--min-tps", "0"],
]


@pytest.mark.parametrize("argv", BAD, ids=[" ".join(a[1:])[:60] for a in BAD])
@pytest.mark.parametrize("as_json", [False, True])
def test_bad_input_exits_2_with_one_line(argv: list[str], as_json: bool, capsys: pytest.CaptureFixture[str]) -> None:
    code, out, err = run(argv + (["--json"] if as_json else []), capsys)
    assert code == 2
    assert out == ""
    lines = err.strip().splitlines()
    assert len(lines) == 1, err
    assert lines[0].startswith("rigcheck: ")
    assert "Traceback" not in err


def test_unknown_gpu_message_suggests(capsys: pytest.CaptureFixture[str]) -> None:
    _, _, err = run(["fit", "--gpu", "rtx 4900", "--model", "qwen3-8b"], capsys)
    assert "RTX 4090" in err


def test_main_can_be_called_twice(capsys: pytest.CaptureFixture[str]) -> None:
    argv = ["fit", "--gpu", "t4", "--model", "qwen3-8b", "--quant", "q4_k_m", "--json"]
    assert cli.main(argv) == 0
    assert cli.main(argv) == 0


# --- rank ------------------------------------------------------------------------------------------

RANK_KEYS = {"gpu", "ctx", "rows"}
RANK_ROW_KEYS = {"model", "quant", "decode_tps", "ttft_s", "memory_gb"}


def test_rank_json_contract(capsys: pytest.CaptureFixture[str]) -> None:
    data = run_json(["rank", "--gpu", "rtx 4090", "--ctx", "8k"], capsys)
    assert RANK_KEYS <= set(data)
    assert set(data["gpu"]) == FIT_GPU_KEYS
    assert data["ctx"] == 8192
    assert len(data["rows"]) >= 20
    for row in data["rows"]:
        assert RANK_ROW_KEYS <= set(row)
        assert {"id", "name"} <= set(row["model"])
        assert "total" in row["memory_gb"]
        assert row["memory_gb"]["total"] <= 24
        assert row["decode_tps"] > 0
        # The same ranges as fit's options, each around its estimate.
        for key in ("decode_tps", "prefill_tps", "ttft_s"):
            assert row[f"{key}_low"] <= row[key] <= row[f"{key}_high"], key
    assert len({r["model"]["id"] for r in data["rows"]}) == len(data["rows"])


def test_whatgpu_json_carries_the_ranges(capsys: pytest.CaptureFixture[str]) -> None:
    data = run_json(["whatgpu", "--model", "qwen3-8b", "--limit", "10"], capsys)
    assert len(data["setups"]) == 10
    for setup in data["setups"]:
        for key in ("decode_tps", "prefill_tps", "ttft_s"):
            # A band reaches back to its estimate where the situation's residuals all lean one way (fit.band_table).
            assert setup[f"{key}_low"] <= setup[key] <= setup[f"{key}_high"], (key, setup)
            assert setup[f"{key}_low"] < setup[f"{key}_high"], (key, setup)


@pytest.mark.parametrize("argv", [["rank", "--gpu", "a30", "--ctx", "32k", "--limit", "5"],
                                  ["whatgpu", "--model", "qwen3-8b", "--limit", "5"]])
def test_rank_and_whatgpu_tables_show_each_range(argv: list[str], capsys: pytest.CaptureFixture[str]) -> None:
    code, out, _ = run(argv, capsys)
    assert code == 0
    rows = out.splitlines()[3:]
    assert len(rows) == 5
    for line in rows:
        tps = re.search(r"~([\d.]+) \(([\d.]+)–([\d.]+)\)", line)
        ttft = re.search(r"  ([\d.]+) \(([\d.]+)–([\d.]+)\)  ", line)
        assert tps and ttft, line
        for point, low, high in (tps.groups(), ttft.groups()):
            assert float(low) < float(point) < float(high), line


def test_rank_limit_and_sort(capsys: pytest.CaptureFixture[str]) -> None:
    data = run_json(["rank", "--gpu", "rtx 4090", "--limit", "5", "--sort", "speed"], capsys)
    assert len(data["rows"]) == 5
    speeds = [r["decode_tps"] for r in data["rows"]]
    assert speeds == sorted(speeds, reverse=True)


def test_rank_respects_context(capsys: pytest.CaptureFixture[str]) -> None:
    data = run_json(["rank", "--gpu", "h100 sxm", "--ctx", "128k"], capsys)
    scaled = 0
    for row in data["rows"]:
        model = CAT.model(row["model"]["id"])
        # Natively or with its documented RoPE scaling; a "128k" window of 128,000 tokens is what 128k means for it.
        assert model.context_limit(with_scaling=True) >= 128000
        scaled += model.max_context < 131072
    assert scaled, "models that reach 128k only with RoPE scaling are ranked too"


# --- gpu -------------------------------------------------------------------------------------------

@pytest.mark.parametrize(("gpu", "gpus"), [("t4", 1), ("t4", 2), ("rtx 4090", 1), ("a100 40gb", 2)])
def test_gpu_card_and_finetune_name_the_same_trainable_models(gpu: str, gpus: int,
                                                              capsys: pytest.CaptureFixture[str]) -> None:
    """Each model `rigcheck gpu` names as the largest to fine-tune with a method is one `rigcheck finetune`
    says fits with that method on the same setup."""
    card = run_json(["gpu", "--gpu", gpu, "--gpus", str(gpus)], capsys)
    for method, best in card["finetune"].items():
        if best is None:
            continue
        ft = run_json(["finetune", "--gpu", gpu, "--gpus", str(gpus), "--model", best["id"], "--method", method],
                      capsys)
        assert ft["fits"], (method, best["id"], ft["memory_gb"], ft["usable_gb"])


@pytest.mark.parametrize("gpus", [1, 2, 4])
def test_mixtral_qlora_on_t4s_gets_one_answer(gpus: int, capsys: pytest.CaptureFixture[str]) -> None:
    """`rigcheck finetune` fitting Mixtral-8x7B with QLoRA on T4s and `rigcheck gpu` naming nothing that
    large for QLoRA there would be two answers to one question; the largest model the card names must be at
    least as large as any the fine-tuning estimate says fits."""
    card = run_json(["gpu", "--gpu", "t4", "--gpus", str(gpus)], capsys)
    ft = run_json(["finetune", "--gpu", "t4", "--gpus", str(gpus), "--model", "mixtral-8x7b", "--method", "qlora"],
                  capsys)
    best = card["finetune"]["qlora"]
    if ft["fits"]:
        assert best is not None and best["params_b"] >= ft["model"]["params_b"], (best, ft["memory_gb"])


def test_gpu_card_json(capsys: pytest.CaptureFixture[str]) -> None:
    data = run_json(["gpu", "--gpu", "t4"], capsys)
    assert {"gpu", "ctx", "capability", "finetune", "recommendation"} <= set(data)
    assert data["gpu"]["id"] == "nvidia-t4"
    assert set(data["capability"]) == {"int4", "int8", "fp16"}
    assert set(data["finetune"]) == {"qlora", "lora", "full"}
    rec = data["recommendation"]
    assert {"comfortable_8bit", "long_context_4bit", "reference_speeds", "bandwidth_bound"} <= set(rec)
    # Larger models fit at 4-bit than at 16-bit.
    sizes = {lvl: (item["model"] or {}).get("params_b", 0) for lvl, item in data["capability"].items()}
    assert sizes["int4"] >= sizes["int8"] >= sizes["fp16"]


# --- catalog ---------------------------------------------------------------------------------------

GPU_KEYS = {"id", "name", "aliases", "vendor", "vram_gb", "bandwidth_gbs", "fp16_tflops", "int8_tops", "tdp_w",
            "source"}
MODEL_KEYS = {"id", "name", "aliases", "hf_repo", "params_b", "active_params_b", "layers", "hidden_size",
              "attention_heads", "kv_heads", "head_dim", "intermediate_size", "vocab_size", "max_context", "source"}


def test_catalog_list_gpus(capsys: pytest.CaptureFixture[str]) -> None:
    data = run_json(["catalog", "list", "--kind", "gpu"], capsys)
    assert len(data) == len(CAT.gpus)
    for item in data:
        assert GPU_KEYS <= set(item)
    assert {i["id"] for i in data} == {g.id for g in CAT.gpus}


def test_catalog_list_models(capsys: pytest.CaptureFixture[str]) -> None:
    data = run_json(["catalog", "list", "--kind", "model"], capsys)
    assert len(data) == len(CAT.models)
    for item in data:
        assert MODEL_KEYS <= set(item)
    assert {i["id"] for i in data} == {m.id for m in CAT.models}


def test_catalog_show_and_search(capsys: pytest.CaptureFixture[str]) -> None:
    assert run_json(["catalog", "show", "Tesla", "T4"], capsys)["id"] == "nvidia-t4"
    assert run_json(["catalog", "show", "qwen3-8b"], capsys)["id"] == "qwen3-8b"
    hits = run_json(["catalog", "search", "qwen3"], capsys)
    assert any(h["id"] == "qwen3-8b" for h in hits)


def test_catalog_show_takes_a_format_too(capsys: pytest.CaptureFixture[str]) -> None:
    # `catalog list --kind quant` lists formats by id; `catalog show ID` shows any of them.
    assert run_json(["catalog", "show", "q4_k_m"], capsys)["id"] == "q4_k_m"
    assert run_json(["catalog", "show", "AWQ"], capsys)["id"] == "awq-int4"


@pytest.mark.parametrize(("argv", "message"), [
    (["catalog", "show", "h100"], "rigcheck: 'h100' matches several gpus; did you mean "),
    (["catalog", "show"], "rigcheck: catalog show needs a GPU, model or format id"),
])
def test_catalog_show_says_what_is_wrong(argv: list[str], message: str, capsys: pytest.CaptureFixture[str]) -> None:
    code, out, err = run(argv, capsys)
    assert code == 2 and out == ""
    assert err.startswith(message) and err.count("\n") == 1


# --- batch -----------------------------------------------------------------------------------------

BATCH_LINES = [
    ({"gpu": "t4", "model": "qwen3-8b"}, True),
    ({"gpu": "no such gpu", "model": "qwen3-8b"}, False),
    ("this is not json", False),
    ([1, 2, 3], False),
    ({"gpu": "t4"}, False),
    ({"gpu": "t4", "model": "qwen3-8b", "ctx": "-1"}, False),
    ({"gpu": "t4", "model": "qwen3-8b", "gpus": "many"}, False),
    ({"gpu": "t4", "model": "qwen3-8b", "gpus": 0}, False),
    ({"gpu": "t4", "model": "qwen3-8b", "batch": 0}, False),
    ({"gpu": "rtx 4090", "model": "llama3.1:8b-instruct-q4_K_M", "ctx": "32k"}, True),
    ({"gpu": "t4", "model": "qwen3-8b", "quant": "zz"}, False),
]


def test_batch_answers_every_line(monkeypatch: pytest.MonkeyPatch, capsys: pytest.CaptureFixture[str]) -> None:
    text = "\n".join(line if isinstance(line, str) else json.dumps(line) for line, _ in BATCH_LINES) + "\n\n"
    monkeypatch.setattr("sys.stdin", io.StringIO(text))
    code, out, err = run(["batch"], capsys)
    assert code == 0
    assert "Traceback" not in err
    answers = [json.loads(line) for line in out.splitlines()]
    assert len(answers) == len(BATCH_LINES)
    for answer, (_line, good) in zip(answers, BATCH_LINES, strict=True):
        if good:
            assert "error" not in answer
            assert FIT_KEYS <= set(answer)
        else:
            assert set(answer) == {"error"}
            assert isinstance(answer["error"], str) and answer["error"]
    assert answers[-2]["ctx"] == 32768
    assert [o["quant"] for o in answers[-2]["options"]] == ["q4_k_m"]


@pytest.mark.parametrize(("line", "key", "keys"), [
    ({"gpu": "t4", "model": "qwen3-8b", "contex": "16k"}, "contex", "gpu, model, quant, engine, ctx"),
    ({"finetune": {"gpu": "t4", "model": "qwen3-8b"}, "gpu": "a30"}, "gpu", "a line takes finetune"),
])
def test_batch_refuses_a_key_it_would_otherwise_drop(line: dict[str, Any], key: str, keys: str,
                                                     monkeypatch: pytest.MonkeyPatch,
                                                     capsys: pytest.CaptureFixture[str]) -> None:
    monkeypatch.setattr("sys.stdin", io.StringIO(json.dumps(line) + "\n"))
    code, out, _ = run(["batch"], capsys)
    answer = json.loads(out)
    assert code == 0 and set(answer) == {"error"}
    assert answer["error"].startswith(f"line 1: {key} is not a query key") and keys in answer["error"]


def test_a_reader_that_leaves_early_gets_no_traceback() -> None:
    # `rigcheck catalog list --json | head -c 0`: the reader is gone before the first write (the process
    # is still importing when its pipe is closed), whatever the pipe's capacity.
    root = Path(__file__).resolve().parents[2]
    proc = subprocess.Popen([sys.executable, "-m", "bot.cli", "catalog", "list", "--kind", "gpu", "--json"],
                            cwd=root, stdout=subprocess.PIPE, stderr=subprocess.PIPE)
    assert proc.stdout is not None and proc.stderr is not None
    proc.stdout.close()
    err = proc.stderr.read().decode()
    assert proc.wait(timeout=60) == cli.EXIT_BROKEN_PIPE
    assert err == ""


def test_whatgpu_with_no_setup_says_so(capsys: pytest.CaptureFixture[str]) -> None:
    code, out, err = run(["whatgpu", "--model", "qwen3-8b", "--min-tps", "5000"], capsys)
    assert code == 0 and err == ""
    assert out.splitlines()[1:] == ["no setup of 1–8 GPUs in the catalog meets that"]
    # MLX runs on one Mac at a time: "1–8 GPUs" would not be what was searched.
    code, out, err = run(["whatgpu", "--model", "kimi-k2", "--engine", "mlx", "--quant", "mlx-8bit"], capsys)
    assert code == 0 and err == ""
    assert out.splitlines() == ["GPU setups for Kimi K2 Instruct at 8k context (MLX)",
                                "no Mac in the catalog meets that"]


@pytest.mark.parametrize("argv", [["rank", "--gpu", "t4", "--limit", "0"], ["rank", "--gpu", "t4", "--limit", "-1"],
                                  ["whatgpu", "--model", "qwen3-8b", "--limit", "0"]])
def test_a_limit_below_one_is_a_usage_error(argv: list[str], capsys: pytest.CaptureFixture[str]) -> None:
    with pytest.raises(SystemExit) as stop:
        cli.main(argv)
    out, err = capsys.readouterr()
    assert stop.value.code == 2 and out == ""
    assert "argument --limit: must be at least 1" in err


def test_ask_shows_a_command_the_client_refused_as_not_sent(monkeypatch: pytest.MonkeyPatch,
                                                             capsys: pytest.CaptureFixture[str]) -> None:
    import bot.sandbox.ask  # noqa: F401 - loaded, so it can be patched in sys.modules
    refused = {"command": "/bogus", "ok": False, "latency_ms": None, "ephemeral": False, "embeds": [], "components": [],
               "files": [], "content": "(Discord would not send this: unknown command /bogus)"}

    async def fake_ask(commands: list[str], **_: Any) -> list[dict[str, Any]]:
        return [refused]

    # The package re-exports ask(), which hides the module of the same name from attribute lookup.
    monkeypatch.setattr(sys.modules["bot.sandbox.ask"], "ask", fake_ask)
    code, out, _ = run(["ask", "/bogus"], capsys)
    assert code == 1
    assert out.splitlines()[:2] == ["> /bogus   (not sent)", "(Discord would not send this: unknown command /bogus)"]


@pytest.mark.parametrize(("oks", "code"), [([True, True], 0), ([True, False], 1), ([False, False], 1)])
def test_ask_exits_1_when_any_command_failed(oks: list[bool], code: int, monkeypatch: pytest.MonkeyPatch,
                                             capsys: pytest.CaptureFixture[str]) -> None:
    import bot.sandbox.ask  # noqa: F401 - loaded, so it can be patched in sys.modules

    async def fake_ask(commands: list[str], **_: Any) -> list[dict[str, Any]]:
        return [{"command": c, "ok": ok, "latency_ms": 5.0 if ok else None, "ephemeral": False, "embeds": [],
                 "components": [], "files": [], "content": "pong" if ok else "(no reply)"}
                for c, ok in zip(commands, oks, strict=True)]

    monkeypatch.setattr(sys.modules["bot.sandbox.ask"], "ask", fake_ask)
    assert run(["ask", "/ping", "/ping", "--json"], capsys)[0] == code


@pytest.mark.parametrize(("argv", "locale"), [
    (["--lang", "zh-CN", "ask", "/ping"], "zh-CN"), (["ask", "/ping", "--lang", "zh-CN"], "zh-CN"),
    (["ask", "/ping"], "en-US"), (["--lang", "zh-CN", "ask", "/ping", "--locale", "en-US"], "en-US"),
])
def test_ask_asks_in_the_language_lang_gave(argv: list[str], locale: str, monkeypatch: pytest.MonkeyPatch,
                                            capsys: pytest.CaptureFixture[str]) -> None:
    """`--lang zh-CN` before or after the command makes the reply Chinese as well as the CLI's own words."""
    import bot.sandbox.ask  # noqa: F401 - loaded, so it can be patched in sys.modules

    asked: list[str] = []

    async def fake_ask(commands: list[str], **options: Any) -> list[dict[str, Any]]:
        asked.append(options["locale"])
        return [{"command": c, "ok": True, "latency_ms": 5.0, "ephemeral": False, "embeds": [], "components": [],
                 "files": [], "content": "pong"} for c in commands]

    monkeypatch.setattr(sys.modules["bot.sandbox.ask"], "ask", fake_ask)
    assert run(argv, capsys)[0] == 0
    assert asked == [locale]


def test_ask_help_documents_the_exit_status(capsys: pytest.CaptureFixture[str]) -> None:
    with pytest.raises(SystemExit):
        cli.main(["ask", "--help"])
    assert "Exit status" in capsys.readouterr().out


@pytest.mark.parametrize(("lang", "note"), [
    ("en", "more setups run it but are left out: their launch prices are unknown"),
    ("zh-CN", "种配置能运行但未列出：其发布价格未知"),
])
def test_whatgpu_under_a_budget_counts_the_unpriced_setups(lang: str, note: str,
                                                           capsys: pytest.CaptureFixture[str]) -> None:
    argv = ["whatgpu", "--model", "qwen3-14b", "--budget", "600"]
    data = run_json([*argv, "--limit", "100"], capsys)
    assert data["unpriced"] > 0
    assert {"amd-rx-7800-xt", "intel-arc-a770-16gb", "amd-rx-7900-gre"} <= {s["gpu"] for s in data["setups"]}
    code, out, _ = run(["--lang", lang, *argv], capsys)
    assert code == 0 and f"{data['unpriced']} " in out and note in out
    assert run_json(["whatgpu", "--model", "qwen3-14b"], capsys)["unpriced"] == 0


def test_fit_text_with_a_batch_states_the_total_rate_and_the_last_first_token(
        capsys: pytest.CaptureFixture[str]) -> None:
    data = run_json(["fit", "--gpu", "4090", "--model", "qwen3-8b", "--batch", "4"], capsys)
    assert cli.main(["fit", "--gpu", "4090", "--model", "qwen3-8b", "--batch", "4"]) == 0
    out = capsys.readouterr().out
    first = data["options"][0]
    line = next(ln for ln in out.splitlines() if ln.startswith(f"{first['quant_name']}: 4 sequences"))
    assert f"{first['aggregate_tps']:,.0f} tok/s in all" in line and f"after {first['ttft_last_s']:.2f} s" in line


def test_the_table_prints_the_range_the_embed_prints(capsys: pytest.CaptureFixture[str]) -> None:
    # Rounded from the estimate itself, not from the JSON's one-decimal copy (26.46 → 26.5 → "26" beside "27").
    speed = Speed(decode_tps=34.3, aggregate_tps=34.3, decode_tps_low=26.52, decode_tps_high=37.6, prefill_tps=1000.0,
                  prefill_tps_low=900.0, prefill_tps_high=1100.0, ttft_s=1.0, ttft_s_low=0.9, ttft_s_high=1.1)
    assert tps_cell(speed) == "~34 (27–38)"
    for gpu, model in (("t4", "qwen3-8b"), ("rtx 4090", "gpt-oss-20b"), ("a30", "llama-3.1-8b")):
        code, out, _ = run(["fit", "--gpu", gpu, "--model", model], capsys)
        assert code == 0
        embed = str(fit_reply(Service(), FitRequest.of(gpu=gpu, model=model), locale="en-US").embeds[0])
        cells = re.findall(r"~([\d,.]+) \(([\d,.]+)–([\d,.]+)\)", out)
        shown = re.findall(r"~([\d,.]+) tok/s \(([\d,.]+)–([\d,.]+)\)", embed)
        assert cells
        assert cells == shown, (gpu, model)


def test_fit_json_says_what_the_table_says_about_the_question_in_english(capsys: pytest.CaptureFixture[str]) -> None:
    argv = ["fit", "--gpu", "rtx 3060", "--model", "qwen3-8b", "--engine", "ollama"]
    en = run_json(argv, capsys)
    assert en["notes"] == ["Ollama itself would load Qwen3-8B at 4k here (its default without num_ctx or "
                           "OLLAMA_CONTEXT_LENGTH: 4k under 23 GiB of GPU memory, 32k under 47 GiB, else 256k, at "
                           "most the model's window); ask ctx:4k to see what that takes"]
    assert run_json(["--lang", "zh-CN", *argv], capsys) == en
    code, table, _ = run(["--lang", "zh-CN", *argv], capsys)
    assert code == 0 and "Ollama 本身会在此配置上以 4k 上下文加载 Qwen3-8B" in table


def test_batch_answers_carry_the_same_notes(capsys: pytest.CaptureFixture[str],
                                            monkeypatch: pytest.MonkeyPatch) -> None:
    monkeypatch.setattr("sys.stdin", io.StringIO('{"gpu": "rtx 3060", "model": "qwen3-8b", "engine": "ollama"}\n'))
    code, out, _ = run(["batch"], capsys)
    assert code == 0
    assert json.loads(out)["notes"][0].startswith("Ollama itself would load Qwen3-8B at 4k here")
