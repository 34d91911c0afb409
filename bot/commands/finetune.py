"""/finetune: peak memory of QLoRA, LoRA or full fine-tuning, and what fits."""

from __future__ import annotations

from typing import TYPE_CHECKING, Literal

import discord
from discord import app_commands
from discord.ext import commands

from bot.commands.common import (
    HEAVY_COMMAND_PER_S,
    HEAVY_COMMAND_RATE,
    GpuCount,
    NumberRange,
    gpu_autocomplete,
    model_autocomplete,
    one_of,
)
from bot.commands.settings import defaults_for
from bot.params import parse_tokens

if TYPE_CHECKING:
    from bot.client import RigBot

METHODS = ("qlora", "lora", "full")


class Finetune(commands.Cog):
    def __init__(self, bot: RigBot) -> None:
        self.bot = bot

    @app_commands.command(name="finetune", description="Memory for QLoRA, LoRA or full fine-tuning")
    @app_commands.describe(
        gpu="GPU",
        model="Model",
        method="qlora, lora or full",
        ctx="Sequence length (default 2048)",
        batch="Micro-batch (default 1)",
        gpus="Number of GPUs",
    )
    @app_commands.autocomplete(gpu=gpu_autocomplete, model=model_autocomplete)
    @app_commands.checks.cooldown(HEAVY_COMMAND_RATE, HEAVY_COMMAND_PER_S)
    async def finetune(
        self,
        interaction: discord.Interaction,
        model: str,
        gpu: str | None = None,
        method: Literal["qlora", "lora", "full"] = "qlora",
        ctx: str | None = None,
        batch: app_commands.Transform[int, NumberRange("batch", 1, 128)] = 1,
        gpus: GpuCount = 1,
    ) -> None:
        svc = self.bot.service
        one_of("method", method, METHODS)
        defaults = await defaults_for(self.bot, interaction)
        g = svc.gpu(defaults.require_gpu(gpu))
        m, _ = svc.model(model)
        seq = parse_tokens(ctx or 2048)
        params = {"gpu": g.id, "model": m.id, "method": method, "seq": seq, "batch": batch, "gpus": gpus}
        await self.bot.answer(
            interaction, "finetune", params, "finetune", g, m, method, seq, batch, gpus,
            note=defaults.note(str(interaction.locale.value), {"gpu": g.name}),
        )


async def setup(bot: RigBot) -> None:
    await bot.add_cog(Finetune(bot))
