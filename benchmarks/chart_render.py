"""Render time and size of each chart: median of N renders after one warm-up.

    python benchmarks/chart_render.py [--runs 20] [--out artifacts/charts]

With --out, the last render of every case is also written there as PNG for a look.
"""

from __future__ import annotations

import argparse
import statistics
import sys
import time
from collections.abc import Callable
from pathlib import Path

sys.path.insert(0, str(Path(__file__).resolve().parents[1]))

from bot.render.charts import png_size, rank_chart, text_locale, vram_chart
from catalog import load_catalog
from estimator.advice import class_curves
from estimator.curve import vram_curves
from estimator.query import Query
from estimator.rank import rank
from estimator.verdict import default_formats


def cases() -> dict[str, Callable[[], bytes]]:
    c = load_catalog()
    t4, formats = c.gpu("nvidia-t4"), default_formats(c, "llama.cpp")
    base = Query(gpu=t4, model=c.model("qwen3-8b"), quant=formats[0], ctx=8192)
    one = vram_curves(base, formats)
    two = vram_curves(base.model_copy(update={"gpus": 2}), formats)
    many_formats = [c.quant(q) for q in ("q2_k", "q3_k_m", "q4_k_m", "q5_k_m", "q6_k", "q8_0", "f16")]
    long_ctx = vram_curves(Query(gpu=c.gpu("nvidia-rtx-4090"), model=c.model("glm-4-9b-chat-1m"),
                                 quant=many_formats[0], ctx=8192), many_formats)
    rows = rank(c.models, formats, t4, ctx=8192)
    # The /gpu card: one 4-bit curve per model class (8B, 14B, 32B, 70B) on one chart.
    classes = class_curves(c, t4, ctx=8192)
    card = classes[0].curves.model_copy(update={"curves": tuple(
        cc.curves.curves[0].model_copy(update={"label": f"{cc.label} · {cc.model.name}"}) for cc in classes)})
    return {
        "vram 1 GPU dark en": lambda: vram_chart(one, title="Qwen3-8B on NVIDIA T4", gpu_label="T4"),
        "vram 2 GPU light zh": lambda: vram_chart(two, title="Qwen3-8B · 2× T4", gpu_label="2× T4", locale="zh-CN",
                                                  theme="light"),
        "vram 7 formats 1M ctx": lambda: vram_chart(long_ctx, title="GLM-4-9B-Chat-1M on RTX 4090",
                                                    gpu_label="RTX 4090"),
        "rank top 10 dark en": lambda: rank_chart(rows, title="Best on NVIDIA T4 @ 8k"),
        "rank top 10 light zh": lambda: rank_chart(rows, title="NVIDIA T4 @ 8k", locale="zh-CN", theme="light"),
        "rank empty": lambda: rank_chart([], title="Best on NVIDIA T4 @ 1M"),
        "gpu card dark en": lambda: vram_chart(card, title="NVIDIA T4 · Q4_K_M", gpu_label="NVIDIA T4"),
    }


def main() -> None:
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("--runs", type=int, default=20)
    parser.add_argument("--out", type=Path, default=None, help="also write each chart here")
    args = parser.parse_args()
    if args.out:
        args.out.mkdir(parents=True, exist_ok=True)
    print(f"zh-CN labels: {'Chinese' if text_locale('zh-CN') == 'zh-CN' else 'English (no CJK font found)'}")
    print(f"{'chart':<24} {'median ms':>10} {'min ms':>8} {'max ms':>8} {'kB':>6}  size")
    for name, render in cases().items():
        png = render()  # warm-up: fonts, caches
        times = []
        for _ in range(args.runs):
            start = time.perf_counter()
            png = render()
            times.append((time.perf_counter() - start) * 1000)
        w, h = png_size(png)
        print(f"{name:<24} {statistics.median(times):>10.1f} {min(times):>8.1f} {max(times):>8.1f} "
              f"{len(png) / 1024:>6.0f}  {w}×{h}")
        if args.out:
            (args.out / (name.replace(" ", "_") + ".png")).write_bytes(png)


if __name__ == "__main__":
    main()
