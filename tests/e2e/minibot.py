"""A tiny bot on unmodified discord.py that exercises every path of the loopback Discord.

Run against a sandbox with DISCORD_TOKEN, DISCORD_API_BASE and DISCORD_GATEWAY_URL set:
    python tests/e2e/minibot.py
MINIBOT_SHARDS=N runs it as an AutoShardedBot with N shards; MINIBOT_GUILD=<id> syncs to that guild only.
"""

from __future__ import annotations

import asyncio
import io
import logging
import os
import struct
import zlib
from typing import Literal

import discord
import discord.gateway
import discord.http
import yarl
from discord import app_commands
from discord.ext import commands

log = logging.getLogger("minibot")

MODEL_NAMES = [f"qwen3-{size}" for size in ("0.6b", "1.7b", "4b", "8b", "14b", "32b")] + [
    f"llama3.1-{size}" for size in ("8b", "70b", "405b")
]


def png_bytes(width: int, height: int, rgb: tuple[int, int, int]) -> bytes:
    """A solid-colour PNG, written by hand so the bot needs no imaging library."""

    def chunk(kind: bytes, data: bytes) -> bytes:
        return struct.pack(">I", len(data)) + kind + data + struct.pack(">I", zlib.crc32(kind + data) & 0xFFFFFFFF)

    row = b"\x00" + bytes(rgb) * width
    header = struct.pack(">IIBBBBB", width, height, 8, 2, 0, 0, 0)
    return (
        b"\x89PNG\r\n\x1a\n"
        + chunk(b"IHDR", header)
        + chunk(b"IDAT", zlib.compress(row * height))
        + chunk(b"IEND", b"")
    )


ECHO_PNG = png_bytes(8, 4, (88, 101, 242))


def point_at_loopback() -> None:
    """discord.py has no setting for its endpoints, so the class attributes are assigned."""
    discord.http.Route.BASE = os.environ["DISCORD_API_BASE"]
    discord.gateway.DiscordWebSocket.DEFAULT_GATEWAY = yarl.URL(os.environ["DISCORD_GATEWAY_URL"])


class VoteView(discord.ui.View):
    def __init__(self) -> None:
        super().__init__(timeout=120)

    @discord.ui.button(label="Yes", style=discord.ButtonStyle.success, custom_id="vote:yes")
    async def yes(self, interaction: discord.Interaction, button: discord.ui.Button[VoteView]) -> None:
        await interaction.response.edit_message(content=f"{interaction.user.name} voted yes", view=None)

    @discord.ui.button(label="Later", style=discord.ButtonStyle.secondary, custom_id="vote:later")
    async def later(self, interaction: discord.Interaction, button: discord.ui.Button[VoteView]) -> None:
        await interaction.response.send_message("asked again later", ephemeral=True)


daily = app_commands.Group(name="daily", description="Daily summaries")
daily_admin = app_commands.Group(name="admin", description="Daily admin", parent=daily)


@daily.command(name="subscribe", description="Post the daily summary in a channel")
@app_commands.describe(channel="Where to post")
async def daily_subscribe(interaction: discord.Interaction, channel: discord.TextChannel) -> None:
    await interaction.response.send_message(f"subscribed {channel.mention}", ephemeral=True)
    target = interaction.client.get_channel(channel.id)
    if isinstance(target, discord.TextChannel):
        await target.send("daily summary: all GPUs still too small")


@daily_admin.command(name="reset", description="Forget every subscription")
async def daily_reset(interaction: discord.Interaction, confirm: bool) -> None:
    await interaction.response.send_message(f"reset confirmed={confirm}")


