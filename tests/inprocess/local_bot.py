"""The real bot, run in this test process against the loopback Discord: the same gateway events, interaction
payloads and REST calls as a bot process gets, and the stand-in's checks on everything the bot sends, without
the start-up of a process (its imports, catalog and chart workers) for each module."""

from __future__ import annotations

import asyncio
import time
from collections.abc import AsyncIterator
from contextlib import asynccontextmanager
from pathlib import Path
from typing import Any

import discord

from bot.client import RigBot, point_at
from bot.sandbox import Sandbox
from bot.settings import Settings


@asynccontextmanager
async def bot_in_this_process(sandbox: Sandbox, data_dir: Path, ready_timeout: float = 60,
                              **settings: Any) -> AsyncIterator[RigBot]:
    """Started as `python -m bot` starts it, pointed at `sandbox`, with `settings` over the environment's;
    returns once commands are synced and every guild is ready, as Sandbox.start_bot does for a process.
    Charts are drawn in threads: a worker process would import the whole bot again, which is the cost this
    saves (tests/e2e keeps real workers)."""
    env = sandbox.bot_env()
    chosen = Settings(**{"discord_token": env["DISCORD_TOKEN"], "discord_api_base": env["DISCORD_API_BASE"],
                         "discord_gateway_url": env["DISCORD_GATEWAY_URL"], "rigcheck_data_dir": data_dir,
                         "rigcheck_http_enabled": False, "rigcheck_guild_ready_timeout": 0.2,
                         "rigcheck_render_workers": 0, **settings})
    # The endpoints are discord.py's globals: put back what the rest of this process expects.
    endpoints = discord.http.Route.BASE, discord.gateway.DiscordWebSocket.DEFAULT_GATEWAY
    point_at(chosen)
    syncs, identifies = sandbox.state.commands.syncs, sandbox.state.hub.identifies
    bot = RigBot(chosen)
    running = asyncio.create_task(bot.start(env["DISCORD_TOKEN"]))
    try:
        deadline = time.monotonic() + ready_timeout
        while not (sandbox.state.commands.syncs > syncs and sandbox.state.hub.identifies > identifies
                   and sandbox.state.hub.all_ready()):
            if running.done():
                running.result()  # start-up failed: its exception
                raise AssertionError("the bot stopped before it was ready")
            assert time.monotonic() < deadline, "the bot did not sync and connect in time"
            await asyncio.sleep(0.05)
        yield bot
    finally:
        await bot.close()
        await asyncio.gather(running, return_exceptions=True)
        discord.http.Route.BASE, discord.gateway.DiscordWebSocket.DEFAULT_GATEWAY = endpoints
