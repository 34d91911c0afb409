"""`rigcheck …`: the same answers as the Discord bot, on a terminal, as tables or JSON.

Bad input prints one line on stderr and exits with status 2; nothing prints a traceback.
"""

from __future__ import annotations

import argparse
import asyncio
import contextlib
import json
import os
import sys
from collections.abc import Callable, Sequence
from typing import Any

from bot import jsonout
from bot.hub import HubError
from bot.params import BadValue, format_tokens, parse_tokens
from bot.service import FitRequest, RankRequest, Service
from catalog.resolve import NotFound

EXIT_USAGE = 2
EXIT_BROKEN_PIPE = 141  # 128 + SIGPIPE: what a shell reports for a tool whose reader went away


class CliError(Exception):
    """A one-line message for the person at the terminal."""


def _print_json(obj: Any) -> None:
    sys.stdout.write(json.dumps(obj, ensure_ascii=False) + "\n")


def _table(headers: Sequence[str], rows: Sequence[Sequence[object]]) -> str:
    cells = [[str(c) for c in r] for r in rows]
    widths = [max([len(h)] + [len(r[i]) for r in cells]) for i, h in enumerate(headers)]
    line = "  ".join(h.ljust(w) for h, w in zip(headers, widths, strict=True))
    out = [line, "  ".join("-" * w for w in widths)]
    out += ["  ".join(c.ljust(w) for c, w in zip(r, widths, strict=True)) for r in cells]
    return "\n".join(out)


# --- fit -------------------------------------------------------------------------------------------


def fit_request(d: dict[str, Any]) -> FitRequest:
    if not d.get("gpu") or not d.get("model"):
        raise CliError("both gpu and model are required")
    return FitRequest(
        gpu=str(d["gpu"]),
        model=str(d["model"]),
        quant=d.get("quant"),
        engine=str(d.get("engine") or "llama.cpp"),
        ctx=d.get("ctx") or 8192,
        prompt=d["prompt"] if d.get("prompt") is not None else 2048,
        kv=str(d.get("kv") or "f16"),
        # 0 is refused like any other count out of range, not taken for "not given".
        gpus=int(d["gpus"]) if d.get("gpus") is not None else 1,
        batch=int(d["batch"]) if d.get("batch") is not None else 1,
    )


def fetch_hf(svc: Service, text: str) -> None:
    """`hf:org/name` → read its config from the hub (cached in the data dir) into the service."""
    if not text.strip().lower().startswith("hf:") or text.strip() in svc.extra_models:
        return
    from bot.hub import HubClient
    from bot.settings import Settings

    async def go() -> Any:
        async with HubClient.from_settings(Settings()) as hub:
            return await hub.get_or_fetch(text.strip())

    svc.extra_models[text.strip()] = asyncio.run(go())


def cmd_fit(svc: Service, args: argparse.Namespace) -> int:
    fetch_hf(svc, args.model)
    result = svc.fit(fit_request(vars(args)))
    data = jsonout.fit_json(result)
    if args.json:
        _print_json(data)
        return 0
    g, m = data["gpu"], data["model"]
    print(
        f"{m['name']} ({m['params_b']}B) on {g['count']}× {g['name']} — {data['engine']}, "
        f"ctx {format_tokens(data['ctx'])}, prompt {data['prompt_tokens']}, KV {data['kv_dtype']}"
    )
    rows = [
        [
            o["quant_name"],
            o["verdict"].replace("_", " "),
            o["memory_gb"]["weights"],
            o["memory_gb"]["kv_cache"],
            o["memory_gb"]["overhead"],
            f"{o['memory_gb']['total']} / {o['memory_gb']['usable']}",
            f"~{o['decode_tps']:g} ({o['decode_tps_low']:g}–{o['decode_tps_high']:g})",
            f"{o['ttft_s']:g} ({o['ttft_s_low']:g}–{o['ttft_s_high']:g})",
            (format_tokens(o["max_ctx"]) if o["max_ctx"] else "-")
            + (f" ({format_tokens(o['max_ctx_scaled'])} RoPE-scaled)" if o.get("max_ctx_scaled") else ""),
        ]
        for o in data["options"]
    ]
    print(
        _table(
            [
                "format",
                "verdict",
                "weights GiB",
                "KV GiB",
                "runtime GiB",
                "total/usable GiB",
                "tok/s",
                "TTFT s",
                "max ctx",
            ],
            rows,
        )
    )
    return 0


