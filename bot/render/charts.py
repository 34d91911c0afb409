"""PNG charts for Discord replies: VRAM (or fine-tuning memory) against context, ranked decode speed, GPU setups.

Every function draws on a `Figure` of its thread's own (reused from chart to chart, `_figure`) on an Agg
canvas drawn with its thread's one renderer, and never touches pyplot or the global rcParams, so renders can
run concurrently in worker threads. Styling is passed to
each artist explicitly for the same reason. A chart is laid out once, from measured text, and drawn once
(`_place`): no layout engine and no tight bounding box, which would lay it out and draw it twice. Each
distinct text is rasterised once per thread and copied after (`_Renderer`).
"""

from __future__ import annotations

import functools
import io
import logging
import math
import struct
import threading
import zlib
from collections import OrderedDict
from collections.abc import Callable, Iterator
from contextlib import contextmanager
from contextvars import ContextVar
from dataclasses import dataclass
from functools import cache
from typing import Any, Literal

import matplotlib.text
import numpy as np
from matplotlib import font_manager, rcParams
from matplotlib.axes import Axes
from matplotlib.axis import Axis
from matplotlib.backend_bases import GraphicsContextBase
from matplotlib.backends.backend_agg import FigureCanvasAgg, RendererAgg
from matplotlib.figure import Figure
from matplotlib.font_manager import FontProperties
from matplotlib.lines import Line2D
from matplotlib.patches import Patch
from matplotlib.text import Text
from matplotlib.ticker import FixedLocator, FuncFormatter, MaxNLocator, NullLocator

from bot.render.text import TOKEN_UNITS, drawable_locale, format_tokens, t, tps_text
from estimator.curve import VramCurves
from estimator.rank import RankRow
from estimator.units import GIB

Theme = Literal["dark", "light"]

WIDTH_PX, HEIGHT_PX, DPI = 1200, 675, 100

# Sizes in points at 100 dpi. Discord shrinks a 1200 px image to roughly a third of that on a
# phone, so anything smaller than ~14 pt becomes illegible there.
TITLE_PT = 22
LABEL_PT = 17
TICK_PT = 15
NOTE_PT = 15
LEGEND_PT = 15

# Families known to cover simplified Chinese, best-looking first; the file-name hints find them when
# the font was installed after matplotlib's font cache was built.
_CJK_FAMILIES = (
    "Noto Sans CJK SC", "Noto Sans SC", "Source Han Sans SC", "Source Han Sans CN",
    "WenQuanYi Micro Hei", "WenQuanYi Zen Hei", "Droid Sans Fallback", "Microsoft YaHei", "SimHei",
    "PingFang SC", "Hiragino Sans GB", "Arial Unicode MS",
)
_CJK_FILE_HINTS = ("notosanscjk", "notosanssc", "sourcehansans", "wqy", "droidsansfallback", "msyh", "simhei")
_LATIN_FAMILY = "DejaVu Sans"
_font_lock = threading.Lock()

# PNGs past this are re-encoded with a 256-colour palette; Discord previews stay quick on mobile data.
SIZE_BUDGET_BYTES = 190 * 1024


class _NoBoldFallbackWarning(logging.Filter):
    # Most CJK fonts have no bold face; matplotlib warns each time a bold title falls back to one.
    def filter(self, record: logging.LogRecord) -> bool:
        return not str(record.msg).startswith("findfont: Failed to find font weight")


logging.getLogger("matplotlib.font_manager").addFilter(_NoBoldFallbackWarning())


@dataclass(frozen=True)
class _Palette:
    bg: str
    fg: str
    muted: str
    grid: str
    spine: str
    oom: str
    oom_fill_alpha: float
    series: tuple[str, ...]
    dense: str
    moe: str
    fits: str


# Dark matches Discord's embed/message background; series colours are Okabe–Ito-like hues, lightened
# for dark and deepened for light so each keeps >= 3:1 contrast against its background.
_PALETTES: dict[str, _Palette] = {
    "dark": _Palette(
        bg="#2b2d31", fg="#f2f3f5", muted="#b5bac1", grid="#3f4248", spine="#5c6069",
        oom="#ff6b6b", oom_fill_alpha=0.13,
        series=("#5aa9ff", "#ffb648", "#4fd18b", "#d19bff", "#ff85a8", "#5fe0e0", "#e8e36b", "#ff9a5c"),
        dense="#5aa9ff", moe="#ffb648", fits="#4fd18b",
    ),
    "light": _Palette(
        bg="#ffffff", fg="#1e1f22", muted="#4e5058", grid="#e3e5e8", spine="#b5bac1",
        oom="#d62828", oom_fill_alpha=0.09,
        series=("#1f6fd1", "#c46a00", "#16803c", "#7e3bb5", "#c2185b", "#0e7490", "#8a7a00", "#b4461a"),
        dense="#1f6fd1", moe="#c46a00", fits="#16803c",
    ),
}

_MARKERS = ("o", "s", "D", "^", "v", "P", "X", "h")


# --- fonts and locale ------------------------------------------------------------------------------

@cache
def cjk_font_family() -> str | None:
    """A font family that renders simplified Chinese, or None if the system has none."""
    with _font_lock:
        known = {f.name for f in font_manager.fontManager.ttflist}
        for family in _CJK_FAMILIES:
            if family in known:
                return family
        # matplotlib's font list is cached on disk and misses fonts installed after it was written.
        for path in sorted(font_manager.findSystemFonts()):
            if any(hint in path.lower().replace("-", "").replace("_", "") for hint in _CJK_FILE_HINTS):
                try:
                    font_manager.fontManager.addfont(path)
                except (OSError, RuntimeError, ValueError):
                    continue
        known = {f.name for f in font_manager.fontManager.ttflist}
        return next((family for family in _CJK_FAMILIES if family in known), None)


def text_locale(locale: str) -> str:
    """The locale for text drawn into a chart (titles, legends): the asker's only where it can be drawn."""
    return drawable_locale(locale, has_cjk_font=cjk_font_family() is not None)


