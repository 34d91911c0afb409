"""What every `rigcheck …` command shares: the one-line error, JSON and table output, the fit request."""

from __future__ import annotations

import argparse
import asyncio
import json
import sys
from collections.abc import Sequence
from typing import Any

from bot.params import CatalogError
from bot.render.table import display_width, pad
from bot.render.text import t
from bot.requests import FitRequest
from bot.service import Service

EXIT_USAGE = 2
EXIT_BROKEN_PIPE = 141  # 128 + SIGPIPE: what a shell reports for a tool whose reader went away


class CliError(CatalogError):
    """A one-line message for the person at the terminal, built with `.of(key, …)` from the catalog."""


def lang(args: argparse.Namespace) -> str | None:
    """The language `--lang` asked for (the catalog's English when none)."""
    return getattr(args, "lang", None)


def print_json(obj: Any) -> None:
    sys.stdout.write(json.dumps(obj, ensure_ascii=False) + "\n")


def table(headers: Sequence[str], rows: Sequence[Sequence[object]]) -> str:
    """Columns as wide as a terminal shows them (a CJK character takes two)."""
    cells = [[str(c) for c in r] for r in rows]
    widths = [max([display_width(h)] + [display_width(r[i]) for r in cells]) for i, h in enumerate(headers)]
    line = "  ".join(pad(h, w) for h, w in zip(headers, widths, strict=True))
    out = [line, "  ".join("-" * w for w in widths)]
    out += ["  ".join(pad(c, w) for c, w in zip(r, widths, strict=True)) for r in cells]
    return "\n".join(out)


def column_names(locale: str | None, *keys: str) -> list[str]:
    """Column headers from their catalog keys."""
    return [t(locale, key) for key in keys]



# What a fit question holds: `fit`'s flags and a batch line's keys.
FIT_KEYS = ("gpu", "model", "quant", "engine", "ctx", "prompt", "kv", "gpus", "batch")


def fit_request(d: dict[str, Any]) -> FitRequest:
    if not d.get("gpu") or not d.get("model"):
        raise CliError.of("cli.need_gpu_and_model")
    # Only a value left out (a flag not passed, a key absent or JSON null) takes the default: an empty `--ctx ""`,
    # a `"ctx": 0` or a `"model": ["x"]` is refused as typed, never quietly answered for something else.
    return FitRequest.of(**{key: d.get(key) for key in FIT_KEYS})


def fetch_hf(svc: Service, text: str, *, catalog_first: bool = True) -> None:
    """`hf:org/name` → read its config from the hub (cached in the data dir) into the service. A repo the
    catalog lists is answered from the catalog unless `catalog_first` is off (`catalog import-hf` derives
    the entry from the Hub's config whatever the catalog holds)."""
    key = text.strip()
    if not key.lower().startswith("hf:") or key in svc.extra_models:
        return
    if catalog_first and not svc.needs_hub(key):
        return
    from bot.huggingface_client import HubClient
    from bot.settings import Settings

    async def go() -> Any:
        async with HubClient.from_settings(Settings()) as hub:
            return await hub.get_or_fetch(key)

    svc.extra_models[key] = asyncio.run(go())


def at_least_one(text: str) -> int:
    """--limit: a row count; 0 or less would print an empty table (and -1 drop the last row)."""
    try:
        value = int(text)
    except ValueError:
        raise argparse.ArgumentTypeError(t(None, "cli.not_whole_number", got=repr(text))) from None
    if value < 1:
        raise argparse.ArgumentTypeError(t(None, "cli.at_least_one", got=value))
    return value

