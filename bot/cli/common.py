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



def fit_request(d: dict[str, Any]) -> FitRequest:
    if not d.get("gpu") or not d.get("model"):
        raise CliError.of("cli.need_gpu_and_model")
    # An empty engine, context or KV cache is "not given"; a count of 0 is refused like any out of range.
    return FitRequest.of(gpu=str(d["gpu"]), model=str(d["model"]), quant=d.get("quant"), engine=d.get("engine") or None,
                      ctx=d.get("ctx") or None, prompt=d.get("prompt"), kv=d.get("kv") or None, gpus=d.get("gpus"),
                      batch=d.get("batch"))


def fetch_hf(svc: Service, text: str) -> None:
    """`hf:org/name` → read its config from the hub (cached in the data dir) into the service."""
    if not text.strip().lower().startswith("hf:") or text.strip() in svc.extra_models:
        return
    from bot.huggingface_client import HubClient
    from bot.settings import Settings

    async def go() -> Any:
        async with HubClient.from_settings(Settings()) as hub:
            return await hub.get_or_fetch(text.strip())

    svc.extra_models[text.strip()] = asyncio.run(go())


def at_least_one(text: str) -> int:
    """--limit: a row count; 0 or less would print an empty table (and -1 drop the last row)."""
    try:
        value = int(text)
    except ValueError:
        raise argparse.ArgumentTypeError(t(None, "cli.not_whole_number", got=repr(text))) from None
    if value < 1:
        raise argparse.ArgumentTypeError(t(None, "cli.at_least_one", got=value))
    return value