@dataclass(frozen=True)
class _Style:
    pal: _Palette
    locale: str
    family: tuple[str, ...]

    def text(self, key: str, **values: Any) -> str:
        return t(self.locale, key, **values)

    def font(self, size: float, weight: str = "normal") -> FontProperties:
        return FontProperties(family=list(self.family), size=size, weight=weight)


def _style(theme: Theme, locale: str) -> _Style:
    if theme not in _PALETTES:
        raise ValueError(f"theme must be 'dark' or 'light', not {theme!r}")
    cjk = cjk_font_family()
    # The CJK family rides along as a per-glyph fallback so Chinese in model names or titles still
    # renders under en-US; Latin glyphs keep coming from DejaVu.
    family = (_LATIN_FAMILY, cjk) if cjk else (_LATIN_FAMILY,)
    return _Style(pal=_PALETTES[theme], locale=text_locale(locale), family=family)


# --- formatting ------------------------------------------------------------------------------------

CTX_LABEL_CHARS = 7


def ctx_label(tokens: float) -> str:
    """Axis and legend labels say a count as the replies' text does while it stays short (64k, 128,000, 50,944);
    a longer exact count is cut down to tenths of its binary unit (10,115,072 → 9.6M), rounded down as a largest
    context must be."""
    exact = format_tokens(tokens)
    if len(exact) <= CTX_LABEL_CHARS:
        return exact
    count = max(0, math.floor(tokens))
    unit, size = next(((u, n) for u, n in TOKEN_UNITS if count >= n), ("", 1))
    value = count / size
    return f"{math.floor(value) if value >= 100 else math.floor(value * 10) / 10:g}{unit}"


def _gib(value: float) -> str:
    return f"{value:.1f}" if value < 100 else f"{value:.0f}"


def _seconds(value: float) -> str:
    if value < 1:
        return f"{value * 1000:.0f} ms"
    return f"{value:.1f} s" if value < 10 else f"{value:.0f} s"


def _plain(s: str) -> str:
    # Labels are user-visible names; a '$' must not switch matplotlib into mathtext.
    return s.replace("$", r"\$")


def _truncate(s: str, n: int) -> str:
    return s if len(s) <= n else s[: n - 1].rstrip() + "…"


# --- figure plumbing -------------------------------------------------------------------------------

_reused = threading.local()


class _Renderer(RendererAgg):
    """Agg, with each distinct text rasterised once and copied after.

    Tick labels, axis labels and legend entries repeat from chart to chart, and shaping and rasterising
    a string costs about a millisecond. Every text is drawn on a small scratch canvas of its own and
    copied onto the chart (so a chart's pixels do not depend on what was drawn before it); the copy is
    kept, keyed by the string, font, angle and colour. Mathtext and unantialiased text are drawn as usual."""

    def __init__(self, width: int, height: int, dpi: float) -> None:
        super().__init__(width, height, dpi)
        self._texts: OrderedDict[tuple[object, ...], tuple[np.ndarray, int, int]] = OrderedDict()
        self._kept_bytes = 0

    def draw_text(self, gc: GraphicsContextBase, x: float, y: float, s: str, prop: FontProperties, angle: float,
                  ismath: bool | Literal["TeX"] = False, mtext: Text | None = None) -> None:
        shaped = mtext is not None and any(getattr(mtext, name, lambda: None)() is not None
                                            for name in ("get_fontfeatures", "get_language"))
        if ismath or shaped or not gc.get_antialiased() or not s.strip():
            return super().draw_text(gc, x, y, s, prop, angle, ismath=ismath, mtext=mtext)
        font = (tuple(prop.get_family()), prop.get_style(), prop.get_variant(), prop.get_weight(), prop.get_stretch(),
                prop.get_size_in_points(), prop.get_file())
        key = (s, font, angle, tuple(gc.get_rgb()), gc.get_alpha(), gc.get_forced_alpha())
        found = self._texts.get(key)
        if found is None:
            found = self._texts[key] = self._rasterise(gc, s, prop, angle)
            self._kept_bytes += found[0].nbytes
            while self._kept_bytes > TEXT_IMAGES_KEPT_BYTES:
                # The least recently drawn goes: a title or a note, mostly.
                self._kept_bytes -= self._texts.popitem(last=False)[1][0].nbytes
        else:
            self._texts.move_to_end(key)
        image, left, below = found
        if image.size:
            # y runs downwards here; draw_image takes the image's lower-left corner, y upwards.
            self.draw_image(gc, round(x) + left, int(self.height) - (round(y) + below), image)

    def _rasterise(self, gc: GraphicsContextBase, s: str, prop: FontProperties,
                   angle: float) -> tuple[np.ndarray, int, int]:
        width, height, descent = _text_metrics(self, s, prop)
        # A scratch canvas just larger than the rotated text box, with a margin of one line height for
        # glyphs that overhang their advance (italics, accents): clearing and scanning a canvas costs per
        # pixel, and a square big enough for any angle is mostly empty. The origin stays on a whole pixel,
        # so the glyphs' sub-pixel phases are those of any other whole-pixel origin.
        pad = height + 2
        cos, sin = math.cos(math.radians(angle)), math.sin(math.radians(angle))
        corners = [(a * cos - u * sin, -(a * sin + u * cos))
                   for a in (-pad, width + pad) for u in (-descent - pad, height - descent + pad)]
        origin_x = math.ceil(-min(x for x, _ in corners))
        origin_y = math.ceil(-min(y for _, y in corners))
        scratch = RendererAgg(origin_x + math.ceil(max(x for x, _ in corners)) + 1,
                              origin_y + math.ceil(max(y for _, y in corners)) + 1, self.dpi)
        plain = scratch.new_gc()
        plain.copy_properties(gc)
        plain.set_clip_rectangle(None)
        plain.set_clip_path(None)
        RendererAgg.draw_text(scratch, plain, origin_x, origin_y, s, prop, angle)
        plain.restore()
        pixels = np.asarray(scratch.buffer_rgba())
        rows = np.flatnonzero(pixels[:, :, 3].any(axis=1))
        cols = np.flatnonzero(pixels[:, :, 3].any(axis=0))
        if not rows.size:
            return np.zeros((0, 0, 4), np.uint8), 0, 0
        top, bottom, first, last = rows[0], rows[-1] + 1, cols[0], cols[-1] + 1
        # Bottom row first, as draw_image wants it (matplotlib's own agg filters hand it over the same way).
        image = np.ascontiguousarray(pixels[top:bottom, first:last][::-1])
        return image, int(first) - origin_x, int(bottom) - origin_y


