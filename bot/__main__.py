"""`python -m bot`: run the bot with settings from the environment (the sandbox starts it this way)."""

from __future__ import annotations

import asyncio
import logging
import signal
import sys
from pathlib import Path

import aiohttp
import discord
import pydantic

from bot.client import RigBot, point_at, prepare_data_dir
from bot.lifeline import die_with_parent_from_env
from bot.settings import Settings
from bot.sharding import ShardConfigError
from bot.store.errors import DataDirError, StateStoreError

log = logging.getLogger("bot")


def configure_logging(level: str) -> None:
    logging.basicConfig(level=level, format="%(asctime)s %(levelname)s %(name)s: %(message)s", stream=sys.stderr)
    logging.getLogger("discord.http").setLevel(logging.WARNING)
    logging.getLogger("discord.gateway").setLevel(logging.WARNING)


def _api_host(settings: Settings) -> str:
    return settings.discord_api_base or "https://discord.com/api"


async def main() -> int:
    try:
        settings = Settings()
    except pydantic.ValidationError as exc:
        # Names and reasons only: pydantic's own text repeats the value, which may be a password.
        problems = "; ".join(f"{'.'.join(map(str, e['loc'])).upper()}: {e['msg']}" for e in exc.errors())
        print(f"rigcheck: invalid setting: {problems}", file=sys.stderr)
        return 2
    configure_logging(settings.rigcheck_log_level)
    if settings.discord_token is None:
        log.error("DISCORD_TOKEN is not set; use `rigcheck run` to try the bot in the sandbox")
        return 2
    try:
        prepare_data_dir(Path(settings.rigcheck_data_dir))
    except DataDirError as exc:
        print(f"rigcheck: {exc}", file=sys.stderr)
        return 2
    point_at(settings)
    # The bot has no voice features; discord.py's warnings about voice libraries would only be noise.
    discord.VoiceClient.warn_nacl = discord.VoiceClient.warn_dave = False
    try:
        bot = RigBot(settings)
    except ShardConfigError as exc:
        print(f"rigcheck: {exc}", file=sys.stderr)
        return 2
    loop = asyncio.get_running_loop()
    closing: list[asyncio.Task[None]] = []

    def stop() -> None:
        if not closing:
            log.info("stopping (signal received)")
            closing.append(asyncio.ensure_future(bot.close()))

    # As PID 1 (a container without an init) the kernel drops signals that have no handler, so these
    # handlers are what makes `docker stop` and a pod's termination work at all.
    for sig in (signal.SIGTERM, signal.SIGINT):
        loop.add_signal_handler(sig, stop)
    status = 0
    try:
        async with bot:
            await bot.start(settings.discord_token.get_secret_value())
    except StateStoreError as exc:
        print(f"rigcheck: {exc}", file=sys.stderr)
        status = 2
    except discord.LoginFailure:
        print("rigcheck: Discord refused the token (DISCORD_TOKEN): copy it again from the Developer Portal, "
              "Bot → Reset Token", file=sys.stderr)
        status = 2
    except discord.PrivilegedIntentsRequired as exc:
        print(f"rigcheck: Discord refused an intent the bot asked for: {exc}", file=sys.stderr)
        status = 2
    except (aiohttp.ClientConnectionError, OSError) as exc:
        print(f"rigcheck: cannot reach Discord at {_api_host(settings)} ({type(exc).__name__}: "
              f"{str(exc).splitlines()[0] if str(exc) else 'no detail'}); check the network, DNS or proxy",
              file=sys.stderr)
        status = 1
    # start() returns as soon as the gateway is closed; the stores and the web server close after that,
    # and asyncio.run would cancel that half-way (leaving a database thread that blocks exit).
    if closing:
        await closing[0]
    return status


if __name__ == "__main__":
    # Started as a child (the sandbox, `rigcheck run`): end with the parent even if it is killed outright.
    die_with_parent_from_env()
    sys.exit(asyncio.run(main()))
