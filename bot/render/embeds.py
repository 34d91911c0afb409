"""Embeds from jinja2 templates, built so that Discord's limits cannot be exceeded.

A template renders sections, one marker per line:

    @title Qwen3-8B on T4
    @color 0x3ba55d
    @description
    free text …
    @field VRAM | inline
    field text …
    @footer text

`EmbedBuilder` turns them into embed JSON, truncating with "…and N more" rather than letting Discord
answer 400.
"""

from __future__ import annotations

from functools import cache
from typing import Any

from jinja2 import Environment, FileSystemLoader, StrictUndefined, pass_context, select_autoescape
from jinja2.runtime import Context

from bot.render.memory_figures import memory_figures, over_mib
from bot.render.text import (
    TEMPLATES,
    engine_name,
    format_label,
    format_tokens,
    locale_key,
    params_b_text,
    scaled_context_text,
    t,
    tps_text,
)
from estimator.units import gib_text

TITLE_MAX = 256
DESCRIPTION_MAX = 4096
FIELDS_MAX = 25
FIELD_NAME_MAX = 256
FIELD_VALUE_MAX = 1024
FOOTER_MAX = 2048
EMBED_TOTAL_MAX = 6000

COLORS = {"fits": 0x3BA55D, "tight": 0xFAA61A, "does_not_fit": 0xED4245, "info": 0x5865F2}


def _cut(text: str, limit: int) -> str:
    return text if len(text) <= limit else text[: limit - 1] + "…"


def _cut_lines(text: str, limit: int, more: str) -> str:
    """Drop whole lines from the end and say how many went, so tables stay readable."""
    if len(text) <= limit:
        return text
    lines = text.split("\n")
    while lines:
        dropped_note = "\n" + more.format(n=len(text.split("\n")) - len(lines))
        candidate = "\n".join(lines)
        if len(candidate) + len(dropped_note) <= limit:
            return candidate + dropped_note
        lines.pop()
    return _cut(text, limit)


class EmbedBuilder:
    def __init__(self, more: str) -> None:
        self.more = more
        self.embed: dict[str, Any] = {}
        self.fields: list[dict[str, Any]] = []
        self.dropped_fields = 0

    def title(self, text: str) -> None:
        self.embed["title"] = _cut(text.strip(), TITLE_MAX)

    def description(self, text: str) -> None:
        if text.strip():
            self.embed["description"] = _cut_lines(text.strip(), DESCRIPTION_MAX, self.more)

    def color(self, value: int) -> None:
        self.embed["color"] = value

    def field(self, name: str, value: str, inline: bool = False) -> None:
        if len(self.fields) >= FIELDS_MAX - 1:
            self.dropped_fields += 1
            return
        self.fields.append(
            {
                "name": _cut(name.strip() or "\u200b", FIELD_NAME_MAX),
                "value": _cut_lines(value.strip() or "\u200b", FIELD_VALUE_MAX, self.more),
                "inline": inline,
            }
        )

    def footer(self, text: str) -> None:
        self.embed["footer"] = {"text": _cut(text.strip(), FOOTER_MAX)}

    def image(self, filename: str) -> None:
        self.embed["image"] = {"url": f"attachment://{filename}"}

    def build(self) -> dict[str, Any]:
        fields = list(self.fields)
        if self.dropped_fields:
            fields.append({"name": "\u200b", "value": self.more.format(n=self.dropped_fields), "inline": False})
        embed = dict(self.embed)
        if fields:
            embed["fields"] = fields
        # The 6000-character budget covers all text; shed fields from the end until it fits.
        while embed_length(embed) > EMBED_TOTAL_MAX and embed.get("fields"):
            embed["fields"] = embed["fields"][:-1]
        if embed_length(embed) > EMBED_TOTAL_MAX and "description" in embed:
            spare = EMBED_TOTAL_MAX - (embed_length(embed) - len(embed["description"]))
            embed["description"] = _cut(embed["description"], max(spare, 1))
        return embed


def embed_length(embed: dict[str, Any]) -> int:
    total = len(embed.get("title", "")) + len(embed.get("description", ""))
    total += len(embed.get("footer", {}).get("text", "")) + len(embed.get("author", {}).get("name", ""))
    total += sum(len(f["name"]) + len(f["value"]) for f in embed.get("fields", []))
    return total