def _text_metrics(renderer: RendererAgg, s: str, prop: FontProperties) -> tuple[float, float, float]:
    """(width, height, descent) of one line of text. The `Text` being drawn measured this line with this
    renderer a moment ago, so matplotlib's own metrics cache answers without shaping it again."""
    cached = getattr(matplotlib.text, "_get_text_metrics_with_cache", None)
    if cached is None:
        return renderer.get_text_width_height_descent(s, prop, ismath=False)
    width, height, descent = cached(renderer, s, prop, False, renderer.dpi)
    return width, height, descent


# Tick labels and legend entries come back in nearly every chart: a few hundred small images, well
# inside this; one-off titles and notes pass through.
TEXT_IMAGES_KEPT_BYTES = 8 * 1024 * 1024


class _Canvas(FigureCanvasAgg):
    """An Agg canvas that draws with its thread's one renderer. Charts are all the same size, and
    matplotlib's text-metrics cache is keyed by the renderer, so labels that repeat from chart to chart
    are shaped once."""

    def get_renderer(self) -> RendererAgg:
        renderer: RendererAgg | None = getattr(_reused, "renderer", None)
        if renderer is None:
            renderer = _reused.renderer = _Renderer(WIDTH_PX, HEIGHT_PX, DPI)
        self.renderer = renderer
        return renderer


def _figure(st: _Style, title: str, kind: str) -> tuple[Figure, Axes]:
    """This thread's figure for one kind of chart in one style, emptied, with the title set.

    Building a figure and its axes, and the ticks an axis makes on its first draw (each two lines, a grid
    line and two texts), costs about a third of drawing a chart; emptied, the figure keeps them. One per
    chart function: each sets again, every time, what it leaves behind (a log axis, hidden y ticks), so a
    chart never depends on the charts drawn before it."""
    key = (kind, st.pal, st.family)
    figures: dict[tuple[object, ...], tuple[Figure, Axes]] | None = getattr(_reused, "figures", None)
    if figures is None:
        figures = _reused.figures = {}
    found = figures.get(key)
    if found is None:
        found = figures[key] = _new_figure(st)
    fig, ax = found
    _blank(ax)
    fig.suptitle(_plain(title), fontproperties=st.font(TITLE_PT, "bold"), color=st.pal.fg,
                 y=1 - EDGE_PX / HEIGHT_PX, va="top")
    return fig, ax


def _blank(ax: Axes) -> None:
    """Everything a chart function adds taken off again; limits, locators and scales it always sets."""
    for artist in [*ax.lines, *ax.patches, *ax.texts, *ax.collections, *ax.artists, *ax.images]:
        artist.remove()
    if ax.legend_ is not None:
        ax.legend_.remove()
    ax.set_axis_on()
    ax.set_xlabel("")
    ax.set_ylabel("")
    ax.relim()


def _new_figure(st: _Style) -> tuple[Figure, Axes]:
    # No layout engine: `_place` sets the axes once from measured text, so saving draws the figure
    # exactly once (a layout engine lays out and draws it twice, three times with `_fit_notes`).
    fig = Figure(figsize=(WIDTH_PX / DPI, HEIGHT_PX / DPI), dpi=DPI, facecolor=st.pal.bg)
    _Canvas(fig)
    ax = fig.add_subplot()
    ax.set_facecolor(st.pal.bg)
    for side, spine in ax.spines.items():
        spine.set_color(st.pal.spine)
        spine.set_visible(side in ("left", "bottom"))
    ax.tick_params(colors=st.pal.muted, labelcolor=st.pal.fg, labelsize=TICK_PT, labelfontfamily=list(st.family),
                   length=5, width=1)
    ax.grid(True, color=st.pal.grid, linewidth=1, zorder=0)
    ax.set_axisbelow(True)
    return fig, ax


# --- single-pass layout ----------------------------------------------------------------------------
# Margins in pixels of the 1200×675 canvas: from the canvas edge to any text, and between blocks.
EDGE_PX = 10
TITLE_GAP_PX = 20


def _renderer(fig: Figure) -> RendererAgg:
    canvas = fig.canvas
    assert isinstance(canvas, FigureCanvasAgg)
    # The same renderer savefig draws with: Agg keeps one per canvas size, so measuring costs no buffer.
    return canvas.get_renderer()


# Tick labels, axis labels and legends repeat from chart to chart, and measuring a string costs about a
# millisecond of FreeType shaping: each is measured once per process (its size depends only on the text,
# the font and the dpi, which is fixed).
_MEASURED: dict[tuple[object, ...], tuple[float, float]] = {}
_MEASURED_MAX = 4096


def _text_px(renderer: RendererAgg, text: str, prop: FontProperties) -> tuple[float, float]:
    """(width, height) of one line as drawn, without laying out the figure."""
    if not text:
        return 0.0, 0.0
    key = (text, tuple(prop.get_family()), prop.get_size_in_points(), str(prop.get_weight()), prop.get_style())
    found = _MEASURED.get(key)
    if found is None:
        width, height, _descent = renderer.get_text_width_height_descent(text.replace(r"\$", "$"), prop,
                                                                         ismath=False)
        found = (width, height)
        if len(_MEASURED) >= _MEASURED_MAX:
            _MEASURED.clear()
        _MEASURED[key] = found
    return found


