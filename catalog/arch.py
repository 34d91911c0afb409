"""Parameter counts derived from a model's architecture, to check the stated totals against."""

from __future__ import annotations

from catalog.schema import Model


def embedding_params(model: Model) -> int:
    """Input embedding plus, when untied, the LM head."""
    table = model.vocab_size * model.hidden_size
    return table if model.tied_embeddings else 2 * table


def attention_params_per_layer(model: Model) -> int:
    h, a = model.hidden_size, model.attention
    if a.kind == "mla":
        assert a.kv_lora_rank is not None and a.qk_rope_head_dim is not None
        nope = a.qk_nope_head_dim or 0
        v_dim = a.v_head_dim or model.head_dim
        q_head = nope + a.qk_rope_head_dim
        if a.q_lora_rank:
            q = h * a.q_lora_rank + a.q_lora_rank * model.attention_heads * q_head
        else:
            q = h * model.attention_heads * q_head
        kv = h * (a.kv_lora_rank + a.qk_rope_head_dim) + a.kv_lora_rank * model.attention_heads * (nope + v_dim)
        return q + kv + model.attention_heads * v_dim * h
    return _qkvo_params(h, model.attention_heads, model.kv_heads, model.head_dim, kv_projections=2)


def global_attention_params_per_layer(model: Model) -> int:
    """A global layer's Q/K/V/O where its heads differ from the local layers' (Gemma 4); else as any layer."""
    a = model.attention
    return _qkvo_params(model.hidden_size, model.attention_heads, a.global_kv_heads or model.kv_heads,
                        a.global_head_dim or model.head_dim, kv_projections=1 if a.global_values_are_keys else 2)


def _qkvo_params(hidden: int, heads: int, kv_heads: int, head_dim: int, *, kv_projections: int) -> int:
    """Q and O of `heads` × `head_dim`, and K (and V, unless the keys serve as values) of `kv_heads`."""
    q_out, kv_out = heads * head_dim, kv_heads * head_dim
    return hidden * q_out + kv_projections * hidden * kv_out + q_out * hidden


def attention_params(model: Model) -> int:
    """Q/K/V/O of every layer that has them: in hybrid models only the full-attention layers (their
    linear-attention or SSM mixers go in `extra_params_b`); sliding models count their global layers'
    own shapes."""
    a = model.attention
    if a.kind == "hybrid_linear":
        return (a.global_layers or 0) * attention_params_per_layer(model)
    if a.kind == "sliding" and a.global_layers is not None:
        local = model.layers - a.global_layers
        return local * attention_params_per_layer(model) + a.global_layers * global_attention_params_per_layer(model)
    return model.layers * attention_params_per_layer(model)


def mlp_params(hidden: int, width: int, gated: bool) -> int:
    return (3 if gated else 2) * hidden * width


def ffn_params_per_layer(model: Model) -> tuple[int, int]:
    """(dense-layer FFN params, MoE-layer FFN params total) per layer of each kind."""
    gated = model.mlp == "gated"
    dense = mlp_params(model.hidden_size, model.intermediate_size or 0, gated)
    if model.moe is None:
        return dense, 0
    moe = model.moe
    expert_width = moe.moe_intermediate_size or model.intermediate_size or 0
    shared_width = moe.shared_expert_intermediate_size or expert_width
    routed = moe.experts * mlp_params(model.hidden_size, expert_width, gated)
    shared = moe.shared_experts * mlp_params(model.hidden_size, shared_width, gated)
    router = model.hidden_size * moe.experts
    return dense, routed + shared + router


def decoder_params(model: Model) -> int:
    """Embeddings + attention + FFN of every layer the formula understands (norms and biases ignored).

    In hybrid models only the full-attention layers are counted for attention; their linear-attention
    or SSM mixers go in `extra_params_b`.
    """
    dense_ffn, moe_ffn = ffn_params_per_layer(model)
    if model.moe is None:
        ffn = model.layers * dense_ffn
    else:
        dense_layers = model.moe.dense_layers
        ffn = dense_layers * dense_ffn + (model.layers - dense_layers) * moe_ffn
    return embedding_params(model) + attention_params(model) + ffn


def active_decoder_params(model: Model) -> int:
    """Parameters touched per token: as decoder_params, with only the routed experts in use."""
    if model.moe is None:
        return decoder_params(model)
    moe = model.moe
    gated = model.mlp == "gated"
    expert_width = moe.moe_intermediate_size or model.intermediate_size or 0
    idle = (moe.experts - moe.active_experts) * mlp_params(model.hidden_size, expert_width, gated)
    return decoder_params(model) - (model.layers - moe.dense_layers) * idle


def stated_vs_derived(model: Model) -> float:
    """Relative difference between the stated total and the derived one (+ extra_params_b)."""
    derived = decoder_params(model) + model.extra_params_b * 1e9
    return (model.params - derived) / model.params