# --- rank ------------------------------------------------------------------------------------------


def cmd_rank(svc: Service, args: argparse.Namespace) -> int:
    req = RankRequest(
        gpu=args.gpu,
        ctx=args.ctx,
        sort=args.sort,
        kv=args.kv,
        gpus=args.gpus,
        engine=args.engine,
        quant=args.quant,
        limit=args.limit,
    )
    gpu, rows = svc.rank(req)
    data = jsonout.rank_json(gpu, args.gpus, parse_tokens(args.ctx), rows)
    if args.json:
        _print_json(data)
        return 0
    print(f"Best models on {args.gpus}× {gpu.name} at {format_tokens(data['ctx'])} context (sorted by {args.sort})")
    print(
        _table(
            ["#", "model", "params", "format", "tok/s", "TTFT s", "GiB"],
            [
                [
                    r["rank"],
                    r["model"]["name"],
                    f"{r['model']['params_b']}B"
                    + (
                        f" ({r['model']['active_params_b']}B active)"
                        if r["model"]["active_params_b"] < r["model"]["params_b"]
                        else ""
                    ),
                    r["quant"],
                    r["decode_tps"],
                    r["ttft_s"],
                    r["memory_gb"]["total"],
                ]
                for r in data["rows"]
            ],
        )
    )
    return 0


# --- gpu -------------------------------------------------------------------------------------------


def gpu_card(svc: Service, gpu_text: str, ctx: int, gpus: int = 1) -> dict[str, Any]:
    from estimator.advice import recommend
    from estimator.fit import format_for

    gpu = svc.gpu(gpu_text)
    card: dict[str, Any] = {"gpu": jsonout.gpu_facts(gpu), "ctx": ctx}
    card["capability"] = jsonout.capability_json(svc.capability(gpu, ctx=ctx, gpus=gpus))
    refs = tuple(svc.catalog.model(i) for i in ("llama-3.1-8b", "llama-3.3-70b") if _has_model(svc, i))
    rec = recommend(
        gpu,
        svc.catalog.models,
        format_for(svc.catalog, "llama.cpp", "int4"),
        format_for(svc.catalog, "llama.cpp", "int8"),
        refs,
    )
    card["recommendation"] = {
        "comfortable_8bit": jsonout.capability_json([rec.comfortable_high_precision])["int8"],
        "long_context_4bit": jsonout.capability_json([rec.long_context_q4])["int4"],
        "reference_speeds": [
            {"model": r.model.id, "quant": r.quant.id, "decode_tps": round(r.decode_tps, 1), "fits": r.fits}
            for r in rec.reference_speeds
        ],
        "bandwidth_bound": rec.bandwidth_bound,
    }
    card["finetune"] = finetune_capability(svc, gpu, gpus)
    return card


def _has_model(svc: Service, model_id: str) -> bool:
    return any(m.id == model_id for m in svc.catalog.models)


def finetune_capability(svc: Service, gpu: Any, gpus: int = 1) -> dict[str, Any]:
    from estimator import finetune
    from estimator.memory import usable_vram_bytes

    best = finetune.largest_trainable(
        svc.catalog.models, finetune.settings_on(gpu, method="qlora", gpus=gpus), usable_vram_bytes(gpu)
    )
    return {method: jsonout.model_brief(m) if m else None for method, m in best.items()}


