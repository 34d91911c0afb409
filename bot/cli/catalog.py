"""`rigcheck catalog list|show|search|import-hf`: the catalog's GPUs, models and formats."""

from __future__ import annotations

import argparse
import sys
from typing import Any

from bot.cli.common import CliError, column_names, fetch_hf, lang, print_json, table
from bot.params import format_tokens
from bot.render.text import t
from bot.service import Service
from catalog.resolve import NotFound

GPU_KEYS = (
    "id",
    "name",
    "aliases",
    "vendor",
    "vram_gb",
    "bandwidth_gbs",
    "fp16_tflops",
    "int8_tops",
    "tdp_w",
    "source",
)
MODEL_KEYS = (
    "id",
    "name",
    "aliases",
    "hf_repo",
    "params_b",
    "active_params_b",
    "layers",
    "hidden_size",
    "attention_heads",
    "kv_heads",
    "head_dim",
    "intermediate_size",
    "vocab_size",
    "max_context",
    "source",
)


def cmd_catalog(svc: Service, args: argparse.Namespace) -> int:
    cat, loc = svc.catalog, lang(args)
    if args.action == "import-hf":
        from catalog.huggingface.config import catalog_entry_toml

        text = " ".join(args.text).strip()
        if not text:
            raise CliError.of("cli.catalog.import_needs_repo")
        key = text if text.lower().startswith("hf:") else f"hf:{text}"
        fetch_hf(svc, key, catalog_first=False)
        sys.stdout.write(catalog_entry_toml(svc.extra_models[key]))
        return 0
    if args.action == "list":
        kinds = [args.kind] if args.kind else ["gpu", "model", "quant"]
        if args.json:
            out: list[dict[str, Any]] = []
            for kind in kinds:
                if kind == "gpu":
                    out += [
                        {**{k: g.model_dump(mode="json")[k] for k in GPU_KEYS}, **g.model_dump(mode="json")}
                        for g in cat.gpus
                    ]
                elif kind == "model":
                    out += [
                        {**{k: m.model_dump(mode="json")[k] for k in MODEL_KEYS}, **m.model_dump(mode="json")}
                        for m in cat.models
                    ]
                else:
                    out += [q.model_dump(mode="json") for q in cat.quants]
            print_json(out)
            return 0
        for kind in kinds:
            if kind == "gpu":
                print(
                    table(
                        column_names(loc, "cli.col.id", "cli.col.name", "cli.col.vram_gb", "col.bandwidth",
                                     "cli.col.fp16_tflops"),
                        [[g.id, g.name, g.vram_gb, g.bandwidth_gbs, g.fp16_tflops or "?"] for g in cat.gpus],
                    )
                )
            elif kind == "model":
                print(
                    table(
                        column_names(loc, "cli.col.id", "cli.col.name", "cli.col.params_b", "cli.col.active_b",
                                     "cli.col.layers", "cli.col.max_ctx"),
                        [
                            [m.id, m.name, m.params_b, m.active_params_b, m.layers, format_tokens(m.max_context)]
                            for m in cat.models
                        ],
                    )
                )
            else:
                print(
                    table(
                        column_names(loc, "cli.col.id", "cli.col.name", "cli.col.bits_per_weight", "cli.col.engines"),
                        [[q.id, q.name, q.bits_per_weight, ", ".join(q.engines)] for q in cat.quants],
                    )
                )
        return 0
    if args.action == "show":
        text = " ".join(args.text).strip()
        if not text:
            raise CliError.of("cli.catalog.show_needs_id")
        entry: Any
        try:
            entry = svc.gpu(text)
        except NotFound as not_gpu:
            try:
                entry = svc.model(text)[0]
            except NotFound as not_model:
                entry = svc.resolver.quant_or_none(text)
                if entry is None:
                    # 'h100' names several GPUs: say which, rather than that no model is called that.
                    if not_gpu.ambiguous and not not_model.ambiguous:
                        raise not_gpu from None
                    if not_model.ambiguous:
                        raise not_model from None
                    raise nothing_named(text, not_gpu, not_model, lang(args)) from None
        data = entry.model_dump(mode="json")
        if args.json:
            print_json(data)
        else:
            for key, value in data.items():
                print(f"{key:24s} {value}")
        return 0
    text = " ".join(args.text)
    hits = [{"kind": "gpu", "id": s.id, "name": s.label} for s in svc.resolver.complete_gpu(text, 10)]
    hits += [{"kind": "model", "id": s.id, "name": s.label} for s in svc.resolver.complete_model(text, 10)]
    if args.json:
        print_json(hits)
    else:
        print(table(column_names(loc, "cli.col.kind", "cli.col.id", "cli.col.name"),
                    [[h["kind"], h["id"], h["name"]] for h in hits]))
    return 0


def nothing_named(text: str, not_gpu: NotFound, not_model: NotFound, locale: str | None) -> CliError:
    """`catalog show` looked through GPUs, models and formats: say all three, with what it may have been."""
    shown = repr(text if len(text) <= 60 else text[:57] + "…")
    refusal = t(locale, "cli.catalog.no_entry", query=shown)
    names = t(locale, "list_sep").join([s.label for s in not_gpu.suggestions[:3]]
                                       + [s.label for s in not_model.suggestions[:3]])
    if names:
        return CliError.of("cli.did_you_mean", refusal=refusal, names=names)
    return CliError(refusal)


def register(sub: Any) -> None:
    p = sub.add_parser("catalog", help="inspect the catalog; import-hf ORG/NAME prints a catalog entry")
    p.add_argument("action", choices=["list", "show", "search", "import-hf"])
    p.add_argument("text", nargs="*")
    p.add_argument("--kind", choices=["gpu", "model", "quant"])
    p.add_argument("--json", action="store_true")
    p.set_defaults(func=cmd_catalog)
