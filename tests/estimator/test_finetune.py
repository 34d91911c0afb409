"""The fine-tuning memory terms against hand-computed cases, and the orderings any estimate must respect."""

from __future__ import annotations

from collections.abc import Callable

import pytest
from hypothesis import assume, given, settings
from hypothesis import strategies as st

from catalog import Model, load_catalog
from estimator import finetune as ft
from estimator.finetune import FinetuneSettings


def synthetic_decoder(
    id_: str,
    *,
    params_b: float,
    layers: int,
    hidden: int,
    heads: int,
    kv_heads: int,
    head_dim: int,
    ffn: int,
    vocab: int,
    max_context: int = 4096,
    tied: bool = False,
) -> Model:
    """A dense decoder made up for a test: only its dimensions and parameter count mean anything."""
    return Model(
        id=id_,
        name=id_,
        family="test",
        params_b=params_b,
        active_params_b=params_b,
        layers=layers,
        hidden_size=hidden,
        attention_heads=heads,
        kv_heads=kv_heads,
        head_dim=head_dim,
        intermediate_size=ffn,
        vocab_size=vocab,
        tied_embeddings=tied,
        max_context=max_context,
        source="synthetic test model",
    )


# A tiny dense decoder whose terms can be checked by hand.
TINY = synthetic_decoder(
    "tiny", params_b=0.001, layers=2, hidden=64, heads=4, kv_heads=2, head_dim=16, ffn=128, vocab=1000
)
# Parameters the formula understands: embeddings 2*1000*64 = 128,000; per layer attention
# 64*64 + 2*64*32 + 64*64 = 12,288 and MLP 3*64*128 = 24,576.
TINY_PARAMS = 128_000 + 2 * (12_288 + 24_576)
EXACT = TINY.model_copy(update={"params_b": TINY_PARAMS / 1e9, "active_params_b": TINY_PARAMS / 1e9})


def qwen3_8b() -> Model:
    return load_catalog().model("qwen3-8b")


def test_defaults_follow_the_usual_trainers() -> None:
    q = FinetuneSettings(method="qlora")
    assert (q.seq, q.batch, q.rank, q.targets, q.checkpointing, q.double_quant) == (2048, 1, 16, "all", True, True)
    assert q.optimizer_used == "paged_adamw8bit"
    assert FinetuneSettings(method="full").optimizer_used == "adamw"
    assert FinetuneSettings(method="lora", optimizer="sgd").optimizer_used == "sgd"


def test_nf4_bits_per_param() -> None:
    assert ft.nf4_bits_per_param(double_quant=False) == pytest.approx(4.5)
    assert ft.nf4_bits_per_param(double_quant=True) == pytest.approx(4 + 8 / 64 + 32 / (64 * 256))


def test_base_weight_bytes() -> None:
    assert ft.base_weight_bytes(EXACT, FinetuneSettings(method="lora")) == pytest.approx(2 * TINY_PARAMS)
    qlora = FinetuneSettings(method="qlora", master_weights_fp32=False, double_quant=False)
    linear = TINY_PARAMS - 128_000
    assert ft.base_weight_bytes(EXACT, qlora) == pytest.approx(linear * 4.5 / 8 + 128_000 * 2)
    sharded = FinetuneSettings(method="full", gpus=4, sharding="zero3")
    assert ft.base_weight_bytes(EXACT, sharded) == pytest.approx(2 * TINY_PARAMS / 4)


def test_lora_params() -> None:
    r = 8
    qv = r * ((64 + 64) + (64 + 32))
    attention = qv + r * ((64 + 32) + (64 + 64))
    mlp = r * 3 * (64 + 128)
    assert ft.lora_params(TINY, FinetuneSettings(method="lora", rank=r, targets="qv")) == 2 * qv
    assert ft.lora_params(TINY, FinetuneSettings(method="lora", rank=r, targets="attention")) == 2 * attention
    assert ft.lora_params(TINY, FinetuneSettings(method="lora", rank=r, targets="all")) == 2 * (attention + mlp)
    assert ft.lora_params(TINY, FinetuneSettings(method="full")) == 0


def test_lora_params_llama_like_matches_litgpt_count() -> None:
    # LitGPT reports 4,194,304 trainable parameters for Llama 2 7B with rank 8 on query and value.
    llama2 = synthetic_decoder(
        "l2", params_b=6.74, layers=32, hidden=4096, heads=32, kv_heads=32, head_dim=128, ffn=11008, vocab=32000
    )
    assert ft.lora_params(llama2, FinetuneSettings(method="lora", rank=8, targets="qv")) == 4_194_304


def test_full_mixed_precision_is_sixteen_bytes_per_param() -> None:
    s = FinetuneSettings(method="full")
    per_param = (
        ft.base_weight_bytes(EXACT, s)
        + ft.trainable_bytes(EXACT, s)
        + ft.gradient_bytes(EXACT, s)
        + ft.optimizer_bytes(EXACT, s)
    ) / TINY_PARAMS
    assert per_param == pytest.approx(2 + 4 + 2 + 8)


def test_optimizer_bytes_per_param() -> None:
    def per_param(**kw: object) -> float:
        return ft.optimizer_bytes(EXACT, FinetuneSettings(method="full", **kw)) / TINY_PARAMS  # type: ignore[arg-type]

    assert per_param(optimizer="adamw") == 8
    assert per_param(optimizer="adamw", master_weights_fp32=False) == 4
    assert per_param(optimizer="adamw", regime="bf16") == 4
    assert per_param(optimizer="adamw_bf16") == 4
    assert per_param(optimizer="adamw8bit") == 2
    assert per_param(optimizer="paged_adamw8bit") == 2
    # torch.optim.SGD as the frameworks build it (momentum=0) keeps no state; with momentum set, one fp32 buffer.
    assert per_param(optimizer="sgd") == 0
    assert per_param(optimizer="sgd_momentum") == 4
    assert per_param(optimizer="adamw", gpus=4, sharding="zero1") == 2


