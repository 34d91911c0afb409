"""Estimator results → Replies (embed JSON from templates + chart PNGs). No Discord objects here, so the
CLI, the sandbox and the daily job render exactly what the bot sends."""

from __future__ import annotations

import math
from typing import Any

from bot.params import format_tokens
from bot.render import charts
from bot.render.embeds import COLORS, locale_key, render_embed
from bot.render.reply import Reply, ReplyFile
from bot.service import FitRequest, RankRequest, Service
from catalog.schema import GPU
from estimator.constants import GIB
from estimator.finetune import Method
from estimator.fit import FitResult
from estimator.memory import memory
from estimator.query import Query
from estimator.rank import RankRow

PAGE_SIZE = 10
VERDICTS = {
    "en": {"fits": "fits", "tight": "tight", "does_not_fit": "does not fit"},
    "zh-CN": {"fits": "可运行", "tight": "勉强", "does_not_fit": "显存不足"},
}
HEADLINES = {
    "en": {"fits": "Runs", "tight": "Runs, with little headroom", "does_not_fit": "Does not fit"},
    "zh-CN": {"fits": "可以运行", "tight": "可以运行，但余量很小", "does_not_fit": "显存不足，无法运行"},
}


def _verdict_of(result: FitResult) -> str:
    verdicts = [o.memory.verdict for o in result.options]
    for v in ("fits", "tight"):
        if v in verdicts:
            return v
    return "does_not_fit"


def advice(svc: Service, result: FitResult, locale: str) -> list[str]:
    """When nothing fits (or it is tight), what would: a smaller format, a quantized KV cache, less
    context, one more GPU — each checked with the estimator, never assumed."""
    loc = locale_key(locale)
    zh = loc == "zh-CN"
    if _verdict_of(result) == "fits":
        return []
    q = result.query
    tips: list[str] = []
    for level in ("int4", "int3", "int2"):
        try:
            fmt = svc.quant(level, q.engine)
        except ValueError:
            continue
        if fmt.bits_per_weight >= min(o.quant.bits_per_weight for o in result.options):
            continue
        if memory(q.model_copy(update={"quant": fmt})).verdict == "fits":
            tips.append(f"使用更小的量化 {fmt.name}" if zh else f"a smaller format: {fmt.name}")
            break
    smallest = min(result.options, key=lambda o: o.quant.bits_per_weight)
    if q.kv in ("f16", "bf16"):
        kv_q = q.model_copy(update={"quant": smallest.quant, "kv": "q8_0"})
        if memory(kv_q).verdict == "fits":
            tips.append("KV 缓存改用 q8_0" if zh else "KV cache at q8_0 (`kv:q8_0`)")
    if smallest.max_ctx >= 1024:
        ctx = format_tokens(smallest.max_ctx)
        tips.append(f"上下文缩短到 {ctx}" if zh else f"at most {ctx} of context with {smallest.quant.name}")
    if q.gpus < 8 and not q.gpu.unified_memory:
        for count in range(q.gpus + 1, 9):
            more = q.model_copy(update={"quant": smallest.quant, "gpus": count})
            if memory(more).verdict != "does_not_fit":
                tips.append(
                    f"{count} 块 {q.gpu.name}（`gpus:{count}`）" if zh else f"{count}× {q.gpu.name} (`gpus:{count}`)"
                )
                break
    if not tips:
        need = smallest.memory.total_bytes / GIB
        tips.append(
            f"需要约 {need:.0f} GiB 显存的显卡"
            if zh
            else f"a GPU with at least {need:.0f} GiB for {smallest.quant.name}"
        )
    return tips


def offload_text(q: Query, locale: str) -> str | None:
    try:
        from estimator.offload import offload_plan
    except ImportError:
        return None
    plan = offload_plan(q)
    if plan is None:
        return None
    if locale_key(locale) == "zh-CN":
        return (
            f"{plan.gpu_layers}/{plan.total_layers} 层放在 GPU 上，其余在内存中："
            f"约 {plan.decode_tps:.1f} tok/s（llama.cpp `-ngl`）"
        )
    return (
        f"fits with {plan.gpu_layers} of {plan.total_layers} layers on the GPU, the rest in system RAM: "
        f"~{plan.decode_tps:.1f} tok/s (llama.cpp `-ngl {plan.gpu_layers}`)"
    )


