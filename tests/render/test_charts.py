"""Charts render to small, decodable 1200×675 PNGs in every theme, locale and edge case."""

from __future__ import annotations

import io
from concurrent.futures import ThreadPoolExecutor

import numpy as np
import pytest
from matplotlib.figure import Figure
from matplotlib.image import imread
from matplotlib.transforms import Bbox

from bot.render import charts
from bot.render.charts import ctx_label, png_size, rank_chart, vram_chart
from catalog import load_catalog
from estimator.curve import VramCurves, vram_curves
from estimator.query import Query
from estimator.rank import RankRow, rank
from estimator.verdict import default_formats

GIB = 1024**3
MAX_BYTES = 200 * 1024
THEMES = ("dark", "light")
LOCALES = ("en-US", "zh-CN")


@pytest.fixture(scope="module")
def catalog():
    return load_catalog()


def curves_for(catalog, gpus: int) -> VramCurves:
    formats = default_formats(catalog, "llama.cpp")
    q = Query(gpu=catalog.gpu("nvidia-t4"), gpus=gpus, model=catalog.model("qwen3-8b"), quant=formats[0], ctx=8192)
    return vram_curves(q, formats)


@pytest.fixture(scope="module")
def rows(catalog) -> list[RankRow]:
    return rank(catalog.models, default_formats(catalog, "llama.cpp"), catalog.gpu("nvidia-t4"), ctx=8192)


def assert_good_png(png: bytes) -> None:
    assert png.startswith(b"\x89PNG\r\n\x1a\n")
    assert len(png) < MAX_BYTES
    w, h = png_size(png)
    assert abs(w - 1200) <= 4 and abs(h - 675) <= 4
    pixels = imread(io.BytesIO(png), format="png")
    assert pixels.shape[:2] == (h, w)
    # Not a blank canvas: a chart has many distinct colours.
    assert len({tuple(p) for p in pixels[::15, ::15].reshape(-1, pixels.shape[2]).tolist()}) > 5


@pytest.mark.parametrize("theme", THEMES)
@pytest.mark.parametrize("locale", LOCALES)
@pytest.mark.parametrize("gpus", [1, 2])
def test_vram_chart(catalog, theme, locale, gpus):
    curves = curves_for(catalog, gpus)
    label = "T4" if gpus == 1 else f"{gpus}× T4"
    assert_good_png(vram_chart(curves, title=f"Qwen3-8B on {label}", gpu_label=label, locale=locale, theme=theme))


def test_vram_chart_with_many_formats_and_a_million_tokens(catalog):
    formats = [catalog.quant(q) for q in ("q2_k", "q3_k_m", "q4_k_m", "q5_k_m", "q6_k", "q8_0", "f16")]
    q = Query(gpu=catalog.gpu("nvidia-rtx-4090"), model=catalog.model("glm-4-9b-chat-1m"), quant=formats[0])
    assert_good_png(vram_chart(vram_curves(q, formats), title="GLM-4-9B-Chat-1M", gpu_label="RTX 4090"))


def test_vram_chart_when_nothing_fits(catalog):
    formats = default_formats(catalog, "llama.cpp")
    q = Query(gpu=catalog.gpu("nvidia-t4"), model=catalog.model("llama-3.1-405b"), quant=formats[0])
    curves = vram_curves(q, formats)
    assert all(c.max_ctx == 0 for c in curves.curves)
    assert_good_png(vram_chart(curves, title="Llama 3.1 405B on T4", gpu_label="T4"))


def seventy_b_on_a_4090(catalog) -> VramCurves:
    formats = [catalog.quant(q) for q in ("q4_k_m", "q8_0", "f16")]
    q = Query(gpu=catalog.gpu("nvidia-rtx-4090"), model=catalog.model("llama-3.3-70b"), quant=formats[0])
    return vram_curves(q, formats)


def test_lines_that_start_above_the_chart_are_named_with_what_they_need(monkeypatch, catalog):
    curves = seventy_b_on_a_4090(catalog)
    png = vram_chart(curves, title="Llama 3.3 70B on RTX 4090", gpu_label="RTX 4090")
    assert_good_png(png)
    described = charts.chart_description(png)
    assert described is not None
    # Q4_K_M (about 40 GiB) is drawn near the 24 GiB line; Q8_0 (about 70) and F16 (about 131) would squash it.
    assert described["above"] == ["Q8_0", "F16"]
    figures = []
    original = charts._png
    monkeypatch.setattr(charts, "_png", lambda fig, described=None: figures.append(fig) or original(fig, described))
    vram_chart(curves, title="Llama 3.3 70B on RTX 4090", gpu_label="RTX 4090")
    notes = [t.get_text() for t in figures[0].axes[0].texts if "above the chart" in t.get_text()]
    q8, f16 = (c.total_bytes[0] / GIB for c in curves.curves[1:])
    assert notes == [f"↑ above the chart at 1k: Q8_0 {q8:.1f} GiB · F16 {f16:.0f} GiB "]


