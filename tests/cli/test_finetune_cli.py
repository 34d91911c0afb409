"""`rigcheck finetune`: the JSON contract, the knobs, and agreement with `rigcheck gpu` on what fits."""

from __future__ import annotations

import json
from typing import Any

import pytest

from bot import cli

# The keys the first version of the JSON carried; they stay.
LEGACY_KEYS = {"gpu", "model", "method", "settings", "memory_gb", "usable_gb", "fits", "max_seq", "max_batch"}
LEGACY_MEMORY = {"weights", "trainable", "gradients", "optimizer", "activations", "overhead", "total"}
LEGACY_SETTINGS = {
    "method", "seq", "batch", "rank", "targets", "optimizer", "precision", "master_weights_fp32", "double_quant",
    "checkpointing", "flash_attention", "packing", "loss", "gradient_accumulation", "optimizer_in_backward", "gpus",
    "sharding",
}
NEW_KEYS = {"framework", "verdict", "changes", "curve", "peak_gb", "host_memory_gb", "host_memory_large"}
NEW_SETTINGS = {
    "framework", "lora_dropout", "lora_head", "train_embeddings", "regime", "base_fp32", "checkpointing_mode",
    "activation_offload", "attention", "gradient_accumulation_steps", "offload", "fused_optimizer", "compiled",
    "unsharded_accumulation", "quant_backend", "empty_cache_steps",
}


def run_json(argv: list[str], capsys: pytest.CaptureFixture[str]) -> Any:
    code = cli.main([*argv, "--json"])
    out, err = capsys.readouterr()
    assert code == 0, err
    return json.loads(out)


def test_json_keeps_its_keys_and_adds_the_knobs(capsys: pytest.CaptureFixture[str]) -> None:
    data = run_json(["finetune", "--gpu", "a100 40gb", "--model", "llama-3.1-8b", "--method", "lora"], capsys)
    assert set(data) == LEGACY_KEYS | NEW_KEYS
    assert set(data["settings"]) == LEGACY_SETTINGS | NEW_SETTINGS
    assert LEGACY_MEMORY <= set(data["memory_gb"])
    assert data["framework"] is None and data["verdict"] in ("fits", "tight", "does_not_fit")
    assert [c["method"] for c in data["curve"]] == ["qlora", "lora", "full"]


def test_framework_and_flags_reach_the_estimate(capsys: pytest.CaptureFixture[str]) -> None:
    base = ["finetune", "--gpu", "h100 sxm", "--model", "llama-3.1-8b", "--method", "full", "--seq", "4k"]
    tt = run_json([*base, "--framework", "torchtune"], capsys)
    assert tt["framework"] == "torchtune"
    s = tt["settings"]
    assert (s["regime"], s["optimizer"], s["optimizer_in_backward"], s["loss"]) == (
        "bf16", "paged_adamw8bit", True, "chunked",
    )
    mine = run_json([*base, "--framework", "torchtune", "--optimizer", "adamw", "--no-optimizer-in-backward"], capsys)
    assert mine["settings"]["optimizer"] == "adamw" and not mine["settings"]["optimizer_in_backward"]
    assert mine["memory_gb"]["total"] > tt["memory_gb"]["total"]
    amp = run_json([*base, "--regime", "amp_bf16", "--fused-optimizer"], capsys)
    pure = run_json([*base, "--regime", "bf16", "--fused-optimizer"], capsys)
    # 16 against 8 bytes per parameter for 8.03 B parameters: about 60 GiB apart.
    assert amp["memory_gb"]["total"] - pure["memory_gb"]["total"] == pytest.approx(8.03e9 * 8 / 2**30, rel=0.05)
    # torch's default foreach AdamW step adds one moment of temporaries (bf16 here: 2 bytes per parameter).
    foreach = run_json([*base, "--regime", "bf16", "--no-fused-optimizer"], capsys)
    assert foreach["memory_gb"]["total"] - pure["memory_gb"]["total"] == pytest.approx(8.03e9 * 2 / 2**30, rel=0.05)
    off = run_json([*base, "--regime", "bf16", "--activation-offload", "--checkpointing-mode", "none"], capsys)
    assert off["memory_gb"]["offloaded"] > 0
    assert off["settings"]["checkpointing_mode"] == "none"


def test_gpu_card_and_finetune_agree_on_two_gpus(capsys: pytest.CaptureFixture[str]) -> None:
    """The largest QLoRA model `rigcheck gpu --gpus 2` names is one `rigcheck finetune --gpus 2` says fits."""
    card = run_json(["gpu", "--gpu", "t4", "--gpus", "2"], capsys)
    best = card["finetune"]["qlora"]
    assert best is not None
    ft = run_json(["finetune", "--gpu", "t4", "--gpus", "2", "--model", best["id"], "--method", "qlora"], capsys)
    assert ft["fits"], ft["memory_gb"]
    one = run_json(["gpu", "--gpu", "t4"], capsys)["finetune"]["qlora"]
    assert one is not None and one["params_b"] <= best["params_b"]


