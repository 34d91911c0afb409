"""`rigcheck finetune` and `{"finetune": …}` batch lines: one JSON shape for both, and the table of it."""

from __future__ import annotations

import argparse
import json
import sys
from typing import Any

from bot.cli.common import lang
from bot.cli.json_shapes import gpu_brief, model_brief
from bot.params import BadValue
from bot.render.memory_figures import peak_figures
from bot.render.table import pad
from bot.render.text import t
from bot.requests import DEFAULT_FINETUNE_SEQ, DEFAULT_METHOD, FinetuneRequest
from bot.service import Service
from estimator import finetune as ft
from estimator.memory import usable_vram_bytes
from estimator.units import to_gib

# Request keys passed to the estimator as they are (None: not given, the framework or default decides).
KNOBS = (
    "framework",
    "rank",
    "targets",
    "lora_dropout",
    "lora_head",
    "train_embeddings",
    "optimizer",
    "optimizer_in_backward",
    "compiled",
    "unsharded_accumulation",
    "quant_backend",
    "fused_optimizer",
    "precision",
    "regime",
    "master_weights_fp32",
    "double_quant",
    "checkpointing",
    "checkpointing_mode",
    "activation_offload",
    "attention",
    "loss",
    "packing",
    "empty_cache_steps",
    "gradient_accumulation_steps",
    "sharding",
    "offload",
)
TERMS = ("weights", "trainable", "gradients", "optimizer", "activations", "overhead")
# What the table states beside the peak's parts (the other terms are among those parts or held apart).
BESIDE_THE_PEAK = ("fragmentation", "offloaded", "pageable", "required", "allocated", "reserved")
PEAK_GIB_DIGITS = 2  # as `to_gib` rounds the JSON's figures
EXTRA_TERMS = ("logits", "qlora_buffers", "gathered", "fragmentation", "offloaded", "pageable", "required")


def finetune_request(query: dict[str, Any]) -> FinetuneRequest:
    """A `finetune` flag set or batch line as the request; knobs left out stay to the framework or method."""
    return FinetuneRequest.of(gpu=query.get("gpu"), model=query.get("model"), method=query.get("method"),
                           seq=query.get("seq"), batch=query.get("batch"), gpus=query.get("gpus"),
                           knobs={k: query.get(k) for k in KNOBS})


def finetune_json(svc: Service, query: dict[str, Any]) -> dict[str, Any]:
    if not isinstance(query, dict) or not query.get("gpu") or not query.get("model"):
        raise BadValue.of("cli.ft.needs_gpu_and_model")
    req = finetune_request(query)
    # "8x h100" names the count, as in /finetune; --gpus says it where the name does not.
    choice = svc.gpu_choice(req.gpu, req.gpus)
    gpu = choice.gpu
    model, _ = svc.model(req.model)
    settings = req.settings(gpu, choice.count)
    svc.check_context(model, settings.seq)
    budget = usable_vram_bytes(gpu)
    plan = ft.finetune_plan(model, settings, budget, more_gpus=not gpu.unified_memory)
    mem = plan.memory
    memory_gb = {t: to_gib(getattr(mem, t)) for t in TERMS}
    # Logits and loss buffers are reported with the activations they peak alongside.
    memory_gb["activations"] = to_gib(mem.activations + mem.logits)
    memory_gb["total"] = to_gib(mem.total)
    memory_gb.update({t: to_gib(getattr(mem, t)) for t in EXTRA_TERMS})
    memory_gb["allocated"] = to_gib(mem.allocated)
    memory_gb["reserved"] = to_gib(mem.reserved)
    # The terms do not all peak together (`memory_gb` lists each at its largest): what the peak holds, rounded
    # so it adds up to the total, and what other moments of the step hold beyond it.
    peak = peak_figures(mem, PEAK_GIB_DIGITS)
    host = ft.host_memory_bytes(mem, settings)
    peak_gb = {"phase": mem.peak_phase, "held": {term: float(f) for term, f in peak.held},
               "apart": {term: float(f) for term, f in peak.apart}}
    return {
        "gpu": gpu_brief(gpu, settings.gpus),
        "model": model_brief(model),
        "method": settings.method,
        "framework": settings.framework,
        "settings": {
            **settings.model_dump(mode="json", exclude={"regime"}),
            "optimizer": settings.optimizer_used,
            "regime": settings.regime_used,
            "checkpointing_mode": settings.checkpointing_used,
            "attention": settings.attention_used,
        },
        "memory_gb": memory_gb,
        "peak_gb": peak_gb,
        "usable_gb": to_gib(budget),
        # CPU memory the whole run offloads to (memory_gb.offloaded is one GPU's share), and whether that is more
        # than a large 8-GPU server has (estimator.finetune.LARGE_HOST_MEMORY_BYTES).
        "host_memory_gb": to_gib(host),
        "host_memory_large": host > ft.LARGE_HOST_MEMORY_BYTES,
        "fits": plan.verdict != "does_not_fit",
        "verdict": plan.verdict,
        "max_seq": plan.max_seq,
        "max_batch": plan.max_batch,
        "changes": [
            {"change": c.key, "to": c.value, "total_gb": to_gib(c.total), "verdict": c.verdict,
             "paged_gb": to_gib(c.paged), "host_gb": to_gib(c.host)}
            for c in plan.changes
        ],
        "curve": [
            {"method": c.method, "seq": list(c.seq), "total_gb": [to_gib(t) for t in c.total_bytes],
             "max_seq": c.max_seq}
            for c in plan.curves
        ],
    }


