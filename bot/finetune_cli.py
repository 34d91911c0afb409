"""`rigcheck finetune` and `{"finetune": …}` batch lines: one JSON shape for both."""

from __future__ import annotations

from typing import Any

from pydantic import ValidationError

from bot.jsonout import gpu_brief, model_brief
from bot.params import BadValue, parse_tokens
from bot.service import Service
from catalog.schema import GPU
from estimator import finetune as ft
from estimator.constants import GIB
from estimator.memory import usable_vram_bytes

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
    "gradient_accumulation_steps",
    "sharding",
    "offload",
)
TERMS = ("weights", "trainable", "gradients", "optimizer", "activations", "overhead")
EXTRA_TERMS = ("logits", "qlora_buffers", "fragmentation", "offloaded", "pageable", "required")


def finetune_settings(svc: Service, gpu: GPU, query: dict[str, Any]) -> ft.FinetuneSettings:
    """The request's settings; knobs left out come from the framework preset or the method's defaults."""
    # 0 is refused like any other count out of range, not taken for "not given".
    gpus = svc.gpus(int(query["gpus"]) if query.get("gpus") is not None else 1)
    knobs = {k: query[k] for k in KNOBS if query.get(k) is not None}
    try:
        return ft.settings_on(
            gpu,
            method=query.get("method") or "qlora",
            seq=parse_tokens(query.get("seq") or 2048, name="seq"),
            batch=int(query["batch"]) if query.get("batch") is not None else 1,
            gpus=gpus,
            **knobs,
        )
    except ValidationError as exc:
        first = exc.errors()[0]
        raise BadValue(f"{'.'.join(map(str, first['loc']))}: {first['msg']}") from None


def _gib(value: float) -> float:
    return round(value / GIB, 2)


def finetune_json(svc: Service, query: dict[str, Any]) -> dict[str, Any]:
    if not isinstance(query, dict) or not query.get("gpu") or not query.get("model"):
        raise BadValue("finetune needs gpu and model")
    gpu = svc.gpu(str(query["gpu"]))
    model, _ = svc.model(str(query["model"]))
    settings = finetune_settings(svc, gpu, query)
    svc.check_context(model, settings.seq)
    budget = usable_vram_bytes(gpu)
    plan = ft.finetune_plan(model, settings, budget)
    mem = plan.memory
    memory_gb = {t: _gib(getattr(mem, t)) for t in TERMS}
    # Logits and loss buffers are reported with the activations they peak alongside.
    memory_gb["activations"] = _gib(mem.activations + mem.logits)
    memory_gb["total"] = _gib(mem.total)
    memory_gb.update({t: _gib(getattr(mem, t)) for t in EXTRA_TERMS})
    memory_gb["allocated"] = _gib(mem.allocated)
    memory_gb["reserved"] = _gib(mem.reserved)
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
        "usable_gb": _gib(budget),
        "fits": plan.verdict != "does_not_fit",
        "verdict": plan.verdict,
        "max_seq": plan.max_seq,
        "max_batch": plan.max_batch,
        "changes": [
            {"change": c.key, "to": c.value, "total_gb": _gib(c.total), "verdict": c.verdict} for c in plan.changes
        ],
        "curve": [
            {"method": c.method, "seq": list(c.seq), "total_gb": [_gib(t) for t in c.total_bytes], "max_seq": c.max_seq}
            for c in plan.curves
        ],
    }