def test_gradients_sharded_from_zero2_and_dropped_in_backward() -> None:
    s = FinetuneSettings(method="full")
    assert ft.gradient_bytes(EXACT, s) == pytest.approx(2 * TINY_PARAMS)
    assert ft.gradient_bytes(EXACT, s.model_copy(update={"gpus": 2, "sharding": "zero1"})) == pytest.approx(
        2 * TINY_PARAMS
    )
    assert ft.gradient_bytes(EXACT, s.model_copy(update={"gpus": 2, "sharding": "zero2"})) == pytest.approx(TINY_PARAMS)
    # Stepped inside backward, only the embedding table's gradient waits (16-bit, vocab x hidden).
    in_bwd = s.model_copy(update={"optimizer_in_backward": True})
    assert ft.gradient_bytes(EXACT, in_bwd) == pytest.approx(2 * EXACT.vocab_size * EXACT.hidden_size)
    assert ft.gradient_bytes(EXACT, in_bwd.model_copy(update={"method": "lora"})) == 0


def test_activation_bytes_by_hand() -> None:
    s = FinetuneSettings(method="lora", seq=10, batch=3, checkpointing=False)
    # attention 64 * (4 + 2 * 2/4) = 320, MLP 2*64 + 4*128 = 640 elements per token and layer, 2 bytes each
    per_layer = (320 + 640) * 30 * 2 * ft.ACTIVATION_FACTOR
    assert ft.activation_bytes(TINY, s) == pytest.approx(2 * per_layer)
    ckpt = s.model_copy(update={"checkpointing": True})
    assert ft.activation_bytes(TINY, ckpt) == pytest.approx(1 * 64 * 30 * 2 + per_layer)
    eager = s.model_copy(update={"flash_attention": False})
    assert ft.activation_bytes(TINY, eager) == pytest.approx(2 * (per_layer + 4 * 4 * 10 * 10 * 3))


def test_logits_bytes() -> None:
    s = FinetuneSettings(method="lora", seq=10, batch=3)
    # transformers >= 4.46 upcasts inside the loss: 16-bit logits kept, fp32 log-softmax and two gradients.
    assert ft.logits_bytes(TINY, s) == 30 * 1000 * (2 + 4 + 4 + 4)
    # Upcast in the model's forward (older transformers): the returned logits are fp32.
    assert ft.logits_bytes(TINY, s.model_copy(update={"loss": "fp32_upcast_forward"})) == 30 * 1000 * 18
    assert ft.logits_bytes(TINY, s.model_copy(update={"loss": "chunked"})) == 30 * 1000 * 4
    # Fused kernels never hold the vocabulary-wide logits: one fp32 chunk of about tokens x hidden and its gradient.
    assert ft.logits_bytes(TINY, s.model_copy(update={"loss": "fused"})) == 30 * 64 * 8


def test_total_is_the_peak_of_its_terms() -> None:
    s = FinetuneSettings(method="full", seq=512, checkpointing=False)
    m = ft.finetune_memory(EXACT, s)
    allocated = m.weights + m.trainable + m.optimizer + max(m.gradients, m.activations + m.logits)
    assert m.allocated == pytest.approx(allocated)
    assert m.total == pytest.approx(allocated + ft.TORCH_CUDA_CONTEXT_BYTES)
    # Unpacked batches vary in shape: the allocator's cache grows with the step's transient memory.
    transient = m.activations + m.logits
    frag = ft.FRAGMENTATION_FRACTION * allocated + ft.VARIABLE_SHAPE_FRAGMENTATION * transient
    assert m.fragmentation == pytest.approx(frag)
    assert m.reserved == pytest.approx(allocated + frag)
    assert m.nvidia_smi == pytest.approx(allocated + frag + ft.TORCH_CUDA_CONTEXT_BYTES)
    packed = ft.finetune_memory(EXACT, s.model_copy(update={"packing": True}))
    assert packed.fragmentation == pytest.approx(ft.FRAGMENTATION_FRACTION * allocated)
    assert packed.total == pytest.approx(m.total)
    assert m.total_gib == pytest.approx(m.total / 2**30)
    assert m.gb("weights") == pytest.approx(m.weights / 1e9)
    acc = ft.finetune_memory(EXACT, s.model_copy(update={"gradient_accumulation": True}))
    assert acc.total > m.total


def test_block_checkpointing_logits_and_the_rerun_block_come_one_after_the_other() -> None:
    s = FinetuneSettings(method="full", seq=512, checkpointing_mode="block", packing=True)
    m = ft.finetune_memory(EXACT, s)
    layer = ft.layer_activation_bytes(EXACT, s)
    inputs = (EXACT.layers - 1) * ft.checkpoint_input_bytes(EXACT, s)
    assert m.activations == pytest.approx(inputs + layer)
    backward = inputs + max(layer, m.logits)
    assert m.allocated == pytest.approx(m.weights + m.trainable + m.optimizer + max(m.gradients, backward))
    # A fused loss keeps the hidden states' gradient from forward: it meets the re-run block.
    fused = s.model_copy(update={"loss": "fused"})
    mf = ft.finetune_memory(EXACT, fused)
    assert mf.allocated == pytest.approx(
        mf.weights + mf.trainable + mf.optimizer + max(mf.gradients, mf.activations + mf.logits)
    )


def test_compile_shrinks_saved_activations_and_the_loss_buffers() -> None:
    s = FinetuneSettings(method="lora", seq=100, batch=2, checkpointing=False, loss="chunked")
    c = s.model_copy(update={"compiled": True})
    eager_layer, compiled_layer = ft.layer_activation_bytes(EXACT, s), ft.layer_activation_bytes(EXACT, c)
    assert compiled_layer == pytest.approx(ft.COMPILED_ACTIVATION_FACTOR * eager_layer)
    tokens_vocab = 200 * EXACT.vocab_size
    assert ft.logits_bytes(EXACT, s) == pytest.approx(4 * tokens_vocab)
    # 16-bit logits plus one of 8 chunks' 16-bit gradient.
    assert ft.logits_bytes(EXACT, c) == pytest.approx((2 + 2 / 8) * tokens_vocab)
    upcast = c.model_copy(update={"loss": "fp32_upcast_forward"})
    assert ft.logits_bytes(EXACT, upcast) == pytest.approx(10 * tokens_vocab)


