"""Estimator results → Replies (embed JSON from templates + chart PNGs). No Discord objects here, so the
CLI, the sandbox and the daily job render exactly what the bot sends."""

from __future__ import annotations

import difflib
import math
import re
from typing import Any

from bot.render import charts
from bot.render.embeds import COLORS, render_embed
from bot.render.memory_figures import peak_figures
from bot.render.notes import context_read_note, fit_notes
from bot.render.reply import Reply, ReplyFile
from bot.render.table import (
    CODE_BLOCK_MAX,
    Column,
    display_width,
    render_table,
    setup_label,
    short_format_name,
    short_gpu_name,
    short_model_name,
)
from bot.render.text import FormatNames, format_label, format_tokens, params_b_text, t, tps_text
from bot.requests import (
    CompareRequest,
    FinetuneRequest,
    FitRequest,
    GpuRequest,
    GpusRequest,
    ModelsRequest,
    RankRequest,
    WhatGpuRequest,
)
from bot.service import GpuChoice, Service
from catalog.schema import GPU, QuantFormat
from estimator.advice import Recommendation, Tip, class_curves, fit_answer, gpu_card, smaller_kv
from estimator.constants import LINUX_GTT_OS_RESERVE_BYTES
from estimator.curve import VramCurves
from estimator.engines import APPLE_ONLY_ENGINES
from estimator.offload import OffloadPlan
from estimator.query import Query
from estimator.rank import RankRow
from estimator.speed import Speed
from estimator.units import GIB, gib_text

PAGE_SIZE = 10
VERDICT_NAMES = ("fits", "tight", "does_not_fit")


def verdict_words(locale: str) -> dict[str, str]:
    return {v: t(locale, f"verdict.{v}") for v in VERDICT_NAMES}


def advice(changes: tuple[Tip, ...], q: Query, locale: str) -> list[str]:
    """The estimator's changes that would make it fit, worded."""
    lines = []
    for tip in changes:
        if tip.kind == "smaller":
            lines.append(t(locale, "advice.smaller", fmt=FormatNames((tip.quant.name,))))
        elif tip.kind == "kv":
            lines.append(t(locale, "advice.kv", kv=tip.kv))
        elif tip.kind == "ctx":
            lines.append(t(locale, "advice.ctx", ctx=format_tokens(tip.ctx or 0), fmt=FormatNames((tip.quant.name,))))
        elif tip.kind == "gpus":
            lines.append(t(locale, "advice.gpus", count=tip.gpus, gpu=q.gpu.name))
        else:
            # "At least": rounded up, or a card of the rounded size would be short of it.
            lines.append(t(locale, "advice.need", gib=f"{math.ceil((tip.need_bytes or 0) / GIB):,}",
                           fmt=FormatNames((tip.quant.name,))))
    return lines


def choice_note(choice: GpuChoice, locale: str) -> str | None:
    """What a chip family typed without its memory size was answered for."""
    values = choice.note_values(t(locale, "list_sep"))
    if values is None:
        return None
    return t(locale, "family.fitted" if choice.fitted else "family.smallest", **values)


def unified_share_note(gpu: GPU, locale: str) -> str | None:
    """On a unified-memory device, what sets the GPU's share of the memory it shares with the CPU (macOS's limit,
    Linux's CUDA total, AMD's GTT limit): the reason usable memory is less than the memory installed."""
    if gpu.gpu_memory_limit is None:
        return None
    return t(locale, f"unified.{gpu.gpu_memory_limit}", reserve=f"{LINUX_GTT_OS_RESERVE_BYTES / GIB:g}")


ROPE_NAMES = {"yarn": "YaRN", "linear": "linear", "dynamic": "dynamic NTK", "longrope": "LongRoPE", "llama3": "Llama 3"}


def context_note(q: Query, locale: str) -> str | None:
    """When the asked context needs the model's documented RoPE scaling, say so and how to turn it on."""
    fit_ = q.model.context_fit(q.ctx)
    if fit_.status != "scaled" or fit_.extension is None:
        return None
    ext = fit_.extension
    flags = q.model.scaling_flags("llama.cpp") if q.engine == "llama.cpp" else ""
    return t(locale, "ctx.scaled", ctx=format_tokens(q.ctx), model=q.model.name,
             native=format_tokens(fit_.native_context),
             method=ROPE_NAMES.get(ext.method, ext.method), factor=f"{ext.factor:g}",
             limit=format_tokens(ext.extended_context),
             flags=t(locale, "ctx.scaled_flags", flags=flags) if flags else "")


