"""A catalog `Model` derived from a Hugging Face `config.json`, for models the catalog does not list.

Pure: the caller fetches the JSON (bot.huggingface_client does); nothing here reads files or the network.

Where the numbers come from:
  * multimodal checkpoints keep the language model's fields under `text_config` (or `llm_config` /
    `language_config`); top-level keys fill what the nested block leaves out;
  * `head_dim` is taken as stated whenever the config states it (Qwen3, Gemma, GPT-OSS set it to
    something other than hidden / heads);
  * the parameter count is exact when the checkpoint's `model.safetensors.index.json` is given
    (`metadata.total_size` bytes ÷ bytes per element of the config's dtype), otherwise computed with
    `catalog.arch` plus the parts its formula leaves out (linear-attention / SSM mixers, attention
    output gates, multi-token-prediction layers, the vision tower), all of which go in
    `extra_params_b`. `source` says which was used.
"""

from __future__ import annotations

import json
import math
import re
from collections.abc import Mapping
from typing import Any, Literal

from catalog.arch import (
    active_decoder_params,
    attention_params_per_layer,
    decoder_params,
    ffn_params_per_layer,
)
from catalog.schema import Attention, AttentionKind, Model, MoE

__all__ = [
    "SUPPORTED_MODEL_TYPES",
    "UnsupportedConfig",
    "catalog_entry_toml",
    "model_from_config",
    "param_breakdown",
    "slug",
]


class UnsupportedConfig(ValueError):
    """The config lacks a field the estimate needs, or describes an architecture not modelled here.

    `reason` is a stable code and `values` the facts that fill it in: the bot words them for the asker, in
    their language, from its message catalogs (`hf.<reason>`). `str()` is the code and the facts, for logs.
    """

    def __init__(self, reason: str, **values: object) -> None:
        self.reason = reason
        self.values = {k: str(v) for k, v in values.items()}
        facts = "; ".join(f"{k}: {v}" for k, v in self.values.items())
        super().__init__(f"{reason} ({facts})" if facts else reason)


# Bytes per stored element of the checkpoint's declared dtype.
DTYPE_BYTES: dict[str, float] = {
    "float32": 4,
    "fp32": 4,
    "float": 4,
    "bfloat16": 2,
    "bf16": 2,
    "float16": 2,
    "fp16": 2,
    "half": 2,
    "float8_e4m3fn": 1,
    "float8_e5m2": 1,
    "fp8": 1,
    "int8": 1,
}

_DENSE = frozenset(
    {
        "llama",
        "mistral",
        "ministral",
        "qwen2",
        "qwen3",
        "gemma",
        "gemma2",
        "gemma3",
        "gemma3_text",
        "olmo2",
        "olmo3",
        "smollm3",
        "granite",
        "exaone4",
        "ernie4_5",
        "glm4",
        "cohere",
        "cohere2",
        "phi3",
    }
)
_MOE = frozenset(
    {
        "mixtral",
        "qwen2_moe",
        "qwen3_moe",
        "gpt_oss",
        "deepseek_v2",
        "deepseek_v3",
        "kimi_k2",
        "glm4_moe",
        "ernie4_5_moe",
        "llama4_text",
        "granitemoe",
    }
)
_HYBRID = frozenset(
    {
        "qwen3_next",
        "qwen3_5",
        "qwen3_5_text",
        "qwen3_5_moe",
        "qwen3_5_moe_text",
        "granitemoehybrid",
        "jamba",
        "nemotron_h",
    }
)
SUPPORTED_MODEL_TYPES: frozenset[str] = _DENSE | _MOE | _HYBRID

