"""Sanity bounds on a Hugging Face config.json, checked before anything is derived from it.

A config is text anyone can publish. Without bounds, `num_hidden_layers: 1e9` becomes a public answer
about a "3e+21B" model, NaN ends in a traceback, and a 100k-deep document exhausts the recursion limit.
The limits are far above every published model (the largest open models have about 130 layers, a
hidden size of 16,384, 128 attention heads and 256 experts), so no real config is refused.
"""

from __future__ import annotations

import math
from collections.abc import Mapping
from typing import Any

from catalog.huggingface.config import UnsupportedConfig

MAX_DEPTH = 32
# Bounds per field: (lowest, highest). A field absent from the config is not checked here.
FIELD_BOUNDS: dict[str, tuple[int, int]] = {
    "num_hidden_layers": (1, 1024),
    "n_layer": (1, 1024),
    "hidden_size": (1, 131_072),
    "d_model": (1, 131_072),
    "num_attention_heads": (1, 4096),
    "num_key_value_heads": (1, 4096),
    "head_dim": (1, 8192),
    "vocab_size": (1, 4_194_304),
    "intermediate_size": (1, 1_048_576),
    "moe_intermediate_size": (1, 1_048_576),
    "max_position_embeddings": (1, 134_217_728),
    "num_experts": (1, 16_384),
    "num_local_experts": (1, 16_384),
    "n_routed_experts": (1, 16_384),
    "num_experts_per_tok": (1, 16_384),
    "n_shared_experts": (0, 16_384),
    "kv_lora_rank": (1, 131_072),
    "q_lora_rank": (1, 131_072),
    "qk_rope_head_dim": (1, 8192),
    "qk_nope_head_dim": (1, 8192),
    "v_head_dim": (1, 8192),
    "sliding_window": (1, 134_217_728),
}
# Any other number: finite and no larger than this (rope_theta reaches 10^8; nothing sensible is near 10^15).
MAX_ABS_NUMBER = 1e15
# The derived size: the largest open models are about 2,000B parameters.
MAX_PARAMS_B = 20_000.0
_NESTED = ("text_config", "llm_config", "language_config", "thinker_config")


def check_depth(doc: Any, limit: int = MAX_DEPTH) -> None:
    """Iterative, so the check itself cannot hit the recursion limit."""
    stack: list[tuple[Any, int]] = [(doc, 1)]
    while stack:
        node, depth = stack.pop()
        if depth > limit:
            raise UnsupportedConfig("nested_too_deep", limit=limit)
        if isinstance(node, Mapping):
            stack.extend((v, depth + 1) for v in node.values())
        elif isinstance(node, list):
            stack.extend((v, depth + 1) for v in node)


def _numbers(doc: Any, path: str = "") -> list[tuple[str, float | int]]:
    out: list[tuple[str, float | int]] = []
    stack: list[tuple[Any, str]] = [(doc, path)]
    while stack:
        node, where = stack.pop()
        if isinstance(node, bool):
            continue
        if isinstance(node, int | float):
            out.append((where, node))
        elif isinstance(node, Mapping):
            stack.extend((v, f"{where}.{k}" if where else str(k)) for k, v in node.items())
        elif isinstance(node, list):
            stack.extend((v, f"{where}[{i}]") for i, v in enumerate(node))
    return out


def check_config(config: Mapping[str, Any]) -> None:
    """Raise UnsupportedConfig, with the field and the allowed range, for a value no model has."""
    check_depth(config)
    for where, value in _numbers(config):
        if isinstance(value, float) and not math.isfinite(value):
            raise UnsupportedConfig("not_finite", field=where, value=value)
        if abs(value) > MAX_ABS_NUMBER:
            raise UnsupportedConfig("beyond_any_model", field=where, value=f"{value:.3g}")
    blocks = [config, *(config[k] for k in _NESTED if isinstance(config.get(k), Mapping))]
    for block in blocks:
        for name, (low, high) in FIELD_BOUNDS.items():
            value = block.get(name)
            if value is None or isinstance(value, bool) or not isinstance(value, int | float):
                continue
            if not low <= value <= high:
                shown = f"{value:,}" if isinstance(value, int) else f"{value:g}"
                raise UnsupportedConfig("out_of_bounds", field=name, value=shown, low=f"{low:,}", high=f"{high:,}")
        heads, kv_heads = block.get("num_attention_heads"), block.get("num_key_value_heads")
        if isinstance(heads, int) and isinstance(kv_heads, int) and kv_heads > heads:
            raise UnsupportedConfig("more_kv_heads", kv_heads=kv_heads, heads=heads)
        experts = next((block[k] for k in ("num_experts", "num_local_experts", "n_routed_experts")
                        if isinstance(block.get(k), int)), None)
        per_token = block.get("num_experts_per_tok")
        if isinstance(experts, int) and isinstance(per_token, int) and per_token > experts:
            raise UnsupportedConfig("more_routed_experts", per_token=per_token, experts=experts)


def check_params_b(params_b: float) -> None:
    if not math.isfinite(params_b) or not 0 < params_b <= MAX_PARAMS_B:
        raise UnsupportedConfig("too_many_params", params_b=f"{params_b:.3g}", most=f"{MAX_PARAMS_B:,.0f}")