def test_a_chart_whose_lines_all_fit_in_view_has_no_above_note(catalog):
    described = charts.chart_description(vram_chart(curves_for(catalog, 1), title="Qwen3-8B on T4", gpu_label="T4"))
    assert described is not None and described["above"] == []


def test_vram_chart_without_formats(catalog):
    empty = curves_for(catalog, 1).model_copy(update={"curves": ()})
    assert_good_png(vram_chart(empty, title="nothing", gpu_label="T4"))


@pytest.mark.parametrize("theme", THEMES)
@pytest.mark.parametrize("locale", LOCALES)
def test_rank_chart(rows, theme, locale):
    assert len(rows) > 10
    assert_good_png(rank_chart(rows, title="Best on NVIDIA T4 @ 8k", locale=locale, theme=theme))


@pytest.mark.parametrize("theme", THEMES)
@pytest.mark.parametrize("locale", LOCALES)
def test_rank_chart_empty_is_a_message_not_an_error(theme, locale):
    assert_good_png(rank_chart([], title="Best on NVIDIA T4 @ 1M", locale=locale, theme=theme))


def test_rank_chart_short_list_and_limit(rows):
    assert_good_png(rank_chart(rows[:1], title="One"))
    assert_good_png(rank_chart(rows, title="Three", limit=3))
    assert_good_png(rank_chart(rows, title="Zero", limit=0))


def test_mathtext_characters_in_names_are_literal():
    odd = [("$x$ 50% _under_ ^hat^", 12.0, 3.0), ("1× NVIDIA T4", 20.5, 1.5)]
    assert_good_png(charts.setups_chart(odd, title="$5 GPU {a}", locale="en-US", theme="light"))


def test_zh_cn_falls_back_to_english_without_a_cjk_font(monkeypatch, catalog):
    monkeypatch.setattr(charts, "cjk_font_family", lambda: None)
    assert charts.text_locale("zh-CN") == "en"
    assert_good_png(vram_chart(curves_for(catalog, 1), title="Qwen3-8B", gpu_label="T4", locale="zh-CN"))


def test_chart_language():
    assert charts.text_locale("en-US") == "en"
    assert charts.text_locale("de") == "en"
    expected = "zh-CN" if charts.cjk_font_family() else "en"
    assert charts.text_locale("zh-CN") == expected
    assert charts.text_locale("zh-TW") == expected


def test_unknown_theme_is_rejected(catalog):
    with pytest.raises(ValueError, match="theme"):
        vram_chart(curves_for(catalog, 1), title="x", gpu_label="T4", theme="sepia")  # type: ignore[arg-type]


def test_renders_are_deterministic_across_threads(catalog, rows):
    curves = curves_for(catalog, 2)
    jobs = [lambda: vram_chart(curves, title="Qwen3-8B", gpu_label="2× T4"),
            lambda: rank_chart(rows, title="T4", locale="zh-CN", theme="light")]
    sequential = [job() for job in jobs]
    with ThreadPoolExecutor(max_workers=4) as pool:
        threaded = list(pool.map(lambda i: jobs[i % 2](), range(8)))
    for i, png in enumerate(threaded):
        assert png == sequential[i % 2]


# On the axis as in every reply while the label stays short (k is 1024 and M is 1024²; 128,000 as a card says it);
# a longer exact count is cut to tenths of its binary unit, rounded down.
@pytest.mark.parametrize(("tokens", "label"), [
    (512, "512"), (1024, "1k"), (1536, "1.5k"), (24576, "24k"), (40960, "40k"), (128000, "128,000"),
    (131072, "128k"), (1048576, "1M"), (1000000, "976k"), (10485760, "10M"), (10115072, "9878k"),
    (10115073, "9.6M"), (50944, "50,944"),
])
def test_ctx_label(tokens, label):
    assert ctx_label(tokens) == label


def test_png_size_reads_ihdr_and_rejects_other_bytes():
    assert png_size(rank_chart([], title="x")) == (1200, 675)
    with pytest.raises(ValueError):
        png_size(b"GIF89a" + bytes(30))