def fit_reply(svc: Service, req: FitRequest, locale: str, theme: charts.Theme = "dark") -> Reply:
    q, formats = svc.base_query(req)
    from estimator.curve import vram_curves
    from estimator.fit import fit

    result = fit(q, formats)
    loc = locale_key(locale)
    verdict = _verdict_of(result)
    usable = result.options[0].memory.usable_bytes
    offload = None
    if verdict == "does_not_fit" and q.engine == "llama.cpp":
        smallest = min(result.options, key=lambda o: o.quant.bits_per_weight)
        offload = offload_text(q.model_copy(update={"quant": smallest.quant}), locale)
    embed = render_embed(
        "fit",
        locale,
        model=q.model,
        gpu=q.gpu,
        count=q.gpus,
        engine=q.engine,
        ctx=q.ctx,
        prompt=q.prompt_tokens,
        kv=q.kv,
        batch=q.batch,
        options=result.options,
        usable=usable,
        vram=q.gpu.vram_bytes * q.gpus,
        verdicts=VERDICTS[loc],
        headline=HEADLINES[loc][verdict],
        color=COLORS[verdict],
        advice=advice(svc, result, locale),
        offload=offload,
        image="vram.png",
    )
    curves = vram_curves(q, formats)
    title = f"{q.model.name} · {q.gpus}× {q.gpu.name}"
    png = charts.vram_chart(curves, title=title, gpu_label=q.gpu.name, locale=locale, theme=theme)
    return Reply(embeds=[embed], files=[ReplyFile(filename="vram.png", data=png)])


def rank_rows_view(rows: list[RankRow], start: int) -> list[dict[str, Any]]:
    out = []
    for i, r in enumerate(rows):
        params = f"{r.model.params_b:g}B"
        if r.model.active_params_b < r.model.params_b:
            params += f"/{r.model.active_params_b:g}A"
        ttft = r.best.speed.ttft_s
        out.append(
            {
                "rank": start + i + 1,
                "name": r.model.name,
                "params": params,
                "quant": r.best.quant.name,
                "tps": f"{r.best.speed.decode_tps:.0f}",
                "ttft": f"{ttft * 1000:.0f}ms" if ttft < 1 else f"{ttft:.1f}s",
                "gib": f"{r.best.memory.total_bytes / GIB:.1f}",
            }
        )
    return out


def rank_reply(
    svc: Service, req: RankRequest, page: int = 1, *, locale: str, theme: charts.Theme = "dark"
) -> Reply:
    gpu, rows = svc.rank(req)
    pages = max(1, math.ceil(len(rows) / PAGE_SIZE))
    page = min(max(1, page), pages)
    start = (page - 1) * PAGE_SIZE
    chunk = rows[start : start + PAGE_SIZE]
    from bot.params import parse_tokens

    ctx = parse_tokens(req.ctx)
    sort_names = {
        "en": {"quality": "quality", "speed": "speed", "size": "size"},
        "zh-CN": {"quality": "质量", "speed": "速度", "size": "参数量"},
    }[locale_key(locale)]
    embed = render_embed(
        "rank",
        locale,
        gpu=gpu,
        count=req.gpus,
        ctx=ctx,
        sort=sort_names.get(req.sort, req.sort),
        engine=svc.engine(req.engine),
        kv=req.kv,
        page=page,
        pages=pages,
        total=len(rows),
        rows=rank_rows_view(chunk, start),
        color=COLORS["info"],
        image="rank.png",
    )
    title = f"{req.gpus}× {gpu.name} · {format_tokens(ctx)}"
    png = charts.rank_chart(chunk, title=title, limit=PAGE_SIZE, locale=locale, theme=theme)
    return Reply(embeds=[embed], files=[ReplyFile(filename="rank.png", data=png)], meta={"pages": pages})


def error_reply(
    title: str, message: str, locale: str, suggestions: list[str] | None = None, error_id: str | None = None
) -> Reply:
    embed = render_embed(
        "error", locale, title=title, message=message, suggestions=suggestions or [], error_id=error_id
    )
    return Reply(embeds=[embed], ephemeral=True)


def gpu_label(gpu: GPU, count: int) -> str:
    return f"{count}× {gpu.name}" if count > 1 else gpu.name


LEVEL_LABELS = {
    "en": {"int4": "4-bit", "int8": "8-bit", "fp16": "16-bit"},
    "zh-CN": {"int4": "4位量化", "int8": "8位精度", "fp16": "16位全精度"},
}


