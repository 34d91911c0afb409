"""/finetune: peak memory of QLoRA, LoRA or full fine-tuning, and what fits."""

from __future__ import annotations

from typing import TYPE_CHECKING, Literal

import discord
from discord import app_commands
from discord.ext import commands

from bot.cogs.common import HEAVY_COMMAND_PER_S, HEAVY_COMMAND_RATE
from bot.cogs.settings import defaults_note, join_notes
from bot.render.replies import choice_note
from bot.requests import FinetuneRequest
from bot.transformers import GpuCount, GpuOption, ModelOption, NumberRange, Tokens, given

if TYPE_CHECKING:
    from bot.client import RigBot


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
        framework="Take every unset knob from this trainer's defaults",
        precision="bf16: pure bf16; amp_*: fp32 master weights (mixed precision); fp32",
        optimizer="Optimizer (8-bit and paged from bitsandbytes)",
        checkpointing="Activation checkpointing: none, every block, or selective (attention only)",
        offload_activations="Keep saved activations in CPU memory (torchtune, Unsloth)",
        compile="torch.compile of the blocks and the loss (torchtune compile: True)",
        loss="fp32_upcast (Hugging Face), chunked (torchtune, TRL, LitGPT) or fused (Liger, Unsloth)",
        rank="LoRA rank",
        targets="LoRA on q,v only, all attention, or all linear layers",
        sharding="Several GPUs: ddp (replicated), zero2, zero3 or fsdp",
        cpu_offload="Optimizer state or parameters in CPU memory (ZeRO-Offload, FSDP CPU offload)",
        empty_cache_every="The trainer empties PyTorch's cache every N steps (Hugging Face torch_empty_cache_steps)",
    )
    @app_commands.checks.cooldown(HEAVY_COMMAND_RATE, HEAVY_COMMAND_PER_S)
    async def finetune(
        self,
        interaction: discord.Interaction,
        model: ModelOption,
        gpu: GpuOption | None = None,
        method: Literal["qlora", "lora", "full"] | None = None,
        ctx: Tokens | None = None,
        batch: app_commands.Transform[int, NumberRange("batch", 1, 128)] = 1,
        gpus: GpuCount = 1,
        framework: Literal["hf", "trl", "unsloth", "torchtune", "axolotl", "litgpt", "llama-factory"] | None = None,
        precision: Literal["bf16", "amp_bf16", "amp_fp16", "fp32"] | None = None,
        optimizer: Literal[
            "adamw", "adamw_fp32", "adamw_bf16", "adamw8bit", "paged_adamw8bit", "paged_adamw", "adafactor", "sgd",
            "sgd_momentum",
        ] | None = None,
        checkpointing: Literal["none", "block", "selective"] | None = None,
        offload_activations: bool | None = None,
        compile: bool | None = None,
        loss: Literal["fp32_upcast", "chunked", "fused"] | None = None,
        rank: app_commands.Transform[int, NumberRange("rank", 1, 1024)] | None = None,
        targets: Literal["qv", "attention", "all"] | None = None,
        sharding: Literal["ddp", "zero2", "zero3", "fsdp"] | None = None,
        cpu_offload: Literal["none", "optimizer", "params"] | None = None,
        empty_cache_every: app_commands.Transform[int, NumberRange("empty_cache_every", 1, 100_000)] | None = None,
    ) -> None:
        # Option names people see → the estimator's knob names; unset ones are left to the framework.
        knobs = {
            "framework": framework,
            "regime": precision,
            "optimizer": optimizer,
            "checkpointing_mode": checkpointing,
            "activation_offload": offload_activations,
            "compiled": compile,
            "loss": loss,
            "rank": rank,
            "targets": targets,
            "sharding": sharding,
            "offload": cpu_offload,
            "empty_cache_steps": empty_cache_every,
        }
        built = await self.bot.build(interaction, FinetuneRequest, gpu=given(gpu), model=given(model), method=method,
                                     seq=ctx, batch=batch, gpus=gpus, knobs=knobs)
        req = built.request
        choice = self.bot.service.gpu_choice(req.gpu, req.gpus)
        locale = str(interaction.locale.value)
        note = join_notes(choice_note(choice, locale), defaults_note(built, locale, {"gpu": choice.gpu.name}))
        await self.bot.answer(interaction, req, note=note)


async def setup(bot: RigBot) -> None:
    await bot.add_cog(Finetune(bot))
