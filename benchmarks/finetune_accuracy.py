"""How close the fine-tuning memory estimate comes to published, measured peaks.

    python benchmarks/finetune_accuracy.py          # per-row table, median and p90 |error| per method and framework
    python benchmarks/finetune_accuracy.py --fit    # also fit the constants on the fit rows (never the held-out ones)
    python benchmarks/finetune_accuracy.py --loso   # also leave one source out: each source's rows estimated
                                                    # with constants fitted on every other source's rows
    python benchmarks/finetune_accuracy.py --file F  # score the [[peak]] rows of another file (collected later)

Leave-one-source-out is the stricter held-out figure: a source (one repository's published tables, one
harness) never helps fit the constants it is judged with, so what its rows share (a trainer, a GPU, a way of
measuring) cannot leak in. Constants no other source can pin down stay at their neutral value (no effect).

Rows come from estimator/calibration/finetune_peaks.toml. Each is compared in its own unit and with the
quantity it measured: "allocated" with the allocated peak, "reserved" and "unknown" (a PyTorch-level figure)
with allocated plus the allocator's cache, "nvidia-smi" with that plus the CUDA context, and "capacity" (the
largest setting that fit on a GPU of that size) with what must fit, allocated plus the context.

The fits / out-of-memory check takes every row that says where it ran: "capacity" rows ran on a GPU of
`measured_gb`, rows with a `gpu` ran on that GPU, "oom" rows did not. The estimate calls it right when its
whole peak is within (ran) or beyond (oom) that memory: the GPU's usable memory for catalog GPUs, the stated
size for capacity rows.

A row is evaluated when its model is in the catalog. Models the catalog does not carry yet are taken from
REFERENCE_MODELS below (their Hugging Face config.json), and the table says which source was used.
"""

from __future__ import annotations

import argparse
import statistics
import sys
import tomllib
from pathlib import Path
from typing import Any, Literal
from unittest import mock

ROOT = Path(__file__).resolve().parent.parent
sys.path.insert(0, str(ROOT))

from catalog import GPU, Model, load_catalog  # noqa: E402
from estimator import finetune as ft  # noqa: E402
from estimator.memory import usable_vram_bytes  # noqa: E402

PEAKS = ROOT / "estimator" / "calibration" / "finetune_peaks.toml"
UNIT_BYTES = {"GB": 1e9, "GiB": 2**30}


def _decoder(
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
    *,
    family: str = "Llama",
    mlp: Literal["gated", "plain"] = "gated",
    tied: bool = False,
) -> Model:
    return Model(
        id=id_,
        name=name,
        family=family,
        params_b=params_b,
        active_params_b=params_b,
        layers=layers,
        hidden_size=hidden,
        attention_heads=heads,
        kv_heads=kv,
        head_dim=hidden // heads,
        intermediate_size=inter,
        mlp=mlp,
        vocab_size=vocab,
        tied_embeddings=tied,
        max_context=ctx,
        source=source,
    )