def recommendation_text(svc: Service, gpu: GPU, locale: str) -> str:
    from estimator.advice import recommend

    refs = tuple(m for m in svc.catalog.models if m.id in ("llama-3.1-8b", "llama-3.3-70b"))
    rec = recommend(gpu, svc.catalog.models, svc.quant("int4", "llama.cpp"), svc.quant("int8", "llama.cpp"), refs)
    zh = locale_key(locale) == "zh-CN"
    hp, lc = rec.comfortable_high_precision.model, rec.long_context_q4.model
    lines = []
    if hp:
        lines.append(f"适合在 Q8 精度下运行 {hp.name}" if zh else f"Comfortable: {hp.name} at Q8 (8k context)")
    if lc:
        lines.append(f"Q4 精度下搭配 32k 上下文可运行 {lc.name}" if zh else f"Long context: {lc.name} at Q4 with 32k")
    speeds = ", ".join(
        f"{r.model.name} Q4 ≈ {r.decode_tps:.0f} tok/s"
        + ("" if r.fits else (" (若能装下)" if zh else " (if it fitted)"))
        for r in rec.reference_speeds
    )
    if speeds:
        lines.append(
            f"单批次推理受显存带宽限制：{speeds}" if zh else f"Single-stream decode is bandwidth-bound: {speeds}"
        )
    return "\n".join(lines) or ("目录中没有可运行的模型" if zh else "Nothing in the catalog fits.")


def gpu_reply(
    svc: Service, gpu_text: str, ctx: int = 8192, *, locale: str, theme: charts.Theme = "dark"
) -> Reply:
    from estimator import finetune
    from estimator.memory import usable_vram_bytes

    gpu = svc.gpu(gpu_text)
    loc = locale_key(locale)
    capability = [
        {"label": LEVEL_LABELS[loc][c.level], "quant": c.quant, "model": c.model, "size_class_b": c.size_class_b}
        for c in svc.capability(gpu, ctx=ctx)
    ]
    usable = usable_vram_bytes(gpu)
    best = finetune.largest_trainable(svc.catalog.models, finetune.FinetuneSettings(method="qlora"), usable)
    ft = [
        {"method": {"qlora": "QLoRA", "lora": "LoRA", "full": "Full" if loc == "en" else "全参数"}[m], "model": best[m]}
        for m in ("qlora", "lora", "full")
    ]
    embed = render_embed(
        "gpu",
        locale,
        gpu=gpu,
        usable=usable,
        ctx=ctx,
        capability=capability,
        finetune=ft,
        recommendation=recommendation_text(svc, gpu, locale),
        image="gpu.png",
    )
    points: list[tuple[str, float, float]] = []
    q4 = svc.quant("int4", "llama.cpp")
    for model_id in ("llama-3.2-3b", "llama-3.1-8b", "qwen3-14b", "qwen3-32b", "llama-3.3-70b"):
        try:
            model = svc.catalog.model(model_id)
        except KeyError:
            continue
        total = memory(Query(gpu=gpu, model=model, quant=q4, ctx=ctx)).total_bytes
        points.append((f"{model.name} Q4", ctx, total / GIB))
    png = charts.gpu_chart(
        points, usable_gib=usable / GIB, title=f"{gpu.name} · {format_tokens(ctx)}", locale=locale, theme=theme
    )
    return Reply(embeds=[embed], files=[ReplyFile(filename="gpu.png", data=png)])


def compare_reply(svc: Service, reqs: list[FitRequest], locale: str) -> Reply:
    from estimator.fit import fit

    loc = locale_key(locale)
    sides: list[dict[str, Any]] = []
    for req in reqs:
        q, formats = svc.base_query(req)
        result = fit(q, formats)
        label = f"{q.model.name} · {gpu_label(q.gpu, q.gpus)}"
        sides.append({"label": label, "best": result.best})
    first, _ = svc.base_query(reqs[0])
    title = " vs ".join(s["label"] for s in sides)
    embed = render_embed(
        "compare",
        locale,
        title=title,
        sides=sides,
        engine=first.engine,
        ctx=first.ctx,
        kv=first.kv,
        verdicts=VERDICTS[loc],
    )
    return Reply(embeds=[embed])


def list_reply(title: str, intro: str, lines: list[str], footer: str, locale: str) -> Reply:
    return Reply(embeds=[render_embed("list", locale, title=title, intro=intro, lines=lines, footer=footer)])


def help_reply(locale: str) -> Reply:
    return Reply(embeds=[render_embed("help", locale)], ephemeral=True)