def offload_text(plan: OffloadPlan | None, locale: str) -> str | None:
    """The split in words. When every repeating layer fits, what stays in RAM is the embedding and output
    weights (llama.cpp's `-ngl` counts repeating layers), which is what has to be said, not "N of N layers"."""
    if plan is None:
        return None
    if plan.cpu_moe_layers is not None:
        return t(locale, "offload.experts", cpu=plan.cpu_moe_layers, moe=plan.moe_layers, flag=plan.n_cpu_moe,
                 ram=gib_text(plan.ram_bytes), tps=tps_text(plan.decode_tps))
    key = "offload.all_layers" if plan.gpu_layers >= plan.total_layers else "offload"
    return t(locale, key, on=plan.gpu_layers, total=plan.total_layers, cpu=plan.total_layers - plan.gpu_layers,
             ram=gib_text(plan.ram_bytes), tps=tps_text(plan.decode_tps))


def fit_reply(svc: Service, req: FitRequest, *, locale: str, theme: charts.Theme = "dark") -> Reply:
    q, formats = svc.base_query(req)
    answer = fit_answer(q, formats, svc.catalog)
    result, verdict = answer.result, answer.verdict
    usable = result.options[0].memory.usable_bytes
    offload = offload_text(answer.offload, locale)
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
        usable_note=unified_share_note(q.gpu, locale),
        verdicts=verdict_words(locale),
        headline=t(locale, f"headline.{verdict}"),
        color=COLORS[verdict],
        advice=advice(answer.changes, q, locale),
        # It runs as asked: the tips are for headroom, not a fit (a smaller context than "Max context" reads oddly
        # under "What to change").
        tight=verdict == "tight",
        offload=offload,
        # The format the offload plan is for: its field quotes the split's speed, not an all-in-VRAM one.
        offload_for=answer.offload_quant.id if answer.offload_quant else None,
        offload_tps=answer.offload.decode_tps if answer.offload else None,
        notes=[n for n in (context_note(q, locale), *fit_notes(svc, req, q, locale)) if n],
        image="vram.png",
    )
    setup = gpu_label(q.gpu, q.gpus)
    png = charts.vram_chart(answer.curves, title=f"{q.model.name} · {setup}", gpu_label=setup, locale=locale,
                            theme=theme)
    return Reply(embeds=[embed], files=[ReplyFile(filename="vram.png", data=png)])


DAILY_NAME_WIDTH = 24  # the daily summary's model column


def rank_rows_view(rows: list[RankRow], start: int) -> list[dict[str, Any]]:
    """Rows for the daily summary's short list: the best format of each model."""
    out = []
    for i, r in enumerate(rows):
        params = f"{params_b_text(r.model.params_b)}B"
        if r.model.active_params_b < r.model.params_b:
            params += f"/{params_b_text(r.model.active_params_b)}A"
        out.append(
            {
                "rank": start + i + 1,
                "name": short_model_name(r.model, DAILY_NAME_WIDTH),
                "params": params,
                "quant": r.best.quant.name,
                "tps": f"{r.best.speed.decode_tps:.0f}",
                "ttft": _ttft_cell(r.best.speed.ttft_s),
                "gib": gib_text(r.best.memory.total_bytes),
            }
        )
    return out


RANK_NAME_WIDTH = 22
RANK_CELL_WIDTH = 9
RANK_CHART_MODELS = 5


def range_note(speeds: list[Speed], locale: str) -> str:
    """A table has no room for each cell's band: it states the widest on the page instead, decode tok/s below
    and above the figure, so no cell claims more than its own band holds."""
    bands = [(s.decode_tps_low / s.decode_tps, s.decode_tps_high / s.decode_tps) for s in speeds if s.decode_tps > 0]
    if not bands:
        return ""
    below = max(100 * (1 - lo) for lo, _ in bands)
    above = max(100 * (hi - 1) for _, hi in bands)
    return t(locale, "table.range", below=f"{below:.0f}", above=f"{above:.0f}")


def _tps_cell(tps: float) -> str:
    return f"{tps:.0f}" if tps >= 10 else f"{tps:.1f}"


def _ttft_cell(seconds: float) -> str:
    # Under 0.1 s in ms: the 9-character cell ('1000 30ms') has no room for '0.03s' beside a four-digit tok/s.
    if seconds < 0.1:
        return f"{seconds * 1000:.0f}ms"
    return f"{seconds:.1f}s" if seconds < 10 else f"{seconds:.0f}s"