def _tick_labels(axis: Axis, lo: float, hi: float) -> list[tuple[float, str]]:
    """The major tick labels drawn inside [lo, hi], from the axis's own locator and formatter."""
    low, high = min(lo, hi), max(lo, hi)
    locs = [v for v in axis.get_major_locator()() if low - 1e-9 * abs(high - low) <= v <= high + 1e-9 * abs(high - low)]
    return list(zip(locs, axis.get_major_formatter().format_ticks(locs), strict=True))


def _place(fig: Figure, ax: Axes) -> None:
    """Put the axes where their labels, the legend above them and the title fit the canvas.

    Measures the few texts whose size varies (tick labels, axis labels, legend, title) and sets the
    axes' position once; nothing is drawn. Cheap enough to call again after the limits change."""
    r = _renderer(fig)
    pt = DPI / 72
    width, height = float(WIDTH_PX), float(HEIGHT_PX)
    # The title is the figure's only text.
    title_h = max((_text_px(r, t.get_text(), t.get_fontproperties())[1] for t in fig.texts), default=0.0)
    top = height - EDGE_PX - (title_h + TITLE_GAP_PX if title_h else 0.0)
    legend = ax.get_legend()
    if legend is not None:
        # _legend anchors it a hundredth of the axes' height plus its border pad above them.
        lifted = 0.01 * (top - 2 * EDGE_PX) + legend.borderaxespad * legend.prop.get_size_in_points() * pt
        top -= legend.get_window_extent(r).height + lifted
    if not ax.axison:  # a message in place of a chart: the whole area under the title
        ax.set_position((EDGE_PX / width, EDGE_PX / height, 1 - 2 * EDGE_PX / width, (top - EDGE_PX) / height))
        return
    left = right = bottom = float(EDGE_PX)
    xlabel, ylabel = ax.xaxis.label, ax.yaxis.label
    tick_prop = FontProperties(family=ax.xaxis.get_major_ticks()[0].label1.get_fontfamily(), size=TICK_PT)
    x_ticks = _tick_labels(ax.xaxis, *ax.get_xlim())
    y_ticks = _tick_labels(ax.yaxis, *ax.get_ylim())
    # Label pad plus the part of the tick outside the axes, in points.
    x_pad = rcParams["xtick.major.pad"] + ax.xaxis.get_tick_padding()
    y_pad = rcParams["ytick.major.pad"] + ax.yaxis.get_tick_padding()
    if xlabel.get_text():
        bottom += _text_px(r, xlabel.get_text(), xlabel.get_fontproperties())[1] + ax.xaxis.labelpad * pt
    if x_ticks:
        bottom += (max(_text_px(r, t, tick_prop)[1] for _, t in x_ticks)
                   + x_pad * pt)
    if ylabel.get_text():
        left += _text_px(r, ylabel.get_text(), ylabel.get_fontproperties())[1] + ax.yaxis.labelpad * pt
    if y_ticks:
        left += (max(_text_px(r, t, tick_prop)[0] for _, t in y_ticks)
                 + y_pad * pt)
    # Half of the last x label may stand out past the right end of the axis.
    axes_w = width - left - right
    if x_ticks:
        lo, hi = ax.get_xlim()
        to_axes = ax.xaxis.get_transform()
        span = to_axes.transform(hi) - to_axes.transform(lo)
        for loc, text in x_ticks:
            at = (to_axes.transform(loc) - to_axes.transform(lo)) / span * axes_w
            right = max(right, EDGE_PX + at + _text_px(r, text, tick_prop)[0] / 2 - axes_w)
    # Half of the top y label may stand out above the axes, into the legend's gap.
    ax.set_position((left / width, bottom / height, (width - left - right) / width, (top - bottom) / height))


def _axis_label(ax: Axes, which: Literal["x", "y"], text: str, st: _Style) -> None:
    setter = ax.set_xlabel if which == "x" else ax.set_ylabel
    setter(_plain(text), fontproperties=st.font(LABEL_PT), color=st.pal.fg, labelpad=8)


def _legend(ax: Axes, handles: list, st: _Style, ncols: int) -> None:
    # Above the plot area, never on top of the data.
    ax.legend(handles=handles, loc="lower left", bbox_to_anchor=(0, 1.01, 1, 0.1), mode="expand",
                    ncols=ncols, frameon=False, prop=st.font(LEGEND_PT), labelcolor=st.pal.fg,
                    handlelength=2.2, borderaxespad=0.2, columnspacing=1.2)


def _png(fig: Figure, described: dict[str, object] | None = None) -> bytes:
    """PNG bytes; `described` (what the chart shows) rides along as a text chunk, so a test of the
    whole bot can check the attached image is the chart it should be without reading pixels."""
    import json

    _place(fig, fig.axes[0])
    canvas = fig.canvas
    assert isinstance(canvas, FigureCanvasAgg)
    canvas.draw()  # the one draw: nothing before it laid the figure out
    width, height = canvas.get_width_height()
    # The background is opaque, so the alpha channel is dropped: a quarter less to compress.
    rgb = np.frombuffer(canvas.buffer_rgba(), dtype=np.uint8).reshape(height, width, 4)[:, :, :3]
    text = {} if described is None else {_DESCRIPTION_KEY: json.dumps(described, separators=(",", ":"))}
    png = _encode_png(rgb, text)
    return png if len(png) <= SIZE_BUDGET_BYTES else _palette_png(rgb, text)


# zlib level 3 on unfiltered rows: long runs of one flat chart colour compress as well as with PNG's
# adaptive row filters (which Pillow always applies), in half the time.
PNG_COMPRESS_LEVEL = 3
_PNG_SIGNATURE = b"\x89PNG\r\n\x1a\n"


def _png_chunk(kind: bytes, body: bytes) -> bytes:
    return len(body).to_bytes(4, "big") + kind + body + zlib.crc32(kind + body).to_bytes(4, "big")


