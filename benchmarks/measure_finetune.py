"""Measure fine-tuning peak memory on this machine's CUDA GPU and write calibration rows.

    python benchmarks/measure_finetune.py --dry-run                       # list the runs, no torch needed
    python benchmarks/measure_finetune.py --out measured.toml             # run them, append rows
    python benchmarks/measure_finetune.py --models llama-3.2-1b --methods lora --seqs 512,2048 \\
        --regimes bf16 --checkpointing none,block --batch 1 --out measured.toml

Needs PyTorch with CUDA, transformers and (for LoRA) peft. Each model is built from its catalog entry as a
Llama-architecture config with random weights (nothing is downloaded), trained for two steps on random
tokens of exactly `seq` length (fixed shapes, as packed data), and torch.cuda.max_memory_allocated and
max_memory_reserved are read after the second step (the first creates the optimizer state). Each run is one
process state: memory is freed and the peak counters reset between runs.

Rows use the keys of estimator/calibration/finetune_peaks.toml, with the GPU, date and library versions as
their source, and are written `holdout = true`: a person decides whether they join the fit. A run that runs
out of memory is written as an "oom" row on the GPU it was tried on.
"""

from __future__ import annotations

import argparse
import datetime as dt
import gc
import sys
from dataclasses import dataclass
from itertools import product
from pathlib import Path
from typing import Any

ROOT = Path(__file__).resolve().parent.parent
sys.path.insert(0, str(ROOT))

from catalog import Model, load_catalog  # noqa: E402
from estimator.units import GIB  # noqa: E402

DEFAULT_MODELS = ("llama-3.2-1b", "llama-3.2-3b", "llama-3.1-8b")
METHODS = ("full", "lora")
REGIMES = ("bf16", "amp_bf16")
CHECKPOINTING = ("none", "block")
# PEFT's names for the projections each target set covers in a Llama-architecture model.
LORA_TARGETS = {
    "qv": ["q_proj", "v_proj"],
    "attention": ["q_proj", "k_proj", "v_proj", "o_proj"],
    "all": ["q_proj", "k_proj", "v_proj", "o_proj", "gate_proj", "up_proj", "down_proj"],
}
WARMUP_STEPS = 1


@dataclass(frozen=True)
class Run:
    model: str
    method: str
    seq: int
    batch: int
    regime: str
    checkpointing: str
    rank: int = 16
    targets: str = "all"


def _csv(text: str) -> list[str]:
    return [t.strip() for t in text.split(",") if t.strip()]


def _ints(text: str) -> list[int]:
    values = [int(t) for t in _csv(text)]
    if not values or any(v < 1 for v in values):
        raise argparse.ArgumentTypeError(f"positive integers separated by commas, not {text!r}")
    return values


def _choices(allowed: tuple[str, ...]) -> Any:
    def parse(text: str) -> list[str]:
        values = _csv(text)
        bad = [v for v in values if v not in allowed]
        if not values or bad:
            raise argparse.ArgumentTypeError(f"choose from {', '.join(allowed)} (got {text!r})")
        return values

    return parse


def build_parser() -> argparse.ArgumentParser:
    p = argparse.ArgumentParser(description=__doc__, formatter_class=argparse.RawDescriptionHelpFormatter)
    p.add_argument("--models", type=_csv, default=list(DEFAULT_MODELS), help="catalog ids, comma-separated")
    p.add_argument("--methods", type=_choices(METHODS), default=list(METHODS))
    p.add_argument("--seqs", type=_ints, default=[512, 2048, 8192], help="sequence lengths")
    p.add_argument("--batch", type=_ints, default=[1], help="micro-batch sizes")
    p.add_argument("--regimes", type=_choices(REGIMES), default=list(REGIMES),
                   help="bf16: pure bf16 weights and AdamW; amp_bf16: fp32 weights under bf16 autocast")
    p.add_argument("--checkpointing", type=_choices(CHECKPOINTING), default=list(CHECKPOINTING))
    p.add_argument("--rank", type=int, default=16)
    p.add_argument("--targets", choices=sorted(LORA_TARGETS), default="all")
    p.add_argument("--out", type=Path, help="append the rows to this TOML file (default: print them)")
    p.add_argument("--dry-run", action="store_true", help="list the runs and exit")
    return p