def rank_table(rows: list[RankRow], formats: list[QuantFormat], start: int, locale: str, ctx: int) -> list[str]:
    """The calculator's matrix: per model one column per format with tok/s and TTFT where it fits
    ('!' when tight, 'no' when not), ranked models numbered, the unranked tail under its own line."""
    columns = [Column(t(locale, "col.rank"), 3, ">"), Column(t(locale, "col.model"), RANK_NAME_WIDTH)]
    # A starred rank ('3*') may need one more column than the numbers do; the name column gives it back.
    columns += [Column(f.level.upper() if len(formats) > 1 else f.name[:RANK_CELL_WIDTH], RANK_CELL_WIDTH, ">")
                for f in formats]
    body: list[list[str]] = []
    marks: dict[int, str] = {}
    for i, r in enumerate(rows):
        if not r.ranked and (i == 0 or rows[i - 1].ranked):
            marks[len(body)] = t(locale, "rank.unranked")
        by_id = {f.quant.id: f for f in r.fitting}
        cells = []
        for fmt in formats:
            got = by_id.get(fmt.id)
            if got is None:
                cells.append(t(locale, "cell.no"))
                continue
            tight = "!" if got.memory.verdict == "tight" else ""
            cells.append(f"{_tps_cell(got.speed.decode_tps)} {_ttft_cell(got.speed.ttft_s)}{tight}")
        number = str(start + i + 1) if r.ranked else "-"
        if r.model.context_as_meant(ctx) > r.model.max_context:
            number += "*"  # this context needs the model's documented RoPE scaling (a "1M" window is its 1M)
        body.append([number, short_model_name(r.model, RANK_NAME_WIDTH), *cells])
    lines = render_table(columns, body)
    out = [lines[0]]
    for i, line in enumerate(lines[1:]):
        if i in marks:
            out.append(marks[i])
        out.append(line)
    return out


def rank_chart_curves(svc: Service, req: RankRequest, rows: list[RankRow]) -> VramCurves | None:
    """VRAM against context for the page's top models, each in the format the table's verdict rests on
    (the asked one, else its best)."""
    from estimator.curve import vram_curves

    picked = rows[:RANK_CHART_MODELS]
    if not picked:
        return None
    choice = svc.gpu_choice(req.gpu, req.gpus)
    engine = req.engine
    curves = []
    base: VramCurves | None = None
    for r in picked:
        fmt = r.best.quant
        q = Query(gpu=choice.gpu, gpus=choice.count, model=r.model, quant=fmt, engine=engine,
                  ctx=req.ctx, kv=req.kv)
        base = vram_curves(q, [fmt])
        label = f"{short_model_name(r.model, RANK_NAME_WIDTH)} {fmt.name}"
        curves.append(base.curves[0].model_copy(update={"label": label}))
    assert base is not None
    return base.model_copy(update={"curves": tuple(curves)})


def rank_reply(
    svc: Service, req: RankRequest, page: int = 1, *, locale: str, theme: charts.Theme = "dark"
) -> Reply:
    gpu, rows = svc.rank(req)
    count = svc.gpu_choice(req.gpu, req.gpus).count
    pages = max(1, math.ceil(len(rows) / PAGE_SIZE))
    page = min(max(1, page), pages)
    start = (page - 1) * PAGE_SIZE
    chunk = rows[start : start + PAGE_SIZE]
    engine, ctx = req.engine, req.ctx
    formats = svc.formats(engine, req.quant)
    sort = req.sort
    setup = gpu_label(gpu, count)
    shown_formats = {f.id for f in formats}
    embed = render_embed(
        "rank",
        locale,
        setup=setup,
        ctx=ctx,
        sort=t(locale, f"sort.{sort}"),
        engine=engine,
        kv=req.kv,
        page=t(locale, "page", page=page, pages=pages),
        total=len(rows),
        ranked=sum(1 for r in rows if r.ranked),
        table=rank_table(chunk, formats, start, locale, ctx) if chunk else [],
        kv_hint=smaller_kv(engine, req.kv),
        legend=t(locale, "rank.legend") + (t(locale, "rank.scaled") if any(
            r.model.context_as_meant(ctx) > r.model.max_context for r in chunk) else ""),
        ranges=range_note([f.speed for r in chunk for f in r.fitting if f.quant.id in shown_formats], locale),
        formats=" · ".join(f"{f.level.upper()} = {format_label(f.name, locale)}" for f in formats)
        if len(formats) > 1 else "",
        order=t(locale, f"rank.order.{sort}", signal=t(locale, "quality.signal")),
        color=COLORS["info"],
        image="vram.png",
    )
    curves = rank_chart_curves(svc, req, chunk)
    title = f"{setup} · {format_tokens(ctx)}"
    if curves is None:
        png = charts.rank_chart([], title=title, locale=locale, theme=theme)
    else:
        png = charts.vram_chart(curves, title=title, gpu_label=setup, locale=locale, theme=theme)
    return Reply(embeds=[embed], files=[ReplyFile(filename="vram.png", data=png)], meta={"pages": pages})