# --- the command ----------------------------------------------------------------------------------


def cmd_finetune(svc: Any, args: argparse.Namespace) -> int:
    data = finetune_json(svc, {k: v for k, v in vars(args).items() if k not in ("func", "command", "json")})
    if args.json:
        sys.stdout.write(json.dumps(data) + "\n")
        return 0
    s, loc = data["settings"], lang(args)
    mem = data["memory_gb"]
    # The verdict weighs what must stay on the GPU; paged optimizer state may move to host memory.
    weighed = t(loc, "cli.ft.weighed", required=f"{mem['required']:.2f}", usable=f"{data['usable_gb']:.2f}")
    if mem["pageable"] and mem["total"] > data["usable_gb"]:
        weighed = t(loc, "cli.ft.weighed_paged", weighed=weighed, total=f"{mem['total']:.2f}")
    print(t(loc, "cli.ft.title", method=data["method"], model=data["model"]["name"], count=data["gpu"]["count"],
            gpu=data["gpu"]["name"], weighed=weighed,
            verdict=t(loc, "cli.ft.verdict.host") if data["host_memory_large"]
            else t(loc, f"cli.ft.verdict.{data['verdict']}")))
    knobs = [data["framework"] or t(loc, "cli.ft.default_framework"), s["regime"], s["optimizer"],
             t(loc, "cli.ft.checkpointing", mode=s["checkpointing_mode"]), t(loc, "cli.ft.loss", loss=s["loss"]),
             t(loc, "cli.ft.attention", attention=s["attention"])]
    if s["activation_offload"]:
        knobs.append(t(loc, "cli.ft.activation_offload"))
    if s["gpus"] > 1:
        knobs.append(t(loc, f"ft.sharding.{s['sharding']}"))
    print("  " + " · ".join(knobs))
    if mem["pageable"] and mem["total"] > data["usable_gb"] and data["verdict"] != "does_not_fit":
        print("  " + t(loc, "cli.ft.spills", gib=f"{mem['pageable']:.2f}"))
    peak = data["peak_gb"]
    print("  " + t(loc, "cli.ft.at_peak", phase=t(loc, f"ft.phase.{peak['phase']}")))
    for key, value in [*peak["held"].items(), ("total", mem["total"])]:
        print(f"    {pad(t(loc, f'cli.term.{key}'), 14)} {value:8.2f} GiB")
    if peak["apart"]:
        apart = t(loc, "list_sep").join(f"{t(loc, f'cli.term.{key}')} {value:.2f} GiB"
                                        for key, value in peak["apart"].items())
        print("  " + t(loc, "cli.ft.apart", parts=apart))
    for key in BESIDE_THE_PEAK:
        print(f"  {pad(t(loc, f'cli.term.{key}'), 16)} {mem[key]:8.2f} GiB")
    if data["host_memory_gb"] and (data["gpu"]["count"] > 1 or data["host_memory_large"]):
        print("  " + t(loc, "cli.ft.host", gib=f"{data['host_memory_gb']:.2f}")
              + (" — " + t(loc, "ft.host_large") if data["host_memory_large"] else ""))
    none_fits = t(loc, "cli.ft.none_fits")
    print("  " + t(loc, "cli.ft.largest", seq=data["max_seq"] or none_fits, batch=data["max_batch"] or none_fits,
                   at_seq=s["seq"]))
    for c in data["changes"]:
        paged = t(loc, "cli.ft.try_paged", gib=f"{c['paged_gb']:.2f}") if c["paged_gb"] else ""
        if c["host_gb"] and c["change"] in ft.OFFLOAD_CHANGES:
            paged += t(loc, "cli.ft.try_host", gib=f"{c['host_gb']:.2f}")
        flags = _FINETUNE_CHANGE_FLAGS[c["change"]].format(c["to"])
        print("  " + t(loc, "cli.ft.try", flags=flags, gib=f"{c['total_gb']:.2f}",
                       verdict=t(loc, f"verdict.{c['verdict']}"), paged=paged))
    return 0


