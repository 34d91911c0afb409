"""The `rigcheck` command line: one module per command family, put together in `bot.cli.main`."""

from bot.cli.common import EXIT_BROKEN_PIPE, EXIT_USAGE
from bot.cli.main import main

__all__ = ["EXIT_BROKEN_PIPE", "EXIT_USAGE", "main"]