def error_reply(
    title: str, message: str, locale: str, suggestions: list[str] | None = None, error_id: str | None = None
) -> Reply:
    embed = render_embed(
        "error", locale, title=title, message=message, suggestions=suggestions or [], error_id=error_id
    )
    return Reply(embeds=[embed], ephemeral=True)


def gpu_label(gpu: GPU, count: int) -> str:
    """'NVIDIA T4' for one card, '2× NVIDIA GeForce RTX 3090' for two: the one rule for setup names."""
    return setup_label(gpu, count)




def recommendation_text(rec: Recommendation, locale: str) -> str:
    hp, lc = rec.comfortable_high_precision.model, rec.long_context_q4.model
    lines = []
    if hp:
        lines.append(t(locale, "rec.comfortable", model=hp.name, ctx=format_tokens(rec.ctx)))
    if lc:
        lines.append(t(locale, "rec.long", model=lc.name, ctx=format_tokens(rec.long_ctx)))
    speeds = t(locale, "list_sep").join(
        t(locale, "rec.speed", model=r.model.name, tps=tps_text(r.decode_tps),
          low=tps_text(r.decode_tps_low, r.decode_tps), high=tps_text(r.decode_tps_high, r.decode_tps))
        + ("" if r.fits else t(locale, "rec.if_fitted"))
        for r in rec.reference_speeds
    )
    if speeds:
        lines.append(t(locale, "rec.bandwidth", speeds=speeds))
    return "\n".join(lines) or t(locale, "rec.nothing")


def gpu_reply(svc: Service, req: GpuRequest, *, locale: str, theme: charts.Theme = "dark") -> Reply:
    choice, ctx = svc.gpu_choice(req.gpu, req.gpus), req.ctx
    gpu, gpus = choice.gpu, choice.count
    card = gpu_card(svc.catalog, gpu, ctx=ctx, gpus=gpus)
    capability = [
        {"label": t(locale, f"level.{lv.largest.level}"), "quant": lv.largest.quant, "model": lv.largest.model,
         "klass": lv.reference_class[0] if lv.reference_class else None,
         "reference": lv.reference_class[1] if lv.reference_class else None}
        for lv in card.levels
    ]
    ft = [{"method": t(locale, f"method.{m}"), "model": card.finetune[m]} for m in ("qlora", "lora", "full")]
    embed = render_embed(
        "gpu",
        locale,
        gpu=gpu,
        gpus=gpus,
        setup=gpu_label(gpu, gpus),
        usable=card.usable_bytes,
        usable_note=unified_share_note(gpu, locale),
        ctx=ctx,
        capability=capability,
        finetune=ft,
        precision=card.precision,
        matrix_units=card.matrix_units,
        recommendation=recommendation_text(card.recommendation, locale),
        image="vram.png",
    )
    q4 = svc.quant("int4", "llama.cpp")
    curves = []
    base: VramCurves | None = None
    for cc in class_curves(svc.catalog, gpu, ctx=ctx, gpus=gpus):
        base = cc.curves
        line = t(charts.text_locale(locale), "gpu.class_line", klass=cc.label, model=short_model_name(cc.model, 16))
        curves.append(base.curves[0].model_copy(update={"label": line}))
    title = t(charts.text_locale(locale), "gpu.chart_title", gpu=gpu_label(gpu, gpus), quant=q4.name)
    if base is None:
        png = charts.rank_chart([], title=title, locale=locale, theme=theme)
    else:
        png = charts.vram_chart(base.model_copy(update={"curves": tuple(curves)}), title=title,
                                gpu_label=gpu_label(gpu, gpus), locale=locale, theme=theme)
    return Reply(embeds=[embed], files=[ReplyFile(filename="vram.png", data=png)])


def compare_why(asked: bool, options: list[Any]) -> str:
    """Why both sides are in this format: asked for, the best that fits both, or (nothing fitting both) the
    smallest, which must not be called one that fits."""
    if asked:
        return "compare.asked"
    return "compare.shared" if all(o.fits for o in options) else "compare.none_fits"