_LLAMA_31_70B = _decoder(
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
)
REFERENCE_MODELS: dict[str, Model] = {
    m.id: m
    for m in (
        _decoder(
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
        _decoder(
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
        _decoder(
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
        _decoder(
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
        _LLAMA_31_70B,
        # Llama 3.3 70B keeps Llama 3.1 70B's architecture; only the weights differ.
        _LLAMA_31_70B.model_copy(
            update={
                "id": "llama-3.3-70b",
                "name": "Llama 3.3 70B",
                "source": "huggingface.co/meta-llama/Llama-3.3-70B-Instruct config.json",
            }
        ),
        _decoder(
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
        _decoder(
            "phi-1.5",
            "phi-1.5",
            1.42,
            24,
            2048,
            32,
            32,
            8192,
            51200,
            2048,
            "huggingface.co/microsoft/phi-1_5 config.json",
            family="Phi",
            mlp="plain",
        ),
        _decoder(
            "stablelm-base-alpha-3b",
            "StableLM Base Alpha 3B",
            3.64,
            16,
            4096,
            32,
            32,
            16384,
            50688,
            4096,
            "huggingface.co/stabilityai/stablelm-base-alpha-3b config.json (vocab padded to 512)",
            family="StableLM",
            mlp="plain",
        ),
    )
}


def load_rows(path: Path = PEAKS) -> list[dict[str, Any]]:
    with path.open("rb") as f:
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


def framework_of(row: dict[str, Any]) -> str:
    if row.get("framework"):
        return str(row["framework"])
    trainer = row["trainer"].lower()
    for name, key in (("torchtune", "torchtune"), ("litgpt", "litgpt"), ("unsloth", "unsloth"), ("hugging face", "hf")):
        if name in trainer:
            return key
    return "other"


OPTIONAL_KNOBS = (
    "lora_dropout", "lora_head", "activation_offload", "packing", "gradient_accumulation_steps", "base_fp32",
    "fused_optimizer", "compiled", "unsharded_accumulation", "quant_backend",
    "empty_cache_steps",
)


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
    fields.update({k: row[k] for k in OPTIONAL_KNOBS if k in row})
    if row["method"] != "full":
        fields["rank"] = row["rank"]
        fields["targets"] = targets_of(row["targets"])
    return ft.FinetuneSettings(**fields)


def comparable_bytes(mem: ft.FinetuneMemory, measure: str) -> float:
    if measure == "allocated":
        return mem.allocated
    if measure in ("reserved", "unknown"):
        return mem.reserved
    if measure == "nvidia-smi":
        return mem.nvidia_smi
    return mem.total


def _usable(row: dict[str, Any], gpus: dict[str, GPU]) -> float | None:
    """The memory a row's outcome is checked against (None: the row does not say where it ran)."""
    if row.get("gpu") in gpus:
        return usable_vram_bytes(gpus[row["gpu"]])
    if row["measure"] == "capacity":
        return float(row["measured_gb"]) * UNIT_BYTES[row["unit"]]
    return None


def evaluate(
    rows: list[dict[str, Any]], models: dict[str, Model], gpus: dict[str, GPU] | None = None
) -> list[dict[str, Any]]:
    """Every usable row with a known model: its estimate, error (measured rows) and outcome check."""
    out = []
    for row in rows:
        if not row["use"] or row["estimate"]:
            continue
        model, origin = resolve_model(row["catalog"], models)
        if model is None:
            continue
        mem = ft.finetune_memory(model, settings_of(row))
        unit = UNIT_BYTES[row["unit"]]
        result = {**row, "origin": origin, "framework": framework_of(row), "error": None, "estimated": None}
        if row["measure"] != "oom":
            estimated = comparable_bytes(mem, row["measure"]) / unit
            result["estimated"] = estimated
            result["error"] = (estimated - row["measured_gb"]) / row["measured_gb"]
        usable = _usable(row, gpus or {})
        if usable is not None:
            result["outcome"] = "oom" if row["measure"] == "oom" else "ran"
            result["predicted"] = "ran" if mem.required <= usable else "oom"
        out.append(result)
    return out


def measured(results: list[dict[str, Any]]) -> list[dict[str, Any]]:
    return [r for r in results if r["error"] is not None]


def median_abs(results: list[dict[str, Any]]) -> float:
    rows = measured(results)
    return statistics.median(abs(r["error"]) for r in rows) if rows else float("nan")


def p90_abs(results: list[dict[str, Any]]) -> float:
    errors = sorted(abs(r["error"]) for r in measured(results))
    if not errors:
        return float("nan")
    if len(errors) == 1:
        return errors[0]
    return statistics.quantiles(errors, n=10, method="inclusive")[-1]


def classification(results: list[dict[str, Any]]) -> tuple[int, int]:
    checked = [r for r in results if "outcome" in r]
    return sum(r["outcome"] == r["predicted"] for r in checked), len(checked)


def _line(label: str, rows: list[dict[str, Any]]) -> str:
    fit = [r for r in rows if not r["holdout"]]
    hold = [r for r in rows if r["holdout"]]
    cells = [f"{label:14}"]
    for group in (fit, hold, rows):
        n = len(measured(group))
        cells.append(f"{n:>4} {median_abs(group):>7.1%} {p90_abs(group):>7.1%}" if n else f"{0:>4} {'-':>7} {'-':>7}")
    return "  ".join(cells)


def report(results: list[dict[str, Any]], skipped: list[str]) -> None:
    print(
        f"{'split':7} {'method':6} {'framework':10} {'model':24} {'seq':>6} {'bs':>3} {'gpu':>3} {'measure':9} "
        f"{'measured':>9} {'estimate':>9} {'error':>7} {'outcome':>8}  trainer"
    )
    order = ("holdout", "method", "framework", "catalog", "seq", "batch")
    for r in sorted(results, key=lambda r: tuple(r[k] for k in order)):
        split = "holdout" if r["holdout"] else "fit"
        model = r["catalog"] + ("*" if r["origin"] == "reference" else "")
        est = f"{r['estimated']:>6.2f}{r['unit']:>3}" if r["estimated"] is not None else f"{'':>9}"
        err = f"{r['error']:>+7.1%}" if r["error"] is not None else f"{'':>7}"
        outcome = ""
        if "outcome" in r:
            outcome = r["outcome"] + ("" if r["outcome"] == r["predicted"] else "!")
        print(
            f"{split:7} {r['method']:6} {r['framework']:10} {model:24} {r['seq']:>6} {r['batch']:>3} {r['gpus']:>3} "
            f"{r['measure']:9} {r['measured_gb']:>6.2f}{r['unit']:>3} {est} {err} {outcome:>8}  {r['trainer'][:50]}"
        )
    print("* architecture from REFERENCE_MODELS (not in the catalog yet);  outcome ran/oom, ! = called wrong")
    if skipped:
        print("not evaluated (model unknown):", ", ".join(sorted(set(skipped))))
    print()
    header = "  ".join(f"{'n':>4} {'median':>7} {'p90':>7}" for _ in range(3))
    print(f"{'|error|':14}  {'fit rows':^20}  {'held-out rows':^20}  {'all rows':^20}")
    print(f"{'':14}  {header}")
    for method in ("full", "lora", "qlora"):
        print(_line(method, [r for r in results if r["method"] == method]))
    print(_line("all", results))
    print()
    for framework in sorted({r["framework"] for r in results}):
        print(_line(framework, [r for r in results if r["framework"] == framework]))
    print()
    for label, group in (
        ("fit", [r for r in results if not r["holdout"]]),
        ("held-out", [r for r in results if r["holdout"]]),
        ("all", results),
    ):
        right, total = classification(group)
        rate = f"{right / total:.0%}" if total else "-"
        print(f"fits / out-of-memory called right, {label} rows: {right} of {total} ({rate})")


FITTED = (
    "ACTIVATION_FACTOR", "COMPILED_ACTIVATION_FACTOR", "FRAGMENTATION_FRACTION", "QLORA_DEQUANT_BUFFERS",
    "QLORA_SAVED_FRACTION", "VARIABLE_SHAPE_FRAGMENTATION",
)
GRID: dict[str, list[float]] = {
    "ACTIVATION_FACTOR": [x / 100 for x in range(80, 201, 2)],
    "COMPILED_ACTIVATION_FACTOR": [x / 100 for x in range(50, 121, 2)],
    "QLORA_DEQUANT_BUFFERS": [1, 2, 3, 4, 5, 6],
    "FRAGMENTATION_FRACTION": [x / 200 for x in range(0, 41)],
    "QLORA_SAVED_FRACTION": [x / 20 for x in range(0, 41)],
    "VARIABLE_SHAPE_FRAGMENTATION": [x / 20 for x in range(0, 61)],
}


def score(results: list[dict[str, Any]]) -> float:
    """What the fit minimises: the mean of the per-method median |error| plus half the overall p90."""
    medians = [median_abs([r for r in results if r["method"] == m]) for m in ("full", "lora", "qlora")]
    medians = [m for m in medians if m == m]
    return sum(medians) / len(medians) + 0.5 * p90_abs(results)


# The value of each fitted constant that switches its effect off: where a search finds nothing to choose
# between, it stays there rather than at a value some other row set preferred.
NEUTRAL: dict[str, float] = {
    "ACTIVATION_FACTOR": 1.0,
    "COMPILED_ACTIVATION_FACTOR": 1.0,
    "FRAGMENTATION_FRACTION": 0.0,
    "QLORA_DEQUANT_BUFFERS": 1,
    "QLORA_SAVED_FRACTION": 0.0,
    "VARIABLE_SHAPE_FRAGMENTATION": 0.0,
}
FIT_ROUNDS = 3
# Scores closer than this to the best are a tie (a tenth of a percent of error): a constant the rows barely
# move stays nearest its neutral value instead of wandering to a grid edge on noise.
SCORE_TIE = 0.001


def _values(constants: dict[str, float]) -> dict[str, Any]:
    """`mock.patch.multiple` takes its replacements as keyword arguments of any type."""
    return dict(constants)


def fit_constants(rows: list[dict[str, Any]], models: dict[str, Model]) -> tuple[dict[str, float], float]:
    """Coordinate search from the neutral values; near-ties go to the value nearest neutral."""
    best = dict(NEUTRAL)
    for _ in range(FIT_ROUNDS):
        for name in FITTED:
            trials = []
            for value in GRID[name]:
                with mock.patch.multiple(ft, **_values({**best, name: value})):
                    trials.append((score(evaluate(rows, models)), value))
            lowest = min(t[0] for t in trials)
            best[name] = min((abs(v - NEUTRAL[name]), v) for sc, v in trials if sc <= lowest + SCORE_TIE)[1]
    with mock.patch.multiple(ft, **_values(best)):
        return best, score(evaluate(rows, models))


def fit(rows: list[dict[str, Any]], models: dict[str, Model]) -> None:
    """The constants fitted on the non-holdout rows (what estimator/finetune.py carries)."""
    best, final = fit_constants([r for r in rows if not r["holdout"]], models)
    print("\nfitted on the fit rows:", ", ".join(f"{k} = {v:g}" for k, v in best.items()), f"(score {final:.3f})")


def source_of(row: dict[str, Any]) -> str:
    """The repository a row's source URL points into (one team's tables, measured one way)."""
    url = str(row["source"]).split("://", 1)[-1]
    parts = url.split("/")
    return "/".join(parts[:3]) if parts[0] == "github.com" else parts[0]


def leave_one_source_out(
    rows: list[dict[str, Any]], models: dict[str, Model], gpus: dict[str, GPU]
) -> tuple[list[dict[str, Any]], dict[str, dict[str, float]]]:
    """Every source's rows estimated with the constants fitted on all other sources' rows (held-out flags
    ignored: no row is fitted and judged at once)."""
    usable = [r for r in rows if r["use"] and not r["estimate"]]
    results: list[dict[str, Any]] = []
    constants: dict[str, dict[str, float]] = {}
    for source in sorted({source_of(r) for r in usable}):
        train = [r for r in usable if source_of(r) != source]
        best, _ = fit_constants(train, models)
        constants[source] = best
        with mock.patch.multiple(ft, **_values(best)):
            got = evaluate([r for r in usable if source_of(r) == source], models, gpus)
        results += [{**r, "holdout": True, "source_group": source} for r in got]
    return results, constants


def report_loso(results: list[dict[str, Any]], constants: dict[str, dict[str, float]]) -> None:
    print("\nleave one source out (each source's rows with constants fitted on the others):")
    for source, best in constants.items():
        n = len(measured([r for r in results if r["source_group"] == source]))
        print(f"  {source:45} {n:>3} measured rows; " + ", ".join(f"{k} = {v:g}" for k, v in best.items()))
    print(f"{'|error|':14}  {'n':>4} {'median':>7} {'p90':>7}")
    groups = [(m, [r for r in results if r["method"] == m]) for m in ("full", "lora", "qlora")]
    groups.append(("all", results))
    groups += [(f, [r for r in results if r["framework"] == f]) for f in sorted({r["framework"] for r in results})]
    for label, group in groups:
        n = len(measured(group))
        if n:
            print(f"{label:14}  {n:>4} {median_abs(group):>7.1%} {p90_abs(group):>7.1%}")
    right, total = classification(results)
    rate = f"{right / total:.0%}" if total else "-"
    print(f"fits / out-of-memory called right, leave-one-source-out: {right} of {total} ({rate})")


def main() -> None:
    parser = argparse.ArgumentParser(description=__doc__, formatter_class=argparse.RawDescriptionHelpFormatter)
    parser.add_argument("--fit", action="store_true", help="fit the constants on the fit rows")
    parser.add_argument("--loso", action="store_true", help="leave one source out (fits once per source)")
    parser.add_argument("--file", type=Path, default=PEAKS,
                        help="score the [[peak]] rows of this file instead (e.g. rows collected after the fit)")
    args = parser.parse_args()
    catalog = load_catalog()
    models = {m.id: m for m in catalog.models}
    gpus = {g.id: g for g in catalog.gpus}
    rows = load_rows(args.file)
    skipped = [
        r["catalog"] or r["model"]
        for r in rows
        if r["use"] and not r["estimate"] and resolve_model(r["catalog"], models)[0] is None
    ]
    print("constants: " + ", ".join(f"{name} = {getattr(ft, name)}" for name in FITTED) + "\n")
    report(evaluate(rows, models, gpus), skipped)
    if args.fit:
        fit(rows, models)
    if args.loso:
        report_loso(*leave_one_source_out(rows, models, gpus))


if __name__ == "__main__":
    main()