def run_text(argv: list[str], capsys: pytest.CaptureFixture[str]) -> str:
    code = cli.main(argv)
    out, err = capsys.readouterr()
    assert code == 0 and err == ""
    return out


PAGED_FULL = ["finetune", "--gpu", "4090", "--model", "llama-3.1-8b", "--method", "full", "--framework", "torchtune",
              "--seq", "4k"]


def test_text_headline_weighs_what_the_verdict_weighs(capsys: pytest.CaptureFixture[str]) -> None:
    # torchtune's paged 8-bit optimizer state may move to the host: the run is tight although its peak with
    # that state is over the card, and the headline's figure is the one the verdict is about.
    data = run_json(PAGED_FULL, capsys)
    mem = data["memory_gb"]
    assert data["verdict"] == "tight" and mem["total"] > data["usable_gb"] >= mem["required"]
    head = run_text(PAGED_FULL, capsys).splitlines()[0]
    assert head.endswith(f": fits, tight ({mem['required']:.2f} of {data['usable_gb']:.2f} GiB usable per GPU, "
                         f"{mem['total']:.2f} GiB with the paged optimizer state)")


def test_text_changes_are_flags_that_give_the_figure_shown(capsys: pytest.CaptureFixture[str]) -> None:
    argv = ["finetune", "--gpu", "4090", "--model", "llama-3.1-8b", "--method", "lora", "--framework", "hf"]
    out = run_text(argv, capsys)
    assert "None" not in out
    assert "largest micro-batch none fits (at seq 2048)" in out
    tries = [line.strip()[len("try "):] for line in out.splitlines() if line.strip().startswith("try ")]
    assert len(tries) >= 2
    for line in tries:
        flags, shown = line.split(": ")
        data = run_json([*argv, *flags.split()], capsys)
        host = f", {data['host_memory_gb']:.2f} GiB in CPU memory" if data["host_memory_gb"] else ""
        assert f"{data['memory_gb']['total']:.2f} GiB ({data['verdict'].replace('_', ' ')}{host})" == shown, flags


def test_text_does_not_say_it_runs_when_it_does_not_fit(capsys: pytest.CaptureFixture[str]) -> None:
    argv = ["finetune", "--gpu", "3090", "--model", "qwen3-32b"]
    data = run_json(argv, capsys)
    assert data["verdict"] == "does_not_fit" and data["memory_gb"]["pageable"] > 0
    out = run_text(argv, capsys)
    assert ": does not fit (" in out.splitlines()[0]
    assert "it runs" not in out
    assert "it runs, slower" in run_text(PAGED_FULL, capsys)


@pytest.mark.parametrize(("extra", "message"), [
    (["--seq", "1M"], "rigcheck: 1M is past Qwen3-8B's longest documented context (128k); ask for at most 128k"),
    (["--gpus", "0"], "rigcheck: gpus must be between 1 and 8"),
    (["--batch", "0"], "rigcheck: batch must be at least 1"),
])
def test_out_of_range_input_is_one_line(extra: list[str], message: str, capsys: pytest.CaptureFixture[str]) -> None:
    code = cli.main(["finetune", "--gpu", "4090", "--model", "qwen3-8b", *extra])
    out, err = capsys.readouterr()
    assert code == 2 and out == ""
    assert err.startswith(message) and err.count("\n") == 1


def test_text_lists_the_parts_of_the_peak_that_add_up_to_it(capsys: pytest.CaptureFixture[str]) -> None:
    # QLoRA of DeepSeek-V2-Lite on a T4 peaks at the loss: its gradients come after it and are not summed in.
    argv = ["finetune", "--gpu", "t4", "--model", "deepseek-v2-lite", "--method", "qlora"]
    data = run_json(argv, capsys)
    peak = data["peak_gb"]
    assert peak["phase"] == "loss" and "gradients" not in peak["held"] and peak["apart"]["gradients"] > 0
    assert round(sum(peak["held"].values()), 2) == data["memory_gb"]["total"]
    lines = run_text(argv, capsys).splitlines()
    start = lines.index("  at the peak (at the loss):")
    end = next(i for i in range(start + 1, len(lines)) if lines[i].startswith("    total "))
    parts = [float(line.split()[-2]) for line in lines[start + 1:end]]
    assert round(sum(parts), 2) == float(lines[end].split()[-2]) == data["memory_gb"]["total"]
    assert lines[end + 1].startswith("  not held at the peak (other moments of the step): ")