def compare_reply(svc: Service, req: CompareRequest, *, locale: str, theme: charts.Theme = "dark") -> Reply:
    """Two setups in the same format (the asked one, else the best that fits both), on one chart."""
    from estimator.curve import vram_curves
    from estimator.verdict import fit, shared_format

    reqs = req.sides(svc)
    queries = [svc.base_query(req) for req in reqs]
    results = [fit(q, formats) for q, formats in queries]
    fmt = shared_format(results)
    asked = bool(reqs[0].quant)
    sides: list[dict[str, Any]] = []
    curves = []
    limits: list[charts.Limit] = []
    limit_of: dict[tuple[str, int, str], int] = {}
    for (q, _), result in zip(queries, results, strict=True):
        option = next(o for o in result.options if o.quant.id == fmt.id)
        setup = gpu_label(q.gpu, q.gpus)
        sides.append({"label": f"{q.model.name} · {setup}", "option": option})
        key = (q.gpu.id, q.gpus, q.engine)
        curve = vram_curves(q, [fmt])
        if key not in limit_of:
            limit_of[key] = len(limits)
            limits.append(charts.Limit(label=setup, usable_bytes=curve.usable_bytes,
                                       per_gpu_bytes=curve.usable_per_gpu_bytes if q.gpus > 1 else None))
        c = curve.curves[0]
        short_setup = setup_label(q.gpu, q.gpus, short=True, width=16, among=svc.catalog.gpus)
        label = f"{short_model_name(q.model, 18)} · {short_setup}"
        curves.append(charts.Series(label=label, x=c.ctx, y_bytes=c.total_bytes, max_x=c.max_ctx,
                                    limit=limit_of[key]))
    first = queries[0][0]
    title = " vs ".join(s["label"] for s in sides)
    embed = render_embed(
        "compare",
        locale,
        title=title,
        sides=sides,
        engine=first.engine,
        ctx=first.ctx,
        # Named after the side whose window set the context (the shorter one, where a default yielded).
        ctx_note=context_read_note(min((q.model for q, _ in queries),
                                       key=lambda m: svc.context_as_asked(m, req.ctx, yields=True)),
                                   first.ctx, req.ctx, req.ctx_yields, locale) or "",
        kv=first.kv,
        fmt=fmt,
        why=t(locale, compare_why(asked, [s["option"] for s in sides]), fmt=FormatNames((fmt.name,))),
        verdicts=verdict_words(locale),
        image="vram.png",
    )
    chart_title = f"{fmt.name} · {format_tokens(first.ctx)}"
    png = charts.memory_chart(curves, limits, title=chart_title, locale=locale, theme=theme)
    return Reply(embeds=[embed], files=[ReplyFile(filename="vram.png", data=png)])


def list_reply(title: str, intro: str, lines: list[str], footer: str, locale: str) -> Reply:
    return Reply(embeds=[render_embed("list", locale, title=title, intro=intro, lines=lines, footer=footer)])


def help_reply(locale: str) -> Reply:
    return Reply(embeds=[render_embed("help", locale, quality=t(locale, "quality.signal"))], ephemeral=True)


def finetune_chart(curves: list[tuple[str, tuple[int, ...], tuple[float, ...], int | None]], usable_bytes: float,
                   *, title: str, setup: str, locale: str, theme: charts.Theme = "dark") -> bytes:
    """Peak memory against sequence length, one line per `(label, seqs, total_bytes, max_seq)`, with the
    GPU's usable memory as the OOM line."""
    series = [charts.Series(label=label, x=seqs, y_bytes=totals, max_x=max_seq or 0)
              for label, seqs, totals, max_seq in curves]
    return charts.memory_chart(series, [charts.Limit(label=setup, usable_bytes=usable_bytes)], title=title,
                               x_axis=t(charts.text_locale(locale), "chart.seq_axis"), locale=locale, theme=theme)


