"""What the commands share besides their option types (those are `bot.transformers`): rate limits, the
sort choices, echoing user text safely."""

from __future__ import annotations

import discord
from discord import app_commands

# The hub deadline and the context transformer are part of what a command's options mean; they are named
# here too because the commands' tests reach them through this module.
from bot.transformers import HF_DEFER_AFTER_S, TokensTransformer

# Per-user limit on commands that render charts: generous for a person, a brake on a script.
HEAVY_COMMAND_RATE = 20
HEAVY_COMMAND_PER_S = 60.0
SORT_CHOICES = [app_commands.Choice(name=n, value=n) for n in ("quality", "speed", "size")]


ECHO_MAX_CHARS = 40


def echo(text: str, limit: int = ECHO_MAX_CHARS) -> str:
    """User text shown back in a public embed: bounded, with markdown (masked links included) and mentions
    made inert, so an option cannot post a link or a wall of text under the bot's name."""
    clipped = " ".join(text.split())
    clipped = clipped[:limit] + ("…" if len(clipped) > limit else "")
    return discord.utils.escape_mentions(discord.utils.escape_markdown(clipped))


__all__ = ["HEAVY_COMMAND_PER_S", "HEAVY_COMMAND_RATE", "HF_DEFER_AFTER_S", "SORT_CHOICES", "TokensTransformer",
           "echo"]