def plan(args: argparse.Namespace) -> list[Run]:
    return [
        Run(model=m, method=meth, seq=seq, batch=b, regime=reg, checkpointing=ck, rank=args.rank, targets=args.targets)
        for m, meth, seq, b, reg, ck in product(args.models, args.methods, args.seqs, args.batch, args.regimes,
                                                  args.checkpointing)
    ]


def hf_config_kwargs(model: Model) -> dict[str, Any]:
    """A LlamaConfig with the catalog model's shapes: what the memory depends on."""
    if model.moe is not None or model.attention.kind != "full" or model.intermediate_size is None:
        raise ValueError(f"{model.id}: only dense full-attention models are rebuilt as Llama configs")
    return {
        "hidden_size": model.hidden_size,
        "intermediate_size": model.intermediate_size,
        "num_hidden_layers": model.layers,
        "num_attention_heads": model.attention_heads,
        "num_key_value_heads": model.kv_heads,
        "head_dim": model.head_dim,
        "vocab_size": model.vocab_size,
        "tie_word_embeddings": model.tied_embeddings,
        "max_position_embeddings": model.max_context,
        "hidden_act": "silu",
    }


def versions() -> dict[str, str]:
    out: dict[str, str] = {}
    for name in ("torch", "transformers", "peft"):
        try:
            out[name] = __import__(name).__version__
        except ImportError:
            out[name] = "absent"
    return out


def row(run: Run, *, gpu_name: str, gpu_id: str, measure: str, value_gib: float, date: str,
        libs: dict[str, str], cuda: str) -> dict[str, Any]:
    """One calibration row in the keys of finetune_peaks.toml ("oom": `value_gib` is the device's memory)."""
    pure = run.regime == "bf16"
    lib_text = ", ".join(f"{k} {v}" for k, v in libs.items())
    out: dict[str, Any] = {
        "model": run.model,
        "catalog": run.model,
        "framework": "hf",
        "method": run.method,
        "seq": run.seq,
        "batch": run.batch,
        "rank": run.rank if run.method != "full" else 0,
        "targets": ",".join(LORA_TARGETS[run.targets]) if run.method != "full" else "",
        "lora_dropout": 0.0,
        "optimizer": "adamw",
        "fused_optimizer": True,  # the script steps torch.optim.AdamW(fused=True)
        "precision": "bf16",
        "master_weights_fp32": not pure,
        "checkpointing": run.checkpointing != "none",
        "packing": True,
        "loss": "fp32_upcast",
        "gpus": 1,
        "sharding": "none",
        "trainer": f"benchmarks/measure_finetune.py ({lib_text})",
        "measured_gb": round(value_gib, 3),
        "unit": "GiB",
        "measure": measure,
        "holdout": True,
        "use": True,
        "estimate": False,
        "source": f"measured {date} on {gpu_name} (CUDA {cuda}; {lib_text}) with benchmarks/measure_finetune.py",
        "note": f"random weights from the catalog shapes; regime {run.regime}; SDPA attention",
    }
    if gpu_id:
        out["gpu"] = gpu_id
    if run.method != "full":
        # PEFT upcasts adapters to fp32 (autocast_adapter_dtype) whatever the base dtype.
        out["master_weights_fp32"] = True
        if pure:
            out["note"] += "; base weights bf16, adapters fp32 (PEFT)"
    if pure is False:
        out["base_fp32"] = True
    if measure == "oom":
        out["note"] += "; ran out of memory"
    return out


def _toml_value(value: Any) -> str:
    if isinstance(value, bool):
        return "true" if value else "false"
    if isinstance(value, (int, float)):
        return repr(value)
    return '"' + str(value).replace("\\", "\\\\").replace('"', '\\"') + '"'


def to_toml(rows: list[dict[str, Any]]) -> str:
    return "".join("\n[[peak]]\n" + "".join(f"{k} = {_toml_value(v)}\n" for k, v in r.items()) for r in rows)


def gpu_catalog_id(name: str) -> str:
    """The catalog GPU the device name (torch.cuda.get_device_name) resolves to, or "" when it does not."""
    from catalog.resolve import NotFound, Resolver

    try:
        return Resolver(load_catalog()).gpu(name.removeprefix("NVIDIA ")).id
    except NotFound:
        return ""