def test_oversized_png_is_reencoded_with_a_palette(catalog, monkeypatch):
    monkeypatch.setattr(charts, "SIZE_BUDGET_BYTES", 20 * 1024)
    png = vram_chart(curves_for(catalog, 1), title="Qwen3-8B", gpu_label="T4")
    assert png_size(png) == (1200, 675)
    assert len(png) < 60 * 1024
    assert_good_png(png)


# --- the single-pass layout ------------------------------------------------------------------------

def chart_cases(catalog, rows):
    formats = [catalog.quant(q) for q in ("q2_k", "q3_k_m", "q4_k_m", "q5_k_m", "q6_k", "q8_0", "f16")]
    long_ctx = vram_curves(Query(gpu=catalog.gpu("nvidia-rtx-4090"), model=catalog.model("glm-4-9b-chat-1m"),
                                 quant=formats[0]), formats)
    too_big = seventy_b_on_a_4090(catalog)
    return {
        "vram en": lambda: vram_chart(curves_for(catalog, 1), title="Qwen3-8B on T4", gpu_label="T4"),
        "vram 2 zh": lambda: vram_chart(curves_for(catalog, 2), title="Qwen3-8B · 2× T4", gpu_label="2× T4",
                                        locale="zh-CN", theme="light"),
        "vram 7 formats": lambda: vram_chart(long_ctx, title="GLM-4-9B-Chat-1M on RTX 4090", gpu_label="RTX 4090"),
        "rank en": lambda: rank_chart(rows, title="Best on NVIDIA T4 @ 8k"),
        "rank zh": lambda: rank_chart(rows, title="NVIDIA T4 @ 8k", locale="zh-CN", theme="light"),
        "rank one": lambda: rank_chart(rows[:1], title="One"),
        "setups": lambda: charts.setups_chart([("1× NVIDIA A100 80GB PCIe", 41.5, 12.0), ("2× RTX 4090", 60.2, 3.1)],
                                              title="Qwen3-32B Q4_K_M"),
        "empty": lambda: rank_chart([], title="Best on NVIDIA T4 @ 1M"),
        "above en": lambda: vram_chart(too_big, title="Llama 3.3 70B on RTX 4090", gpu_label="RTX 4090"),
        "above zh": lambda: vram_chart(too_big, title="Llama 3.3 70B · RTX 4090", gpu_label="RTX 4090",
                                       locale="zh-CN"),
    }


CASES = ("vram en", "vram 2 zh", "vram 7 formats", "rank en", "rank zh", "rank one", "setups", "empty", "above en",
         "above zh")


def test_a_chart_does_not_depend_on_the_charts_drawn_before_it(catalog, rows):
    """Figures are reused from chart to chart: whatever came before (a message in place of a chart, more
    bars, another theme), each chart has the pixels it has when drawn first in a thread of its own."""
    cases = chart_cases(catalog, rows)

    def fresh(case: str) -> bytes:
        with ThreadPoolExecutor(max_workers=1) as pool:
            return pool.submit(cases[case]).result()

    alone = {case: fresh(case) for case in CASES}
    for order in (CASES, CASES[::-1], CASES[1::2] + CASES[::2]):
        with ThreadPoolExecutor(max_workers=1) as pool:
            after_others = pool.submit(lambda order=order: [cases[case]() for case in order]).result()
        for case, png in zip(order, after_others, strict=True):
            assert png == alone[case], case


@pytest.mark.parametrize("case", CASES)
def test_each_chart_is_drawn_once(monkeypatch, catalog, rows, case):
    draws = []
    original = Figure.draw

    def counting(self, renderer):
        draws.append(self)
        return original(self, renderer)

    monkeypatch.setattr(Figure, "draw", counting)
    assert_good_png(chart_cases(catalog, rows)[case]())
    assert len(draws) == 1, "laid out once, drawn once: no layout engine, no tight bbox, no measuring draw"