# Each suggested change (estimator.finetune.ChangeKey) as the flags that make it.
_FINETUNE_CHANGE_FLAGS: dict[ft.ChangeKey, str] = {
    "optimizer_8bit": "--optimizer {}",
    "optimizer_paged": "--optimizer {}",
    "checkpointing": "--checkpointing-mode {}",
    "sharding": "--sharding {}",
    "batch": "--batch {}",
    "offload": "--activation-offload",
    "cpu_offload_optimizer": "--offload {}",
    "cpu_offload_params": "--offload {}",
    "rank": "--rank {}",
    "seq": "--seq {}",
    "lora": "--method {}",
    "qlora": "--method {}",
    "qlora_seq": "--method qlora --seq {}",
    "framework": "--framework {}",
    "gpus": "--gpus {}",
    "gpus_fsdp": "--gpus {} --sharding " + ft.SHARDED,
}


def register(sub: Any) -> None:
    from estimator.finetune_presets import FRAMEWORKS

    def choices(literal: Any) -> list[str]:
        return list(literal.__args__)

    p = sub.add_parser("finetune", help="peak memory of full, LoRA or QLoRA fine-tuning")
    p.add_argument("--gpu", required=True)
    p.add_argument("--model", required=True)
    p.add_argument("--method", default=DEFAULT_METHOD, choices=choices(ft.Method))
    p.add_argument("--framework", choices=list(FRAMEWORKS), help="take every unset knob from this framework")
    p.add_argument("--seq", default=str(DEFAULT_FINETUNE_SEQ), help="sequence length (2048, 8k, 32k)")
    p.add_argument("--batch", default=1, help="micro-batch per GPU")  # counts are read (and refused) by the request
    p.add_argument("--gpus", default=1)
    p.add_argument("--sharding", choices=choices(ft.Sharding))
    p.add_argument("--offload", choices=choices(ft.Offload), help="CPU offload of optimizer state or parameters")
    p.add_argument("--rank", type=int)
    p.add_argument("--targets", choices=choices(ft.Targets))
    p.add_argument("--lora-dropout", type=float, dest="lora_dropout")
    p.add_argument("--lora-head", action=argparse.BooleanOptionalAction, default=None, dest="lora_head")
    p.add_argument("--train-embeddings", action=argparse.BooleanOptionalAction, default=None, dest="train_embeddings")
    p.add_argument("--optimizer", choices=choices(ft.Optimizer))
    p.add_argument("--optimizer-in-backward", action=argparse.BooleanOptionalAction, default=None,
                   dest="optimizer_in_backward")
    p.add_argument("--fused-optimizer", action=argparse.BooleanOptionalAction, default=None, dest="fused_optimizer",
                   help="torch AdamW(fused=True): no foreach step temporaries")
    p.add_argument("--compile", action=argparse.BooleanOptionalAction, default=None, dest="compiled",
                   help="torch.compile of the blocks and the loss (torchtune compile: True)")
    p.add_argument("--unsharded-accumulation", action=argparse.BooleanOptionalAction, default=None,
                   dest="unsharded_accumulation",
                   help="FSDP no_sync while accumulating: full gradients on every GPU until the step")
    p.add_argument("--quant-backend", choices=choices(ft.QuantBackend), dest="quant_backend",
                   help="QLoRA 4-bit kernels: bitsandbytes keeps each 4-bit layer's input, torchao does not")
    p.add_argument("--regime", choices=choices(ft.Regime),
                   help="bf16: pure bf16 (no fp32 copy); amp_bf16/amp_fp16: fp32 master weights; fp32")
    p.add_argument("--precision", choices=choices(ft.Precision), help="compute dtype (see --regime)")
    p.add_argument("--checkpointing", action=argparse.BooleanOptionalAction, default=None)
    p.add_argument("--checkpointing-mode", choices=choices(ft.Checkpointing), dest="checkpointing_mode")
    p.add_argument("--activation-offload", action=argparse.BooleanOptionalAction, default=None,
                   dest="activation_offload")
    p.add_argument("--attention", choices=choices(ft.Attention))
    p.add_argument("--loss", choices=choices(ft.Loss),
                   help="fp32_upcast (Hugging Face >= 4.46), fp32_upcast_forward (older), chunked, fused")
    p.add_argument("--packing", action=argparse.BooleanOptionalAction, default=None)
    p.add_argument("--grad-accum", type=int, dest="gradient_accumulation_steps", help="gradient accumulation steps")
    p.add_argument("--empty-cache-steps", type=int, dest="empty_cache_steps",
                   help="the trainer empties the allocator cache every N steps (torch_empty_cache_steps)")
    p.add_argument("--json", action="store_true")
    p.set_defaults(func=cmd_finetune)
