"""/finetune: peak memory of QLoRA, LoRA or full fine-tuning, and what fits."""

from __future__ import annotations

from typing import TYPE_CHECKING, Literal, get_args

import discord
from discord import app_commands
from discord.ext import commands

from bot.cogs.common import (
    HEAVY_COMMAND_PER_S,
    HEAVY_COMMAND_RATE,
    GpuCount,
    NumberRange,
    gpu_autocomplete,
    model_autocomplete,
    one_of,
)
from bot.cogs.settings import defaults_for, join_notes
from bot.params import parse_tokens
from bot.render.replies import choice_note
from estimator import finetune as ft

if TYPE_CHECKING:
    from bot.client import RigBot

METHODS = ("qlora", "lora", "full")


FRAMEWORKS = get_args(ft.Framework)
PRECISIONS = get_args(ft.Regime)
OPTIMIZERS = get_args(ft.Optimizer)
CHECKPOINTING = get_args(ft.Checkpointing)
LOSSES = get_args(ft.Loss)
TARGETS = get_args(ft.Targets)
SHARDING = ("ddp", "zero2", "zero3", "fsdp")
CPU_OFFLOAD = get_args(ft.Offload)


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
        framework: Literal["hf", "trl", "unsloth", "torchtune", "axolotl", "litgpt", "llama-factory"] | None = None,
        precision: Literal["bf16", "amp_bf16", "amp_fp16", "fp32"] | None = None,
        optimizer: Literal[
            "adamw", "adamw_fp32", "adamw_bf16", "adamw8bit", "paged_adamw8bit", "paged_adamw", "adafactor", "sgd"
        ] | None = None,
        checkpointing: Literal["none", "block", "selective"] | None = None,
        offload_activations: bool | None = None,
        compile: bool | None = None,
        loss: Literal["fp32_upcast", "chunked", "fused"] | None = None,
        rank: app_commands.Transform[int, NumberRange("rank", 1, 1024)] | None = None,
        targets: Literal["qv", "attention", "all"] | None = None,
        sharding: Literal["ddp", "zero2", "zero3", "fsdp"] | None = None,
        cpu_offload: Literal["none", "optimizer", "params"] | None = None,
    ) -> None:
        svc = self.bot.service
        one_of("method", method, METHODS)
        for name, value, allowed in (
            ("framework", framework, FRAMEWORKS),
            ("precision", precision, PRECISIONS),
            ("optimizer", optimizer, OPTIMIZERS),
            ("checkpointing", checkpointing, CHECKPOINTING),
            ("loss", loss, LOSSES),
            ("targets", targets, TARGETS),
            ("sharding", sharding, SHARDING),
            ("cpu_offload", cpu_offload, CPU_OFFLOAD),
        ):
            if value is not None:
                one_of(name, value, allowed)
        defaults = await defaults_for(self.bot, interaction)
        choice = svc.gpu_choice(defaults.require_gpu(gpu), gpus)
        g, gpus = choice.gpu, choice.count
        m, _ = svc.model(model)
        seq = parse_tokens(ctx or 2048)
        svc.check_context(m, seq)
        # Option names people see → the estimator's knob names; unset ones are left to the framework.
        given = {
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
        }
        knobs = {k: v for k, v in given.items() if v is not None}
        params = {"gpu": g.id, "model": m.id, "method": method, "seq": seq, "batch": batch, "gpus": gpus, **knobs}
        locale = str(interaction.locale.value)
        await self.bot.answer(
            interaction, "finetune", params, "finetune", g, m, method, seq, batch, gpus, knobs,
            note=join_notes(choice_note(choice, locale), defaults.note(locale, {"gpu": g.name})),
        )


async def setup(bot: RigBot) -> None:
    await bot.add_cog(Finetune(bot))
