"""How close the fine-tuning memory estimate comes to published, measured peaks.

    python benchmarks/finetune_accuracy.py          # per-row table and median |error| per method
    python benchmarks/finetune_accuracy.py --fit    # also search the fitted constants on the fit rows

Rows come from estimator/calibration/finetune_peaks.toml. Each is compared in its own unit and with the
quantity it measured: "allocated" against the peak without overhead, "reserved" and "unknown" (a
PyTorch-level figure) against the peak without the CUDA context, "nvidia-smi" and "capacity" (the largest
setting that fit on a GPU of that size) against the whole peak.

A row is evaluated when its model is in the catalog. Models the catalog does not carry yet are taken from
REFERENCE_MODELS below (their Hugging Face config.json), and the table says which source was used.
"""

from __future__ import annotations

import argparse
import statistics
import sys
import tomllib
from collections import defaultdict
from pathlib import Path
from typing import Any
from unittest import mock

ROOT = Path(__file__).resolve().parent.parent
sys.path.insert(0, str(ROOT))

from catalog import Model, load_catalog  # noqa: E402
from estimator import finetune as ft  # noqa: E402

PEAKS = ROOT / "estimator" / "calibration" / "finetune_peaks.toml"
UNIT_BYTES = {"GB": 1e9, "GiB": 2**30}


def _llama(
    id_: str,
    name: str,
    params_b: float,
    layers: int,
    hidden: int,
    heads: int,
    kv: int,
    inter: int,
    vocab: int,
    ctx: int,
    source: str,
    tied: bool = False,
) -> Model:
    return Model(
        id=id_,
        name=name,
        family="Llama",
        params_b=params_b,
        active_params_b=params_b,
        layers=layers,
        hidden_size=hidden,
        attention_heads=heads,
        kv_heads=kv,
        head_dim=hidden // heads,
        intermediate_size=inter,
        vocab_size=vocab,
        tied_embeddings=tied,
        max_context=ctx,
        source=source,
    )


REFERENCE_MODELS: dict[str, Model] = {
    m.id: m
    for m in (
        _llama(
            "llama-2-7b",
            "Llama 2 7B",
            6.74,
            32,
            4096,
            32,
            32,
            11008,
            32000,
            4096,
            "huggingface.co/meta-llama/Llama-2-7b-hf config.json",
        ),
        _llama(
            "llama-2-13b",
            "Llama 2 13B",
            13.02,
            40,
            5120,
            40,
            40,
            13824,
            32000,
            4096,
            "huggingface.co/meta-llama/Llama-2-13b-hf config.json",
        ),
        _llama(
            "llama-2-70b",
            "Llama 2 70B",
            68.98,
            80,
            8192,
            64,
            8,
            28672,
            32000,
            4096,
            "huggingface.co/meta-llama/Llama-2-70b-hf config.json",
        ),
        _llama(
            "llama-3.1-8b",
            "Llama 3.1 8B",
            8.03,
            32,
            4096,
            32,
            8,
            14336,
            128256,
            131072,
            "huggingface.co/meta-llama/Llama-3.1-8B config.json",
        ),
        _llama(
            "llama-3.1-70b",
            "Llama 3.1 70B",
            70.55,
            80,
            8192,
            64,
            8,
            28672,
            128256,
            131072,
            "huggingface.co/meta-llama/Llama-3.1-70B config.json",
        ),
        _llama(
            "llama-3.3-70b",
            "Llama 3.3 70B",
            70.55,
            80,
            8192,
            64,
            8,
            28672,
            128256,
            131072,
            "huggingface.co/meta-llama/Llama-3.3-70B-Instruct config.json",
        ),
        _llama(
            "llama-3.2-3b",
            "Llama 3.2 3B",
            3.21,
            28,
            3072,
            24,
            8,
            8192,
            128256,
            131072,
            "huggingface.co/meta-llama/Llama-3.2-3B config.json",
            tied=True,
        ),
        Model(
            id="phi-1.5",
            name="phi-1.5",
            family="Phi",
            params_b=1.42,
            active_params_b=1.42,
            layers=24,
            hidden_size=2048,
            attention_heads=32,
            kv_heads=32,
            head_dim=64,
            intermediate_size=8192,
            mlp="plain",
            vocab_size=51200,
            max_context=2048,
            source="huggingface.co/microsoft/phi-1_5 config.json",
        ),
        Model(
            id="stablelm-base-alpha-3b",
            name="StableLM Base Alpha 3B",
            family="StableLM",
            params_b=3.64,
            active_params_b=3.64,
            layers=16,
            hidden_size=4096,
            attention_heads=32,
            kv_heads=32,
            head_dim=128,
            intermediate_size=16384,
            mlp="plain",
            vocab_size=50688,
            max_context=4096,
            source="huggingface.co/stabilityai/stablelm-base-alpha-3b config.json (vocab padded to 512)",
        ),
    )
}


def load_rows() -> list[dict[str, Any]]:
    with PEAKS.open("rb") as f:
        return list(tomllib.load(f)["peak"])


def resolve_model(catalog_id: str, models: dict[str, Model]) -> tuple[Model | None, str]:
    if catalog_id in models:
        return models[catalog_id], "catalog"
    if catalog_id in REFERENCE_MODELS:
        return REFERENCE_MODELS[catalog_id], "reference"
    return None, ""


def targets_of(text: str) -> ft.Targets:
    names = {t.strip().lower() for t in text.split(",") if t.strip()}
    if names & {"mlp", "gate", "up", "down", "gate_proj"}:
        return "all"
    if names <= {"q_proj", "v_proj", "query", "value", "q", "v"}:
        return "qv"
    return "attention"


