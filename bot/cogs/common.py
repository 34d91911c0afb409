"""What the commands share besides their option types (those are `bot.transformers`): rate limits, the
sort choices, echoing user text safely."""

from __future__ import annotations

from discord import app_commands

# How a reply repeats what a person typed: the cogs, the error handler and the refusals worded with `Typed`
# values share the one helper, which lives with the option parsing.
from bot.params import ECHO_MAX_CHARS, echo

# The hub deadline and the context transformer are part of what a command's options mean; they are named
# here too because the commands' tests reach them through this module.
from bot.transformers import HF_DEFER_AFTER_S, TokensTransformer

# Per-user limit on commands that render charts: generous for a person, a brake on a script.
HEAVY_COMMAND_RATE = 20
HEAVY_COMMAND_PER_S = 60.0
SORT_CHOICES = [app_commands.Choice(name=n, value=n) for n in ("quality", "speed", "size")]


__all__ = ["ECHO_MAX_CHARS", "HEAVY_COMMAND_PER_S", "HEAVY_COMMAND_RATE", "HF_DEFER_AFTER_S", "SORT_CHOICES",
           "TokensTransformer", "echo"]


