# ruff: noqa: E501  (a table of defaults and their sources: one knob per line reads best)
"""How each fine-tuning framework sets the memory knobs out of the box, each default with where it is stated.

A preset fills the knobs a person leaves unset; anything they set wins. The workload (sequence length,
micro-batch, GPU count) is the person's, never the preset's. Sources are pinned to the commit read.
"""

from __future__ import annotations

from typing import Any, Literal

from pydantic import BaseModel, ConfigDict

Framework = Literal["hf", "trl", "unsloth", "torchtune", "axolotl", "litgpt", "llama-factory"]
FRAMEWORKS: tuple[Framework, ...] = ("hf", "trl", "unsloth", "torchtune", "axolotl", "litgpt", "llama-factory")

_TT = "https://github.com/pytorch/torchtune/blob/bd2a0fc7c31430972728494fa01aaeeb0ebf1ba1"
_LIT = "https://github.com/Lightning-AI/litgpt/blob/26857050fe3ff627cd714fe92f5838f51a3d5efa"
_LF = "https://github.com/hiyouga/LLaMA-Factory/blob/ff6d4d12eeb035d6ce06805a5733dd7b29f2ac30"
_AX = "https://github.com/axolotl-ai-cloud/axolotl/blob/067b021c8b87a9e5e380b9173c704cf7340e30f5"
_TRL = "https://github.com/huggingface/trl/blob/f2cd57710ae345ea6428ae95363267fcf38a3dc8"
_UNS = "https://github.com/unslothai/unsloth/blob/015bdef0d94a241bcd94eec7a405b1700632180d"
_PEFT = "https://github.com/huggingface/peft/blob/5d602fdbff04c33c1c4de55cda9d4ae1d7cb7e40"
_HF_ARGS = "https://huggingface.co/docs/transformers/main_classes/trainer#transformers.TrainingArguments"
_HF_LOSS = "https://github.com/huggingface/transformers/blob/main/src/transformers/loss/loss_utils.py"

_PEFT_LORA = {
    "rank": (8, f"{_PEFT}/src/peft/tuners/lora/config.py (r default 8)"),
    "targets": ("qv", f"{_PEFT}/src/peft/utils/constants.py (llama: q_proj, v_proj)"),
    "lora_dropout": (0.0, f"{_PEFT}/src/peft/tuners/lora/config.py (lora_dropout default 0.0)"),
    "master_weights_fp32": (True, f"{_PEFT}/src/peft/peft_model.py (autocast_adapter_dtype=True: adapters in fp32)"),
}
_HF_COMMON = {
    "loss": ("fp32_upcast", f"{_HF_LOSS} (ForCausalLMLoss: logits.float() before cross_entropy)"),
    "checkpointing_mode": ("none", f"{_HF_ARGS} (gradient_checkpointing defaults to False)"),
    "attention": ("sdpa", "https://huggingface.co/docs/transformers/perf_infer_gpu_one (sdpa is the default)"),
    "optimizer": ("adamw", f"{_HF_ARGS} (optim: torch AdamW, moments in the parameters' dtype)"),
    "multi_gpu": ("ddp", f"{_HF_ARGS} (torchrun without fsdp/deepspeed settings runs DistributedDataParallel)"),
    "fused_optimizer": (True, "https://github.com/foundation-model-stack/fms-hf-tuning/pull/607 (\"The default for hf trainer is adamw_torch_fused\")"),
}


class Preset(BaseModel):
    """Knob values per method ("any" applies to every method) and the source of each."""

    model_config = ConfigDict(frozen=True)

    framework: Framework
    name: str
    knobs: dict[str, dict[str, Any]]
    sources: dict[str, str]

    def values(self, method: str) -> dict[str, Any]:
        return {**self.knobs.get("any", {}), **self.knobs.get(method, {})}


