"""CLI commands that need the bot's heavier parts; registered by `bot.cli` at start-up."""

from __future__ import annotations

from collections.abc import Callable
from typing import Any

REGISTER: list[Callable[[Any], None]] = []