def test_fsdp_no_sync_accumulation_holds_unsharded_gradients() -> None:
    s = FinetuneSettings(method="full", gpus=4, sharding="fsdp", gradient_accumulation_steps=4)
    full_grads = 2 * EXACT.params
    assert ft.gradient_bytes(EXACT, s) == pytest.approx(full_grads / 4)
    no_sync = s.model_copy(update={"unsharded_accumulation": True})
    assert ft.gradient_bytes(EXACT, no_sync) == pytest.approx(full_grads)
    # Without accumulation there is nothing to keep unsynced.
    one_step = FinetuneSettings(method="full", gpus=4, sharding="fsdp", unsharded_accumulation=True)
    assert ft.gradient_bytes(EXACT, one_step) == pytest.approx(full_grads / 4)
    assert ft.finetune_memory(EXACT, no_sync).total > ft.finetune_memory(EXACT, s).total
    # LitGPT accumulates under fabric.no_backward_sync; torchtune reduce-scatters every micro-batch.
    litgpt = FinetuneSettings(method="full", framework="litgpt", gpus=4, gradient_accumulation_steps=4)
    assert litgpt.sharding == "fsdp" and ft.gradient_bytes(EXACT, litgpt) == pytest.approx(full_grads)
    torchtune = FinetuneSettings(method="full", framework="torchtune", gpus=4, gradient_accumulation_steps=4,
                                 optimizer_in_backward=False)
    assert ft.gradient_bytes(EXACT, torchtune) == pytest.approx(full_grads / 4)


def test_fsdp_gathers_two_blocks_beyond_its_shard() -> None:
    s = FinetuneSettings(method="lora", gpus=4, sharding="fsdp")
    assert ft.gathered_bytes(EXACT, s) == pytest.approx(2 * ft.layer_params(EXACT) * 2 * (1 - 1 / 4))
    assert ft.gathered_bytes(EXACT, s.model_copy(update={"sharding": "ddp"})) == 0
    assert ft.gathered_bytes(EXACT, FinetuneSettings(method="lora")) == 0
    assert ft.finetune_memory(EXACT, s).gathered == pytest.approx(ft.gathered_bytes(EXACT, s))


def _state_bytes_per_param(s: FinetuneSettings) -> float:
    return (
        ft.base_weight_bytes(EXACT, s) + ft.trainable_bytes(EXACT, s) + ft.gradient_bytes(EXACT, s)
        + ft.optimizer_bytes(EXACT, s)
    ) / TINY_PARAMS


def test_pure_bf16_full_is_eight_bytes_per_param_plus_activations() -> None:
    s = FinetuneSettings(method="full", regime="bf16", seq=256, checkpointing=False)
    # bf16 weights 2 + bf16 gradients 2 + AdamW's two bf16 moments 4; no fp32 copy.
    assert _state_bytes_per_param(s) == pytest.approx(2 + 2 + 4)
    m = ft.finetune_memory(EXACT, s)
    assert m.allocated == pytest.approx(8 * TINY_PARAMS + max(0.0, m.activations + m.logits - m.gradients))
    assert s.regime_used == "bf16"
    assert (s.precision, s.master_weights_fp32) == ("bf16", False)


def test_amp_is_sixteen_bytes_per_param_either_layout() -> None:
    deepspeed = FinetuneSettings(method="full", regime="amp_bf16")  # bf16 weights + fp32 master copy
    fp32_loaded = FinetuneSettings(method="full", regime="amp_bf16", base_fp32=True)  # fp32 weights, autocast
    assert _state_bytes_per_param(deepspeed) == pytest.approx(2 + 4 + 2 + 8)
    assert _state_bytes_per_param(fp32_loaded) == pytest.approx(4 + 0 + 4 + 8)
    assert FinetuneSettings(method="full", regime="amp_fp16").precision == "fp16"


def test_optimizer_variants_per_param() -> None:
    def per_param(**kw: object) -> float:
        return ft.optimizer_bytes(EXACT, FinetuneSettings(method="full", **kw)) / TINY_PARAMS  # type: ignore[arg-type]

    assert per_param(optimizer="adamw_fp32", regime="bf16") == 8
    assert per_param(optimizer="adamw_bf16") == 4
    # Adafactor: one fp32 row and column per matrix, far below one value per parameter.
    assert per_param(optimizer="adafactor") < 0.2
    offloaded = FinetuneSettings(method="full", offload="optimizer")
    mem = ft.finetune_memory(EXACT, offloaded)
    assert mem.optimizer == 0 and mem.trainable == 0
    assert mem.offloaded == pytest.approx(8 * TINY_PARAMS + 4 * TINY_PARAMS)


def test_activation_offload_moves_the_activation_term_to_the_host() -> None:
    s = FinetuneSettings(method="lora", seq=64, batch=2, checkpointing=False)
    kept = ft.activation_bytes(TINY, s)
    off = s.model_copy(update={"activation_offload": True})
    layer = ft.layer_activation_bytes(TINY, s)
    on_gpu, host = ft.activation_split(TINY, off)
    assert on_gpu == pytest.approx(layer)  # the layer being computed
    assert on_gpu + host == pytest.approx(kept)
    assert ft.finetune_memory(TINY, off).offloaded == pytest.approx(host)
    # With block checkpointing the layer inputs are what moves; the layer being re-run stays.
    ckpt = s.model_copy(update={"checkpointing": True, "activation_offload": True})
    gpu_ckpt, host_ckpt = ft.activation_split(TINY, ckpt)
    assert gpu_ckpt == pytest.approx(layer)
    assert host_ckpt == pytest.approx((TINY.layers - 1) * ft.checkpoint_input_bytes(TINY, ckpt))


def test_qlora_buffers_grow_with_the_largest_layer() -> None:
    assert ft.largest_linear_params(TINY) == 64 * 128  # gate/up of the 128-wide MLP
    wide = TINY.model_copy(update={"intermediate_size": 512})
    assert ft.largest_linear_params(wide) == 64 * 512
    s = FinetuneSettings(method="qlora", seq=16)
    dequant_tiny = ft.QLORA_DEQUANT_BUFFERS * 64 * 128 * 2
    layer_4bit = ft.layer_params(TINY) * ft.nf4_bits_per_param(True) / 8
    assert ft.qlora_buffer_bytes(TINY, s) == pytest.approx(dequant_tiny + ft.QLORA_SAVED_FRACTION * layer_4bit)
    assert ft.qlora_buffer_bytes(wide, s) - ft.qlora_buffer_bytes(TINY, s) >= 2 * 64 * (512 - 128)
    # Without checkpointing every layer keeps its share; LoRA and full have no such buffers.
    no_ckpt = s.model_copy(update={"checkpointing": False})
    assert ft.qlora_buffer_bytes(TINY, no_ckpt) == pytest.approx(
        dequant_tiny + ft.QLORA_SAVED_FRACTION * TINY.layers * layer_4bit
    )
    assert ft.qlora_buffer_bytes(TINY, FinetuneSettings(method="lora")) == 0