def cmd_gpu(svc: Service, args: argparse.Namespace) -> int:
    card = gpu_card(svc, args.gpu, parse_tokens(args.ctx), args.gpus)
    if args.json:
        _print_json(card)
        return 0
    g = card["gpu"]
    print(
        f"{g['name']}: {g['vram_gb']} GB {g.get('memory_type') or ''}, {g['bandwidth_gbs']} GB/s, "
        f"{g.get('tdp_w') or '?'} W"
    )
    for level, item in card["capability"].items():
        name = item["model"]["name"] if item["model"] else "nothing"
        print(f"  largest at {level} ({item['quant']}), ctx {format_tokens(card['ctx'])}: {name}")
    for method, item in card["finetune"].items():
        print(f"  {method}: {item['name'] if item else 'nothing'}")
    for r in card["recommendation"]["reference_speeds"]:
        print(f"  {r['model']} {r['quant']}: ~{r['decode_tps']} tok/s" + ("" if r["fits"] else " (if it fitted)"))
    return 0


# --- batch -----------------------------------------------------------------------------------------


def cmd_batch(svc: Service, args: argparse.Namespace) -> int:
    for line in sys.stdin:
        if not line.strip():
            continue
        try:
            query = json.loads(line)
            if not isinstance(query, dict):
                raise CliError("each line must be a JSON object")
            if "finetune" in query:
                from bot.finetune_cli import finetune_json

                _print_json(finetune_json(svc, query["finetune"]))
            else:
                _print_json(jsonout.fit_json(svc.fit(fit_request(query))))
        except (json.JSONDecodeError, CliError, BadValue, NotFound, ValueError, TypeError) as exc:
            _print_json({"error": str(exc) or type(exc).__name__})
    return 0


# --- catalog ---------------------------------------------------------------------------------------

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
    cat = svc.catalog
    if args.action == "import-hf":
        from catalog.hf import catalog_entry_toml

        text = " ".join(args.text).strip()
        if not text:
            raise CliError("import-hf needs ORG/NAME")
        key = text if text.lower().startswith("hf:") else f"hf:{text}"
        fetch_hf(svc, key)
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
            _print_json(out)
            return 0
        for kind in kinds:
            if kind == "gpu":
                print(
                    _table(
                        ["id", "name", "VRAM GB", "GB/s", "FP16 TFLOPS"],
                        [[g.id, g.name, g.vram_gb, g.bandwidth_gbs, g.fp16_tflops or "?"] for g in cat.gpus],
                    )
                )
            elif kind == "model":
                print(
                    _table(
                        ["id", "name", "params B", "active B", "layers", "max ctx"],
                        [
                            [m.id, m.name, m.params_b, m.active_params_b, m.layers, format_tokens(m.max_context)]
                            for m in cat.models
                        ],
                    )
                )
            else:
                print(
                    _table(
                        ["id", "name", "bits/weight", "engines"],
                        [[q.id, q.name, q.bits_per_weight, ", ".join(q.engines)] for q in cat.quants],
                    )
                )
        return 0
    if args.action == "show":
        text = " ".join(args.text).strip()
        if not text:
            raise CliError("catalog show needs a GPU, model or format id (see catalog list, catalog search)")
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
                    raise (not_gpu if not_gpu.ambiguous and not not_model.ambiguous else not_model) from None
        data = entry.model_dump(mode="json")
        if args.json:
            _print_json(data)
        else:
            for key, value in data.items():
                print(f"{key:24s} {value}")
        return 0
    text = " ".join(args.text)
    hits = [{"kind": "gpu", "id": s.id, "name": s.label} for s in svc.resolver.complete_gpu(text, 10)]
    hits += [{"kind": "model", "id": s.id, "name": s.label} for s in svc.resolver.complete_model(text, 10)]
    if args.json:
        _print_json(hits)
    else:
        print(_table(["kind", "id", "name"], [[h["kind"], h["id"], h["name"]] for h in hits]))
    return 0


# --- whatgpu -----------------------------------------------------------------------------------------