TWO_3090S = ["finetune", "--gpu", "nvidia-rtx-3090", "--gpus", "2", "--model", "llama-3.1-70b", "--method", "qlora"]
BETTER = {"does_not_fit": ("tight", "fits"), "tight": ("fits",)}


def test_the_largest_seq_agrees_with_the_verdict_at_the_asked_one(capsys: pytest.CaptureFixture[str]) -> None:
    # Tight at 128 tokens: the largest sequence is at least 128, to the token, never "none fits".
    argv = [*TWO_3090S, "--seq", "128"]
    out = run_text(argv, capsys)
    assert ": fits, tight (" in out.splitlines()[0]
    assert "largest seq none fits" not in out
    data = run_json(argv, capsys)
    assert data["verdict"] == "tight" and data["max_seq"] >= 128 and data["max_batch"] >= 1
    longer = run_json([*TWO_3090S, "--seq", str(data["max_seq"] + 1)], capsys)
    assert longer["verdict"] == "does_not_fit"


@pytest.mark.parametrize("seq", ["2048", "128"])
def test_each_try_is_flags_that_lift_the_verdict(seq: str, capsys: pytest.CaptureFixture[str]) -> None:
    # Does not fit at 2048 (parameters in CPU memory or a third card would do), tight at 128: every suggestion is
    # a change of flags that, run, gives the figure shown and a better verdict than the question's.
    argv = [*TWO_3090S, "--seq", seq]
    asked = run_json(argv, capsys)["verdict"]
    out = run_text(argv, capsys)
    tries = [line.strip()[len("try "):] for line in out.splitlines() if line.strip().startswith("try ")]
    assert tries
    for line in tries:
        flags, shown = line.split(": ", 1)
        data = run_json([*argv, *flags.split()], capsys)
        assert data["verdict"] in BETTER[asked], (flags, data["verdict"])
        assert shown.startswith(f"{data['memory_gb']['total']:.2f} GiB ({data['verdict'].replace('_', ' ')}"), flags
    if asked == "does_not_fit":
        assert any(line.startswith("--offload params:") for line in tries)
        assert any(line.startswith("--gpus 3:") for line in tries)


def test_a_count_in_the_gpu_name_is_the_runs_count(capsys: pytest.CaptureFixture[str]) -> None:
    named = run_json(["finetune", "--gpu", "8x h100 sxm", "--model", "llama-3.1-70b", "--method", "full"], capsys)
    flag = run_json(["finetune", "--gpu", "h100 sxm", "--gpus", "8", "--model", "llama-3.1-70b", "--method", "full"],
                    capsys)
    one = run_json(["finetune", "--gpu", "h100 sxm", "--model", "llama-3.1-70b", "--method", "full"], capsys)
    assert named["gpu"]["count"] == named["settings"]["gpus"] == 8
    assert named["memory_gb"] == flag["memory_gb"] and named["memory_gb"]["total"] < one["memory_gb"]["total"] / 4


def test_cpu_memory_is_counted_for_the_whole_run(capsys: pytest.CaptureFixture[str]) -> None:
    data = run_json(["finetune", "--gpu", "8x h100 sxm", "--model", "llama-3.1-405b", "--method", "full",
                     "--offload", "params"], capsys)
    # 405B parameters with an fp32 master copy, AdamW's two fp32 moments and bf16 weights: 14 bytes each, ~5.2 TiB.
    assert data["host_memory_gb"] == pytest.approx(8 * data["memory_gb"]["offloaded"], abs=0.05)
    assert data["host_memory_gb"] > 405e9 * 14 / 2**30 * 0.95 and data["host_memory_large"]
    cli.main(["finetune", "--gpu", "8x h100 sxm", "--model", "llama-3.1-405b", "--method", "full",
              "--offload", "params"])
    assert "more than the 2,048 GiB of CPU memory" in capsys.readouterr().out


def test_offload_tips_say_how_much_cpu_memory_and_stay_within_a_server(capsys: pytest.CaptureFixture[str]) -> None:
    seventy = run_json(["finetune", "--gpu", "8x h100 sxm", "--model", "llama-3.1-70b", "--method", "full"], capsys)
    offload = [c for c in seventy["changes"] if c["change"].startswith("cpu_offload")]
    assert offload and all(0 < c["host_gb"] <= 2048 for c in offload)
    # 405B's offloaded state (over 5 TiB) fits no server: the tip is not offered.
    big = run_json(["finetune", "--gpu", "8x h100 sxm", "--model", "llama-3.1-405b", "--method", "full"], capsys)
    assert not [c for c in big["changes"] if c["change"].startswith("cpu_offload")]
    assert [c["change"] for c in big["changes"]] == ["qlora"]