def test_eager_attention_is_quadratic_and_selective_checkpointing_drops_it() -> None:
    base = FinetuneSettings(method="lora", seq=100, checkpointing=False, attention="flash")
    eager = FinetuneSettings(method="lora", seq=100, checkpointing=False, attention="eager")
    assert not eager.flash_attention and base.attention_used == "flash"
    extra = ft.activation_bytes(TINY, eager) - ft.activation_bytes(TINY, base)
    assert extra == pytest.approx(TINY.layers * ft.ATTN_SCORE_BYTES_EAGER * 4 * 100 * 100)
    sdpa = FinetuneSettings(method="lora", seq=100, checkpointing=False, attention="sdpa")
    assert ft.activation_bytes(TINY, sdpa) == pytest.approx(ft.activation_bytes(TINY, base))
    selective = FinetuneSettings(method="lora", seq=100, attention="eager", checkpointing_mode="selective")
    assert selective.checkpointing_used == "selective"
    assert ft.activation_bytes(TINY, selective) == pytest.approx(ft.activation_bytes(TINY, base))


def test_frozen_layers_keep_no_inputs_but_bitsandbytes_4bit_ones_do() -> None:
    s = FinetuneSettings(method="lora", seq=10, checkpointing=False, targets="qv")
    per_token = ft.layer_activation_elements_per_token
    full = per_token(TINY, s.model_copy(update={"method": "full"}))
    # q and v adapted: the QKV input is kept for them; the frozen MLP keeps neither its input (64) nor the
    # down projection's (128 channels).
    assert per_token(TINY, s) == pytest.approx(full - 64 - 128)
    assert per_token(TINY, s.model_copy(update={"targets": "all"})) == pytest.approx(full)
    bnb = s.model_copy(update={"method": "qlora"})
    assert per_token(TINY, bnb) == pytest.approx(full)
    torchao = bnb.model_copy(update={"quant_backend": "torchao"})
    assert per_token(TINY, torchao) == pytest.approx(per_token(TINY, s))
    assert FinetuneSettings(method="qlora", framework="torchtune").quant_backend == "torchao"


def test_lora_dropout_head_and_embeddings() -> None:
    s = FinetuneSettings(method="lora", seq=10, checkpointing=False, targets="qv")
    dropped = s.model_copy(update={"lora_dropout": 0.05})
    # q and v each copy their 64-wide input: 1.5 elements (copy + mask) of 2 bytes per input element; the
    # adapters then read their copies, so the frozen QKV layer's own 64-wide input is no longer kept.
    extra = ft.activation_bytes(TINY, dropped) - ft.activation_bytes(TINY, s)
    assert extra == pytest.approx(TINY.layers * ft.ACTIVATION_FACTOR * (1.5 * (64 + 64) - 64) * 10 * 2)
    head = s.model_copy(update={"lora_head": True})
    assert ft.lora_params(TINY, head) - ft.lora_params(TINY, s) == 16 * (64 + 1000)
    emb = s.model_copy(update={"train_embeddings": True})
    assert ft.trainable_params(TINY, emb) - ft.trainable_params(TINY, s) == ft.unquantized_params(TINY)


def test_framework_presets_fill_unset_knobs_and_yield_to_set_ones() -> None:
    from estimator.finetune_presets import FRAMEWORKS, PRESETS

    tt = FinetuneSettings(method="full", framework="torchtune")
    assert (tt.regime_used, tt.optimizer_used, tt.optimizer_in_backward, tt.loss) == (
        "bf16", "paged_adamw8bit", True, "chunked",
    )
    mine = FinetuneSettings(method="full", framework="torchtune", optimizer="adamw", checkpointing=False)
    assert (mine.optimizer_used, mine.checkpointing_used) == ("adamw", "none")
    uns = FinetuneSettings(method="qlora", framework="unsloth")
    assert (uns.rank, uns.targets, uns.activation_offload, uns.loss) == (16, "all", True, "fused")
    hf = FinetuneSettings(method="lora", framework="hf")
    assert (hf.rank, hf.targets, hf.checkpointing_used, hf.loss) == (8, "qv", "none", "fp32_upcast")
    assert FinetuneSettings(method="full", framework="trl").base_fp32
    assert FinetuneSettings(method="lora", framework="hf", gpus=2).sharding == "ddp"
    assert FinetuneSettings(method="lora", framework="torchtune", gpus=2).sharding == "fsdp"
    assert FinetuneSettings(method="lora", gpus=2).sharding == "fsdp"
    for fw in FRAMEWORKS:
        preset = PRESETS[fw]
        for method, knobs in preset.knobs.items():
            for key in knobs:
                assert preset.sources[f"{method}.{key}"].startswith("https://"), (fw, method, key)
        for method in ("full", "lora", "qlora"):
            FinetuneSettings(method=method, framework=fw, gpus=2)  # every preset validates


def test_with_keeps_what_was_set_and_rederives_the_rest() -> None:
    s = FinetuneSettings(method="lora", framework="torchtune", rank=32, seq=4096)
    q = s.with_(method="qlora")
    assert (q.method, q.rank, q.seq, q.framework) == ("qlora", 32, 4096, "torchtune")
    full = s.with_(method="full")
    assert full.optimizer_used == "paged_adamw8bit"  # torchtune's full-run default, not LoRA's


def test_foreach_adamw_step_holds_one_more_moment() -> None:
    # One token: the step, not the activations, is the peak.
    s = FinetuneSettings(method="full", regime="bf16", seq=1, checkpointing=True, fused_optimizer=False)
    assert FinetuneSettings(method="full").fused_optimizer  # the Hugging Face Trainer's default
    foreach = ft.finetune_memory(EXACT, s)
    fused = ft.finetune_memory(EXACT, s.model_copy(update={"fused_optimizer": True}))
    # The step holds weights, gradients, both moments and sqrt(exp_avg_sq): 2 + 2 + 4 + 2 bytes per parameter.
    assert ft.optimizer_step_temporary_bytes(EXACT, s) == pytest.approx(2 * TINY_PARAMS)
    assert foreach.allocated - fused.allocated == pytest.approx(2 * TINY_PARAMS, rel=1e-6)
    assert ft.optimizer_step_temporary_bytes(EXACT, s.model_copy(update={"optimizer": "adamw8bit"})) == 0
    assert ft.optimizer_step_temporary_bytes(EXACT, s.model_copy(update={"optimizer_in_backward": True})) == 0