def settings_of(row: dict[str, Any]) -> ft.FinetuneSettings:
    fields: dict[str, Any] = {
        "method": row["method"],
        "seq": row["seq"],
        "batch": row["batch"],
        "optimizer": row["optimizer"],
        "precision": row["precision"],
        "master_weights_fp32": row["master_weights_fp32"],
        "checkpointing": row["checkpointing"],
        "loss": row["loss"],
        "gpus": row["gpus"],
        "sharding": row["sharding"],
        "optimizer_in_backward": row.get("optimizer_in_backward", False),
        "double_quant": row.get("double_quant", True),
    }
    if row["method"] != "full":
        fields["rank"] = row["rank"]
        fields["targets"] = targets_of(row["targets"])
    return ft.FinetuneSettings(**fields)


def comparable_bytes(mem: ft.FinetuneMemory, measure: str) -> float:
    if measure == "allocated":
        return mem.allocated
    if measure in ("reserved", "unknown"):
        return mem.total - ft.CUDA_CONTEXT_BYTES
    return mem.total


def evaluate(rows: list[dict[str, Any]], models: dict[str, Model]) -> list[dict[str, Any]]:
    out = []
    for row in rows:
        if not row["use"] or row["estimate"]:
            continue
        model, origin = resolve_model(row["catalog"], models)
        if model is None:
            continue
        mem = ft.finetune_memory(model, settings_of(row))
        unit = UNIT_BYTES[row["unit"]]
        estimated = comparable_bytes(mem, row["measure"]) / unit
        error = (estimated - row["measured_gb"]) / row["measured_gb"]
        out.append({**row, "origin": origin, "estimated": estimated, "error": error})
    return out


def median_abs(results: list[dict[str, Any]]) -> float:
    return statistics.median(abs(r["error"]) for r in results) if results else float("nan")


def report(results: list[dict[str, Any]], skipped: list[str]) -> None:
    print(
        f"{'split':7} {'method':6} {'model':24} {'seq':>6} {'bs':>3} {'gpu':>3} {'measure':9} "
        f"{'measured':>9} {'estimate':>9} {'error':>7}  trainer"
    )
    for r in sorted(results, key=lambda r: (r["holdout"], r["method"], r["catalog"], r["seq"], r["batch"])):
        split = "holdout" if r["holdout"] else "fit"
        model = r["catalog"] + ("*" if r["origin"] == "reference" else "")
        print(
            f"{split:7} {r['method']:6} {model:24} {r['seq']:>6} {r['batch']:>3} {r['gpus']:>3} "
            f"{r['measure']:9} {r['measured_gb']:>6.2f}{r['unit']:>3} {r['estimated']:>6.2f}{r['unit']:>3} "
            f"{r['error']:>+7.1%}  {r['trainer'][:60]}"
        )
    print("* architecture from REFERENCE_MODELS (not in the catalog yet)")
    if skipped:
        print("not evaluated (model unknown):", ", ".join(sorted(set(skipped))))
    print()
    print(f"{'method':8} {'fit n':>5} {'fit median|err|':>16} {'holdout n':>9} {'holdout median|err|':>20}")
    groups: dict[str, dict[bool, list[dict[str, Any]]]] = defaultdict(lambda: {False: [], True: []})
    for r in results:
        groups[r["method"]][r["holdout"]].append(r)
        groups["all"][r["holdout"]].append(r)
    for method in ("full", "lora", "qlora", "all"):
        fit, hold = groups[method][False], groups[method][True]
        print(f"{method:8} {len(fit):>5} {median_abs(fit):>16.1%} {len(hold):>9} {median_abs(hold):>20.1%}")


def fit(rows: list[dict[str, Any]], models: dict[str, Model]) -> None:
    """Grid search of the two fitted constants, minimising the median |error| over non-holdout rows."""
    fit_rows = [r for r in rows if not r["holdout"]]
    best: tuple[float, float, float] | None = None
    for act in [x / 100 for x in range(80, 201, 2)]:
        for frag in [x / 100 for x in range(0, 21, 1)]:
            with mock.patch.object(ft, "ACTIVATION_FACTOR", act), mock.patch.object(ft, "FRAGMENTATION_FRACTION", frag):
                score = median_abs(evaluate(fit_rows, models))
            if best is None or score < best[0]:
                best = (score, act, frag)
    assert best is not None
    print(
        f"\nfit rows: ACTIVATION_FACTOR = {best[1]:.2f}, FRAGMENTATION_FRACTION = {best[2]:.2f} "
        f"(median |error| {best[0]:.1%})"
    )


def main() -> None:
    parser = argparse.ArgumentParser(description=__doc__, formatter_class=argparse.RawDescriptionHelpFormatter)
    parser.add_argument("--fit", action="store_true", help="search the fitted constants on the fit rows")
    args = parser.parse_args()
    models = {m.id: m for m in load_catalog().models}
    rows = load_rows()
    skipped = [
        r["catalog"] or r["model"]
        for r in rows
        if r["use"] and not r["estimate"] and resolve_model(r["catalog"], models)[0] is None
    ]
    print(
        f"constants: ACTIVATION_FACTOR = {ft.ACTIVATION_FACTOR}, FRAGMENTATION_FRACTION = {ft.FRAGMENTATION_FRACTION}\n"
    )
    report(evaluate(rows, models), skipped)
    if args.fit:
        fit(rows, models)


if __name__ == "__main__":
    main()