def _encode_png(rgb: np.ndarray, text: dict[str, str]) -> bytes:
    """An 8-bit RGB PNG (the format of the PNG specification, section 11) with uncompressed iTXt chunks."""
    height, width, _ = rgb.shape
    rows = np.empty((height, 1 + width * 3), dtype=np.uint8)
    rows[:, 0] = 0  # filter type None on every row
    pixels = rows[:, 1:].reshape(height, width, 3)
    # One channel at a time: numpy copies a strided channel in a tight loop, while reshaping the RGB
    # view of the RGBA buffer copies it pixel by pixel, six times slower.
    for channel in range(3):
        pixels[:, :, channel] = rgb[:, :, channel]
    header = struct.pack(">IIBBBBB", width, height, 8, 2, 0, 0, 0)  # depth 8, colour type 2 (RGB)
    texts = b"".join(_png_chunk(b"iTXt", key.encode("latin-1") + b"\0\0\0\0\0" + value.encode("utf-8"))
                     for key, value in text.items())
    return (_PNG_SIGNATURE + _png_chunk(b"IHDR", header) + texts
            + _png_chunk(b"IDAT", zlib.compress(rows.data, PNG_COMPRESS_LEVEL)) + _png_chunk(b"IEND", b""))


def _palette_png(rgb: np.ndarray, text: dict[str, str]) -> bytes:
    """The same image with at most 256 colours: flat chart colours survive, antialiasing barely shows."""
    from PIL import Image  # a matplotlib dependency; only needed for the rare oversized chart
    from PIL.PngImagePlugin import PngInfo

    info = PngInfo()
    for key, value in text.items():
        info.add_itxt(key, value)
    small = Image.fromarray(np.ascontiguousarray(rgb), mode="RGB").quantize(colors=256, method=Image.Quantize.MEDIANCUT)
    out = io.BytesIO()
    small.save(out, format="PNG", optimize=True, pnginfo=info)
    return out.getvalue()


def png_size(png: bytes) -> tuple[int, int]:
    """(width, height) from a PNG's IHDR chunk."""
    if len(png) < 24 or png[:8] != b"\x89PNG\r\n\x1a\n" or png[12:16] != b"IHDR":
        raise ValueError("not a PNG")
    return int.from_bytes(png[16:20], "big"), int.from_bytes(png[20:24], "big")


NOTE_OFFSET_PT = 6


def _bar_note(ax: Axes, x: float, y: float, text: str, st: _Style, **kw) -> Text:
    # Right of its bar, inside the axes: _fit_notes widens the x range until it fits.
    note = ax.annotate(_plain(text), (x, y), xytext=(NOTE_OFFSET_PT, 0), textcoords="offset points", va="center",
                       ha="left", fontproperties=st.font(NOTE_PT), color=st.pal.fg, zorder=5, annotation_clip=False,
                       **kw)
    return note


def _bar_height(n: int) -> float:
    # Bars keep the thickness they have in a five-row chart, so one or two rows are not fat slabs.
    return 0.68 * min(1.0, n / 5)


def _fit_notes(fig: Figure, ax: Axes, notes: list[tuple[float, Text]]) -> None:
    """Widen the x range until every note right of its bar ends inside the axes."""
    _place(fig, ax)
    renderer = _renderer(fig)
    width = ax.get_position().width * WIDTH_PX
    offset = NOTE_OFFSET_PT * fig.dpi / 72
    lo, hi = ax.get_xlim()
    need = hi
    for x, text in notes:
        room = width * 0.99 - _text_px(renderer, text.get_text(), text.get_fontproperties())[0] - offset
        if room > width * 0.2:
            need = max(need, x * width / room)
    ax.set_xlim(lo, need)


def _message(ax: Axes, st: _Style, headline: str, hint: str) -> None:
    ax.set_axis_off()
    ax.text(0.5, 0.56, _plain(headline), transform=ax.transAxes, ha="center", va="center",
            fontproperties=st.font(28, "bold"), color=st.pal.fg)
    ax.text(0.5, 0.42, _plain(hint), transform=ax.transAxes, ha="center", va="center",
            fontproperties=st.font(LABEL_PT), color=st.pal.muted)


# --- VRAM against context --------------------------------------------------------------------------

def _ctx_ticks(first: int, last: int) -> list[int]:
    ticks, ctx = [], 1 << max(math.ceil(math.log2(max(first, 1))), 0)
    while ctx <= last:
        ticks.append(ctx)
        ctx *= 2
    if last not in ticks:
        # A non-power-of-two maximum (40k, 160k) gets its own tick; a power of two too close to it
        # on the log axis would collide with its label, so it gives way.
        if ticks and last / ticks[-1] < 1.45:
            ticks.pop()
        ticks.append(last)
    return ticks


def _text_width_px(text: str, size_pt: float) -> float:
    """Rough rendered width: wide glyphs are one em, Latin ones about two thirds (bold DejaVu)."""
    em = size_pt * DPI / 72
    return sum(em if ord(ch) >= 0x2E80 else 0.68 * em for ch in text)


