"""/compare: two GPUs for one model, or two models on one GPU, side by side."""

from __future__ import annotations

from typing import TYPE_CHECKING

import discord
from discord import app_commands
from discord.ext import commands

from bot.commands.common import (
    ENGINE_CHOICES,
    HEAVY_COMMAND_PER_S,
    HEAVY_COMMAND_RATE,
    gpu_autocomplete,
    model_autocomplete,
)
from bot.params import BadValue, parse_tokens
from bot.service import FitRequest

if TYPE_CHECKING:
    from bot.client import RigBot


class Compare(commands.Cog):
    def __init__(self, bot: RigBot) -> None:
        self.bot = bot

    @app_commands.command(name="compare", description="Two GPUs for one model, or two models on one GPU")
    @app_commands.describe(
        gpu="First GPU",
        model="First model",
        gpu2="Second GPU (compare GPUs)",
        model2="Second model (compare models)",
        ctx="Context length",
        engine="Inference engine",
    )
    @app_commands.choices(engine=ENGINE_CHOICES)
    @app_commands.autocomplete(
        gpu=gpu_autocomplete, gpu2=gpu_autocomplete, model=model_autocomplete, model2=model_autocomplete
    )
    @app_commands.checks.cooldown(HEAVY_COMMAND_RATE, HEAVY_COMMAND_PER_S)
    async def compare(
        self,
        interaction: discord.Interaction,
        gpu: str,
        model: str,
        gpu2: str | None = None,
        model2: str | None = None,
        ctx: str | None = None,
        engine: str = "llama.cpp",
    ) -> None:
        if not gpu2 and not model2:
            raise BadValue("give gpu2 (to compare GPUs) or model2 (to compare models)")
        tokens = parse_tokens(ctx or 8192)
        reqs = [
            FitRequest(gpu=gpu, model=model, ctx=tokens, engine=engine),
            FitRequest(gpu=gpu2 or gpu, model=model2 or model, ctx=tokens, engine=engine),
        ]
        svc = self.bot.service
        for r in reqs:
            svc.base_query(r)
        await self.bot.answer(
            interaction,
            "compare",
            {"a": reqs[0].__dict__, "b": reqs[1].__dict__},
            "compare", reqs,
        )


async def setup(bot: RigBot) -> None:
    await bot.add_cog(Compare(bot))