def cmd_whatgpu(svc: Service, args: argparse.Namespace) -> int:
    from estimator.whatgpu import what_gpu

    fetch_hf(svc, args.model)
    model, tagged = svc.model(args.model)
    engine = svc.engine(args.engine)
    formats = svc.formats(engine, args.quant) if args.quant or tagged is None else [tagged]
    if not args.quant and tagged is None:
        formats = [svc.quant("int4", engine)]
    rows = what_gpu(model, formats, svc.catalog.gpus, ctx=parse_tokens(args.ctx), engine=engine, kv=svc.kv(args.kv),
                    min_tps=args.min_tps, max_gpus=svc.gpus(args.max_gpus), budget_usd=args.budget)
    if args.json:
        _print_json({
            "model": jsonout.model_brief(model), "ctx": parse_tokens(args.ctx), "engine": engine,
            "setups": [{"gpu": s.gpu.id, "name": s.gpu.name, "count": s.count, "quant": s.quant.id,
                        "decode_tps": round(s.decode_tps, 1), "ttft_s": round(s.ttft_s, 3), "price_usd": s.price_usd,
                        "power_w": s.power_w, "verdict": s.memory.verdict,
                        "memory_gb": {"total": jsonout.gb(s.memory.total_bytes),
                                      "usable": jsonout.gb(s.memory.usable_bytes)},
                        "headroom_gb": jsonout.gb(s.headroom_bytes)} for s in rows[: args.limit]],
        })
        return 0
    print(f"GPU setups for {model.name} at {format_tokens(parse_tokens(args.ctx))} context ({engine})")
    if not rows:
        print(f"no setup of 1–{args.max_gpus} GPUs in the catalog meets that")
        return 0
    print(_table(["setup", "format", "tok/s", "TTFT s", "price $", "W", "headroom GiB"], [
        [f"{s.count}× {s.gpu.name}", s.quant.name, round(s.decode_tps, 1), round(s.ttft_s, 2), s.price_usd or "?",
         s.power_w or "?", jsonout.gb(s.headroom_bytes)] for s in rows[: args.limit]]))
    return 0


# --- parser ----------------------------------------------------------------------------------------


def _add_fit_flags(p: argparse.ArgumentParser) -> None:
    p.add_argument("--gpu", required=True, help="GPU as people type it: 't4', 'rtx 4090', 'a100 40gb'")
    p.add_argument("--model", required=True, help="model: 'qwen3-8b', 'Qwen/Qwen3-8B', 'llama3.1:8b-instruct-q4_K_M'")
    p.add_argument("--quant", help="format (Q4_K_M, Q8_0, AWQ …) or level (int4, int8, fp16); default: compare three")
    p.add_argument("--engine", default="llama.cpp", help="llama.cpp (also Ollama, LM Studio), vllm or mlx")
    p.add_argument("--ctx", default="8k", help="context length: 8192, 32k, 128K, 1M")
    p.add_argument("--prompt", default="2048", help="prompt tokens for TTFT (0 = empty context)")
    p.add_argument("--kv", default="f16", help="KV cache precision: f16, q8_0, q4_0, fp8")
    p.add_argument("--gpus", type=int, default=1, help="number of GPUs (1-8)")
    p.add_argument("--batch", type=int, default=1, help="concurrent sequences")
    p.add_argument("--json", action="store_true")