def _label_crossings(ax: Axes, crossings: list[tuple[float, float, str]], xlim: tuple[float, float],
                     st: _Style) -> None:
    """'max 24k' labels at the points where lines cross the OOM line: each goes above the line, else
    below it, else is left out (the legend repeats every maximum), so labels never pile up."""
    axes_px = WIDTH_PX * 0.88  # the plot area's width after the y axis labels, near enough for spacing
    span = math.log2(xlim[1]) - math.log2(xlim[0])
    slots: dict[bool, float] = {True: -math.inf, False: -math.inf}  # right edge of the last label, px
    for x, usable, color in sorted(crossings):
        if not xlim[0] <= x <= xlim[1]:
            continue  # a maximum left of the first tick (512 on an axis from 1k) is in the legend alone
        text = st.text("chart.max", ctx=ctx_label(x))
        width = _text_width_px(text, NOTE_PT) + 10
        centre = (math.log2(x) - math.log2(xlim[0])) / span * axes_px
        # Near the right edge a centred label would run off the plot; right-align it to the point there.
        ha, left = ("center", centre - width / 2) if centre + width / 2 <= axes_px else ("right", centre - width)
        for above in (True, False):
            if left >= slots[above] + 6:
                slots[above] = left + width
                ax.annotate(text, (x, usable), xytext=(0, 12 if above else -12), textcoords="offset points", ha=ha,
                            va="bottom" if above else "top", fontproperties=st.font(NOTE_PT, "bold"), color=color,
                            zorder=8, bbox={"boxstyle": "round,pad=0.2", "facecolor": st.pal.bg, "edgecolor": "none",
                                            "alpha": 0.85})
                break


@dataclass(frozen=True)
class Series:
    """One line of a memory chart: bytes needed at each x (tokens), the largest x that fits its limit
    (0: none does), and which limit (OOM line) it is measured against."""

    label: str
    x: tuple[int, ...]
    y_bytes: tuple[float, ...]
    max_x: int
    limit: int = 0


@dataclass(frozen=True)
class Limit:
    """An out-of-memory line: a setup's usable bytes; `per_gpu_bytes` adds one card's share (multi-GPU)."""

    label: str
    usable_bytes: float
    per_gpu_bytes: float | None = None



# --- charts drawn after the answer -------------------------------------------------------------
# The embed of an answer is cheap and the chart is not. Inside `charts_deferred()` a chart function
# records what it was asked to draw and returns a placeholder, so the bot can post the embed at once
# and edit the chart in when `draw()` has rendered it (in a worker process).

PLACEHOLDER_PREFIX = b"rigcheck:deferred-chart:"


@dataclass(frozen=True)
class ChartJob:
    name: str
    args: tuple[object, ...]
    kwargs: dict[str, object]


_deferred: ContextVar[list[ChartJob] | None] = ContextVar("rigcheck_deferred_charts", default=None)
_DEFERRABLE: dict[str, Callable[..., bytes]] = {}


def deferrable(fn: Callable[..., bytes]) -> Callable[..., bytes]:
    _DEFERRABLE[fn.__name__] = fn

    @functools.wraps(fn)
    def chart(*args: object, **kwargs: object) -> bytes:
        jobs = _deferred.get()
        if jobs is None:
            return fn(*args, **kwargs)
        jobs.append(ChartJob(fn.__name__, args, kwargs))
        return PLACEHOLDER_PREFIX + str(len(jobs) - 1).encode()

    return chart


@contextmanager
def charts_deferred() -> Iterator[list[ChartJob]]:
    jobs: list[ChartJob] = []
    token = _deferred.set(jobs)
    try:
        yield jobs
    finally:
        _deferred.reset(token)


def placeholder_index(data: bytes) -> int | None:
    return int(data[len(PLACEHOLDER_PREFIX):]) if data.startswith(PLACEHOLDER_PREFIX) else None


def draw(job: ChartJob) -> bytes:
    return _DEFERRABLE[job.name](*job.args, **job.kwargs)


@deferrable
def vram_chart(curves: VramCurves, *, title: str, gpu_label: str, locale: str = "en-US",
               theme: Theme = "dark") -> bytes:
    """VRAM (GiB) against context length, one line per format, with the out-of-memory line."""
    series = [Series(label=c.label or c.quant.name, x=c.ctx, y_bytes=c.total_bytes, max_x=c.max_ctx)
              for c in curves.curves if c.ctx]
    limit = Limit(label=gpu_label, usable_bytes=curves.usable_bytes,
                  per_gpu_bytes=curves.usable_per_gpu_bytes if curves.gpus > 1 else None)
    return memory_chart(series, [limit], title=title, locale=locale, theme=theme)


def chart_description(png: bytes) -> dict[str, object] | None:
    """What a chart shows, as its renderer recorded it in the PNG (kind, series, OOM lines)."""
    import json
    import zlib

    pos = 8
    while pos + 8 <= len(png):
        length = int.from_bytes(png[pos:pos + 4], "big")
        kind = png[pos + 4:pos + 8]
        body = png[pos + 8:pos + 8 + length]
        if kind in (b"tEXt", b"zTXt", b"iTXt"):
            key, _, rest = body.partition(b"\0")
            if key == _DESCRIPTION_KEY.encode():
                if kind == b"zTXt":
                    rest = zlib.decompress(rest[1:])
                elif kind == b"iTXt":
                    flag, rest = rest[0], rest[2:]
                    rest = rest.split(b"\0", 2)[2]
                    rest = zlib.decompress(rest) if flag else rest
                return json.loads(rest.decode("utf-8"))
        pos += 12 + length
    return None


_DESCRIPTION_KEY = "rigcheck-chart"