def finetune_reply(svc: Service, req: FinetuneRequest, *, locale: str, theme: charts.Theme = "dark") -> Reply:
    from estimator import finetune as ft
    from estimator.memory import usable_vram_bytes

    choice = svc.gpu_choice(req.gpu, req.gpus)
    gpu, gpus = choice.gpu, choice.count
    model, _ = svc.model(req.model)
    method, seq, batch = req.method, req.seq, req.batch
    settings = req.settings(gpu, gpus)
    usable = usable_vram_bytes(gpu)
    plan = ft.finetune_plan(model, settings, usable, more_gpus=not gpu.unified_memory)
    mem = plan.memory
    advice = [t(locale, f"ft.change.{c.key}", value=_change_value(c), gib=gib_text(c.total))
              + (t(locale, "ft.change.host", gib=gib_text(c.host)) if c.host and c.key in ft.OFFLOAD_CHANGES else "")
              + (t(locale, "ft.change.paged", gib=gib_text(c.paged)) if c.paged else "") for c in plan.changes]
    host = ft.host_memory_bytes(mem, settings)
    host_large = host > ft.LARGE_HOST_MEMORY_BYTES
    # The parts the peak holds, adding up to it as printed; the terms other moments hold are named apart.
    peak = peak_figures(mem)
    peak_parts = [(t(locale, f"ft.term.{term}"), figure) for term, figure in peak.held]
    apart = t(locale, "list_sep").join(t(locale, "ft.term_figure", term=t(locale, f"ft.term.{term}"), gib=figure)
                                       for term, figure in peak.apart)
    parts = [settings.framework or t(locale, "ft.framework.default"), settings.regime_used, settings.optimizer_used,
             t(locale, f"ft.ckpt.{settings.checkpointing_used}"), t(locale, f"ft.loss.{settings.loss}")]
    if settings.activation_offload:
        parts.append(t(locale, "ft.offload"))
    if settings.empty_cache_steps:
        parts.append(t(locale, "ft.empty_cache", steps=settings.empty_cache_steps))
    if settings.gpus > 1:
        parts.append(t(locale, f"ft.sharding.{settings.sharding}"))
    embed = render_embed(
        "finetune",
        locale,
        model=model,
        gpu=gpu,
        count=gpus,
        method=t(locale, f"method.{method}"),
        seq=seq,
        batch=batch,
        settings_line=" · ".join(parts),
        # The GPUs may hold it, but not a host with that much CPU memory: it does not run as asked.
        headline=t(locale, "ft.headline_host") if host_large else t(locale, f"headline.{plan.verdict}"),
        total=mem.total,
        usable=usable,
        peak_parts=peak_parts,
        peak_phase=t(locale, f"ft.phase.{mem.peak_phase}"),
        apart=t(locale, "ft.apart", parts=apart) if apart else "",
        reserved=min(mem.reserved, usable),
        # The cache grows into whatever the card has left; past the card it is a figure for a bigger one.
        reserved_fills_card=mem.reserved > usable >= mem.total,
        offloaded=mem.offloaded,
        host=host,
        host_large=t(locale, "ft.host_large") if host_large else "",
        # "it runs, slower" only where it runs: a run too big even without its paged state just does not fit.
        paged=mem.pageable if mem.total > usable and plan.verdict != "does_not_fit" else 0.0,
        max_seq=plan.max_seq,
        max_batch=plan.max_batch,
        advice=advice,
        tight=plan.verdict == "tight",
        color=COLORS["does_not_fit" if host_large else plan.verdict],
        image="vram.png",
    )
    curves = [(t(locale, f"method.{c.method}"), c.seq, c.total_bytes, c.max_seq) for c in plan.curves]
    setup = gpu_label(gpu, gpus)
    png = finetune_chart(curves, usable, title=f"{model.name} · {setup}", setup=setup, locale=locale, theme=theme)
    return Reply(embeds=[embed], files=[ReplyFile(filename="vram.png", data=png)])


def _change_value(change: Any) -> str:
    return format_tokens(int(change.value)) if change.key in ("seq", "qlora_seq") else str(change.value)


WHATGPU_PAGE = 10
WHATGPU_FORMAT_MAX = 10  # the widest format column; longer names lose whole words


def whatgpu_columns(shown: list[Any], locale: str) -> list[Column]:
    """The setup column takes whatever the phone-wide line leaves: the format column is only as wide as the
    formats on the page, so most pages name each board in full words."""
    fixed = [Column(t(locale, "col.tps"), 5, ">"), Column(t(locale, "col.ttft"), 5, ">"),
             Column(t(locale, "col.free"), 8, ">")]
    header = t(locale, "col.format")
    fmt_width = max([display_width(header), *(display_width(short_format_name(s.quant, WHATGPU_FORMAT_MAX))
                                              for s in shown)])
    setup_width = CODE_BLOCK_MAX - fmt_width - sum(c.width for c in fixed) - len(fixed) - 1
    return [Column(t(locale, "col.setup"), setup_width), Column(header, fmt_width), *fixed]


def whatgpu_table(shown: list[Any], locale: str, gpus: tuple[GPU, ...]) -> list[str]:
    columns = whatgpu_columns(shown, locale)
    setup_width, fmt_width = columns[0].width, columns[1].width
    rows = [[setup_label(s.gpu, s.count, short=True, width=setup_width, among=gpus),
             short_format_name(s.quant, fmt_width), _tps_cell(s.decode_tps), _ttft_cell(s.ttft_s),
             gib_text(s.headroom_bytes)] for s in shown]
    return render_table(columns, rows)