def test_paged_optimizer_state_may_spill_to_the_host() -> None:
    s = FinetuneSettings(method="full", regime="bf16", optimizer="paged_adamw8bit", seq=256)
    m = ft.finetune_memory(qwen3_8b(), s)
    assert m.pageable == pytest.approx(m.optimizer) and m.required == pytest.approx(m.total - m.optimizer)
    # Room for everything but the paged state: it runs, paging, so it is tight rather than out of memory.
    assert ft.memory_verdict(m, (m.required + m.total) / 2) == "tight"
    assert ft.memory_verdict(m, m.total * 1.2) == "fits"
    assert ft.memory_verdict(m, m.required * 0.9) == "does_not_fit"
    plain = ft.finetune_memory(qwen3_8b(), s.model_copy(update={"optimizer": "adamw8bit"}))
    assert plain.pageable == 0 and plain.required == plain.total


def test_a_change_that_fits_only_by_paging_carries_the_spilled_state() -> None:
    s = FinetuneSettings(method="full", regime="bf16", optimizer="paged_adamw8bit", seq=256)
    m = ft.finetune_memory(qwen3_8b(), s)
    assert ft.spilled_paged_bytes(m, (m.required + m.total) / 2) == pytest.approx(m.pageable)
    assert ft.spilled_paged_bytes(m, m.total * 1.2) == 0
    assert ft.spilled_paged_bytes(m, m.required * 0.9) == 0
    # torchtune's full run (paged 8-bit AdamW, step in backward) at 16k on 24 GiB: a shorter sequence fits
    # only with its paged state in host memory.
    long = FinetuneSettings(method="full", framework="torchtune", seq=16384)
    plan = ft.finetune_plan(qwen3_8b(), long, 24 * 2**30)
    seq = next(c for c in plan.changes if c.key == "seq")
    shorter = ft.finetune_memory(qwen3_8b(), long.model_copy(update={"seq": int(seq.value)}))
    assert seq.verdict == "tight" and seq.paged == pytest.approx(shorter.pageable) and seq.paged > 0
    assert all(c.paged == 0 for c in plan.changes if c.key in ("qlora", "lora"))


def test_verdict_and_what_to_change() -> None:
    big = qwen3_8b()
    usable = 15 * 2**30
    s = FinetuneSettings(method="full", seq=2048)
    plan = ft.finetune_plan(big, s, usable)
    assert plan.verdict == "does_not_fit" and plan.max_seq is None
    assert ft.finetune_verdict(big, s, usable) == "does_not_fit"
    keys = {c.key for c in plan.changes}
    assert "qlora" in keys
    for c in plan.changes:
        assert c.verdict in ("fits", "tight")
    assert [c.method for c in plan.curves] == ["qlora", "lora", "full"]
    q = next(c for c in plan.curves if c.method == "qlora")
    assert list(q.total_bytes) == sorted(q.total_bytes)
    assert ft.finetune_plan(EXACT, FinetuneSettings(method="qlora", seq=128), usable).verdict == "fits"


def test_qwen3_8b_qlora_is_a_plausible_size() -> None:
    total = ft.finetune_memory(qwen3_8b(), FinetuneSettings(method="qlora")).total_gib
    # bf16 LoRA-free base ~5.7 GiB, fp32 embeddings and LM head ~4.6 GiB, fp32 loss buffers ~5.2 GiB
    assert 10 < total < 18


# --- properties -------------------------------------------------------------------------------------------
models = st.builds(
    lambda layers, kv, heads_per_kv, head_dim, width, vocab, tied: _model(
        layers, kv, heads_per_kv, head_dim, width, vocab, tied
    ),
    st.integers(1, 48),
    st.sampled_from([1, 2, 4, 8]),
    st.sampled_from([4, 8]),
    st.sampled_from([64, 128]),
    st.integers(1, 6),
    st.integers(1_000, 160_000),
    st.booleans(),
)


def _model(layers: int, kv: int, heads_per_kv: int, head_dim: int, width: int, vocab: int, tied: bool) -> Model:
    heads = kv * heads_per_kv
    hidden = heads * head_dim
    m = synthetic_decoder(
        "prop", params_b=1, layers=layers, hidden=hidden, heads=heads, kv_heads=kv, head_dim=head_dim,
        ffn=width * hidden, vocab=vocab, max_context=32768, tied=tied,
    )
    from catalog.arch import decoder_params

    params_b = decoder_params(m) / 1e9
    return m.model_copy(update={"params_b": params_b, "active_params_b": params_b})


runs = st.builds(
    FinetuneSettings,
    method=st.sampled_from(["full", "lora", "qlora"]),
    seq=st.integers(1, 16384),
    batch=st.integers(1, 8),
    rank=st.sampled_from([4, 8, 16, 64]),
    targets=st.sampled_from(["qv", "attention", "all"]),
    optimizer=st.sampled_from([None, "adamw", "adamw8bit", "paged_adamw8bit", "sgd", "sgd_momentum", "adafactor",
                                "adamw_fp32"]),
    precision=st.sampled_from(["bf16", "fp32"]),
    checkpointing=st.booleans(),
    flash_attention=st.booleans(),
    loss=st.sampled_from(["fp32_upcast", "fp32_upcast_forward", "chunked", "fused"]),
    lora_dropout=st.sampled_from([0.0, 0.1]),
    activation_offload=st.booleans(),
    packing=st.booleans(),
    gpus=st.integers(1, 8),
    sharding=st.sampled_from(["none", "ddp", "zero1", "zero2", "zero3", "fsdp"]),
)


def total(model: Model, s: FinetuneSettings, **update: object) -> float:
    return ft.finetune_memory(model, s.model_copy(update=update)).total


def need(model: Model, s: FinetuneSettings, **update: object) -> float:
    """What must fit: the peak less paged optimizer state."""
    return ft.finetune_memory(model, s.model_copy(update=update)).required


@given(models, runs)
def test_checkpointing_never_increases_memory(model: Model, s: FinetuneSettings) -> None:
    assert total(model, s, checkpointing=True) <= total(model, s, checkpointing=False)