@pytest.mark.parametrize("case", CASES)
def test_the_layout_keeps_every_text_on_the_canvas_and_apart(monkeypatch, catalog, rows, case):
    figures = []
    original = charts._png

    def keeping(fig, described=None):
        figures.append(fig)
        return original(fig, described)

    monkeypatch.setattr(charts, "_png", keeping)
    chart_cases(catalog, rows)[case]()
    (fig,) = figures
    renderer = fig.canvas.get_renderer()
    ax = fig.axes[0]
    box = ax.get_window_extent(renderer)
    canvas = Bbox.from_bounds(0, 0, charts.WIDTH_PX, charts.HEIGHT_PX)

    def inside(extent, outer, what):
        assert (extent.x0 >= outer.x0 - 0.5 and extent.x1 <= outer.x1 + 0.5 and extent.y0 >= outer.y0 - 0.5
                and extent.y1 <= outer.y1 + 0.5), f"{what} {extent} outside {outer}"

    title = fig.texts[0].get_window_extent(renderer)
    inside(title, canvas, "title")
    assert title.y0 >= box.y1, "the title sits above the plot"
    legend = ax.get_legend()
    if legend is not None:
        held = legend.get_window_extent(renderer)
        inside(held, canvas, "legend")
        assert held.y0 >= box.y1 and held.y1 <= title.y0, "the legend sits between the title and the plot"
    for text in ax.texts:  # notes, OOM labels, messages: inside the plot area
        if text.get_visible() and text.get_text():
            inside(text.get_window_extent(renderer), box, repr(text.get_text()))
    if ax.axison:
        def drawn(labels, limits, index):  # ticks past the axis limits are not drawn
            lo, hi = sorted(limits)
            return [t for t in labels if t.get_text() and lo <= t.get_position()[index] <= hi]

        x_ticks = drawn(ax.get_xticklabels(), ax.get_xlim(), 0)
        y_ticks = drawn(ax.get_yticklabels(), ax.get_ylim(), 1)
        assert x_ticks and y_ticks
        for label in x_ticks + y_ticks:
            inside(label.get_window_extent(renderer), canvas, f"tick label {label.get_text()!r}")
        ylabels = [t.get_window_extent(renderer) for t in y_ticks]
        for axis_label in (ax.xaxis.label, ax.yaxis.label):
            if axis_label.get_text():
                inside(axis_label.get_window_extent(renderer), canvas, axis_label.get_text())
        if ax.yaxis.label.get_text() and ylabels:
            assert ax.yaxis.label.get_window_extent(renderer).x1 <= min(e.x0 for e in ylabels)
        xlabels = [t.get_window_extent(renderer) for t in x_ticks]
        if ax.xaxis.label.get_text() and xlabels:
            assert ax.xaxis.label.get_window_extent(renderer).y1 <= min(e.y0 for e in xlabels)
        assert box.width > charts.WIDTH_PX * 0.5 and box.height > charts.HEIGHT_PX * 0.5, "the plot keeps the room"


@pytest.mark.parametrize("rotation", [0, 90])
@pytest.mark.parametrize(("x", "y"), [(0.3, 0.5), (0.3013, 0.5017), (0.5, 0.2037)])
def test_a_copied_text_lands_where_agg_draws_it(rotation, x, y):
    """Texts are rasterised once and copied: each lands within the half pixel Agg would place it at."""
    from matplotlib.backends.backend_agg import FigureCanvasAgg, RendererAgg

    def centre_of_ink(renderer_class):
        fig = Figure(figsize=(4, 3), dpi=100, facecolor="black")
        FigureCanvasAgg(fig)
        renderer = renderer_class(400, 300, 100)
        fig.text(x, y, "Hgq 12k · 显存", color="white", fontsize=15, rotation=rotation,
                 fontfamily=list(charts._style("dark", "en-US").family))
        for _ in range(2):  # the second time from the kept copy
            renderer.clear()
            fig.draw(renderer)
        ink = np.asarray(renderer.buffer_rgba())[:, :, 0].astype(float)
        rows, cols = np.nonzero(ink)
        weight = ink[rows, cols]
        return (cols * weight).sum() / weight.sum(), (rows * weight).sum() / weight.sum(), weight.sum()

    agg, copied = centre_of_ink(RendererAgg), centre_of_ink(charts._Renderer)
    assert abs(agg[0] - copied[0]) <= 0.51 and abs(agg[1] - copied[1]) <= 0.51, (agg, copied)
    assert copied[2] == pytest.approx(agg[2], rel=0.02), "the same amount of ink"


def test_kept_text_images_stay_within_their_budget(monkeypatch, rows):
    monkeypatch.setattr(charts, "TEXT_IMAGES_KEPT_BYTES", 64 * 1024)
    renderer = charts._Renderer(charts.WIDTH_PX, charts.HEIGHT_PX, charts.DPI)
    monkeypatch.setattr(charts._Canvas, "get_renderer", lambda self: setattr(self, "renderer", renderer) or renderer)
    first = rank_chart(rows, title="Best on NVIDIA T4 @ 8k")
    kept = renderer._texts
    assert kept and renderer._kept_bytes == sum(image.nbytes for image, _, _ in kept.values()) <= 64 * 1024
    assert rank_chart(rows, title="Best on NVIDIA T4 @ 8k") == first, "what is kept draws the same picture"
