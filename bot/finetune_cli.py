"""`rigcheck finetune` and `{"finetune": …}` batch lines: one JSON shape for both."""

from __future__ import annotations

from typing import Any

from pydantic import ValidationError

from bot.jsonout import gpu_brief, model_brief
from bot.params import BadValue, parse_tokens
from bot.service import Service
from estimator import finetune as ft
from estimator.constants import GIB
from estimator.memory import usable_vram_bytes

KNOBS = ("rank", "targets", "optimizer", "precision", "checkpointing", "sharding")
TERMS = ("weights", "trainable", "gradients", "optimizer", "activations", "overhead")


def finetune_json(svc: Service, query: dict[str, Any]) -> dict[str, Any]:
    if not isinstance(query, dict) or not query.get("gpu") or not query.get("model"):
        raise BadValue("finetune needs gpu and model")
    gpu = svc.gpu(str(query["gpu"]))
    model, _ = svc.model(str(query["model"]))
    gpus = svc.gpus(int(query.get("gpus") or 1))
    knobs = {k: query[k] for k in KNOBS if query.get(k) is not None}
    if gpus > 1 and "sharding" not in knobs:
        knobs["sharding"] = "fsdp"
    try:
        settings = ft.FinetuneSettings(
            method=query.get("method") or "qlora",
            seq=parse_tokens(query.get("seq") or 2048, name="seq"),
            batch=int(query.get("batch") or 1),
            gpus=gpus,
            **knobs,
        )
    except ValidationError as exc:
        first = exc.errors()[0]
        raise BadValue(f"{'.'.join(map(str, first['loc']))}: {first['msg']}") from None
    mem = ft.finetune_memory(model, settings)
    budget = usable_vram_bytes(gpu)
    memory_gb = {t: round(getattr(mem, t) / GIB, 2) for t in TERMS}
    # Logits and loss buffers are reported with the activations they peak alongside.
    memory_gb["activations"] = round((mem.activations + mem.logits) / GIB, 2)
    memory_gb["total"] = round(mem.total / GIB, 2)
    return {
        "gpu": gpu_brief(gpu, gpus),
        "model": model_brief(model),
        "method": settings.method,
        "settings": {**settings.model_dump(mode="json"), "optimizer": settings.optimizer_used},
        "memory_gb": memory_gb,
        "usable_gb": round(budget / GIB, 2),
        "fits": mem.total <= budget,
        "max_seq": ft.max_seq(model, settings, budget, step=256),
        "max_batch": ft.max_batch(model, settings, budget),
    }
