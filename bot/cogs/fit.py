"""/fit: does a model run on a GPU, in which format, how fast, with how much context."""

from __future__ import annotations

from typing import TYPE_CHECKING

import discord
from discord import app_commands
from discord.ext import commands

from bot.cogs.common import HEAVY_COMMAND_PER_S, HEAVY_COMMAND_RATE
from bot.cogs.report import community_field
from bot.cogs.settings import defaults_note, join_notes
from bot.render.replies import choice_note
from bot.requests import FitRequest
from bot.transformers import (
    Batch,
    EngineOption,
    GpuCount,
    GpuOption,
    KvOption,
    ModelOption,
    PromptTokens,
    QuantOption,
    Tokens,
    given,
)

if TYPE_CHECKING:
    from bot.client import RigBot


class Fit(commands.Cog):
    def __init__(self, bot: RigBot) -> None:
        self.bot = bot

    @app_commands.command(name="fit", description="Does a model run on a GPU? VRAM, speed, max context")
    @app_commands.describe(
        gpu="GPU, e.g. T4, RTX 4090, A100 40GB, M2 Max 64GB",
        model="Model, e.g. qwen3-8b, Qwen/Qwen3-8B, llama3.1:8b-instruct-q4_K_M",
        quant="Format (Q4_K_M, Q8_0, AWQ…) or level (int4, int8, fp16); default compares three",
        ctx="Context length: 8k, 32k, 128K, 1M",
        engine="Inference engine",
        kv="KV cache precision",
        gpus="Number of GPUs (1-8)",
        prompt="Prompt length for time to first token (default 2048)",
        batch="Concurrent sequences (default 1)",
    )
    @app_commands.checks.cooldown(HEAVY_COMMAND_RATE, HEAVY_COMMAND_PER_S)
    async def fit(
        self,
        interaction: discord.Interaction,
        model: ModelOption,
        gpu: GpuOption | None = None,
        quant: QuantOption | None = None,
        ctx: Tokens | None = None,
        engine: EngineOption | None = None,
        kv: KvOption | None = None,
        gpus: GpuCount = 1,
        prompt: PromptTokens | None = None,
        batch: Batch = 1,
    ) -> None:
        built = await self.bot.build(interaction, FitRequest, gpu=given(gpu), model=given(model), quant=quant,
                                     engine=engine,
                                     ctx=ctx, prompt=prompt, kv=kv, gpus=gpus, batch=batch)
        req, svc = built.request, self.bot.service
        q, formats = svc.base_query(req)
        locale = str(interaction.locale.value)
        note = join_notes(choice_note(svc.fit_choice(req), locale), defaults_note(built, locale, {"gpu": q.gpu.name}))
        community = await community_field(self.bot, interaction.guild_id, q, formats, locale)
        await self.bot.answer(interaction, req, note=note, extra_fields=[community] if community else None)


async def setup(bot: RigBot) -> None:
    await bot.add_cog(Fit(bot))