def unpriced_note(unpriced: int, locale: str | None) -> str:
    """How many setups a budget left out for having no known launch price ("" when none)."""
    if not unpriced:
        return ""
    return t(locale, "whatgpu.unpriced_one" if unpriced == 1 else "whatgpu.unpriced", n=unpriced)


def whatgpu_reply(svc: Service, req: WhatGpuRequest, page: int = 1, *, locale: str,
                  theme: charts.Theme = "dark") -> Reply:
    # In the estimator's order (fewest GPUs, then price, power, speed), which the reply says it follows.
    answer = svc.what_gpu(req)
    model, ctx, formats, setups = answer.model, answer.ctx, answer.formats, answer.setups
    min_tps, budget, engine = req.min_tps, req.budget, req.engine
    pages = max(1, math.ceil(len(setups) / WHATGPU_PAGE))
    page = min(max(1, page), pages)
    shown = setups[(page - 1) * WHATGPU_PAGE : page * WHATGPU_PAGE]
    embed = render_embed("whatgpu", locale, model=model, ctx=ctx, engine=engine, macs_only=engine in APPLE_ONLY_ENGINES,
                         kv=req.kv,
                         ctx_note=context_read_note(model, ctx, req.ctx, req.ctx_yields, locale) or "",
                         formats=", ".join(format_label(f.name, locale) for f in formats), min_tps=min_tps,
                         budget=budget, unpriced=unpriced_note(answer.unpriced, locale),
                         total=len(setups), table=whatgpu_table(shown, locale, svc.catalog.gpus) if shown else [],
                         ranges=range_note([s.speed for s in shown], locale),
                         page=t(locale, "page", page=page, pages=pages), image="whatgpu.png" if shown else "")
    if not shown:
        return Reply(embeds=[embed], meta={"pages": pages})  # no bars to draw: no empty chart
    bars = [(f"{setup_label(s.gpu, s.count, short=True, among=svc.catalog.gpus)} · {s.quant.name}", s.decode_tps,
             s.headroom_bytes / GIB) for s in shown]
    png = charts.setups_chart(bars, title=f"{model.name} · {format_tokens(ctx)}", locale=locale, theme=theme)
    return Reply(embeds=[embed], files=[ReplyFile(filename="whatgpu.png", data=png)], meta={"pages": pages})


MODELS_PAGE = 20
GPUS_PAGE = 20


FAMILY_SUGGESTIONS = 8


def family_key(name: str) -> str:
    """A family name as matched: case, spaces, hyphens and underscores aside ('qwen3 vl' is Qwen3-VL)."""
    return re.sub(r"[\s_-]+", "", name).casefold()


def family_matches(name: str, asked: str) -> bool:
    """A family answers to its whole name (qwen3 is Qwen3, not Qwen3.5 or Qwen3-VL), or to a maker's word that
    begins it: `qwen` is every Qwen family, `llama` LLaMA and Llama 2 to 4 (a word alone names no one family)."""
    key = family_key(asked)
    if not key or family_key(name) == key:
        return True
    word, low = asked.strip().casefold(), name.casefold()
    return word.isalpha() and low.startswith(word) and len(low) > len(word) and not low[len(word)].isalpha()


def related_families(families: set[str], asked: str) -> list[str]:
    """Families a name may have meant besides those it matches: those it begins or is part of (qwen3 →
    Qwen3-2507, Qwen3-VL), then spellings close to it (qwen3vi → Qwen3-VL)."""
    key = family_key(asked)
    others = sorted(f for f in families if not family_matches(f, asked))
    starts = [f for f in others if family_key(f).startswith(key)]
    # Part of it from a word's start ("qwen" in "DeepSeek-R1-Distill (Qwen2.5)"), not inside one ("phi" in Dolphin).
    within = [f for f in others if f not in starts
              and any(family_key(w).startswith(key) for w in re.split(r"[\s(),/-]+", f))]
    keys = {family_key(f): f for f in others}
    close = [keys[k] for k in difflib.get_close_matches(key, list(keys), n=FAMILY_SUGGESTIONS, cutoff=0.75)]
    return list(dict.fromkeys(starts + within + close))


def family_note(families: set[str], asked: str, label: str, matched: bool, locale: str) -> str:
    """What to say about families beside the one asked: the near ones, as a did-you-mean when none matched."""
    near = related_families(families, asked)
    if not near:
        return t(locale, "list.models.no_family_near", family=label) if not matched else ""
    names = t(locale, "list_sep").join(f"`{f}`" for f in near[:FAMILY_SUGGESTIONS])
    if len(near) > FAMILY_SUGGESTIONS:
        names += t(locale, "list_sep") + "…"
    return t(locale, "list.models.related" if matched else "list.models.no_family", family=label, names=names)