def measure(run: Run, model: Model) -> tuple[float, float] | None:  # pragma: no cover - needs a CUDA GPU
    """(max allocated, max reserved) GiB of two training steps, or None when it ran out of memory."""
    import torch
    from transformers import LlamaConfig, LlamaForCausalLM

    torch.cuda.empty_cache()
    pure = run.regime == "bf16"
    net = None
    try:
        config = LlamaConfig(**hf_config_kwargs(model), attn_implementation="sdpa")
        with torch.device("cuda"):
            net = LlamaForCausalLM(config).to(torch.bfloat16 if pure else torch.float32)
        if run.checkpointing == "block":
            net.gradient_checkpointing_enable(gradient_checkpointing_kwargs={"use_reentrant": False})
        if run.method == "lora":
            from peft import LoraConfig, get_peft_model

            if run.checkpointing == "block":
                net.enable_input_require_grads()
            net = get_peft_model(net, LoraConfig(r=run.rank, target_modules=LORA_TARGETS[run.targets],
                                                 lora_dropout=0.0, task_type="CAUSAL_LM"))
        params = [p for p in net.parameters() if p.requires_grad]
        optimizer = torch.optim.AdamW(params, lr=1e-5, fused=True)
        tokens = torch.randint(0, model.vocab_size, (run.batch, run.seq), device="cuda")
        # Building the model in fp32 and casting it peaks above training in bf16: count from here (the
        # weights stay allocated, so they are in the peak either way).
        torch.cuda.reset_peak_memory_stats()
        for _ in range(WARMUP_STEPS + 1):
            with torch.autocast("cuda", dtype=torch.bfloat16, enabled=not pure):
                loss = net(input_ids=tokens, labels=tokens).loss
            loss.backward()
            optimizer.step()
            optimizer.zero_grad(set_to_none=True)
        torch.cuda.synchronize()
        return torch.cuda.max_memory_allocated() / GIB, torch.cuda.max_memory_reserved() / GIB
    except torch.cuda.OutOfMemoryError:
        return None
    finally:
        del net
        gc.collect()
        torch.cuda.empty_cache()


def main(argv: list[str] | None = None) -> int:
    args = build_parser().parse_args(argv)
    runs = plan(args)
    catalog = load_catalog()
    models = {m.id: m for m in catalog.models}
    unknown = sorted({r.model for r in runs if r.model not in models})
    if unknown:
        print(f"not in the catalog: {', '.join(unknown)}", file=sys.stderr)
        return 2
    if args.dry_run:
        for r in runs:
            print(f"{r.model} {r.method} seq {r.seq} batch {r.batch} {r.regime} checkpointing {r.checkpointing}")
        return 0
    try:
        import torch
    except ImportError:
        print("needs PyTorch with CUDA (and transformers, peft)", file=sys.stderr)
        return 2
    if not torch.cuda.is_available():
        print("no CUDA GPU visible", file=sys.stderr)
        return 2
    gpu_name = torch.cuda.get_device_name(0)
    device_gib = torch.cuda.get_device_properties(0).total_memory / GIB
    today = dt.datetime.now(dt.UTC).date().isoformat()
    context = {"gpu_name": gpu_name, "gpu_id": gpu_catalog_id(gpu_name), "date": today, "libs": versions(),
               "cuda": str(torch.version.cuda)}
    rows: list[dict[str, Any]] = []
    for r in runs:
        result = measure(r, models[r.model])
        if result is None:
            rows.append(row(r, measure="oom", value_gib=device_gib, **context))
            print(f"{r}: out of memory", file=sys.stderr)
            continue
        allocated, reserved = result
        rows.append(row(r, measure="allocated", value_gib=allocated, **context))
        rows.append(row(r, measure="reserved", value_gib=reserved, **context))
        print(f"{r}: {allocated:.2f} GiB allocated, {reserved:.2f} GiB reserved", file=sys.stderr)
    text = to_toml(rows)
    if args.out:
        with args.out.open("a", encoding="utf-8") as f:
            f.write(text)
    else:
        sys.stdout.write(text)
    return 0


if __name__ == "__main__":
    raise SystemExit(main())