def build_tree(bot: commands.Bot | commands.AutoShardedBot) -> None:
    tree = bot.tree

    @tree.command(description="Is the bot alive?")
    async def ping(interaction: discord.Interaction) -> None:
        shard = interaction.guild.shard_id if interaction.guild else 0
        await interaction.response.send_message(f"pong from shard {shard}")

    @tree.command(description="Repeat text in an embed with a picture")
    @app_commands.describe(text="What to repeat", count="How many times")
    async def echo(interaction: discord.Interaction, text: str, count: app_commands.Range[int, 1, 5] = 1) -> None:
        embed = discord.Embed(title="Echo", description=" ".join([text] * count), colour=0x5865F2)
        embed.add_field(name="count", value=str(count))
        embed.set_image(url="attachment://echo.png")
        embed.set_footer(text="minibot")
        await interaction.response.send_message(embed=embed, file=discord.File(io.BytesIO(ECHO_PNG), "echo.png"))

    @tree.command(description="A reply only you can see")
    async def secret(interaction: discord.Interaction) -> None:
        await interaction.response.send_message("for your eyes only", ephemeral=True)

    @tree.command(description="Pick a model")
    @app_commands.describe(name="Model name")
    async def model(interaction: discord.Interaction, name: str) -> None:
        await interaction.response.send_message(f"model {name}")

    @model.autocomplete("name")
    async def model_autocomplete(interaction: discord.Interaction, current: str) -> list[app_commands.Choice[str]]:
        if current == "overflow":
            return [app_commands.Choice(name=f"choice {i}", value=str(i)) for i in range(30)]
        return [app_commands.Choice(name=m, value=m) for m in MODEL_NAMES if current.lower() in m][:25]

    @tree.command(description="Pick options of every type")
    async def pick(
        interaction: discord.Interaction,
        size: Literal["small", "large"],
        ratio: app_commands.Range[float, 0.0, 1.0],
        loud: bool = False,
    ) -> None:
        text = f"size={size} ratio={ratio} loud={loud}"
        await interaction.response.send_message(text.upper() if loud else text)

    @tree.command(description="Vote with buttons")
    async def vote(interaction: discord.Interaction) -> None:
        await interaction.response.send_message("Do you agree?", view=VoteView())

    @tree.command(description="Think first, answer later")
    async def slow(interaction: discord.Interaction) -> None:
        await interaction.response.defer(thinking=True)
        await asyncio.sleep(0.3)
        await interaction.followup.send("done thinking", file=discord.File(io.BytesIO(ECHO_PNG), "slow.png"))

    @tree.command(description="Answer too late")
    async def late(interaction: discord.Interaction) -> None:
        await asyncio.sleep(3.5)
        await interaction.response.send_message("too late")

    @tree.command(description="Send an embed over Discord's limits")
    async def huge(interaction: discord.Interaction) -> None:
        await interaction.response.send_message(embed=discord.Embed(title="huge", description="x" * 5000))

    tree.add_command(daily)


def make_bot() -> commands.Bot | commands.AutoShardedBot:
    intents = discord.Intents.default()
    shards = os.environ.get("MINIBOT_SHARDS")
    options: dict[str, object] = {"command_prefix": "!", "intents": intents, "guild_ready_timeout": 0.2}
    bot: commands.Bot | commands.AutoShardedBot
    if shards:
        bot = commands.AutoShardedBot(shard_count=None if shards == "auto" else int(shards), **options)  # type: ignore[arg-type]
    else:
        bot = commands.Bot(**options)  # type: ignore[arg-type]
    build_tree(bot)

    async def setup_hook() -> None:
        guild_id = os.environ.get("MINIBOT_GUILD")
        if guild_id:
            guild = discord.Object(id=int(guild_id))
            bot.tree.copy_global_to(guild=guild)
            await bot.tree.sync(guild=guild)
        else:
            await bot.tree.sync()

    async def on_ready() -> None:
        log.info("ready as %s in %d guilds", bot.user, len(bot.guilds))

    async def before_identify_hook(shard_id: int | None, *, initial: bool = False) -> None:
        # The default waits 5 s between shards (Discord's identify rate limit); the sandbox has none.
        return None

    bot.setup_hook = setup_hook  # type: ignore[method-assign]
    bot.before_identify_hook = before_identify_hook  # type: ignore[method-assign]
    bot.add_listener(on_ready)
    return bot


async def main() -> None:
    logging.basicConfig(level=logging.INFO, format="%(levelname)s %(name)s: %(message)s")
    logging.getLogger("discord.http").setLevel(logging.WARNING)
    point_at_loopback()
    async with make_bot() as bot:
        await bot.start(os.environ["DISCORD_TOKEN"])


if __name__ == "__main__":
    import contextlib

    with contextlib.suppress(KeyboardInterrupt):
        asyncio.run(main())
