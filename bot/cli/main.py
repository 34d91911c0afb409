"""`rigcheck …`: the same answers as the Discord bot, on a terminal, as tables or JSON.

Bad input prints one line on stderr and exits with status 2; nothing prints a traceback.
"""

from __future__ import annotations

import argparse
import contextlib
import os
import sys
from collections.abc import Sequence

from bot.cli import catalog as catalog_cli
from bot.cli import estimate, finetune, reports, run, state
from bot.cli.common import EXIT_BROKEN_PIPE, EXIT_USAGE, CliError
from bot.huggingface_client import HubError
from bot.params import BadValue
from bot.service import Service
from bot.web import trigger
from catalog.resolve import NotFound

# In the order `rigcheck --help` lists them.
FAMILIES = (estimate, catalog_cli, run, finetune, trigger, state, reports)


def build_parser() -> argparse.ArgumentParser:
    parser = argparse.ArgumentParser(prog="rigcheck", description="Does this LLM run on that GPU, and how fast?")
    sub = parser.add_subparsers(dest="command", required=True)
    for family in FAMILIES:
        family.register(sub)
    return parser


def main(argv: Sequence[str] | None = None) -> int:
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