@given(models, runs)
def test_8bit_adam_below_fp32_adam(model: Model, s: FinetuneSettings) -> None:
    assert total(model, s, optimizer="adamw8bit") < total(model, s, optimizer="adamw", master_weights_fp32=True)


@given(models, runs)
def test_qlora_below_lora_below_full(model: Model, s: FinetuneSettings) -> None:
    # With fp32 master weights QLoRA upcasts the embeddings (PEFT's prepare_model_for_kbit_training), so the
    # ordering holds for models whose blocks outweigh their embeddings, as every real LLM's do.
    # (and by enough to pay for the dequantization buffer and the kept 4-bit share: three times).
    assume(ft.linear_params(model) >= 3 * ft.unquantized_params(model))
    # Adapters of rank r on a d×d projection add r·2d parameters: only a rank well below the width is
    # a low-rank adapter at all (rank 64 on a 64-wide toy model is bigger than the layer it adapts).
    assume(s.rank * 8 <= model.hidden_size)
    # bitsandbytes dequantizes one whole (unsharded) matrix at a time: in a toy model of a few narrow layers
    # that buffer is a large share of all weights, and QLoRA can then need more than LoRA (real LLMs have
    # 16 layers or more and are 1,024 wide or more).
    assume(model.layers >= 4 and model.hidden_size >= 1024)
    # LoRA dropout copies adapter inputs, a knob full fine-tuning does not have: compare like with like. On one
    # GPU: sharded over many, each GPU's share of QLoRA's weight saving can fall below the one unsharded matrix
    # bitsandbytes dequantizes.
    # On every linear layer: with fewer targets bitsandbytes' 4-bit matmuls keep inputs that frozen 16-bit
    # layers do not (test_frozen_layers_keep_no_inputs_but_bitsandbytes_4bit_ones_do).
    common = {"optimizer": None, "lora_dropout": 0.0, "gpus": 1, "sharding": "none", "targets": "all"}
    assert total(model, s, method="qlora", **common) < total(model, s, method="lora", **common)
    assert total(model, s, method="lora", **common) < total(model, s, method="full", **common)


@given(models, runs, st.integers(1, 4096), st.integers(1, 4))
def test_memory_grows_with_seq_and_batch(model: Model, s: FinetuneSettings, more_seq: int, more_batch: int) -> None:
    # The peak may stay put while gradients outweigh the activations (they do not coexist), but never falls,
    # and what the tokens themselves occupy always grows.
    assert total(model, s, seq=s.seq + more_seq) >= total(model, s)
    assert total(model, s, batch=s.batch + more_batch) >= total(model, s)
    for longer in (
        s.model_copy(update={"seq": s.seq + more_seq}),
        s.model_copy(update={"batch": s.batch + more_batch}),
    ):
        assert ft.activation_bytes(model, longer) > ft.activation_bytes(model, s)
        assert ft.logits_bytes(model, longer) > ft.logits_bytes(model, s)


@given(models, runs, st.integers(1, 7))
def test_more_gpus_with_zero3_never_increase_per_gpu_memory(model: Model, s: FinetuneSettings, extra: int) -> None:
    gpus = min(s.gpus + extra, 8)
    assert total(model, s, sharding="zero3", gpus=gpus) <= total(model, s, sharding="zero3")


@settings(max_examples=40)
@given(models, runs, st.floats(1 * 2**30, 200 * 2**30), st.sampled_from([1, 64, 256]))
def test_max_seq_fits_and_one_step_more_does_not(model: Model, s: FinetuneSettings, budget: float, step: int) -> None:
    seq = ft.max_seq(model, s, budget, step=step)
    if seq is None:
        assert need(model, s, seq=step) > budget
        return
    assert seq % step == 0
    assert seq <= model.max_context
    assert need(model, s, seq=seq) <= budget
    if seq + step <= model.max_context:
        assert need(model, s, seq=seq + step) > budget


@settings(max_examples=40)
@given(models, runs, st.floats(1 * 2**30, 200 * 2**30))
def test_max_batch_fits_and_one_more_does_not(model: Model, s: FinetuneSettings, budget: float) -> None:
    batch = ft.max_batch(model, s, budget)
    if batch is None:
        assert need(model, s, batch=1) > budget
        return
    assert need(model, s, batch=batch) <= budget
    if batch < ft.MAX_BATCH_SEARCHED:
        assert need(model, s, batch=batch + 1) > budget


def test_largest_trainable_per_method() -> None:
    small = EXACT
    big = qwen3_8b()
    budget = 24 * 2**30
    best = ft.largest_trainable([small, big], FinetuneSettings(method="full", seq=1024), budget)
    assert best["qlora"] == big
    assert best["lora"] == big
    assert best["full"] == small
    assert ft.largest_trainable([big], FinetuneSettings(method="qlora"), 1.0) == {
        "full": None,
        "lora": None,
        "qlora": None,
    }


def test_emptying_the_cache_keeps_unpacked_shapes_from_piling_up() -> None:
    s = FinetuneSettings(method="lora", seq=512, batch=4, checkpointing=False)
    kept = ft.finetune_memory(EXACT, s)
    emptied = ft.finetune_memory(EXACT, s.with_(empty_cache_steps=10))
    allocated = kept.allocated
    assert emptied.allocated == pytest.approx(allocated)
    assert emptied.total == pytest.approx(kept.total)  # what must fit is the same
    assert emptied.fragmentation == pytest.approx(ft.FRAGMENTATION_FRACTION * allocated)
    assert kept.fragmentation > emptied.fragmentation
    with pytest.raises(ValueError):
        FinetuneSettings(method="lora", empty_cache_steps=0)