# transformers' config classes fill omitted keys with their defaults; these are the defaults of the
# fields we read for the classes whose shipped configs rely on them (google/gemma-3-*-it name only
# what differs from Gemma3TextConfig; Gemma 2 always ties its embeddings).
_TYPE_DEFAULTS: dict[str, dict[str, Any]] = {
    "gemma3_text": {
        "vocab_size": 262_208,
        "num_attention_heads": 8,
        "num_key_value_heads": 4,
        "head_dim": 256,
        "max_position_embeddings": 131_072,
        "sliding_window": 4096,
        "sliding_window_pattern": 6,
        "tie_word_embeddings": True,
    },
    "gemma2": {"tie_word_embeddings": True, "head_dim": 256},
    "gemma": {"tie_word_embeddings": True},
    "qwen3_next": {"full_attention_interval": 4},
    "qwen3_5_text": {"full_attention_interval": 4},
    "qwen3_5_moe_text": {"full_attention_interval": 4},
}
_TEXT_KEYS = ("text_config", "llm_config", "language_config")
_REPO = re.compile(r"^[A-Za-z0-9][\w.-]*/[\w.-]+$")


def slug(repo: str) -> str:
    """'Qwen/Qwen3-8B' → 'hf-qwen-qwen3-8b': a valid catalog id that cannot clash with curated ones."""
    body = re.sub(r"[^a-z0-9._-]+", "-", repo.lower()).strip("-._")
    return f"hf-{body}"


# --- reading the config ----------------------------------------------------------------------------


MXFP4_BITS_PER_WEIGHT = (32 * 4 + 8) / 32


class _Cfg:
    """The text model's fields: nested block first, then the top level, then the class defaults."""

    def __init__(self, config: Mapping[str, Any]) -> None:
        if not isinstance(config, Mapping):
            raise UnsupportedConfig("not_object")
        self.top = dict(config)
        nested = next((config[k] for k in _TEXT_KEYS if isinstance(config.get(k), Mapping)), None)
        self.text: dict[str, Any] = dict(nested) if nested is not None else {}
        self.model_type = str(self.text.get("model_type") or config.get("model_type") or "").lower()
        if self.model_type == "gemma3" and nested is not None:
            self.model_type = "gemma3_text"
        self.defaults = _TYPE_DEFAULTS.get(self.model_type, {})

    def get(self, *keys: str, default: Any = None) -> Any:
        for source in (self.text, self.top, self.defaults):
            for key in keys:
                if source.get(key) is not None:
                    return source[key]
        return default

    def integer(self, *keys: str, default: int | None = None) -> int | None:
        value = self.get(*keys)
        if value is None:
            return default
        if isinstance(value, bool) or not isinstance(value, int | float) or value != int(value):
            raise UnsupportedConfig("not_integer", field=keys[0], value=repr(value))
        return int(value)

    def require(self, *names: str) -> dict[str, int]:
        out: dict[str, int] = {}
        missing = []
        for name in names:
            value = self.integer(name)
            if value is None or value <= 0:
                missing.append(name)
            else:
                out[name] = value
        if missing:
            raise UnsupportedConfig("missing_fields", fields=", ".join(missing))
        return out


# --- layer layout ----------------------------------------------------------------------------------


def _layer_types(c: _Cfg, layers: int) -> list[str] | None:
    types = c.get("layer_types")
    if isinstance(types, list) and types:
        if len(types) != layers:
            raise UnsupportedConfig("layer_types_count", entries=len(types), layers=layers)
        return [str(t) for t in types]
    return None


