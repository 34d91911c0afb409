"""`rigcheck fit|rank|gpu|batch|whatgpu`: one model or GPU setup estimated, as a table or `--json`."""

from __future__ import annotations

import argparse
import json
import sys
from typing import Any

from bot.cli import json_shapes
from bot.cli.common import (
    FIT_KEYS,
    CliError,
    at_least_one,
    column_names,
    fetch_hf,
    fit_request,
    lang,
    print_json,
    table,
)
from bot.params import BadValue, format_tokens, people_text
from bot.render.memory_figures import MemoryFigures, memory_figures
from bot.render.notes import fit_notes
from bot.render.replies import offload_text, unpriced_note
from bot.render.table import setup_label
from bot.render.text import DEFAULT_LOCALE, engine_name, params_b_text, scaled_context_text, t, tps_text
from bot.requests import DEFAULT_SORT, DEFAULT_WHATGPU_LIMIT, GpuRequest, RankRequest, WhatGpuRequest
from bot.service import Service
from catalog.resolve import NotFound
from estimator.advice import offload_format, partial_offload
from estimator.engines import APPLE_ONLY_ENGINES
from estimator.query import DEFAULT_CTX, DEFAULT_ENGINE, DEFAULT_KV, DEFAULT_PROMPT_TOKENS
from estimator.speed import Speed


def tps_cell(s: Speed) -> str:
    """A table cell with the estimate and its 80 % range, from the unrounded figures (as the embeds print them): the
    JSON's one-decimal values rounded again would read 26.46 as "26" here and "27" in Discord."""
    return (f"~{tps_text(s.decode_tps)} ({tps_text(s.decode_tps_low, like=s.decode_tps)}–"
            f"{tps_text(s.decode_tps_high, like=s.decode_tps)})")


def seconds_text(s: float) -> str:
    """Seconds to the hundredth below 10 s, so 2.00 is not printed as '2' beside '1.36'."""
    return f"{s:.2f}" if s < 10 else f"{s:.1f}" if s < 100 else f"{s:.0f}"


def ttft_cell(s: Speed) -> str:
    return f"{seconds_text(s.ttft_s)} ({seconds_text(s.ttft_s_low)}–{seconds_text(s.ttft_s_high)})"


CLI_GIB_DIGITS = 2  # the terminal table's GiB decimals, as `--json` rounds them


def total_cell(locale: str | None, m: MemoryFigures) -> str:
    """'6.31 / 15.00'; a total that prints as the usable memory yet does not fit says by how much, as /fit does."""
    over = t(locale, "memory.over_usable", mib=m.over_mib) if m.over_mib else ""
    return f"{m.total} / {m.usable}{over}"


def cmd_fit(svc: Service, args: argparse.Namespace) -> int:
    fetch_hf(svc, args.model)
    req = fit_request(vars(args))
    result = svc.fit(req)
    data = json_shapes.fit_json(result, fit_notes(svc, req, result.query, DEFAULT_LOCALE))
    if args.json:
        print_json(data)
        return 0
    g, m, loc = data["gpu"], data["model"], lang(args)
    print(t(loc, "cli.fit.title", model=m["name"], params_b=params_b_text(m["params_b"]), count=g["count"],
            gpu=g["name"], engine=engine_name(data["engine"]), ctx=format_tokens(data["ctx"]),
            prompt=data["prompt_tokens"], kv=data["kv_dtype"]))
    rows = [
        [
            o["quant_name"],
            t(loc, f"verdict.{o['verdict']}"),
            m.weights,
            m.kv_cache,
            m.overhead,
            total_cell(loc, m),
            # A format that does not fit has no all-on-GPU speed to show (--json keeps the figures).
            tps_cell(option.speed) if o["verdict"] != "does_not_fit" else "-",
            "-" if o["verdict"] == "does_not_fit" else ttft_cell(option.speed) if data["prompt_tokens"]
            else t(loc, "cli.fit.no_prompt"),  # no prompt: nothing to prefill, no time to first token to give
            _max_ctx(loc, o["max_ctx"], o.get("max_ctx_scaled")),
        ]
        for o, option in zip(data["options"], result.options, strict=True)
        for m in [memory_figures(option.memory, CLI_GIB_DIGITS)]
    ]
    print(table(column_names(loc, "col.format", "cli.col.verdict", "cli.col.weights_gib", "cli.col.kv_gib",
                             "cli.col.runtime_gib", "cli.col.total_usable_gib", "col.tps", "cli.col.ttft_s",
                             "cli.col.max_ctx"), rows))
    # How the question was read where that differs from what was typed (a prompt cut to the context, a
    # model tag's format beside another `--quant`), as /fit says it.
    for note in fit_notes(svc, req, result.query, loc or DEFAULT_LOCALE):
        print(note)
    # Several sequences: their summed rate, and when the last of their prompts, arriving together, starts.
    if data["batch"] > 1 and data["prompt_tokens"]:
        for o in data["options"]:
            if o["verdict"] != "does_not_fit":
                print(t(loc, "cli.fit.batch_line", fmt=o["quant_name"], n=data["batch"],
                        total=f"{o['aggregate_tps']:,.0f}", last=f"{o['ttft_last_s']:.2f}",
                        low=f"{o['ttft_last_s_low']:.2f}", high=f"{o['ttft_last_s_high']:.2f}"))
    # Where nothing fits, the split /fit offers (llama.cpp with some layers in system RAM), and its speed.
    offload = offload_text(partial_offload(result), loc or DEFAULT_LOCALE)
    if offload:
        print(f"{offload_format(result).name}: {offload}")
    return 0