def finetune_reply(
    svc: Service, gpu: GPU, model: Any, method: Method, seq: int, batch: int, gpus: int, locale: str
) -> Reply:
    from estimator import finetune as ft
    from estimator.memory import usable_vram_bytes

    settings = ft.FinetuneSettings(
        method=method,
        seq=seq,
        batch=batch,
        gpus=gpus,
        sharding="fsdp" if gpus > 1 else "none",
    )
    mem = ft.finetune_memory(model, settings)
    usable = usable_vram_bytes(gpu)
    loc = locale_key(locale)
    zh = loc == "zh-CN"
    verdict = "fits" if mem.total <= usable * 0.95 else ("tight" if mem.total <= usable else "does_not_fit")
    advice_lines: list[str] = []
    if verdict == "does_not_fit":
        if method != "qlora":
            q = ft.finetune_memory(model, ft.FinetuneSettings(method="qlora", seq=seq, batch=batch, gpus=gpus))
            if q.total <= usable:
                advice_lines.append("改用 QLoRA" if zh else "QLoRA instead (`method:qlora`)")
        best_seq = ft.max_seq(model, settings, usable, step=256)
        if best_seq:
            advice_lines.append(
                f"序列缩短到 {format_tokens(best_seq)}" if zh else f"sequence length ≤ {format_tokens(best_seq)}"
            )
    terms = {
        k: getattr(mem, k)
        for k in ("weights", "trainable", "gradients", "optimizer", "activations", "logits", "overhead")
    }
    line = f"{settings.optimizer_used} · {settings.precision}" + (" · checkpointing" if settings.checkpointing else "")
    embed = render_embed(
        "finetune",
        locale,
        model=model,
        gpu=gpu,
        count=gpus,
        method={"qlora": "QLoRA", "lora": "LoRA", "full": "Full"}[method],
        seq=seq,
        batch=batch,
        settings_line=line,
        headline=HEADLINES[loc][verdict],
        total=mem.total,
        usable=usable,
        mem=terms,
        max_seq=ft.max_seq(model, settings, usable, step=256),
        max_batch=ft.max_batch(model, settings, usable),
        advice=advice_lines,
        color=COLORS[verdict],
    )
    return Reply(embeds=[embed])


WHATGPU_ROWS = 15
WHATGPU_PER_COUNT = 5


def rows_per_count(setups: list[Any], limit: int) -> list[Any]:
    """The best few setups of each GPU count, in the list's own order, so a long list of single cards
    does not hide that two or four smaller ones would also do."""
    seen: dict[int, int] = {}
    out = []
    for s in setups:
        if seen.get(s.count, 0) < WHATGPU_PER_COUNT:
            seen[s.count] = seen.get(s.count, 0) + 1
            out.append(s)
        if len(out) >= limit:
            break
    return out


def whatgpu_reply(svc: Service, model_text: str, ctx: int, quant: str | None, min_tps: float | None,
                  budget: float | None, engine_text: str, locale: str, theme: charts.Theme = "dark") -> Reply:
    from estimator.whatgpu import what_gpu

    model, tagged = svc.model(model_text)
    engine = svc.engine(engine_text)
    formats = svc.formats(engine, quant) if quant or tagged is None else [tagged]
    if not quant and tagged is None:
        formats = [svc.quant("int4", engine)]
    setups = what_gpu(model, formats, svc.catalog.gpus, ctx=ctx, engine=engine, min_tps=min_tps, budget_usd=budget)
    shown = rows_per_count(setups, WHATGPU_ROWS)
    rows = [{
        "setup": gpu_label(s.gpu, s.count), "quant": s.quant.name, "tps": f"{s.decode_tps:.0f}",
        "ttft": f"{s.ttft_s * 1000:.0f}ms" if s.ttft_s < 1 else f"{s.ttft_s:.1f}s",
        "free": f"{s.headroom_bytes / GIB:.1f}",
    } for s in shown]
    embed = render_embed("whatgpu", locale, model=model, ctx=ctx, engine=engine,
                         formats=", ".join(f.name for f in formats), min_tps=min_tps, budget=budget,
                         total=len(setups), rows=rows, image="whatgpu.png")
    bars = [(f"{gpu_label(s.gpu, s.count)} · {s.quant.name}", s.decode_tps, s.headroom_bytes / GIB) for s in shown[:10]]
    png = charts.setups_chart(bars, title=f"{model.name} · {format_tokens(ctx)}", locale=locale, theme=theme)
    return Reply(embeds=[embed], files=[ReplyFile(filename="whatgpu.png", data=png)])
