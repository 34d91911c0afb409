"""Models derived from real config.json files agree with the curated catalog entries of the same models."""

from __future__ import annotations

import copy
import json
import tomllib
from pathlib import Path

import pytest

from catalog.arch import stated_vs_derived
from catalog.huggingface.config import UnsupportedConfig, catalog_entry_toml, model_from_config, param_breakdown, slug
from catalog.schema import Model
from catalog.store import load_catalog

DATA = Path(__file__).resolve().parents[1] / "data" / "hf"
CONFIGS = sorted(p.parent.name for p in DATA.glob("*/config.json"))
FIELDS = ("layers", "hidden_size", "attention_heads", "kv_heads", "head_dim", "vocab_size", "intermediate_size",
          "moe", "tied_embeddings")

# The catalog counts these models without the parts their notes name; the derivation counts the whole
# checkpoint, so the comparison uses the language-model part of the breakdown.
LANGUAGE_MODEL_ONLY = {
    "Qwen/Qwen3.5-9B": "catalog notes: vision tower and MTP layer not included in params_b",
}


def repo_of(dirname: str) -> str:
    return dirname.replace("__", "/", 1)


def config_of(dirname: str) -> dict:
    return json.loads((DATA / dirname / "config.json").read_text())


def catalog_twin(repo: str) -> Model | None:
    """The catalog entry of the same weights: exact repo, else its base / instruct sibling."""
    by_repo = {m.hf_repo: m for m in load_catalog().models if m.hf_repo}
    candidates = [repo, repo + "-Instruct", repo.removesuffix("-Instruct"), repo.removesuffix("-it"),
                  repo.replace("-v0.1", "-Instruct-v0.1")]
    return next((by_repo[c] for c in candidates if c in by_repo), None)


def shipped_twin(dirname: str) -> tuple[str, Model]:
    """A shipped config's repo and its catalog twin; the test is skipped for a model the catalog lacks."""
    repo = repo_of(dirname)
    twin = catalog_twin(repo)
    if twin is None:
        pytest.skip(f"{repo} is not in the catalog")
    return repo, twin


def test_at_least_eight_real_configs_ship():
    assert len(CONFIGS) >= 8
    readme = (DATA / "README.md").read_text()
    for name in CONFIGS:
        assert repo_of(name) in readme, f"{name} has no source line in tests/data/hf/README.md"


@pytest.mark.parametrize("dirname", CONFIGS)
def test_structure_matches_the_catalog(dirname):
    repo, twin = shipped_twin(dirname)
    derived = model_from_config(repo, config_of(dirname), fetched_at="2025-01-01")
    for field in FIELDS:
        assert getattr(derived, field) == getattr(twin, field), field
    assert derived.attention.kind == twin.attention.kind
    assert derived.attention.global_layers == twin.attention.global_layers
    assert derived.attention.sliding_window == twin.attention.sliding_window
    assert derived.attention.state_elements_per_layer == twin.attention.state_elements_per_layer
    for mla in ("kv_lora_rank", "q_lora_rank", "qk_rope_head_dim", "qk_nope_head_dim", "v_head_dim"):
        assert getattr(derived.attention, mla) == getattr(twin.attention, mla), mla


@pytest.mark.parametrize("dirname", CONFIGS)
def test_parameter_count_within_two_percent(dirname):
    repo, twin = shipped_twin(dirname)
    config = config_of(dirname)
    derived = model_from_config(repo, config)
    count = derived.params
    if repo in LANGUAGE_MODEL_ONLY:
        count = param_breakdown(config)["language_model"]
    assert count == pytest.approx(twin.params, rel=0.02)


@pytest.mark.parametrize("dirname", CONFIGS)
def test_derived_entry_is_consistent_and_sourced(dirname):
    repo = repo_of(dirname)
    m = model_from_config(repo, config_of(dirname), fetched_at="2025-06-01")
    assert m.id == slug(repo) and m.id.startswith("hf-")
    assert m.hf_repo == repo
    assert m.source.startswith(f"https://huggingface.co/{repo}/blob/main/config.json (fetched 2025-06-01)")
    assert "computed from the architecture" in m.source
    assert m.active_params_b <= m.params_b
    # the stated total and the decoder formula + extras agree by construction
    assert abs(stated_vs_derived(m)) < 1e-3


def test_multimodal_text_config_and_hybrid_state():
    m = model_from_config("Qwen/Qwen3.5-9B", config_of("Qwen__Qwen3.5-9B"))
    assert m.hidden_size == 4096 and m.head_dim == 256  # from text_config, head_dim stated, not 4096/16
    assert m.modalities == ("text", "image")
    assert m.attention.kind == "hybrid_linear" and m.attention.global_layers == 8
    # 32 value heads × 128 × 128 + (4 − 1) × (2 × 16 × 128 + 32 × 128)
    assert m.attention.state_elements_per_layer == 32 * 128 * 128 + 3 * (2 * 16 * 128 + 32 * 128)


def test_qwen3_context_is_the_native_one():
    m = model_from_config("Qwen/Qwen3-8B", config_of("Qwen__Qwen3-8B"))
    assert m.max_context == 32768
    assert "40960" in m.context_note