def _preset(framework: Framework, name: str, **per_method: dict[str, tuple[Any, str]]) -> Preset:
    knobs: dict[str, dict[str, Any]] = {}
    sources: dict[str, str] = {}
    for method, entries in per_method.items():
        knobs[method] = {k: v for k, (v, _) in entries.items()}
        for k, (_, src) in entries.items():
            sources[f"{method}.{k}"] = src
    return Preset(framework=framework, name=name, knobs=knobs, sources=sources)


PRESETS: dict[Framework, Preset] = {
    p.framework: p
    for p in (
        _preset(
            "hf",
            "Hugging Face Trainer + PEFT",
            any=dict(_HF_COMMON),
            # Transformers v5 loads weights in the config's dtype (bf16), so Trainer(bf16=True) trains them as is.
            full={"regime": ("bf16", f"{_TRL}/trl/trainer/sft_trainer.py (since Transformers v5 the dtype is inferred from the model config)")},
            lora=dict(_PEFT_LORA),
            qlora={
                **_PEFT_LORA,
                "checkpointing_mode": ("block", f"{_PEFT}/src/peft/utils/other.py (prepare_model_for_kbit_training use_gradient_checkpointing=True)"),
                "double_quant": (False, "https://huggingface.co/docs/transformers/main_classes/quantization (bnb_4bit_use_double_quant defaults to False)"),
            },
        ),
        _preset(
            "trl",
            "TRL SFTTrainer",
            any={
                **_HF_COMMON,
                "loss": ("chunked", f"{_TRL}/trl/trainer/sft_config.py (loss_type defaults to chunked_nll)"),
                "checkpointing_mode": ("block", f"{_TRL}/trl/trainer/sft_config.py (gradient_checkpointing defaults to True)"),
                "regime": ("amp_bf16", f"{_TRL}/trl/trainer/sft_config.py (bf16 defaults to True) and sft_trainer.py (a model id loads in float32)"),
                "base_fp32": (True, f"{_TRL}/trl/trainer/sft_trainer.py (a model id loads in float32 unless model_init_kwargs sets dtype)"),
            },
            lora=dict(_PEFT_LORA),
            qlora=dict(_PEFT_LORA),
        ),
        _preset(
            "unsloth",
            "Unsloth",
            any={
                "checkpointing_mode": ("block", f"{_UNS}/unsloth/models/llama.py (get_peft_model use_gradient_checkpointing=\"unsloth\")"),
                "activation_offload": (True, f"{_UNS}/unsloth/models/_utils.py (unsloth_offloaded_gradient_checkpoint moves checkpointed inputs to host memory)"),
                "loss": ("fused", "https://github.com/unslothai/unsloth (fused cross-entropy: logits never materialised in full)"),
                "attention": ("flash", "https://github.com/unslothai/unsloth (FlashAttention / xformers kernels)"),
                "optimizer": ("adamw8bit", "https://github.com/unslothai/notebooks (SFTConfig optim=\"adamw_8bit\" in the Unsloth notebooks)"),
                "multi_gpu": ("ddp", "https://docs.unsloth.ai/basics/multi-gpu-training-with-unsloth (DDP through accelerate/torchrun)"),
            },
            full={"regime": ("bf16", f"{_UNS}/unsloth/models/loader.py (full_finetuning loads 16-bit weights)")},
            lora={
                "rank": (16, f"{_UNS}/unsloth/models/llama.py (get_peft_model r=16)"),
                "targets": ("all", f"{_UNS}/unsloth/models/llama.py (q,k,v,o,gate,up,down)"),
                "lora_dropout": (0.0, f"{_UNS}/unsloth/models/llama.py (lora_dropout=0.0)"),
                "master_weights_fp32": (True, f"{_PEFT}/src/peft/peft_model.py (adapters in fp32)"),
            },
            qlora={
                "rank": (16, f"{_UNS}/unsloth/models/llama.py (get_peft_model r=16)"),
                "targets": ("all", f"{_UNS}/unsloth/models/llama.py (q,k,v,o,gate,up,down)"),
                "lora_dropout": (0.0, f"{_UNS}/unsloth/models/llama.py (lora_dropout=0.0)"),
                "master_weights_fp32": (False, f"{_UNS}/unsloth/models/llama.py (embeddings and norms stay 16-bit; no prepare_model_for_kbit_training upcast)"),
                "double_quant": (True, f"{_UNS}/unsloth/models/loader.py (bnb_4bit_use_double_quant=True)"),
            },
        ),
        _preset(
            "torchtune",
            "torchtune",
            any={
                "regime": ("bf16", f"{_TT}/recipes/configs/llama3_1/8B_lora_single_device.yaml (dtype: bf16, no fp32 copy)"),
                "checkpointing_mode": ("block", f"{_TT}/recipes/configs/llama3_1/8B_lora_single_device.yaml (enable_activation_checkpointing: True)"),
                "activation_offload": (False, f"{_TT}/recipes/configs/llama3_1/8B_lora_single_device.yaml (enable_activation_offloading: False)"),
                "loss": ("chunked", f"{_TT}/torchtune/modules/loss/cross_entropy_loss.py (LinearCrossEntropyLoss, 8 chunks)"),
                "attention": ("flash", f"{_TT}/torchtune/modules/attention.py (scaled_dot_product_attention, flash backend in bf16)"),
                "optimizer": ("adamw", f"{_TT}/recipes/configs/llama3_1/8B_lora_single_device.yaml (torch.optim.AdamW, fused)"),
                "fused_optimizer": (True, f"{_TT}/recipes/configs/llama3_1/8B_full.yaml (torch.optim.AdamW fused: True)"),
                "compiled": (False, f"{_TT}/recipes/configs/llama3_1/8B_lora_single_device.yaml (compile: False)"),
                "multi_gpu": ("fsdp", f"{_TT}/recipes/configs/llama3_1/8B_full.yaml (full_finetune_distributed shards with FSDP)"),
            },
            full={
                "optimizer": ("paged_adamw8bit", f"{_TT}/recipes/configs/llama3_1/8B_full_single_device.yaml (bitsandbytes.optim.PagedAdamW8bit)"),
                "optimizer_in_backward": (True, f"{_TT}/recipes/configs/llama3_1/8B_full_single_device.yaml (optimizer_in_bwd: True)"),
            },
            lora={
                "rank": (8, f"{_TT}/recipes/configs/llama3_1/8B_lora_single_device.yaml (lora_rank: 8)"),
                "targets": ("all", f"{_TT}/recipes/configs/llama3_1/8B_lora_single_device.yaml (q_proj, v_proj, output_proj + apply_lora_to_mlp)"),
                "lora_dropout": (0.0, f"{_TT}/recipes/configs/llama3_1/8B_lora_single_device.yaml (lora_dropout: 0.0)"),
            },
            qlora={
                "rank": (8, f"{_TT}/recipes/configs/llama3_1/8B_qlora_single_device.yaml (lora_rank: 8)"),
                "targets": ("all", f"{_TT}/recipes/configs/llama3_1/8B_qlora_single_device.yaml (q_proj, v_proj, output_proj + apply_lora_to_mlp)"),
                "lora_dropout": (0.0, f"{_TT}/recipes/configs/llama3_1/8B_qlora_single_device.yaml (lora_dropout: 0.0)"),
                "double_quant": (True, "https://github.com/pytorch/ao (torchao NF4Tensor: 64-element blocks, scalers quantized in blocks of 256)"),
                "quant_backend": ("torchao", f"{_TT}/torchtune/modules/low_precision/nf4_linear.py (FrozenNF4Linear: torchao's linear_nf4)"),
            },
        ),
        _preset(
            "axolotl",
            "Axolotl",
            any={
                "regime": ("bf16", f"{_AX}/examples/llama-3/fft-8b.yaml (bf16: auto, weights loaded in bf16)"),
                "checkpointing_mode": ("block", f"{_AX}/examples/llama-3/lora-1b.yml (gradient_checkpointing: true)"),
                "attention": ("flash", f"{_AX}/examples/llama-3/lora-1b.yml (attn_implementation: flash_attention_2)"),
                "packing": (True, f"{_AX}/examples/llama-3/lora-1b.yml (sample_packing: true)"),
                "loss": ("fp32_upcast", _HF_LOSS + " (the Transformers model's loss)"),
                "optimizer": ("adamw8bit", f"{_AX}/examples/llama-3/lora-1b.yml (optimizer: adamw_8bit)"),
                "multi_gpu": ("ddp", "https://docs.axolotl.ai/docs/multi-gpu.html (DDP unless fsdp or deepspeed is configured)"),
            },
            full={"optimizer": ("paged_adamw8bit", f"{_AX}/examples/llama-3/fft-8b.yaml (optimizer: paged_adamw_8bit)")},
            lora={
                "rank": (16, f"{_AX}/examples/llama-3/lora-1b.yml (lora_r: 16)"),
                "targets": ("all", f"{_AX}/examples/llama-3/lora-1b.yml (all linear projections)"),
                "lora_dropout": (0.05, f"{_AX}/examples/llama-3/lora-1b.yml (lora_dropout: 0.05)"),
                "master_weights_fp32": (True, f"{_PEFT}/src/peft/peft_model.py (adapters in fp32)"),
            },
            qlora={
                "rank": (32, f"{_AX}/examples/llama-3/qlora-1b.yml (lora_r: 32)"),
                "targets": ("all", f"{_AX}/examples/llama-3/qlora-1b.yml (q,k,v,o,gate,up,down)"),
                "lora_dropout": (0.05, f"{_AX}/examples/llama-3/qlora-1b.yml (lora_dropout: 0.05)"),
                "master_weights_fp32": (True, f"{_PEFT}/src/peft/utils/other.py (prepare_model_for_kbit_training upcasts the rest to fp32)"),
                "double_quant": (True, f"{_AX}/src/axolotl/loaders/model.py (bnb_4bit_use_double_quant: True)"),
            },
        ),
        _preset(
            "litgpt",
            "LitGPT",
            any={
                "regime": ("bf16", f"{_LIT}/config_hub/finetune/llama-3.1-8b/lora.yaml (precision: bf16-true)"),
                "checkpointing_mode": ("none", f"{_LIT}/litgpt/finetune/lora.py (no activation checkpointing)"),
                "loss": ("chunked", f"{_LIT}/litgpt/finetune/lora.py (chunked_cross_entropy)"),
                "attention": ("flash", f"{_LIT}/litgpt/model.py (scaled_dot_product_attention)"),
                "optimizer": ("adamw", f"{_LIT}/litgpt/finetune/lora.py (optimizer: AdamW, moments in bf16 under bf16-true)"),
                "fused_optimizer": (False, "https://github.com/pytorch/pytorch/pull/95415 (torch.optim.AdamW defaults to foreach, not fused)"),
                "multi_gpu": ("fsdp", f"{_LIT}/litgpt/finetune/lora.py (ModelParallelStrategy data-parallel sharding on several devices)"),
                "unsharded_accumulation": (True, f"{_LIT}/litgpt/finetune/full.py (fabric.no_backward_sync(model, enabled=is_accumulating))"),
            },
            lora={
                "rank": (8, f"{_LIT}/litgpt/finetune/lora.py (lora_r: 8)"),
                "targets": ("qv", f"{_LIT}/litgpt/finetune/lora.py (lora_query and lora_value only)"),
                "lora_dropout": (0.05, f"{_LIT}/litgpt/finetune/lora.py (lora_dropout: 0.05)"),
            },
            qlora={
                "rank": (8, f"{_LIT}/litgpt/finetune/lora.py (lora_r: 8)"),
                "targets": ("qv", f"{_LIT}/litgpt/finetune/lora.py (lora_query and lora_value only)"),
                "lora_dropout": (0.05, f"{_LIT}/litgpt/finetune/lora.py (lora_dropout: 0.05)"),
                "double_quant": (False, f"{_LIT}/config_hub/finetune/llama-3.1-8b/qlora.yaml (quantize: bnb.nf4; bnb.nf4-dq is the double-quant option)"),
            },
        ),
        _preset(
            "llama-factory",
            "LLaMA-Factory",
            any={
                **_HF_COMMON,
                "regime": ("amp_bf16", f"{_LF}/examples/train_lora/qwen3_lora_sft.yaml (bf16: true) and src/llamafactory/model/adapter.py (trainable params upcast to fp32 unless pure_bf16)"),
                "checkpointing_mode": ("block", f"{_LF}/src/llamafactory/hparams/model_args.py (disable_gradient_checkpointing defaults to False)"),
            },
            full={"base_fp32": (True, f"{_LF}/src/llamafactory/model/adapter.py (_setup_full_tuning casts trainable params to float32)")},
            lora={
                "rank": (8, f"{_LF}/src/llamafactory/hparams/finetuning_args.py (lora_rank default 8)"),
                "targets": ("all", f"{_LF}/src/llamafactory/hparams/finetuning_args.py (lora_target default all)"),
                "lora_dropout": (0.0, f"{_LF}/src/llamafactory/hparams/finetuning_args.py (lora_dropout default 0.0)"),
            },
            qlora={
                "rank": (8, f"{_LF}/src/llamafactory/hparams/finetuning_args.py (lora_rank default 8)"),
                "targets": ("all", f"{_LF}/src/llamafactory/hparams/finetuning_args.py (lora_target default all)"),
                "lora_dropout": (0.0, f"{_LF}/src/llamafactory/hparams/finetuning_args.py (lora_dropout default 0.0)"),
                "double_quant": (True, f"{_LF}/src/llamafactory/hparams/model_args.py (double_quantization default True)"),
            },
        ),
    )
}