def build_parser() -> argparse.ArgumentParser:
    parser = argparse.ArgumentParser(prog="rigcheck", description="Does this LLM run on that GPU, and how fast?")
    sub = parser.add_subparsers(dest="command", required=True)

    p = sub.add_parser("fit", help="memory, speed and max context of one model on one GPU setup")
    _add_fit_flags(p)
    p.set_defaults(func=cmd_fit)

    p = sub.add_parser("rank", help="the best models that fit a GPU setup")
    p.add_argument("--gpu", required=True)
    p.add_argument("--ctx", default="8k")
    p.add_argument("--sort", default="quality", choices=["quality", "speed", "size"])
    p.add_argument("--kv", default="f16")
    p.add_argument("--gpus", type=int, default=1)
    p.add_argument("--engine", default="llama.cpp")
    p.add_argument("--quant")
    p.add_argument("--limit", type=_at_least_one)
    p.add_argument("--json", action="store_true")
    p.set_defaults(func=cmd_rank)

    p = sub.add_parser("gpu", help="a GPU's spec card: capability, fine-tuning, recommendation")
    p.add_argument("--gpu", required=True)
    p.add_argument("--ctx", default="8k")
    p.add_argument("--gpus", type=int, default=1)
    p.add_argument("--json", action="store_true")
    p.set_defaults(func=cmd_gpu)

    p = sub.add_parser("batch", help="JSON lines of fit queries on stdin → one JSON answer per line")
    p.set_defaults(func=cmd_batch)

    p = sub.add_parser("whatgpu", help="which GPU setups run a model: fewest GPUs, then cheapest, then fastest")
    p.add_argument("--model", required=True, help="catalog model or hf:org/name")
    p.add_argument("--quant", help="format or level (default int4)")
    p.add_argument("--engine", default="llama.cpp")
    p.add_argument("--ctx", default="8k")
    p.add_argument("--kv", default="f16")
    p.add_argument("--min-tps", type=float, dest="min_tps", help="at least this many tokens/s")
    p.add_argument("--max-gpus", type=int, default=8, dest="max_gpus")
    p.add_argument("--budget", type=float, help="most you would spend, USD (launch prices)")
    p.add_argument("--limit", type=_at_least_one, default=25)
    p.add_argument("--json", action="store_true")
    p.set_defaults(func=cmd_whatgpu)

    p = sub.add_parser("catalog", help="inspect the catalog; import-hf ORG/NAME prints a catalog entry")
    p.add_argument("action", choices=["list", "show", "search", "import-hf"])
    p.add_argument("text", nargs="*")
    p.add_argument("--kind", choices=["gpu", "model", "quant"])
    p.add_argument("--json", action="store_true")
    p.set_defaults(func=cmd_catalog)

    for register in EXTRA_COMMANDS:
        register(sub)
    return parser


EXTRA_COMMANDS: list[Callable[[Any], None]] = []


def _at_least_one(text: str) -> int:
    """--limit: a row count; 0 or less would print an empty table (and -1 drop the last row)."""
    try:
        value = int(text)
    except ValueError:
        raise argparse.ArgumentTypeError(f"not a whole number: {text!r}") from None
    if value < 1:
        raise argparse.ArgumentTypeError(f"must be at least 1 (got {value})")
    return value


def _register_optional() -> None:
    """Commands whose modules pull in discord.py or aiohttp register themselves lazily."""
    from bot import cli_extra

    for register in cli_extra.REGISTER:
        if register not in EXTRA_COMMANDS:
            EXTRA_COMMANDS.append(register)


def main(argv: Sequence[str] | None = None) -> int:
    _register_optional()
    parser = build_parser()
    args = parser.parse_args(argv)
    try:
        return int(args.func(Service(), args) or 0)
    except NotFound as exc:
        print(f"rigcheck: {exc}", file=sys.stderr)
    except (BadValue, CliError, HubError) as exc:
        print(f"rigcheck: {exc}", file=sys.stderr)
    except KeyboardInterrupt:
        return 130
    except BrokenPipeError:
        # `rigcheck catalog list | head`: the reader left, which is not an error worth a traceback. Point
        # stdout at /dev/null so the interpreter's final flush does not raise the same error again.
        with contextlib.suppress(OSError, ValueError):
            os.dup2(os.open(os.devnull, os.O_WRONLY), sys.stdout.fileno())
        return EXIT_BROKEN_PIPE
    return EXIT_USAGE


if __name__ == "__main__":
    sys.exit(main())