def models_reply(svc: Service, req: ModelsRequest, page: int = 1, *, locale: str,
                 family_label: str | None = None) -> Reply:
    """`family_label` is the family as shown back (bounded and escaped by the caller). A family matches by
    its whole name or a maker's word (`family_matches`): qwen3 is Qwen3, not Qwen3.5; the near ones are named
    instead."""
    family, max_params = req.family, req.max_params
    picked = sorted((m for m in svc.catalog.models
                     if family_matches(m.family, family or "")
                     and (max_params is None or m.params_b <= max_params)), key=lambda m: (m.family, m.params_b))
    if not picked:
        return no_models_reply(svc, req, locale, family_label or family or "")
    pages = max(1, math.ceil(len(picked) / MODELS_PAGE))
    page = min(max(1, page), pages)
    shown = picked[(page - 1) * MODELS_PAGE : page * MODELS_PAGE]
    rows = [[short_model_name(m, 26),
             f"{params_b_text(m.params_b)}B"
             + (f" ({params_b_text(m.active_params_b)}A)" if m.active_params_b < m.params_b else ""),
             format_tokens(m.max_context)] for m in shown]
    # An exact window (1,010,000) is wider than 128k: the column takes the page's widest, so the table stays aligned.
    columns = [Column(t(locale, "col.model"), 26), Column(t(locale, "col.params"), 13, ">"),
               Column(t(locale, "col.ctx"), max([6, *(len(r[2]) for r in rows)]), ">")]
    intro = t(locale, "list.models.intro_one" if len(picked) == 1 else "list.models.intro", n=len(picked))
    intro += f" · {family_label}" if family_label else ""
    if family:
        families = {m.family for m in svc.catalog.models}
        matched = any(family_matches(f, family) for f in families)
        note = family_note(families, family, family_label or family, matched, locale)
        intro += f"\n{note}" if note else ""
    footer = t(locale, "list.footer", page=t(locale, "page", page=page, pages=pages))
    reply = list_reply(t(locale, "list.models.title"), intro, render_table(columns, rows) if rows else ["—"],
                       footer, locale)
    return reply.model_copy(update={"meta": {"pages": pages}})


def no_models_reply(svc: Service, req: ModelsRequest, locale: str, label: str) -> Reply:
    """A filter nothing matches is the asker's question gone wrong, not a listing for the channel: a private
    answer saying which filter emptied it, with the families meant (a family no model has) or the smallest model
    there is (a size below every model's)."""
    asked = req.family or ""
    families = {m.family for m in svc.catalog.models}
    if asked and not any(family_matches(f, asked) for f in families):
        near = related_families(families, req.family or "")[:FAMILY_SUGGESTIONS]
        key = "list.models.none_family" if near else "list.models.none_family_near"
        return error_reply(t(locale, "list.models.none.title"), t(locale, key, family=label), locale,
                           [f"`{f}`" for f in near])
    kin = [m for m in svc.catalog.models if family_matches(m.family, asked)]
    smallest = min(kin, key=lambda m: m.params_b)
    key = "list.models.none_family_size" if family_key(asked) else "list.models.none_size"
    return error_reply(t(locale, "list.models.none.title"),
                       t(locale, key, family=label, most=f"{req.max_params:g}", model=smallest.name,
                         params=params_b_text(smallest.params_b)), locale)


def gpus_reply(svc: Service, req: GpusRequest, page: int = 1, *, locale: str) -> Reply:
    vendor = req.vendor
    picked = sorted((g for g in svc.catalog.gpus if not vendor or g.vendor == vendor),
                    key=lambda g: (-g.vram_gb, g.name))
    pages = max(1, math.ceil(len(picked) / GPUS_PAGE))
    page = min(max(1, page), pages)
    shown = picked[(page - 1) * GPUS_PAGE : page * GPUS_PAGE]
    columns = [Column(t(locale, "col.gpu"), 28), Column(t(locale, "col.vram"), 7, ">"),
               Column(t(locale, "col.bandwidth"), 6, ">")]
    rows = [[short_gpu_name(g, 28, svc.catalog.gpus), f"{g.vram_gb:g} GB", f"{g.bandwidth_gbs:.0f}"] for g in shown]
    intro = t(locale, "list.gpus.intro", n=len(picked)) + (f" · {vendor}" if vendor else "")
    footer = t(locale, "list.footer", page=t(locale, "page", page=page, pages=pages))
    reply = list_reply(t(locale, "list.gpus.title"), intro, render_table(columns, rows) if rows else ["—"],
                       footer, locale)
    return reply.model_copy(update={"meta": {"pages": pages}})