def test_autocast_keeps_a_16_bit_copy_of_fp32_weights_in_every_kept_layer() -> None:
    s = FinetuneSettings(method="lora", seq=256, checkpointing=False, base_fp32=True, targets="qv")
    layer_weights = (12_288 + 24_576) * 2  # one layer's linear weights in bf16
    assert ft.autocast_weight_copy_bytes_per_layer(EXACT, s) == layer_weights
    bf16_base = s.with_(base_fp32=False)
    diff = ft.activation_bytes(EXACT, s) - ft.activation_bytes(EXACT, bf16_base)
    assert diff == pytest.approx(EXACT.layers * layer_weights)
    # Block checkpointing keeps the copies of the re-run layer only.
    ck = s.with_(checkpointing=True)
    diff_ck = ft.activation_bytes(EXACT, ck) - ft.activation_bytes(EXACT, ck.with_(base_fp32=False))
    assert diff_ck == pytest.approx(layer_weights)
    # No cast where the weights are already 16-bit, quantized, computed in fp32, or gathered in 16 bit.
    assert ft.autocast_weight_copy_bytes_per_layer(EXACT, bf16_base) == 0
    assert ft.autocast_weight_copy_bytes_per_layer(EXACT, s.with_(precision="fp32")) == 0
    assert ft.autocast_weight_copy_bytes_per_layer(EXACT, s.with_(method="qlora")) == 0
    assert ft.autocast_weight_copy_bytes_per_layer(EXACT, s.with_(gpus=2, sharding="fsdp")) == 0


def test_litgpt_bf16_mixed_llama_2_7b_lora_does_not_fit_40_gib() -> None:
    # lit-gpt's README (LoRA, Llama 2 7B, --precision bf16-mixed, A100 40GB): out of memory; with bf16-true it ran.
    llama = load_catalog().model("llama-2-7b")
    s = FinetuneSettings(method="lora", seq=1304, rank=8, targets="qv", checkpointing=False, base_fp32=True,
                         lora_dropout=0.05)
    assert ft.finetune_memory(llama, s).required > 40 * 2**30


def test_zero_steps_on_an_fp32_copy_of_the_gradient_partition() -> None:
    full = FinetuneSettings(method="full", seq=256, gpus=4, sharding="zero2", fused_optimizer=True)
    assert ft.zero_fp32_gradient_bytes(EXACT, full) == pytest.approx(TINY_PARAMS / 4 * 4)
    assert ft.optimizer_step_temporary_bytes(EXACT, full) == pytest.approx(TINY_PARAMS)
    # Stage 3 steps one sub-group at a time.
    big = load_catalog().model("llama-2-70b")
    z3 = full.with_(sharding="zero3", gpus=2)
    assert ft.zero_fp32_gradient_bytes(big, z3) == pytest.approx(ft.ZERO3_SUB_GROUP_SIZE * 4)
    # Not for FSDP or DDP, not when the optimizer is offloaded, not for pure 16-bit training.
    assert ft.zero_fp32_gradient_bytes(EXACT, full.with_(sharding="fsdp")) == 0
    assert ft.zero_fp32_gradient_bytes(EXACT, full.with_(sharding="ddp")) == 0
    assert ft.zero_fp32_gradient_bytes(EXACT, full.with_(offload="optimizer")) == 0
    assert ft.zero_fp32_gradient_bytes(EXACT, full.with_(master_weights_fp32=False)) == 0
    # The copy is alive with every gradient and state at the step: a one-token step's peak is the step.
    m = ft.finetune_memory(EXACT, full.with_(seq=1))
    assert m.allocated == pytest.approx(m.weights + m.trainable + m.optimizer + m.gradients + TINY_PARAMS)


PEAK_SETTINGS = [
    {"method": "qlora"},
    {"method": "lora", "checkpointing": "none"},
    {"method": "full"},
    {"method": "full", "optimizer_in_backward": True},
    {"method": "lora", "gradient_accumulation_steps": 8},
    {"method": "lora", "loss": "fused"},
    {"method": "full", "gpus": 4, "sharding": "zero3"},
    {"method": "full", "gpus": 4, "sharding": "fsdp", "gradient_accumulation_steps": 4},
    {"method": "full", "checkpointing": "none", "seq": 8192},
]


@pytest.mark.parametrize("request_", PEAK_SETTINGS)
@pytest.mark.parametrize("model_id", ["qwen3-8b", "deepseek-v2-lite", "llama-3.2-1b"])
def test_the_parts_held_at_the_peak_add_up_to_it(model_id: str, request_: dict[str, object]) -> None:
    # The terms never all peak together: what the peak holds adds up to it, and each term's largest size is
    # what the peak holds of it plus what another moment holds beyond that.
    model = load_catalog().model(model_id)
    mem = ft.finetune_memory(model, FinetuneSettings(**request_))  # type: ignore[arg-type]
    assert sum(size for _, size in mem.at_peak) == pytest.approx(mem.total, rel=1e-12)
    held, apart = dict(mem.at_peak), dict(mem.apart)
    assert len(held) == len(mem.at_peak) and not set(apart) & {"weights", "trainable", "optimizer", "overhead"}
    for term in ("gradients", "logits", "qlora_buffers", "gathered"):
        assert held.get(term, 0.0) + apart.get(term, 0.0) == pytest.approx(getattr(mem, term)), term
    # Under block checkpointing the re-run block is the part of the activations not held with the logits.
    activations = sum(part.get(term, 0.0) for part in (held, apart) for term in ("activations", "rerun_block"))
    assert activations == pytest.approx(mem.activations)


# --- what fits and what to change, against the verdict ---------------------------------------------------------
def _on_3090s(model: str = "llama-3.1-70b", **request: object) -> tuple[Model, FinetuneSettings, float]:
    from estimator.memory import usable_vram_bytes

    cat = load_catalog()
    gpu = cat.gpu("nvidia-rtx-3090")
    return cat.model(model), ft.settings_on(gpu, **request), usable_vram_bytes(gpu)


def test_the_largest_sequence_is_exact_and_never_contradicts_the_verdict() -> None:
    # QLoRA of a 70B model on two 3090s fits at 128 tokens (tight): the largest sequence is at least that, and
    # exact to the token, not a multiple of 256 that skipped every length that fits.
    model, s, usable = _on_3090s(method="qlora", gpus=2, seq=128)
    plan = ft.finetune_plan(model, s, usable)
    assert plan.verdict == "tight"
    assert plan.max_seq is not None and plan.max_seq >= 128 and plan.max_batch is not None and plan.max_batch >= 1
    assert need(model, s, seq=plan.max_seq) <= usable < need(model, s, seq=plan.max_seq + 1)
    assert next(c for c in plan.curves if c.method == "qlora").max_seq == plan.max_seq
    # At 2048 tokens it does not fit; the largest sequence that does is the same one.
    long = s.model_copy(update={"seq": 2048})
    assert ft.finetune_plan(model, long, usable).max_seq == plan.max_seq