# Every framework can also shard the weights, gradients and optimizer state over several GPUs with FSDP (what
# /finetune offers when more cards, or the same ones, should hold more), whatever it does by default; where each
# says so. No framework is given: rigcheck's own default is FSDP (estimator.finetune.default_sharding).
FSDP_SUPPORT: dict[Framework, str] = {
    "hf": "https://huggingface.co/docs/transformers/accelerate (Trainer runs FSDP through an Accelerate config or TrainingArguments fsdp)",
    "trl": "https://huggingface.co/docs/transformers/accelerate (SFTTrainer is a Trainer: the same FSDP settings)",
    "unsloth": "https://unsloth.ai/docs/basics/multi-gpu-training-with-unsloth (\"you can already leverage parallelism methods such as FSDP and DDP with Unsloth\")",
    "torchtune": f"{_TT}/recipes/configs/llama3_1/8B_full.yaml (full_finetune_distributed shards with FSDP)",
    "axolotl": f"{_AX}/docs/multi-gpu.qmd (FSDP or DeepSpeed)",
    "litgpt": f"{_LIT}/litgpt/finetune/lora.py (FSDP / ModelParallelStrategy on several devices)",
    "llama-factory": f"{_LF}/examples/accelerate/fsdp_config.yaml (accelerate launch with FSDP)",
}


def preset_values(framework: Framework, method: str, gpus: int) -> dict[str, Any]:
    """The knob values `framework` uses for `method`, with its multi-GPU strategy applied to `sharding`."""
    values = PRESETS[framework].values(method)
    strategy = values.pop("multi_gpu", "fsdp")
    if gpus > 1:
        values["sharding"] = strategy
    return values