@deferrable
def memory_chart(series: list[Series], limits: list[Limit], *, title: str, x_axis: str | None = None,
                 locale: str = "en-US", theme: Theme = "dark") -> bytes:
    """Memory (GiB) against tokens on a log axis, one line per series, each limit an OOM line.

    The chart of every GPU answer: formats of one model (/fit), the models of a ranking page (/rank),
    reference model classes (/gpu), two setups (/compare), fine-tuning methods against sequence length
    (/finetune)."""
    st = _style(theme, locale)
    say, pal = st.text, st.pal
    fig, ax = _figure(st, title, "memory_chart")
    series = [s for s in series if s.x]
    described: dict[str, object] = {"kind": "memory", "series": [{"label": s.label, "max_x": s.max_x, "limit": s.limit,
                                               "x_last": s.x[-1]} for s in series],
                 "limits": [{"label": lim.label, "usable_gib": round(lim.usable_bytes / GIB, 2)} for lim in limits]}
    if not series or not limits:
        _message(ax, st, say("chart.no_fit"), "")
        return _png(fig, described)

    x_min = min(s.x[0] for s in series)
    x_max = max(s.x[-1] for s in series)
    all_y = [b / GIB for s in series for b in s.y_bytes]
    top_limit = max(lim.usable_bytes for lim in limits) / GIB
    # Keep the OOM line and the start of every curve near it in view, but do not let a line that starts
    # far past the card (full fine-tuning, a 70B model on a T4) squash the region around the line;
    # its legend entry says it does not fit.
    starts = [y for y in (s.y_bytes[0] / GIB for s in series) if y <= top_limit * 2] or [top_limit]
    y_top = min(max(all_y) * 1.08, max(top_limit * 1.4, max(starts) * 1.12))
    y_top = max(y_top, top_limit * 1.22)
    ax.set_ylim(0, y_top)
    ax.set_xscale("log", base=2)
    ax.set_xlim(x_min / 1.12, x_max * 1.12)
    ticks = _ctx_ticks(x_min, x_max)
    ax.xaxis.set_major_locator(FixedLocator(ticks))
    ax.xaxis.set_minor_locator(NullLocator())
    ax.xaxis.set_major_formatter(FuncFormatter(lambda v, _pos: ctx_label(v)))
    ax.yaxis.set_major_locator(MaxNLocator(nbins=7, steps=[1, 2, 2.5, 5, 10]))
    _axis_label(ax, "x", x_axis or say("chart.ctx_axis"), st)
    _axis_label(ax, "y", say("chart.vram_axis"), st)

    # The first limit is the asked setup (red); a second one (/compare) gets the muted colour.
    limit_colors = [pal.oom, pal.muted]
    # Above every line nothing fits (full shade); between two setups' lines only the larger fits (half).
    lowest = min(lim.usable_bytes for lim in limits) / GIB
    ax.axhspan(top_limit, y_top * 2, color=pal.oom, alpha=pal.oom_fill_alpha, linewidth=0, zorder=1)
    if lowest < top_limit:
        ax.axhspan(lowest, top_limit, color=pal.oom, alpha=pal.oom_fill_alpha / 2, linewidth=0, zorder=1)
    # The line's own label goes where no 'max …' label sits: crossings near the left push it right.
    span = math.log2(x_max * 1.12) - math.log2(x_min / 1.12)
    left_crossings = any(
        0 < s.max_x < s.x[-1] and (math.log2(s.max_x) - math.log2(x_min / 1.12)) / span < 0.5 for s in series
    )
    for i, lim in enumerate(limits):
        usable = lim.usable_bytes / GIB
        color = limit_colors[min(i, len(limit_colors) - 1)]
        ax.axhline(usable, color=color, linewidth=2.4, zorder=3, linestyle="-" if i == 0 else (0, (8, 3)))
        text = say("chart.usable", gpu=lim.label, gib=_gib(usable))
        right = left_crossings != (i == 1)
        ax.text(0.99 if right else 0.01, usable, text + " ", transform=ax.get_yaxis_transform(),
                ha="right" if right else "left", va="bottom",
                fontproperties=st.font(NOTE_PT, "bold"), color=color, zorder=6,
                bbox={"boxstyle": "round,pad=0.2", "facecolor": pal.bg, "edgecolor": "none", "alpha": 0.85})
        if lim.per_gpu_bytes is not None:
            per_gpu = lim.per_gpu_bytes / GIB
            ax.axhline(per_gpu, color=pal.muted, linewidth=1.8, linestyle=(0, (6, 4)), zorder=3)
            ax.text(0.01, per_gpu, " " + say("chart.one_gpu", gib=_gib(per_gpu)), transform=ax.get_yaxis_transform(),
                    ha="left", va="bottom", fontproperties=st.font(NOTE_PT), color=pal.muted, zorder=6,
                    bbox={"boxstyle": "round,pad=0.2", "facecolor": pal.bg, "edgecolor": "none", "alpha": 0.85})

    handles = []
    crossings: list[tuple[float, float, str]] = []
    ends: list[tuple[float, float, str]] = []
    for i, s in enumerate(series):
        color, marker = pal.series[i % len(pal.series)], _MARKERS[i % len(_MARKERS)]
        usable = limits[min(s.limit, len(limits) - 1)].usable_bytes / GIB
        ys = [b / GIB for b in s.y_bytes]
        # A second setup's line is dashed: two GPUs often need the same memory, and a solid line on top
        # would hide the first.
        ax.plot(s.x, ys, color=color, linewidth=2.8, marker=marker, markersize=8, zorder=4,
                markeredgecolor=pal.bg, markeredgewidth=1.2, clip_on=True,
                linestyle="-" if s.limit == 0 else (0, (5, 3)))
        name = _plain(s.label)
        if s.max_x <= 0:
            legend_label = f"{name} · {say('chart.no_fit')}"
        else:
            legend_label = f"{name} · {say('chart.max', ctx=ctx_label(s.max_x))}"
        handles.append(Line2D([], [], color=color, marker=marker, linewidth=2.8, markersize=8,
                              markeredgecolor=pal.bg, label=legend_label,
                              linestyle="-" if s.limit == 0 else (0, (5, 3))))
        if s.max_x <= 0:
            continue
        if s.max_x >= s.x[-1]:
            ends.append((s.x[-1], ys[-1], color))
        else:
            crossings.append((s.max_x, usable, color))
            ax.plot([s.max_x, s.max_x], [0, usable], color=color, linewidth=1.6, linestyle=(0, (2, 3)),
                    zorder=2, alpha=0.9)
            ax.plot([s.max_x], [usable], marker="o", markersize=12, color=color, zorder=7,
                    markeredgecolor=pal.fg, markeredgewidth=1.6)

    _label_crossings(ax, crossings, (x_min / 1.12, x_max * 1.12), st)
    for x, y, color in ends:
        if y <= y_top:
            ax.plot([x], [y], marker="o", markersize=12, color=color, zorder=7, markeredgecolor=pal.fg,
                    markeredgewidth=1.6)

    ax.text(0.01, 0.975, " " + say("chart.oom"), transform=ax.transAxes, ha="left", va="top",
            fontproperties=st.font(NOTE_PT),
            color=pal.oom, zorder=6,
            bbox={"boxstyle": "round,pad=0.2", "facecolor": pal.bg, "edgecolor": "none", "alpha": 0.7})
    off = [s for s in series if s.y_bytes[0] / GIB > y_top]
    described["above"] = [s.label for s in off]
    if off:
        above = _above_the_chart(off, say)
        ax.text(0.99, 0.975, above + " ", transform=ax.transAxes, ha="right", va="top",
                fontproperties=st.font(NOTE_PT, "bold"), color=pal.fg, zorder=3.5,  # under the lines it names
                bbox={"boxstyle": "round,pad=0.2", "facecolor": pal.bg, "edgecolor": "none", "alpha": 0.85})
    # Long labels (model names, two setups) need fewer columns to stay legible.
    longest = max(len(str(h.get_label())) for h in handles)
    _legend(ax, handles, st, ncols=min(len(handles), 4 if longest <= 20 else 2 if longest <= 40 else 1))
    return _png(fig, described)