def _attention_layout(
    c: _Cfg, layers: int
) -> tuple[AttentionKind, int | None, int | None, str | None, list[int]]:
    """(kind, sliding_window, global_layers, layer_pattern, indices of linear/SSM layers)."""
    mt = c.model_type
    window = c.integer("sliding_window")
    types = _layer_types(c, layers)
    if mt in ("qwen3_next", "qwen3_5", "qwen3_5_text", "qwen3_5_moe", "qwen3_5_moe_text"):
        if types is None:
            interval = c.integer("full_attention_interval") or 4
            types = ["full_attention" if (i + 1) % interval == 0 else "linear_attention" for i in range(layers)]
        linear = [i for i, t in enumerate(types) if t == "linear_attention"]
        full = layers - len(linear)
        pattern = (
            f"{len(linear)} Gated DeltaNet + {full} full attention (full at layers "
            f"{_ids([i for i, t in enumerate(types) if t != 'linear_attention'])})"
        )
        return "hybrid_linear", None, full, pattern, linear
    if mt == "granitemoehybrid":
        if types is None:
            raise UnsupportedConfig("missing_layer_types")
        linear = [i for i, t in enumerate(types) if t == "mamba"]
        full = layers - len(linear)
        return (
            "hybrid_linear",
            None,
            full,
            f"{len(linear)} Mamba2 + {full} attention (attention at layers "
            f"{_ids([i for i, t in enumerate(types) if t != 'mamba'])})",
            linear,
        )
    if mt == "jamba":
        period, offset = c.integer("attn_layer_period"), c.integer("attn_layer_offset")
        if period is None or offset is None:
            raise UnsupportedConfig("missing_attention_period")
        attn = [i for i in range(layers) if i % period == offset]
        linear = [i for i in range(layers) if i % period != offset]
        return "hybrid_linear", None, len(attn), f"1 attention every {period} layers (layers {_ids(attn)})", linear
    if types is not None and any(t in ("sliding_attention", "full_attention") for t in types):
        local = sum(1 for t in types if t == "sliding_attention")
        if local and window:
            return (
                "sliding",
                window,
                layers - local,
                f"{local} sliding ({window}) : {layers - local} full (layer_types)",
                [],
            )
        return "full", None, None, None, []
    if mt == "gemma2" and window:
        local = math.ceil(layers / 2)
        return "sliding", window, layers - local, f"alternating sliding ({window}) / full, even layer ids local", []
    if mt == "gemma3_text" and window:
        every = c.integer("sliding_window_pattern", "_sliding_window_pattern") or 6
        full = layers // every
        return "sliding", window, full, f"{every - 1} local ({window}) : 1 global (every {every}th layer)", []
    if mt in ("mistral", "mixtral") and window and window < (c.integer("max_position_embeddings") or 0):
        return "sliding", window, 0, f"all {layers} layers sliding ({window})", []
    if mt in ("qwen2", "qwen2_moe", "qwen3", "qwen3_moe") and c.get("use_sliding_window") and window:
        from_layer = c.integer("max_window_layers") or 0
        local = max(layers - from_layer, 0)
        if local:
            return "sliding", window, layers - local, f"layers from {from_layer} sliding ({window})", []
    return "full", None, None, None, []


def _ids(ids: list[int]) -> str:
    if len(ids) <= 6:
        return ", ".join(map(str, ids))
    return f"{ids[0]}, {ids[1]}, ..., {ids[-1]}"


def _nemotron_h(c: _Cfg, hidden: int) -> tuple[int, int, int, int, str]:
    """Nemotron-H blocks → (blocks, attention layers, Mamba2 layers, MoE blocks, pattern).

    Same convention as the catalog's nemotron entries: `layers` counts every block of the config (52 for
    Nemotron 3 Nano), each block being ONE of Mamba2 (M), attention (*) or MoE FFN (E); the MoE blocks are
    the MoE layers, the other blocks are `moe.dense_layers` with no FFN, and only the Mamba2 blocks keep
    a recurrent state (`attention.state_layers`).
    """
    pattern = str(c.get("hybrid_override_pattern") or "")
    if not pattern:
        raise UnsupportedConfig("missing_block_pattern")
    mamba, attn, moe, mlp = (pattern.count(ch) for ch in ("M", "*", "E", "-"))
    if mlp:
        raise UnsupportedConfig("dense_mlp_blocks")
    if not moe or moe > mamba + attn:
        raise UnsupportedConfig("block_pattern_moe")
    return mamba + attn + moe, attn, mamba, moe, pattern


# --- linear-attention and SSM mixers ---------------------------------------------------------------