def test_deepseek_mla_and_quantized_checkpoint():
    cfg = config_of("deepseek-ai__DeepSeek-V3")
    index = {"metadata": {"total_size": 688_586_727_753}}
    m = model_from_config("deepseek-ai/DeepSeek-V3", cfg, safetensors_index=index)
    assert m.attention.kind == "mla" and m.head_dim == 192
    assert m.moe is not None and m.moe.dense_layers == 3 and m.moe.shared_experts == 1
    # FP8 bytes are not bf16 parameters: the index is ignored and the source says so
    assert "not used because the checkpoint is quantized" in m.source
    assert m.params_b == pytest.approx(685, rel=0.02)


def test_exact_count_from_safetensors_index():
    cfg = config_of("Qwen__Qwen3-8B")
    # a synthetic index: only metadata.total_size is read
    index = {"metadata": {"total_size": 16_381_470_720}, "weight_map": {}}
    m = model_from_config("Qwen/Qwen3-8B", cfg, safetensors_index=index)
    assert m.params == pytest.approx(16_381_470_720 / 2, rel=1e-6)
    assert "parameters exact" in m.source and "bfloat16" in m.source
    assert m.extra_params_b >= 0


def test_gemma3_text_config_defaults():
    # google/gemma-3-4b-it names only what differs from Gemma3TextConfig; the rest are its defaults
    cfg = {"architectures": ["Gemma3ForConditionalGeneration"], "model_type": "gemma3",
           "text_config": {"hidden_size": 2560, "intermediate_size": 10240, "model_type": "gemma3_text",
                           "num_hidden_layers": 34, "sliding_window": 1024},
           "vision_config": {"hidden_size": 1152, "image_size": 896, "intermediate_size": 4304,
                             "num_hidden_layers": 27, "patch_size": 14}}
    m = model_from_config("google/gemma-3-4b-it", cfg)
    twin = catalog_twin("google/gemma-3-4b-it")
    assert twin is not None
    for field in FIELDS:
        assert getattr(m, field) == getattr(twin, field), field
    assert m.attention.global_layers == twin.attention.global_layers
    assert m.params_b == pytest.approx(twin.params_b, rel=0.02)


def test_missing_layer_count_is_named():
    cfg = config_of("Qwen__Qwen3-8B")
    del cfg["num_hidden_layers"]
    with pytest.raises(UnsupportedConfig, match="num_hidden_layers"):
        model_from_config("Qwen/Qwen3-8B", cfg)


def test_missing_fields_inside_text_config_are_named():
    cfg = copy.deepcopy(config_of("Qwen__Qwen3.5-9B"))
    del cfg["text_config"]["num_hidden_layers"]
    del cfg["text_config"]["hidden_size"]
    with pytest.raises(UnsupportedConfig, match="num_hidden_layers, hidden_size"):
        model_from_config("Qwen/Qwen3.5-9B", cfg)


def test_unknown_architecture_is_named():
    cfg = {"architectures": ["MambaForCausalLM"], "model_type": "mamba", "hidden_size": 768}
    with pytest.raises(UnsupportedConfig, match="MambaForCausalLM") as caught:
        model_from_config("state-spaces/mamba-130m-hf", cfg)
    # The reason is a code and facts; the words are the bot's, per locale.
    assert caught.value.reason == "unsupported_architecture"
    assert caught.value.values["architecture"] == "MambaForCausalLM"
    assert caught.value.values["model_type"] == "'mamba'"


def test_unsupported_config_is_a_value_error():
    assert issubclass(UnsupportedConfig, ValueError)


@pytest.mark.parametrize("dirname", CONFIGS)
def test_toml_block_round_trips(dirname):
    m = model_from_config(repo_of(dirname), config_of(dirname), fetched_at="2025-01-01")
    text = catalog_entry_toml(m)
    assert text.startswith("[[model]]\n")
    doc = tomllib.loads(text)
    assert Model.model_validate(doc["model"][0]) == m


def test_nemotron_h_follows_the_catalog_layer_convention():
    # the fields the catalog entry's source lists for NVIDIA-Nemotron-3-Nano-30B-A3B-BF16
    cfg = {"model_type": "nemotron_h", "architectures": ["NemotronHForCausalLM"], "hidden_size": 2688,
           "num_hidden_layers": 52, "hybrid_override_pattern": "MEMEM*EMEMEM*EMEMEM*EMEMEM*EMEMEM*EMEMEMEM*EMEMEMEME",
           "num_attention_heads": 32, "num_key_value_heads": 2, "head_dim": 128, "mamba_num_heads": 64,
           "mamba_head_dim": 64, "ssm_state_size": 128, "n_groups": 8, "conv_kernel": 4, "n_routed_experts": 128,
           "num_experts_per_tok": 6, "n_shared_experts": 1, "moe_intermediate_size": 1856,
           "moe_shared_expert_intermediate_size": 3712, "vocab_size": 131072, "tie_word_embeddings": False,
           "max_position_embeddings": 262144}
    m = model_from_config("nvidia/NVIDIA-Nemotron-3-Nano-30B-A3B-BF16", cfg)
    twin = catalog_twin("nvidia/NVIDIA-Nemotron-3-Nano-30B-A3B-BF16")
    assert twin is not None
    for field in (*FIELDS, "mlp"):
        assert getattr(m, field) == getattr(twin, field), field
    assert m.attention.state_elements_per_layer == twin.attention.state_elements_per_layer
    assert m.attention.global_layers == twin.attention.global_layers
    assert m.params_b == pytest.approx(twin.params_b, rel=0.02)
    assert m.active_params_b == pytest.approx(twin.active_params_b, rel=0.02)
