"""A loopback stand-in for Discord's REST API and gateway, with a driver for tests and people.

The unmodified discord.py client talks to it over 127.0.0.1; nothing here ever leaves the machine.
"""

from bot.sandbox.ask import PlaygroundSession, ask, serve_playground
from bot.sandbox.driver import AutocompleteError, Driver, ReplyTimeout
from bot.sandbox.harness import BotProcess, BotStartError, Sandbox
from bot.sandbox.models import DiscordError, Reply, ReplyFile
from bot.sandbox.server import SandboxServer
from bot.sandbox.world import World

__all__ = [
    "AutocompleteError",
    "BotProcess",
    "BotStartError",
    "DiscordError",
    "Driver",
    "PlaygroundSession",
    "Reply",
    "ReplyFile",
    "ReplyTimeout",
    "Sandbox",
    "SandboxServer",
    "World",
    "ask",
    "serve_playground",
]