def parse_sections(text: str, more: str) -> dict[str, Any]:
    builder = EmbedBuilder(more)
    current: tuple[str, str, bool] | None = None
    buffer: list[str] = []

    def flush() -> None:
        if current is None:
            return
        kind, name, inline = current
        body = "\n".join(buffer).strip("\n")
        if kind == "description":
            builder.description(body)
        elif kind == "field":
            builder.field(name, body, inline)
        buffer.clear()

    for line in text.splitlines():
        if line.startswith("@title "):
            builder.title(line[7:])
        elif line.startswith("@color "):
            builder.color(int(line[7:].strip(), 0))
        elif line.startswith("@footer "):
            flush()
            current = None
            builder.footer(line[8:])
        elif line.startswith("@image "):
            builder.image(line[7:].strip())
        elif line.strip() == "@description":
            flush()
            current = ("description", "", False)
        elif line.startswith("@field "):
            flush()
            spec = line[7:]
            name, _, flag = spec.partition(" | ")
            current = ("field", name, flag.strip() == "inline")
        elif current is not None:
            buffer.append(line)
    flush()
    return builder.build()


def _secs(value: float, high: float | None = None) -> str:
    """A time in ms below a second, else in s; beside a range, in the range's unit (its `high` end decides), so
    a figure and its range never mix units: "0.8 s (0.6–1.2 s)", not "820 ms (0.6–1.2 s)"."""
    return f"{value * 1000:.0f} ms" if (value if high is None else high) < 1 else f"{value:.1f} s"


def _secs_span(low: float, high: float) -> str:
    """An interval in one unit, the unit once: "1.2–1.9 s", "310–520 ms"."""
    if high < 1:
        return f"{low * 1000:.0f}–{high * 1000:.0f} ms"
    return f"{low:.1f}–{high:.1f} s"


def _over_by(memory: Any) -> str:
    """MiB past the usable memory where the total prints as the usable figure (`memory_figures.over_mib`)."""
    return over_mib(memory.total_bytes, memory.usable_bytes)


@pass_context
def _over_usable(context: Context, memory: Any) -> str:
    """`_over_by` in the locale's words (the CLI's total column says the same), or empty."""
    mib = _over_by(memory)
    return t(context.get(LOCALE_VAR), "memory.over_usable", mib=mib) if mib else ""


def _scaled_ctx(option: Any) -> str:
    return scaled_context_text(option.max_ctx, option.max_ctx_scaled)


# The locale a template is rendered for, as its context holds it (filters that word something read it).
LOCALE_VAR = "locale_key"


def params_text(locale: str | None, params_b: float, active_params_b: float) -> str:
    """'8.19B'; a mixture of experts also says how many are active per token: '30.5B (3.3B active)'."""
    total = f"{params_b_text(params_b)}B"
    if active_params_b < params_b:
        return t(locale, "params.active", total=total, active=f"{params_b_text(active_params_b)}B")
    return total


@pass_context
def _params(context: Context, model: Any) -> str:
    return params_text(context.get(LOCALE_VAR), model.params_b, model.active_params_b)


@pass_context
def _format_name(context: Context, name: str) -> str:
    """A format's name in the template's locale (`format_label`: its describing words translated)."""
    return format_label(name, context.get(LOCALE_VAR))


@cache
def environment() -> Environment:
    env = Environment(
        loader=FileSystemLoader(str(TEMPLATES)),
        autoescape=select_autoescape(default=False, default_for_string=False),
        undefined=StrictUndefined,
        trim_blocks=True,
        lstrip_blocks=True,
        keep_trailing_newline=True,
    )
    env.filters.update(gib=gib_text, tps=tps_text, secs=_secs, secs_span=_secs_span, tokens=format_tokens,
                       params=_params, over_by=_over_by, over_usable=_over_usable,
                       memory_figures=memory_figures, scaled_ctx=_scaled_ctx, format_name=_format_name,
                       engine_name=engine_name, amount=_amount)
    return env


def _amount(value: float) -> str:
    """A threshold or an amount as typed back: 200 not 200.0, 2,000 not 2000."""
    return f"{value:,.0f}" if float(value).is_integer() else f"{value:,g}"


def render_embed(kind: str, locale: str | None, **context: Any) -> dict[str, Any]:
    """Render `templates/<locale>/<kind>.j2` into a limit-safe embed dict."""
    loc = locale_key(locale)
    text = environment().get_template(f"{loc}/{kind}.j2").render(**context, **{LOCALE_VAR: loc})
    return parse_sections(text, t(loc, "embed.more"))
