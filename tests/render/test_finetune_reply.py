"""/finetune's embed: the paged-optimizer note only on runs that fit with it; CPU memory for the whole run."""

from __future__ import annotations

import re
from decimal import Decimal

import pytest

from bot.render.replies import finetune_reply
from bot.requests import FinetuneRequest
from bot.service import Service


@pytest.fixture(scope="module")
def svc() -> Service:
    return Service()


def description(svc: Service, gpu: str, model: str, method: str, seq: int, knobs: dict[str, object]) -> str:
    reply = finetune_reply(svc, FinetuneRequest.of(gpu=gpu, model=model, method=method, seq=seq, knobs=knobs),
                           locale="en-US")
    return str(reply.embeds[0]["description"])


def test_a_run_that_does_not_fit_is_not_said_to_run(svc: Service) -> None:
    # QLoRA of a 32B model on 24 GB: over the card even without its (small) paged optimizer state.
    text = description(svc, "3090", "qwen3-32b", "qlora", 2048, {})
    assert text.splitlines()[1].startswith("Does not fit")
    assert "it runs" not in text


def test_a_run_that_fits_by_paging_says_so(svc: Service) -> None:
    text = description(svc, "4090", "llama-3.1-8b", "full", 4096, {"framework": "torchtune"})
    assert "with little headroom" in text.splitlines()[1]
    assert "spills to CPU memory: it runs, slower" in text


def test_a_suggestion_that_fits_only_by_paging_says_so(svc: Service) -> None:
    # At 16k tokens torchtune's full run is over the card; shortening the sequence brings what must stay on
    # the GPU under the line, but the paged optimizer state then lives in host memory.
    reply = finetune_reply(svc, FinetuneRequest.of(gpu="4090", model="llama-3.1-8b", method="full", seq=16384,
                                                   knobs={"framework": "torchtune"}), locale="en-US")
    lines = next(f["value"] for f in reply.embeds[0]["fields"] if f["name"] == "What to change").splitlines()
    shorter = [line for line in lines if line.startswith("• sequence length ≤")]
    assert shorter and shorter[0].endswith("(fits only by paging 15.0 GiB of optimizer state to CPU memory: slower)")
    qlora = [line for line in lines if line.startswith("• QLoRA instead")]
    assert qlora and "paging" not in qlora[0]


PEAK_CASES = [
    ("t4", "deepseek-v2-lite", "qlora", 2048, {}),  # peaks at the loss; the gradients come later
    ("a100 80gb", "qwen3-8b", "full", 2048, {}),  # peaks at the end of backward, every gradient held
    ("4090", "qwen3-8b", "lora", 4096, {"checkpointing": "none"}),  # everything at once
    ("4090", "llama-3.1-8b", "full", 4096, {"framework": "torchtune"}),
    ("h100 sxm", "qwen3-8b", "lora", 2048, {"gradient_accumulation_steps": 4}),
]


@pytest.mark.parametrize("locale", ["en-US", "zh-CN"])
@pytest.mark.parametrize(("gpu", "model", "method", "seq", "knobs"), PEAK_CASES)
def test_memory_parts_add_up_to_the_peak_shown(svc: Service, gpu: str, model: str, method: str, seq: int,
                                               knobs: dict[str, object], locale: str) -> None:
    # The parts listed are the ones the peak holds, each rounded so they add up to the peak the description
    # prints; a term held only at another moment (gradients after the loss, say) is named apart, never summed.
    reply = finetune_reply(svc, FinetuneRequest.of(gpu=gpu, model=model, method=method, seq=seq, knobs=knobs),
                           locale=locale)
    embed = reply.embeds[0]
    peak = re.search(r"(?:peak|峰值) ([0-9.]+) GiB", str(embed["description"]))
    assert peak, embed["description"]
    field = next(f for f in embed["fields"] if "Memory" in f["name"] or "显存" in f["name"])
    lines = field["value"].splitlines()
    parts = [Decimal(line.rsplit(" ", 1)[1]) for line in lines if re.fullmatch(r"[^:：]+ [0-9]+\.[0-9]", line)]
    assert len(parts) >= 4, lines
    assert sum(parts) == Decimal(peak.group(1)), (lines, peak.group(1))