def _gated_deltanet(c: _Cfg, hidden: int) -> tuple[int, int]:
    """(params per Gated DeltaNet mixer, recurrent state elements per layer), as in Qwen3-Next / Qwen3.5."""
    need = c.require(
        "linear_num_value_heads",
        "linear_num_key_heads",
        "linear_key_head_dim",
        "linear_value_head_dim",
        "linear_conv_kernel_dim",
    )
    nv, nk = need["linear_num_value_heads"], need["linear_num_key_heads"]
    dk, dv, kernel = need["linear_key_head_dim"], need["linear_value_head_dim"], need["linear_conv_kernel_dim"]
    key_dim, value_dim = nk * dk, nv * dv
    conv_dim = 2 * key_dim + value_dim
    params = (
        hidden * (2 * key_dim + 2 * value_dim)  # in_proj_qkvz
        + hidden * 2 * nv  # in_proj_ba
        + conv_dim * kernel  # depthwise conv1d
        + value_dim * hidden  # out_proj
        + 2 * nv
        + dv
    )  # A_log, dt_bias, gated norm
    state = nv * dk * dv + (kernel - 1) * conv_dim
    return params, state


def _mamba2(c: _Cfg, hidden: int, prefix: str) -> tuple[int, int]:
    """(params per Mamba2 mixer, state elements per layer); Granite 4 uses `mamba_*`, Nemotron-H plain keys."""
    # (heads, head_dim, d_state, conv kernel) and the group count, as each family names them.
    if prefix == "mamba_":
        keys, groups_key = ("mamba_n_heads", "mamba_d_head", "mamba_d_state", "mamba_d_conv"), "mamba_n_groups"
    else:
        keys, groups_key = ("mamba_num_heads", "mamba_head_dim", "ssm_state_size", "conv_kernel"), "n_groups"
    need = c.require(*keys)
    heads, head_dim, d_state, kernel = (need[k] for k in keys)
    groups = c.integer(groups_key) or 1
    inner = heads * head_dim
    conv_dim = inner + 2 * groups * d_state
    params = (
        hidden * (2 * inner + 2 * groups * d_state + heads)
        + conv_dim * (kernel + 1)
        + inner * hidden
        + 3 * heads
        + inner
    )
    state = (kernel - 1) * conv_dim + heads * head_dim * d_state
    return params, state


def _mamba1(c: _Cfg, hidden: int) -> tuple[int, int]:
    """(params per Mamba mixer, state elements per layer), Jamba's layout."""
    need = c.require("mamba_d_state", "mamba_d_conv", "mamba_expand")
    d_state, kernel = need["mamba_d_state"], need["mamba_d_conv"]
    inner = need["mamba_expand"] * hidden
    dt_rank = c.integer("mamba_dt_rank") or math.ceil(hidden / 16)
    params = (
        hidden * 2 * inner
        + inner * kernel
        + inner * (dt_rank + 2 * d_state)
        + dt_rank * inner
        + inner
        + inner * d_state
        + inner
        + inner * hidden
    )
    return params, inner * d_state + (kernel - 1) * inner


# --- vision tower ----------------------------------------------------------------------------------


