"""/compare: two GPUs for one model, or two models on one GPU, side by side."""

from __future__ import annotations

from typing import TYPE_CHECKING

import discord
from discord import app_commands
from discord.ext import commands

from bot.cogs.common import (
    ENGINE_CHOICES,
    HEAVY_COMMAND_PER_S,
    HEAVY_COMMAND_RATE,
    Tokens,
    gpu_autocomplete,
    model_autocomplete,
    quant_autocomplete,
)
from bot.cogs.settings import defaults_for
from bot.params import BadValue, parse_tokens
from bot.requests import FitRequest
from estimator.query import DEFAULT_CTX, DEFAULT_ENGINE, DEFAULT_KV

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
        quant="One format for both sides (default: the best that fits both)",
    )
    @app_commands.choices(engine=ENGINE_CHOICES)
    @app_commands.autocomplete(
        gpu=gpu_autocomplete, gpu2=gpu_autocomplete, model=model_autocomplete, model2=model_autocomplete,
        quant=quant_autocomplete,
    )
    @app_commands.checks.cooldown(HEAVY_COMMAND_RATE, HEAVY_COMMAND_PER_S)
    async def compare(
        self,
        interaction: discord.Interaction,
        model: str,
        gpu: str | None = None,
        gpu2: str | None = None,
        model2: str | None = None,
        ctx: Tokens | None = None,
        engine: str | None = None,
        quant: str | None = None,
    ) -> None:
        if not gpu2 and not model2:
            raise BadValue.of("compare.needs_second")
        defaults = await defaults_for(self.bot, interaction)
        first_gpu = defaults.require_gpu(gpu)
        tokens = parse_tokens(defaults.take("ctx", ctx) or DEFAULT_CTX)
        engine = defaults.take("engine", engine) or DEFAULT_ENGINE
        kv = defaults.take("kv", None) or DEFAULT_KV
        reqs = [
            FitRequest(gpu=first_gpu, model=model, ctx=tokens, engine=engine, kv=kv, quant=quant),
            FitRequest(gpu=gpu2 or first_gpu, model=model2 or model, ctx=tokens, engine=engine, kv=kv, quant=quant),
        ]
        svc = self.bot.service
        for r in reqs:
            svc.base_query(r)
        await self.bot.answer(
            interaction,
            "compare",
            {"a": reqs[0].__dict__, "b": reqs[1].__dict__},
            "compare", reqs,
            note=defaults.note(str(interaction.locale.value), {"gpu": svc.gpu(first_gpu).name}),
        )


async def setup(bot: RigBot) -> None:
    await bot.add_cog(Compare(bot))