def _max_ctx(locale: str | None, native: int, scaled: int | None) -> str:
    shown = format_tokens(native) if native else "-"
    beyond = scaled_context_text(native, scaled)
    return t(locale, "cli.fit.rope_scaled", ctx=shown, scaled=beyond) if beyond else shown


# --- rank ------------------------------------------------------------------------------------------


def cmd_rank(svc: Service, args: argparse.Namespace) -> int:
    req = RankRequest.of(
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
    data = json_shapes.rank_json(gpu, req.gpus, req.ctx, rows)
    if args.json:
        print_json(data)
        return 0
    loc = lang(args)
    print(t(loc, "cli.rank.title", count=req.gpus, gpu=gpu.name, ctx=format_tokens(data["ctx"]),
            sort=t(loc, f"sort.{req.sort}")))
    print(
        table(
            column_names(loc, "col.rank", "col.model", "col.params", "col.format", "col.tps", "cli.col.ttft_s",
                         "cli.col.gib"),
            [
                [
                    r["rank"],
                    r["model"]["name"],
                    t(loc, "params.active", total=f"{params_b_text(r['model']['params_b'])}B",
                      active=f"{params_b_text(r['model']['active_params_b'])}B")
                    if r["model"]["active_params_b"] < r["model"]["params_b"]
                    else f"{params_b_text(r['model']['params_b'])}B",
                    r["quant"],
                    tps_cell(row.best.speed),
                    ttft_cell(row.best.speed),
                    r["memory_gb"]["total"],
                ]
                for r, row in zip(data["rows"], rows, strict=True)
            ],
        )
    )
    return 0


# --- gpu -------------------------------------------------------------------------------------------


def gpu_card(svc: Service, gpu_text: str, ctx: int, gpus: int = 1) -> dict[str, Any]:
    from estimator import advice

    # A count written in the GPU text (`8x h100 nvl`) counts as `--gpus` does, as in `fit`.
    choice = svc.gpu_choice(gpu_text, gpus)
    gpu = choice.gpu
    card = advice.gpu_card(svc.catalog, gpu, ctx=ctx, gpus=choice.count)
    rec = card.recommendation
    return {
        "gpu": json_shapes.gpu_facts(gpu),
        "gpus": choice.count,
        "ctx": ctx,
        "capability": json_shapes.capability_json([lv.largest for lv in card.levels]),
        "recommendation": {
            "comfortable_8bit": json_shapes.capability_json([rec.comfortable_high_precision])["int8"],
            "long_context_4bit": json_shapes.capability_json([rec.long_context_q4])["int4"],
            "reference_speeds": [
                {"model": r.model.id, "quant": r.quant.id, "decode_tps": round(r.decode_tps, 1),
                 "decode_tps_low": round(r.decode_tps_low, 1), "decode_tps_high": round(r.decode_tps_high, 1),
                 "fits": r.fits}
                for r in rec.reference_speeds
            ],
            "bandwidth_bound": rec.bandwidth_bound,
        },
        "finetune": {method: json_shapes.model_brief(m) if m else None for method, m in card.finetune.items()},
    }


def cmd_gpu(svc: Service, args: argparse.Namespace) -> int:
    req = GpuRequest.of(gpu=args.gpu, ctx=args.ctx, gpus=args.gpus)
    card = gpu_card(svc, req.gpu, req.ctx, req.gpus)
    if args.json:
        print_json(card)
        return 0
    g, loc = card["gpu"], lang(args)
    nothing = t(loc, "cli.nothing")
    setup = setup_label(svc.catalog.gpu(g["id"]), card["gpus"])
    print(t(loc, "cli.gpu.title", gpu=setup, vram_gb=g["vram_gb"], memory_type=g.get("memory_type") or "",
            bandwidth_gbs=g["bandwidth_gbs"], tdp_w=g.get("tdp_w") or "?"))
    for level, item in card["capability"].items():
        name = item["model"]["name"] if item["model"] else nothing
        print("  " + t(loc, "cli.gpu.largest", level=level, quant=item["quant"], ctx=format_tokens(card["ctx"]),
                       model=name))
    for method, item in card["finetune"].items():
        print("  " + t(loc, "cli.gpu.finetune", method=method, model=item["name"] if item else nothing))
    for r in card["recommendation"]["reference_speeds"]:
        speed = t(loc, "cli.gpu.speed", model=r["model"], quant=r["quant"], tps=r["decode_tps"],
                  low=r["decode_tps_low"], high=r["decode_tps_high"])
        print("  " + speed + ("" if r["fits"] else t(loc, "rec.if_fitted")))
    return 0


# --- batch -----------------------------------------------------------------------------------------


BATCH_LINE_EXAMPLE = '{"gpu": "t4", "model": "qwen3-8b", "ctx": "16k"}'
# What a `fit` line may hold (`fit_request` reads these); a misspelt key ("contex") would otherwise be dropped
# silently and the answer be for the default.
BATCH_FIT_KEYS = FIT_KEYS


def batch_query(number: int, line: str) -> dict[str, Any]:
    """One stdin line as a query; the parser's own wording ("Expecting value: line 1 column 1") would
    leave a person guessing what was wrong."""
    try:
        query = json.loads(line)
    except json.JSONDecodeError:
        query = None
    if not isinstance(query, dict):
        raise CliError.of("cli.batch.not_object", number=number, example=BATCH_LINE_EXAMPLE)
    allowed = ("finetune",) if "finetune" in query else BATCH_FIT_KEYS
    unknown = sorted(str(key) for key in query if key not in allowed)
    if unknown:
        raise CliError.of("cli.batch.unknown_key", number=number, name=unknown[0], keys=", ".join(allowed))
    return query


def cmd_batch(svc: Service, args: argparse.Namespace) -> int:
    """One answer line per input line, so answer N is line N's: a blank line gets an error too. Blank lines
    at the very end (a file's trailing newlines) ask nothing and get nothing, which keeps that true."""
    blank: list[int] = []
    for number, line in enumerate(sys.stdin, start=1):
        if not line.strip():
            blank.append(number)  # answered once a query follows it
            continue
        for empty in blank:
            print_json({"error": people_text(CliError.of("cli.batch.blank", number=empty,
                                                         example=BATCH_LINE_EXAMPLE))})
        blank.clear()
        try:
            query = batch_query(number, line)
        except CliError as exc:
            print_json({"error": people_text(exc)})  # about the line itself, which it names ("line 3 is not …")
            continue
        try:
            if "finetune" in query:
                from bot.cli.finetune import finetune_json

                print_json(finetune_json(svc, query["finetune"]))
            else:
                req = fit_request(query)
                result = svc.fit(req)
                print_json(json_shapes.fit_json(result, fit_notes(svc, req, result.query, DEFAULT_LOCALE)))
        except (CliError, BadValue, NotFound, ValueError, TypeError) as exc:
            # Whatever the query's own refusal says, the line it came from is named too.
            reason = people_text(exc) or type(exc).__name__
            print_json({"error": t(None, "cli.batch.at_line", number=number, reason=reason)})
    return 0



# --- whatgpu -----------------------------------------------------------------------------------------

def cmd_whatgpu(svc: Service, args: argparse.Namespace) -> int:
    req = WhatGpuRequest.of(model=args.model, quant=args.quant, engine=args.engine, ctx=args.ctx, kv=args.kv,
                         min_tps=args.min_tps, max_gpus=args.max_gpus, budget=args.budget, limit=args.limit)
    fetch_hf(svc, req.model)
    answer = svc.what_gpu(req)
    model, ctx, rows, engine = answer.model, answer.ctx, answer.setups, req.engine
    if args.json:
        print_json({
            "model": json_shapes.model_brief(model), "ctx": ctx, "engine": engine,
            "setups": [json_shapes.setup_json(s) for s in rows[: req.limit]],
            "unpriced": answer.unpriced,
        })
        return 0
    loc = lang(args)
    print(t(loc, "cli.whatgpu.title", model=model.name, ctx=format_tokens(ctx), engine=engine_name(engine)))
    if answer.unpriced:
        print(unpriced_note(answer.unpriced, loc))
    if not rows:
        print(t(loc, "cli.whatgpu.none_mac" if engine in APPLE_ONLY_ENGINES else "cli.whatgpu.none", most=req.max_gpus))
        return 0
    print(table(column_names(loc, "col.setup", "col.format", "col.tps", "cli.col.ttft_s", "cli.col.price_usd",
                             "cli.col.watts", "cli.col.headroom_gib"), [
        [f"{s.count}× {s.gpu.name}", s.quant.name, tps_cell(s.speed), ttft_cell(s.speed), s.price_usd or "?",
         s.power_w or "?", d["headroom_gb"]] for s in rows[: req.limit] for d in [json_shapes.setup_json(s)]]))
    return 0



def add_fit_flags(p: argparse.ArgumentParser) -> None:
    """`fit`'s flags. Counts (`--gpus`, `--batch`) stay text here, as `--sort` does in `rank`: the request reads
    them and says what is wrong in the catalog's words and `--lang`, not in argparse's."""
    p.add_argument("--gpu", required=True, help="GPU as people type it: 't4', 'rtx 4090', 'a100 40gb'")
    p.add_argument("--model", required=True, help="model: 'qwen3-8b', 'Qwen/Qwen3-8B', 'llama3.1:8b-instruct-q4_K_M'")
    p.add_argument("--quant", help="format (Q4_K_M, Q8_0, AWQ …) or level (int4, int8, fp16); default: compare three")
    p.add_argument("--engine", default=DEFAULT_ENGINE, help="llama.cpp (also Ollama, LM Studio), vllm or mlx")
    p.add_argument("--ctx", help=f"context length: 8192, 32k, 128K, 1M (default {format_tokens(DEFAULT_CTX)}, or the "
                                 "model's window where that is shorter)")
    p.add_argument("--prompt", default=str(DEFAULT_PROMPT_TOKENS), help="prompt tokens for TTFT (0 = empty context)")
    p.add_argument("--kv", default=DEFAULT_KV, help="KV cache precision: f16, q8_0, q4_0, fp8")
    p.add_argument("--gpus", default=1, help="number of GPUs (1-8)")
    p.add_argument("--batch", default=1, help="concurrent sequences")
    p.add_argument("--json", action="store_true")



def register(sub: Any) -> None:
    p = sub.add_parser("fit", help="memory, speed and max context of one model on one GPU setup")
    add_fit_flags(p)
    p.set_defaults(func=cmd_fit)

    p = sub.add_parser("rank", help="the best models that fit a GPU setup")
    p.add_argument("--gpu", required=True)
    p.add_argument("--ctx", default=format_tokens(DEFAULT_CTX))
    p.add_argument("--sort", default=DEFAULT_SORT, metavar="{quality,speed,size}")
    p.add_argument("--kv", default=DEFAULT_KV)
    p.add_argument("--gpus", default=1)
    p.add_argument("--engine", default=DEFAULT_ENGINE)
    p.add_argument("--quant")
    p.add_argument("--limit", type=at_least_one)
    p.add_argument("--json", action="store_true")
    p.set_defaults(func=cmd_rank)

    p = sub.add_parser("gpu", help="a GPU's spec card: capability, fine-tuning, recommendation")
    p.add_argument("--gpu", required=True)
    p.add_argument("--ctx", default=format_tokens(DEFAULT_CTX))
    p.add_argument("--gpus", default=1)
    p.add_argument("--json", action="store_true")
    p.set_defaults(func=cmd_gpu)

    p = sub.add_parser("batch", help="JSON lines of fit queries on stdin → one JSON answer per line")
    p.set_defaults(func=cmd_batch)

    p = sub.add_parser("whatgpu", help="which GPU setups run a model: fewest GPUs, then cheapest, then fastest")
    p.add_argument("--model", required=True, help="catalog model or hf:org/name")
    p.add_argument("--quant", help="format or level (default int4)")
    p.add_argument("--engine", default=DEFAULT_ENGINE)
    p.add_argument("--ctx", help=f"default {format_tokens(DEFAULT_CTX)}, or the model's window where that is shorter")
    p.add_argument("--kv", default=DEFAULT_KV)
    p.add_argument("--min-tps", type=float, dest="min_tps", help="at least this many tokens/s")
    p.add_argument("--max-gpus", default=8, dest="max_gpus")
    p.add_argument("--budget", type=float, help="most you would spend, USD (launch prices)")
    p.add_argument("--limit", type=at_least_one, default=DEFAULT_WHATGPU_LIMIT)
    p.add_argument("--json", action="store_true")
    p.set_defaults(func=cmd_whatgpu)