def _vision_params(config: Mapping[str, Any], text_hidden: int) -> int:
    """A ViT's weights: blocks (QKV, out, MLP), patch and position embeddings, projector into the LM."""
    v = config.get("vision_config")
    if not isinstance(v, Mapping):
        return 0
    h = v.get("hidden_size") or v.get("embed_dim")
    depth = v.get("num_hidden_layers") or v.get("depth")
    width = v.get("intermediate_size")
    if not (isinstance(h, int) and isinstance(depth, int) and isinstance(width, int)):
        return 0
    patch = int(v.get("patch_size") or 14)
    channels = int(v.get("in_channels") or v.get("num_channels") or 3)
    temporal = int(v.get("temporal_patch_size") or 1)
    if v.get("num_position_embeddings"):
        positions = int(v["num_position_embeddings"])
    elif v.get("image_size"):
        positions = (int(v["image_size"]) // patch) ** 2
    else:
        positions = 0
    blocks = depth * (4 * h * h + 2 * h * width)
    embed = channels * temporal * patch * patch * h + positions * h
    merge = int(v.get("spatial_merge_size") or 1) ** 2
    out = int(v.get("out_hidden_size") or text_hidden)
    projector = (h * merge) ** 2 + h * merge * out if merge > 1 else h * out
    return blocks + embed + projector


# --- derivation ------------------------------------------------------------------------------------


def _moe(c: _Cfg, layers: int) -> MoE | None:
    experts = c.integer("num_experts", "n_routed_experts", "num_local_experts")
    if not experts or experts < 2:
        return None
    active = c.integer("num_experts_per_tok", "experts_per_token", "moe_topk")
    if not active:
        raise UnsupportedConfig("missing_experts_per_token")
    width = c.integer("moe_intermediate_size") or c.integer("intermediate_size")
    if not width:
        raise UnsupportedConfig("missing_expert_width")
    shared = c.integer("n_shared_experts", "num_shared_experts") or 0
    shared_width = c.integer(
        "shared_expert_intermediate_size", "moe_shared_expert_intermediate_size", "shared_intermediate_size"
    )
    if shared_width and not shared:
        shared = 1  # Qwen2-MoE / Qwen3-Next style: one shared expert of its own width
    dense = c.integer("first_k_dense_replace") or 0
    only = c.get("mlp_only_layers")
    if isinstance(only, list) and only:
        dense = max(dense, len(only))
    step = c.integer("decoder_sparse_step", "moe_layer_freq")
    if step and step > 1:
        dense = max(dense, layers - len([i for i in range(layers) if (i + 1) % step == 0]))
    if c.model_type == "jamba":
        period, offset = c.integer("expert_layer_period") or 1, c.integer("expert_layer_offset") or 0
        dense = layers - len([i for i in range(layers) if i % period == offset])
    return MoE(
        experts=experts,
        active_experts=active,
        shared_experts=shared,
        moe_intermediate_size=width,
        shared_expert_intermediate_size=shared_width if shared_width != width else None,
        dense_layers=dense,
    )


def _dtype(config: Mapping[str, Any], c: _Cfg) -> str:
    return str(c.get("torch_dtype", "dtype") or config.get("torch_dtype") or config.get("dtype") or "bfloat16")


def _max_context(c: _Cfg) -> tuple[int, str]:
    mpe = c.integer("max_position_embeddings", "max_sequence_length", "seq_length")
    if not mpe:
        raise UnsupportedConfig("missing_context")
    scaling = c.get("rope_scaling")
    note = f"config max_position_embeddings {mpe}"
    if isinstance(scaling, Mapping) and scaling.get("original_max_position_embeddings"):
        note += (
            f" ({scaling.get('rope_type') or scaling.get('type')} factor {scaling.get('factor')} over "
            f"{scaling['original_max_position_embeddings']})"
        )
    if c.model_type in ("qwen3", "qwen3_moe") and mpe == 40960 and not scaling:
        # The Qwen3 cards state 32,768 native tokens; the config's 40,960 adds room for generated tokens.
        return 32768, note + "; stored 32768, the native context the Qwen3 model cards state (131072 with YaRN)"
    return max(mpe, 512), note


def param_breakdown(config: Mapping[str, Any]) -> dict[str, int]:
    """Parameters by part, as the derivation counts them: decoder (catalog.arch formula), linear mixers
    and attention gates, multi-token-prediction layers, vision tower, and `language_model` (the first two)."""
    model = model_from_config("org/breakdown", config)
    return _parts(_Cfg(config), config, model)


def _parts(c: _Cfg, config: Mapping[str, Any], base: Model) -> dict[str, int]:
    hidden = base.hidden_size
    a = base.attention
    mixers = 0
    if a.kind == "hybrid_linear":
        linear = base.recurrent_layers
        per = 0
        if c.model_type.startswith(("qwen3_next", "qwen3_5")):
            per = _gated_deltanet(c, hidden)[0]
        elif c.model_type == "granitemoehybrid":
            per = _mamba2(c, hidden, "mamba_")[0]
        elif c.model_type == "nemotron_h":
            per = _mamba2(c, hidden, "")[0]
        elif c.model_type == "jamba":
            per = _mamba1(c, hidden)[0]
        mixers = linear * per
    gates = 0
    gated = c.model_type == "qwen3_next" or (
        c.model_type.startswith("qwen3_5") and bool(c.get("attn_output_gate", default=True))
    )
    if gated:
        gates = (a.global_layers or 0) * base.attention_heads * base.head_dim * hidden
    mtp = 0
    nextn = c.integer("num_nextn_predict_layers") or 0
    if nextn:
        # DeepSeek-style MTP module: one more decoder layer, the eh_proj that merges two hidden states and,
        # in the published checkpoint, its own copies of the embedding and the LM head.
        _, moe_ffn = ffn_params_per_layer(base)
        layer = attention_params_per_layer(base) + (moe_ffn or ffn_params_per_layer(base)[0])
        mtp = nextn * (layer + 2 * hidden * hidden + 2 * base.vocab_size * hidden)
    qmtp = c.integer("mtp_num_hidden_layers") or 0
    if qmtp:
        dense_ffn, moe_ffn = ffn_params_per_layer(base)
        per_gate = base.attention_heads * base.head_dim * hidden if gated else 0
        mtp += qmtp * (attention_params_per_layer(base) + per_gate + (moe_ffn or dense_ffn) + 2 * hidden * hidden)
    vision = _vision_params(config, hidden)
    decoder = decoder_params(base)
    return {
        "decoder": decoder,
        "linear_mixers_and_gates": mixers + gates,
        "mtp": mtp,
        "vision": vision,
        "language_model": decoder + mixers + gates,
    }


def model_from_config(
    repo: str,
    config: Mapping[str, Any],
    *,
    safetensors_index: Mapping[str, Any] | None = None,
    fetched_at: str | None = None,
) -> Model:
    """Every `Model` field from a Hugging Face config.json (and, if given, its safetensors index)."""
    if not _REPO.match(repo or ""):
        raise UnsupportedConfig("bad_repo", repo=repr(repo))
    c = _Cfg(config)
    if not c.model_type:
        raise UnsupportedConfig("missing_model_type")
    if c.model_type not in SUPPORTED_MODEL_TYPES:
        arch = ", ".join(map(str, config.get("architectures") or [])) or "?"
        raise UnsupportedConfig("unsupported_architecture", architecture=arch, model_type=repr(c.model_type),
                                supported=", ".join(sorted(SUPPORTED_MODEL_TYPES)))
    base = c.require("num_hidden_layers", "hidden_size", "num_attention_heads", "vocab_size")
    layers, hidden, heads, vocab = (
        base["num_hidden_layers"],
        base["hidden_size"],
        base["num_attention_heads"],
        base["vocab_size"],
    )
    kv_heads = c.integer("num_key_value_heads") or heads

    mla = c.integer("kv_lora_rank") is not None and c.model_type in ("deepseek_v2", "deepseek_v3", "kimi_k2")
    if mla:
        need = c.require("kv_lora_rank", "qk_rope_head_dim", "qk_nope_head_dim", "v_head_dim")
        head_dim = need["qk_nope_head_dim"] + need["qk_rope_head_dim"]
    else:
        head_dim = c.integer("head_dim") or 0
        if not head_dim:
            if hidden % heads:
                raise UnsupportedConfig("missing_head_dim")
            head_dim = hidden // heads

    state: int | None = None
    kind: AttentionKind
    window: int | None
    global_layers: int | None
    layer_pattern: str | None
    state_layers: int | None = None
    if c.model_type == "nemotron_h":
        layers, n_attn, state_layers, _, pattern = _nemotron_h(c, hidden)
        kind, window, global_layers, layer_pattern = (
            "hybrid_linear",
            None,
            n_attn,
            f"hybrid_override_pattern {pattern} (M Mamba2, * attention, E MoE)",
        )
        state = _mamba2(c, hidden, "")[1]
    else:
        kind, window, global_layers, layer_pattern, _ = _attention_layout(c, layers)
        if kind == "hybrid_linear":
            if c.model_type.startswith(("qwen3_next", "qwen3_5")):
                state = _gated_deltanet(c, hidden)[1]
            elif c.model_type == "granitemoehybrid":
                state = _mamba2(c, hidden, "mamba_")[1]
            else:
                state = _mamba1(c, hidden)[1]

    if mla:
        attention = Attention(
            kind="mla",
            kv_lora_rank=c.integer("kv_lora_rank"),
            q_lora_rank=c.integer("q_lora_rank"),
            qk_rope_head_dim=c.integer("qk_rope_head_dim"),
            qk_nope_head_dim=c.integer("qk_nope_head_dim"),
            v_head_dim=c.integer("v_head_dim"),
        )
    else:
        attention = Attention(
            kind=kind,
            sliding_window=window,
            global_layers=global_layers,
            layer_pattern=layer_pattern,
            state_elements_per_layer=state,
            state_layers=state_layers,
        )

    moe = _moe(c, layers)
    quant = config.get("quantization_config") or c.get("quantization_config")
    if moe is not None and isinstance(quant, Mapping) and quant.get("quant_method") == "mxfp4":
        # Experts shipped in MXFP4 (32 four-bit values and one 8-bit scale per block) stay so in GGUF files.
        moe = moe.model_copy(update={"gguf_expert_bits": MXFP4_BITS_PER_WEIGHT})
    if c.model_type == "nemotron_h" and moe is not None:
        moe = moe.model_copy(update={"dense_layers": layers - _nemotron_h(c, hidden)[3]})
    if moe is not None:
        intermediate = c.integer("intermediate_size") if moe.dense_layers else None
        if c.model_type == "nemotron_h":
            intermediate = None
    else:
        intermediate = c.integer("intermediate_size", "ffn_hidden_size")
        if not intermediate:
            raise UnsupportedConfig("missing_ffn_width")
    mlp: Literal["gated", "plain"] = "plain" if c.model_type == "nemotron_h" else "gated"
    tied = bool(c.get("tie_word_embeddings", default=False))
    max_ctx, ctx_note = _max_context(c)

    modalities = ["text"]
    if isinstance(config.get("vision_config"), Mapping):
        modalities.append("image")
    if isinstance(config.get("audio_config"), Mapping):
        modalities.append("audio")

    name = repo.split("/", 1)[1]
    provisional = Model(
        id=slug(repo),
        name=name,
        hf_repo=repo,
        family=c.model_type,
        params_b=1.0,
        active_params_b=1.0,
        layers=layers,
        hidden_size=hidden,
        attention_heads=heads,
        kv_heads=kv_heads,
        head_dim=head_dim,
        intermediate_size=intermediate,
        mlp=mlp,
        vocab_size=vocab,
        tied_embeddings=tied,
        max_context=max_ctx,
        attention=attention,
        moe=moe,
        source="pending derivation",
    )
    parts = _parts(c, config, provisional)
    derived_total = float(parts["language_model"] + parts["mtp"] + parts["vision"])
    active = float(active_decoder_params(provisional) + parts["linear_mixers_and_gates"]) if moe else derived_total

    dtype = _dtype(config, c)
    exact = _exact_params(config, c, safetensors_index, dtype)
    when = fetched_at or "date unknown"
    source = f"https://huggingface.co/{repo}/blob/main/config.json (fetched {when})"
    if exact is not None:
        total, how = exact
        source += f"; parameters exact: {how}"
    else:
        total = derived_total
        source += (
            "; parameters computed from the architecture (catalog.arch decoder formula + linear mixers, "
            "attention gates, MTP layers and vision tower)"
        )
        if safetensors_index is not None and _quantized(config, c):
            source += "; the safetensors index was not used because the checkpoint is quantized"
    active = min(active, total)

    notes = [f"Derived from config.json (model_type {c.model_type}); not a curated catalog entry."]
    if parts["mtp"]:
        notes.append(
            f"Includes {parts['mtp'] / 1e9:.2f}B of multi-token-prediction layers, which engines load "
            "only for speculative decoding."
        )
    if parts["vision"]:
        notes.append(f"Includes a vision tower of about {parts['vision'] / 1e9:.2f}B.")
    if parts["linear_mixers_and_gates"]:
        notes.append(
            f"{parts['linear_mixers_and_gates'] / 1e9:.3f}B of linear-attention/SSM mixers and attention "
            "output gates are outside the decoder formula (in extra_params_b)."
        )
    if _quantized(config, c):
        q = c.get("quantization_config") or {}
        method = q.get("quant_method") if isinstance(q, Mapping) else None
        notes.append(
            f"The checkpoint ships quantized ({method or 'unknown method'}); counts are parameters, not stored bytes."
        )
    return Model(
        **{
            **provisional.model_dump(
                exclude={
                    "params_b",
                    "active_params_b",
                    "source",
                    "notes",
                    "extra_params_b",
                    "modalities",
                    "context_note",
                    "unknown",
                }
            )
        },
        params_b=round(total / 1e9, 6),
        active_params_b=round(active / 1e9, 6),
        extra_params_b=round(max(total - parts["decoder"], 0) / 1e9, 6),
        modalities=tuple(modalities),
        context_note=ctx_note,
        source=source,
        notes=" ".join(notes),
        unknown=("release_date", "license"),
    )


def _quantized(config: Mapping[str, Any], c: _Cfg) -> bool:
    return isinstance(config.get("quantization_config") or c.get("quantization_config"), Mapping)


def _exact_params(
    config: Mapping[str, Any], c: _Cfg, index: Mapping[str, Any] | None, dtype: str
) -> tuple[float, str] | None:
    if not isinstance(index, Mapping):
        return None
    meta = index.get("metadata")
    if not isinstance(meta, Mapping):
        return None
    count = meta.get("total_parameters")
    if isinstance(count, int) and count > 0:
        return float(count), "model.safetensors.index.json metadata.total_parameters"
    size = meta.get("total_size")
    if _quantized(config, c) or not isinstance(size, int | float) or size <= 0:
        return None
    per = DTYPE_BYTES.get(dtype.lower())
    if per is None:
        return None
    return size / per, f"model.safetensors.index.json metadata.total_size {int(size)} B ÷ {per:g} B ({dtype})"


# --- TOML ------------------------------------------------------------------------------------------


def _toml_value(value: Any) -> str:
    if isinstance(value, bool):
        return "true" if value else "false"
    if isinstance(value, int | float):
        return repr(value)
    if isinstance(value, str):
        return json.dumps(value, ensure_ascii=False)
    if isinstance(value, list | tuple):
        return "[" + ", ".join(_toml_value(v) for v in value) + "]"
    if isinstance(value, dict):  # inline table: context_extension, quality
        return "{ " + ", ".join(f"{k} = {_toml_value(v)}" for k, v in value.items() if v is not None) + " }"
    raise TypeError(f"cannot write {type(value).__name__} to TOML")


def catalog_entry_toml(model: Model) -> str:
    """A `[[model]]` block for catalog/data/models/*.toml, fields in schema order, None left out."""
    data = model.model_dump(mode="json")
    lines = ["[[model]]"]
    for key, value in data.items():
        if key in ("attention", "moe") or value is None:
            continue
        lines.append(f"{key} = {_toml_value(value)}")
    for table in ("attention", "moe"):
        sub = data.get(table)
        if sub is None:
            continue
        lines.append("")
        lines.append(f"[model.{table}]")
        lines += [f"{k} = {_toml_value(v)}" for k, v in sub.items() if v is not None]
    return "\n".join(lines) + "\n"