def _above_the_chart(off: list[Series], say: Callable[..., str]) -> str:
    """The note naming the lines that start above the plotted range (the y axis stays near the OOM line so the
    region that matters is legible): what each needs at its shortest context, so none is left off unseen."""
    items = [say("chart.above_item", label=_plain(s.label), gib=_gib(s.y_bytes[0] / GIB)) for s in off]
    firsts = {s.x[0] for s in off}
    if len(firsts) > 1:
        items = [f"{item} ({ctx_label(s.x[0])})" for item, s in zip(items, off, strict=True)]
        return "↑ " + say("chart.above_mixed", items=" · ".join(items))
    return "↑ " + say("chart.above", ctx=ctx_label(off[0].x[0]), items=" · ".join(items))


# --- ranked decode speed ---------------------------------------------------------------------------

def _speed_bar_frame(ax: Axes, st: _Style, values: list[float], labels: list[str]) -> None:
    """The frame of a decode-speed bar chart: one labelled row per bar, top to bottom, from zero to just past
    the fastest."""
    ax.set_xlim(0, (max(values) if max(values) > 0 else 1.0) * 1.05)
    ax.set_ylim(len(values) - 0.5, -0.5)
    ax.set_yticks(list(range(len(values))), labels)
    ax.tick_params(axis="y", length=0)
    ax.grid(False, axis="y")
    ax.xaxis.set_major_locator(MaxNLocator(nbins=6))
    _axis_label(ax, "x", st.text("chart.tps_axis"), st)


@deferrable
def rank_chart(rows: list[RankRow], *, title: str, limit: int = 10, locale: str = "en-US",
               theme: Theme = "dark") -> bytes:
    """Decode tokens/s of the best format of the top `limit` rows, in the order given."""
    st = _style(theme, locale)
    say, pal = st.text, st.pal
    fig, ax = _figure(st, title, "rank_chart")
    shown = rows[: max(limit, 0)]
    if not shown:
        _message(ax, st, say("chart.nothing"), say("chart.nothing_hint"))
        return _png(fig)

    labels = [_plain(_truncate(f"{r.model.name} · {r.best.quant.name}", 40)) for r in shown]
    values = [r.best.speed.decode_tps for r in shown]
    ys = list(range(len(shown)))
    colors = [pal.moe if r.model.is_moe else pal.dense for r in shown]
    hatches = ["//" if r.model.is_moe else "" for r in shown]
    bars = ax.barh(ys, values, height=_bar_height(len(shown)), color=colors, edgecolor=pal.bg, linewidth=0,
                   zorder=3)
    for bar, hatch in zip(bars, hatches, strict=True):
        if hatch:
            bar.set_hatch(hatch)
            bar.set_edgecolor(pal.bg)
    _speed_bar_frame(ax, st, values, labels)
    notes = []
    for y, v, r in zip(ys, values, shown, strict=True):
        note = f"{say('chart.tps', tps=tps_text(v))}  ·  {say('chart.ttft', t=_seconds(r.best.speed.ttft_s))}"
        notes.append((v, _bar_note(ax, v, y, note, st)))

    handles = [Patch(facecolor=pal.dense, label=say("chart.dense")),
               Patch(facecolor=pal.moe, hatch="//", edgecolor=pal.bg, label=say("chart.moe"))]
    _legend(ax, handles, st, ncols=4)
    _fit_notes(fig, ax, notes)
    return _png(fig)


# --- which GPU for a model -------------------------------------------------------------------------

@deferrable
def setups_chart(bars: list[tuple[str, float, float]], *, title: str, locale: str = "en-US",
                 theme: Theme = "dark") -> bytes:
    """Decode tokens/s per GPU setup (`(label, tokens_per_s, headroom_gib)`), in the order given."""
    st = _style(theme, locale)
    say, pal = st.text, st.pal
    fig, ax = _figure(st, title, "setups_chart")
    if not bars:
        _message(ax, st, say("chart.nothing"), say("chart.nothing_hint"))
        return _png(fig)
    labels = [_plain(_truncate(label, 40)) for label, _, _ in bars]
    values = [tps for _, tps, _ in bars]
    ys = list(range(len(bars)))
    ax.barh(ys, values, height=_bar_height(len(bars)), color=pal.dense, edgecolor=pal.bg, linewidth=0, zorder=3)
    _speed_bar_frame(ax, st, values, labels)
    notes = []
    for y, (_, v, headroom) in zip(ys, bars, strict=True):
        note = f"{say('chart.tps', tps=tps_text(v))}  ·  +{_gib(headroom)} GiB"
        notes.append((v, _bar_note(ax, v, y, note, st)))
    _fit_notes(fig, ax, notes)
    return _png(fig)