@settings(max_examples=60)
@given(models, runs, st.floats(1 * 2**30, 200 * 2**30))
def test_the_largest_seq_and_batch_agree_with_the_verdict(model: Model, s: FinetuneSettings, usable: float) -> None:
    assume(s.seq <= model.max_context)
    plan = ft.finetune_plan(model, s, usable)
    if plan.verdict == "does_not_fit":
        assert plan.max_seq is None or plan.max_seq < s.seq
        assert plan.max_batch is None or plan.max_batch < s.batch
    else:
        assert plan.max_seq is not None and plan.max_seq >= s.seq
        assert plan.max_batch is not None and plan.max_batch >= s.batch
    if plan.max_seq is not None:
        assert need(model, s, seq=plan.max_seq) <= usable
        if plan.max_seq < model.max_context:
            assert need(model, s, seq=plan.max_seq + 1) > usable


def _applied(s: FinetuneSettings, change: ft.Change) -> FinetuneSettings:
    """The run a suggested change describes, built from its key and value alone (as a person would type it)."""
    v = change.value
    by_key: dict[str, Callable[[], FinetuneSettings]] = {
        "optimizer_8bit": lambda: s.with_(optimizer=v), "optimizer_paged": lambda: s.with_(optimizer=v),
        "checkpointing": lambda: s.with_(checkpointing_mode=v), "sharding": lambda: s.with_(sharding=v),
        "batch": lambda: s.model_copy(update={"batch": int(v)}),
        "offload": lambda: s.with_(activation_offload=True), "cpu_offload_optimizer": lambda: s.with_(offload=v),
        "cpu_offload_params": lambda: s.with_(offload=v), "rank": lambda: s.with_(rank=int(v)),
        "seq": lambda: s.model_copy(update={"seq": int(v)}),
        "lora": lambda: s.with_(method=v), "qlora": lambda: s.with_(method=v),
        "qlora_seq": lambda: s.with_(method="qlora").model_copy(update={"seq": int(v)}),
        "framework": lambda: s.with_(framework=v), "gpus": lambda: s.with_(gpus=int(v)),
        "gpus_fsdp": lambda: s.with_(gpus=int(v), sharding="fsdp"),
    }
    return by_key[change.key]()


def _assert_each_change_lifts_the_verdict(model: Model, s: FinetuneSettings, plan: ft.FinetunePlan) -> None:
    from estimator.memory import at_least, next_verdict

    target = next_verdict(plan.verdict)
    for c in plan.changes:
        changed = _applied(s, c)
        assert changed.model_dump(exclude={"given_knobs"}) != s.model_dump(exclude={"given_knobs"}), c
        verdict = ft.finetune_verdict(model, changed, plan.usable_per_gpu_bytes)
        assert verdict == c.verdict and at_least(verdict, target), (c, verdict, target)
    assert [c.key for c in plan.changes] == sorted((c.key for c in plan.changes), key=ft.CHANGE_ORDER.index)


def test_what_to_change_on_two_3090s_lifts_the_verdict() -> None:
    model, s, usable = _on_3090s(method="qlora", gpus=2)
    plan = ft.finetune_plan(model, s, usable)
    assert plan.verdict == "does_not_fit"
    keys = [c.key for c in plan.changes]
    # Parameters in CPU memory or a third card would do; the pieces that cannot (activation offload, a paged
    # optimizer the run already has) are not offered.
    assert "cpu_offload_params" in keys and "gpus" in keys and "offload" not in keys
    assert next(c for c in plan.changes if c.key == "gpus").value == "3"
    _assert_each_change_lifts_the_verdict(model, s, plan)
    # Tight at 128 tokens: only what makes it fit, never a change that leaves it tight.
    short = s.model_copy(update={"seq": 128})
    tight = ft.finetune_plan(model, short, usable)
    assert tight.verdict == "tight" and tight.changes
    assert all(c.verdict == "fits" for c in tight.changes)
    _assert_each_change_lifts_the_verdict(model, short, tight)


def test_more_cards_that_replicate_the_model_are_offered_sharded() -> None:
    # Unsloth replicates the model over several GPUs (DDP): a third card holds no more, so more cards come with
    # FSDP (which Unsloth runs through Accelerate), and on the two there are, sharding alone is offered first.
    model, s, usable = _on_3090s("qwen3-14b", method="lora", gpus=2, framework="unsloth")
    plan = ft.finetune_plan(model, s, usable)
    assert s.sharding == "ddp" and plan.verdict == "does_not_fit"
    keys = [c.key for c in plan.changes]
    assert keys[0] == "sharding" and "gpus_fsdp" in keys and "gpus" not in keys
    _assert_each_change_lifts_the_verdict(model, s, plan)
    # Where cards cannot be added (one machine's unified memory), none are suggested.
    assert not {"gpus", "gpus_fsdp"} & {c.key for c in ft.finetune_plan(model, s, usable, more_gpus=False).changes}


@settings(max_examples=60)
@given(models, runs, st.floats(1 * 2**30, 200 * 2**30))
def test_every_change_differs_from_the_question_and_lifts_the_verdict(model: Model, s: FinetuneSettings,
                                                                     usable: float) -> None:
    assume(s.seq <= model.max_context)
    _assert_each_change_lifts_the_verdict(model, s, ft.finetune_plan(model, s, usable))


def test_sgd_keeps_no_momentum_by_default() -> None:
    # torch.optim.SGD as Hugging Face's optim="sgd" builds it (momentum 0) keeps no state: an 8B full fine-tune
    # on an A100 80GB fits; with momentum set the buffer (4 bytes per parameter) does not.
    from estimator.memory import usable_vram_bytes

    cat = load_catalog()
    gpu, model = cat.gpu("nvidia-a100-80gb-sxm"), cat.model("llama-3.1-8b")
    plain = ft.settings_on(gpu, method="full", optimizer="sgd")
    momentum = ft.settings_on(gpu, method="full", optimizer="sgd_momentum")
    assert ft.optimizer_bytes(model, plain) == 0
    assert ft.optimizer_bytes(model, momentum) == pytest.approx(model.params * 4)
    assert ft.finetune_verdict(model, plain, usable_vram_bytes(gpu)) != "does_not_fit"
    assert ft.finetune_verdict(model, momentum, usable_vram_bytes(gpu)) == "does_not_fit"
