"""The `rigcheck` command line: one module per command family, put together in `bot.cli.main`."""

import signal
import sys

_interrupted: list[int] = []


def _interrupted_while_loading(signum: int, _frame: object) -> None:
    # Ctrl-C in the second it takes to import the CLI: nothing has started, so nothing to say. Raising here
    # could land inside a C extension's initialisation (matplotlib's ft2font), which then aborts the process; the
    # interrupt is only noted, and honoured once the imports are done.
    _interrupted.append(signum)


_loading = signal.getsignal(signal.SIGINT) is signal.default_int_handler
if _loading:
    signal.signal(signal.SIGINT, _interrupted_while_loading)

from bot.cli.common import EXIT_BROKEN_PIPE, EXIT_USAGE  # noqa: E402
from bot.cli.main import main  # noqa: E402

if _loading:  # asyncio.run and `main` handle Ctrl-C from here on
    signal.signal(signal.SIGINT, signal.default_int_handler)
    if _interrupted:
        # The status the command gives for Ctrl-C later (`run`: 0, the rest: 130).
        raise SystemExit(0 if "run" in sys.argv[1:] else 130)

__all__ = ["EXIT_BROKEN_PIPE", "EXIT_USAGE", "main"]
