"""The JSON shapes other tools read from `rigcheck … --json`. Keys here are a contract: keep them stable."""

from __future__ import annotations

from typing import Any

from catalog.schema import GPU, Model
from estimator.advice import offload_format, partial_offload
from estimator.capability import LargestModel
from estimator.rank import RankRow
from estimator.speed import Speed
from estimator.units import to_gib
from estimator.verdict import FitResult
from estimator.whatgpu import Setup


def gpu_brief(gpu: GPU, count: int = 1) -> dict[str, Any]:
    return {"id": gpu.id, "name": gpu.name, "count": count, "vram_gb": gpu.vram_gb, "bandwidth_gbs": gpu.bandwidth_gbs}


def model_brief(model: Model) -> dict[str, Any]:
    return {"id": model.id, "name": model.name, "params_b": model.params_b, "active_params_b": model.active_params_b}


def fit_json(result: FitResult, notes: list[str]) -> dict[str, Any]:
    """`notes`: what the answer says about how the question was read (`fit_notes`), in English whatever the
    language of the tables, as the rest of the JSON is."""
    q = result.query
    return {
        "gpu": gpu_brief(q.gpu, q.gpus),
        "model": model_brief(q.model),
        "engine": q.engine,
        "ctx": q.ctx,
        "prompt_tokens": q.prompt_tokens,
        "kv_dtype": q.kv,
        "batch": q.batch,
        "options": [
            {
                "quant": o.quant.id,
                "quant_name": o.quant.name,
                "fits": o.fits,
                "verdict": o.memory.verdict,
                "memory_gb": {
                    "weights": to_gib(o.memory.weights_bytes),
                    "kv_cache": to_gib(o.memory.kv_cache_bytes),
                    "overhead": to_gib(o.memory.overhead_bytes),
                    "total": to_gib(o.memory.total_bytes),
                    "usable": to_gib(o.memory.usable_bytes),
                    "headroom": to_gib(o.memory.headroom_bytes),
                    # Weights the engine keeps in system RAM (llama.cpp's token embedding); not in `total`.
                    "host_weights": to_gib(o.memory.host_weights_bytes),
                },
                **speed_json(o.speed),
                "aggregate_tps": round(o.speed.aggregate_tps, 1),
                # With `batch` prompts arriving at once, when the last has its first token (= ttft_s at batch 1).
                "ttft_last_s": round(o.speed.ttft_last_s, 3),
                "ttft_last_s_low": round(o.speed.ttft_last_s_low, 3),
                "ttft_last_s_high": round(o.speed.ttft_last_s_high, 3),
                "max_ctx": o.max_ctx,
                "max_ctx_scaled": o.max_ctx_scaled,
            }
            for o in result.options
        ],
        # Where no format fits and the engine is llama.cpp: the split with some layers in system RAM, and its speed
        # (each option's decode_tps is for the whole model on the GPU, which it does not fit).
        "partial_offload": offload_json(result),
        "notes": notes,
    }


def offload_json(result: FitResult) -> dict[str, Any] | None:
    plan = partial_offload(result)
    if plan is None:
        return None
    return {"quant": offload_format(result).id, "gpu_layers": plan.gpu_layers, "total_layers": plan.total_layers,
            "vram_gb": to_gib(plan.vram_bytes), "ram_gb": to_gib(plan.ram_bytes),
            "decode_tps": round(plan.decode_tps, 1), "system_ram_gbs": plan.system_ram_gbs,
            # Set where the split moves routed experts, not layers: how many MoE layers' experts, and llama.cpp's
            # `--n-cpu-moe` value for it (which counts leading dense layers too).
            "cpu_moe_layers": plan.cpu_moe_layers, "n_cpu_moe": plan.n_cpu_moe}


def speed_json(speed: Speed) -> dict[str, float]:
    """Every estimate with its 80 % range, under the same keys wherever a speed is answered."""
    return {
        "decode_tps": round(speed.decode_tps, 1),
        "decode_tps_low": round(speed.decode_tps_low, 1),
        "decode_tps_high": round(speed.decode_tps_high, 1),
        "prefill_tps": round(speed.prefill_tps, 1),
        "prefill_tps_low": round(speed.prefill_tps_low, 1),
        "prefill_tps_high": round(speed.prefill_tps_high, 1),
        "ttft_s": round(speed.ttft_s, 3),
        "ttft_s_low": round(speed.ttft_s_low, 3),
        "ttft_s_high": round(speed.ttft_s_high, 3),
    }


def setup_json(s: Setup) -> dict[str, Any]:
    return {"gpu": s.gpu.id, "name": s.gpu.name, "count": s.count, "quant": s.quant.id, **speed_json(s.speed),
            "price_usd": s.price_usd, "power_w": s.power_w, "verdict": s.memory.verdict,
            "memory_gb": {"total": to_gib(s.memory.total_bytes), "usable": to_gib(s.memory.usable_bytes)},
            "headroom_gb": to_gib(s.headroom_bytes)}


def rank_json(gpu: GPU, gpus: int, ctx: int, rows: list[RankRow]) -> dict[str, Any]:
    return {
        "gpu": gpu_brief(gpu, gpus),
        "ctx": ctx,
        "rows": [
            {
                "rank": i + 1,
                "model": {**model_brief(r.model), "seed_rank": r.model.seed_rank},
                "quant": r.best.quant.id,
                **speed_json(r.best.speed),
                "memory_gb": {"total": to_gib(r.best.memory.total_bytes), "usable": to_gib(r.best.memory.usable_bytes)},
                "verdict": r.best.memory.verdict,
                "fitting_quants": [f.quant.id for f in r.fitting],
            }
            for i, r in enumerate(rows)
        ],
    }


def capability_json(items: list[LargestModel]) -> dict[str, Any]:
    return {
        it.level: {
            "quant": it.quant.id,
            "model": model_brief(it.model) if it.model else None,
            "size_class_b": it.size_class_b,
        }
        for it in items
    }


def gpu_facts(gpu: GPU) -> dict[str, Any]:
    return gpu.model_dump(mode="json")