def test_a_term_held_at_another_moment_is_named_apart(svc: Service) -> None:
    reply = finetune_reply(svc, FinetuneRequest.of(gpu="t4", model="deepseek-v2-lite", method="qlora"),
                           locale="en-US")
    field = next(f for f in reply.embeds[0]["fields"] if f["name"].startswith("Memory at the peak"))
    assert field["name"] == "Memory at the peak, at the loss (GiB)"
    lines = field["value"].splitlines()
    assert not any(line.startswith("Gradients") for line in lines[:-1])
    assert lines[-1] == "Not held at the peak (other moments of the step): Re-run block 0.3, Gradients 1.1"


@pytest.mark.parametrize(("locale", "field", "offload", "cards"), [
    ("en-US", "What to change", "`cpu_offload:params`", "3 GPUs (`gpus:3`)"),
    ("zh-CN", "调整建议", "`cpu_offload:params`", "用 3 块显卡（`gpus:3`）"),
])
def test_a_run_over_two_cards_is_told_what_would_fit(svc: Service, locale: str, field: str, offload: str,
                                                     cards: str) -> None:
    # QLoRA of a 70B model on two 3090s does not fit; parameters in CPU memory or a third card would.
    reply = finetune_reply(svc, FinetuneRequest.of(gpu="2x nvidia-rtx-3090", model="llama-3.1-70b", method="qlora"),
                           locale=locale)
    lines = next(f["value"] for f in reply.embeds[0]["fields"] if f["name"] == field).splitlines()
    assert any(offload in line for line in lines), lines
    assert any(line.startswith(f"• {cards}") for line in lines), lines


def test_offloaded_memory_is_said_for_the_whole_run_and_past_a_servers(svc: Service) -> None:
    text = description(svc, "8x h100 sxm", "llama-3.1-405b", "full", 2048, {"offload": "params"})
    line = next(ln for ln in text.splitlines() if "in CPU memory" in ln)
    whole, per_gpu = (float(x.replace(",", "")) for x in re.findall(r"([\d,.]+) GiB", line)[:2])
    assert whole == pytest.approx(8 * per_gpu, abs=0.5) and whole > 2048
    assert line.endswith("more than the 2,048 GiB of CPU memory in NVIDIA's own 8-GPU H200 server")
    # One card's run states its one figure; 70B's 920 GiB is within a server.
    alone = description(svc, "h100 sxm", "llama-3.1-70b", "full", 2048, {"offload": "params"})
    line = next(ln for ln in alone.splitlines() if "in CPU memory" in ln)
    assert "per GPU" not in line and "more than" not in line


def test_the_no_bf16_refusal_names_a_precision_the_command_takes() -> None:
    import typing

    from bot.cogs.finetune import Finetune
    from bot.render.text import t

    hints = typing.get_type_hints(Finetune.finetune.callback, include_extras=True)
    choices = {a for arg in typing.get_args(hints["precision"]) for a in typing.get_args(arg)}
    for locale in ("en-US", "zh-CN"):
        said = t(locale, "bad.finetune_bf16", gpu="NVIDIA T4")
        named = set(re.findall(r"`precision:(\w+)`", said))
        assert named and named <= choices, (said, choices)


def test_a_multi_gpu_run_says_how_it_is_sharded_and_tips_take_off_something(svc: Service) -> None:
    text = str(finetune_reply(svc, FinetuneRequest.of(gpu="4090", model="llama-3.1-8b", method="full", gpus=6),
                              locale="en-US").embeds[0]["description"])
    assert text.splitlines()[0].endswith("· FSDP (everything sharded)")
    one = description(svc, "4090", "llama-3.1-8b", "lora", 2048, {})
    assert "sharded" not in one.splitlines()[0]


def test_no_tip_is_a_rounding_away() -> None:
    from estimator import finetune as ft
    from estimator.memory import usable_vram_bytes

    s = Service()
    gpu = s.gpu("4090")
    model, _ = s.model("llama-3.1-8b")
    settings = FinetuneRequest.of(gpu="4090", model="llama-3.1-8b", method="full", gpus=6).settings(gpu, 6)
    usable = usable_vram_bytes(gpu)
    plan = ft.finetune_plan(model, settings, usable)
    assert plan.verdict == "tight" and plan.changes
    assert all(plan.memory.total - c.total >= 0.02 * usable for c in plan.changes)


def test_a_run_no_server_can_hold_in_cpu_memory_is_not_said_to_run(svc: Service) -> None:
    text = description(svc, "8x h100 sxm", "llama-3.1-405b", "full", 2048, {"offload": "params"})
    assert text.splitlines()[1].startswith("Fits the GPUs, not a server's CPU memory")
