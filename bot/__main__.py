"""`python -m bot`: run the bot with settings from the environment (the sandbox starts it this way)."""

from __future__ import annotations

import asyncio
import logging
import signal
import sys

from bot.client import RigBot, point_at
from bot.settings import Settings


def configure_logging(level: str) -> None:
    logging.basicConfig(level=level, format="%(asctime)s %(levelname)s %(name)s: %(message)s", stream=sys.stderr)
    logging.getLogger("discord.http").setLevel(logging.WARNING)
    logging.getLogger("discord.gateway").setLevel(logging.WARNING)


async def main() -> int:
    settings = Settings()
    configure_logging(settings.rigcheck_log_level)
    if settings.discord_token is None:
        logging.getLogger("bot").error("DISCORD_TOKEN is not set; use `rigcheck run` to try the bot in the sandbox")
        return 2
    point_at(settings)
    bot = RigBot(settings)
    loop = asyncio.get_running_loop()
    closing: list[asyncio.Task[None]] = []

    def stop() -> None:
        if not closing:
            closing.append(asyncio.ensure_future(bot.close()))

    for sig in (signal.SIGTERM, signal.SIGINT):
        loop.add_signal_handler(sig, stop)
    async with bot:
        await bot.start(settings.discord_token.get_secret_value())
    # start() returns as soon as the gateway is closed; the stores and the web server close after that,
    # and asyncio.run would cancel that half-way (leaving a database thread that blocks exit).
    if closing:
        await closing[0]
    return 0


if __name__ == "__main__":
    sys.exit(asyncio.run(main()))
