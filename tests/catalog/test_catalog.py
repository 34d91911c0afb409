"""Every catalog entry: it loads, it cites a source, its facts agree with each other and with physics."""

from __future__ import annotations

import shutil
from pathlib import Path

import pytest

from catalog import GPU, CatalogError, Model, load_catalog, load_from
from catalog.arch import active_decoder_params, stated_vs_derived
from catalog.resolve import normalise

CAT = load_catalog()
GPUS = CAT.gpus
MODELS = CAT.models
DATA_DIR = Path(__file__).resolve().parents[2] / "catalog" / "data"

# Floors at the catalog's current size, so entries can be added but never silently lost.
# (Targets: 180 GPUs, 250 models.)
MIN_GPUS = 180
MIN_MODELS = 250
MIN_QUANTS = 32


def _ids(entries: tuple[GPU, ...] | tuple[Model, ...]) -> list[str]:
    return [e.id for e in entries]


# --- loading and size ------------------------------------------------------------------------------

def test_catalog_loads_with_enough_entries() -> None:
    assert len(GPUS) >= MIN_GPUS
    assert len(MODELS) >= MIN_MODELS
    assert len(CAT.quants) >= MIN_QUANTS
    assert len(CAT) == len(GPUS) + len(MODELS)


def test_shipped_data_dir_is_the_one_loaded() -> None:
    assert load_from(DATA_DIR).version == CAT.version


def test_every_vendor_is_present() -> None:
    assert {g.vendor for g in GPUS} == {"nvidia", "amd", "apple", "intel"}


# --- sources, ids, aliases -------------------------------------------------------------------------

@pytest.mark.parametrize("entry", [*GPUS, *MODELS, *CAT.quants], ids=lambda e: e.id)
def test_every_entry_cites_a_real_source(entry: GPU | Model) -> None:
    source = entry.source.strip()
    # A source names a document: several words, not a placeholder.
    assert len(source) >= 40, source
    assert len(source.split()) >= 5, source
    assert source.lower() not in {"todo", "tbd", "unknown", "n/a", "wikipedia"}
    assert "todo" not in source.lower().split()


@pytest.mark.parametrize("entries", [GPUS, MODELS, CAT.quants], ids=["gpus", "models", "quants"])
def test_ids_are_unique(entries: tuple[GPU, ...]) -> None:
    ids = _ids(entries)
    assert len(ids) == len(set(ids))


@pytest.mark.parametrize("entries", [GPUS, MODELS], ids=["gpus", "models"])
def test_aliases_are_unique_across_entries_of_a_kind(entries: tuple[GPU, ...]) -> None:
    owner: dict[str, str] = {}
    clashes = []
    for e in entries:
        for alias in set(a.lower() for a in e.aliases):
            if alias in owner and owner[alias] != e.id:
                clashes.append((alias, owner[alias], e.id))
            owner[alias] = e.id
    assert clashes == []


@pytest.mark.parametrize("entries", [GPUS, MODELS], ids=["gpus", "models"])
def test_no_alias_is_another_entrys_id(entries: tuple[GPU, ...]) -> None:
    ids = {e.id for e in entries}
    assert [(e.id, a) for e in entries for a in e.aliases if a.lower() in ids and a.lower() != e.id] == []


def test_quant_names_do_not_collide() -> None:
    owner: dict[str, str] = {}
    for q in CAT.quants:
        for name in {normalise(n) for n in (q.id, q.name, *q.aliases)}:
            assert owner.setdefault(name, q.id) == q.id, f"{name!r}: {owner[name]} and {q.id}"


@pytest.mark.parametrize("entry", [*GPUS, *MODELS], ids=lambda e: e.id)
def test_unknown_lists_only_real_fields(entry: GPU | Model) -> None:
    fields = type(entry).model_fields
    assert [u for u in entry.unknown if u not in fields] == []


@pytest.mark.parametrize("gpu", GPUS, ids=lambda g: g.id)
def test_missing_gpu_facts_are_declared_unknown(gpu: GPU) -> None:
    for name in ("fp16_tflops", "tdp_w", "memory_type"):
        if getattr(gpu, name) is None:
            assert name in gpu.unknown, f"{gpu.id}: {name} is None but not listed in unknown"


# Launch prices (USD at launch) filled from a vendor announcement or a launch review, each cited in the source.
SOURCED_LAUNCH_PRICES = {
    "amd-rx-7800-xt": 499, "amd-rx-7900-gre": 549, "intel-arc-a770-16gb": 349, "intel-arc-a770-8gb": 329,
    "nvidia-rtx-a6000": 4650, "amd-radeon-pro-w7900": 3999, "amd-radeon-pro-w7800": 2499,
    "nvidia-rtx-6000-ada": 6800, "nvidia-quadro-rtx-6000": 6300,
}


@pytest.mark.parametrize(("gpu_id", "price"), SOURCED_LAUNCH_PRICES.items())
def test_launch_prices_are_filled_where_sourced(gpu_id: str, price: int) -> None:
    gpu = load_catalog().gpu(gpu_id)
    assert gpu.launch_price_usd == price and "launch_price_usd" not in gpu.unknown
    assert f"launch price ${price:,}" in gpu.source, gpu.source


# --- models: parameter counts from the architecture ------------------------------------------------

# The derived count (catalog.arch) ignores norms, biases, rotary tables and the like: ~0.1-1 % of a
# model (Qwen2 QKV biases, Qwen3-1.7B's tied 151k x 2048 table plus q/k norms put the largest current
# dense gap at 1.2 %). Stated totals are rounded to 2-3 significant figures, which adds up to ~0.5 %.
# 3 % leaves room for both and still catches a wrong layer count, FFN width or vocabulary (each moves
# the total by 5 % or more on every model in the catalog).
PARAMS_TOLERANCE = 0.03
# Entries whose stated total is the model card's rounded figure and knowingly disagrees with the
# architecture; the reason is the one in the entry's notes.
PARAMS_EXCEPTIONS: dict[str, str] = {}
# Exceptions may not hide anything gross.
PARAMS_EXCEPTION_CEILING = 0.06


@pytest.mark.parametrize("model", MODELS, ids=lambda m: m.id)
def test_stated_params_match_architecture(model: Model) -> None:
    diff = stated_vs_derived(model)
    if model.id in PARAMS_EXCEPTIONS:
        assert "rounded" in model.notes, "an exception must be explained in the entry's notes"
        assert PARAMS_TOLERANCE < abs(diff) <= PARAMS_EXCEPTION_CEILING, (
            f"{model.id}: {diff:+.2%} - exception no longer needed or grown"
        )
        return
    assert abs(diff) <= PARAMS_TOLERANCE, f"{model.id}: stated {model.params_b}B, derived differs by {diff:+.2%}"


def test_exceptions_name_real_entries() -> None:
    assert set(PARAMS_EXCEPTIONS) <= set(_ids(MODELS))


HEAD_DIM_EXCEPTIONS = {"open-llama-3b": 100}


@pytest.mark.parametrize("model", MODELS, ids=lambda m: m.id)
def test_model_structure_is_consistent(model: Model) -> None:
    assert model.active_params_b <= model.params_b
    assert model.attention_heads % model.kv_heads == 0
    assert model.kv_heads <= model.attention_heads
    a = model.attention
    if a.sliding_window is not None:
        assert 0 < a.sliding_window < model.max_context
    if a.global_layers is not None:
        assert 0 <= a.global_layers <= model.layers
    if a.kind == "hybrid_linear":
        assert a.global_layers is not None and a.global_layers < model.layers
    if a.kind == "mla":
        assert a.kv_lora_rank is not None and a.qk_rope_head_dim is not None
    if model.moe is None:
        # Dense: every weight is used per token, except parameters kept off the accelerator's hot path
        # (Gemma 3n's per-layer embeddings), which are counted in extra_params_b.
        assert model.params_b - model.active_params_b <= model.extra_params_b + 1e-9
        assert model.intermediate_size is not None
    else:
        assert model.active_params_b < model.params_b
        assert model.moe.active_experts <= model.moe.experts
        assert 0 <= model.moe.dense_layers < model.layers
    assert model.vocab_size >= 1000
    # tensor-core tiles: released head widths are multiples of 8, except OpenLLaMA 3B (hidden 3200 / 32 heads)
    assert model.head_dim % 8 == 0 or HEAD_DIM_EXCEPTIONS.get(model.id) == model.head_dim


@pytest.mark.parametrize("model", [m for m in MODELS if m.moe is not None], ids=lambda m: m.id)
def test_moe_active_params_match_architecture(model: Model) -> None:
    """The routed share of the derived count agrees with the stated active count to within a few percent
    of the total (vision towers and MTP heads in extra_params_b are not in the derived active count)."""
    derived_active = active_decoder_params(model) / 1e9
    assert abs(derived_active - model.active_params_b) <= 0.05 * model.params_b + model.extra_params_b


@pytest.mark.parametrize("model", [m for m in MODELS if m.active_tables_counted is not None], ids=lambda m: m.id)
def test_an_active_count_that_leaves_tables_out_adds_up_with_them(model: Model) -> None:
    """A card's active count that leaves the input lookup out (gpt-oss) plus the tables it leaves out is the
    count derived from the architecture, which includes every table."""
    table_b = model.vocab_size * model.hidden_size / 1e9
    full_tables = 1 if model.tied_embeddings else 2
    assert model.active_tables < full_tables
    with_tables = model.active_params_b + (full_tables - model.active_tables) * table_b
    assert with_tables == pytest.approx(active_decoder_params(model) / 1e9, rel=0.02)


def test_active_tables_default_to_every_table() -> None:
    assert CAT.model("llama-3.1-8b").active_tables == 2  # untied: lookup and head
    assert CAT.model("gemma-3-1b").active_tables == 1  # tied: one shared table
    assert CAT.model("gpt-oss-20b").active_tables == 1  # the card counts the head, not the lookup


# Seed pages swapped total and active for several MoE models; the catalog must keep total > active,
# at the published sizes.
SEED_MOE = {
    # id: (total B, active B)
    "mimo-v2-flash": (309, 15),
    "hunyuan-large": (389, 52),
    "nemotron-3-nano-30b-a3b": (31.6, 3.6),
    "mixtral-8x7b": (46.7, 12.9),
    "qwen3-30b-a3b": (30.5, 3.3),
    "gpt-oss-20b": (20.9, 3.6),
}


@pytest.mark.parametrize(("model_id", "sizes"), SEED_MOE.items())
def test_seed_page_moe_totals_are_not_swapped(model_id: str, sizes: tuple[float, float]) -> None:
    model = CAT.model(model_id)
    total, active = sizes
    assert model.moe is not None
    assert model.params_b > model.active_params_b * 2
    assert model.params_b == pytest.approx(total, rel=0.02)
    assert model.active_params_b == pytest.approx(active, rel=0.05)


# --- GPUs: physical sanity -------------------------------------------------------------------------

# Lowest real figure: a 64-bit LPDDR4X Apple M1 at 68 GB/s; highest: 8 TB/s HBM3e (B200/MI355X).
BANDWIDTH_GBS = (50, 10_000)
# Dense FP16 tensor rate: Blackwell B200 2250 TFLOPS, MI355X 256 CU x 4096 x 2.4 GHz = 2516.6 (AMD's
# "2.5 PFLOPS"); 2600 leaves no room for a sparse figure (2x) copied by mistake.
FP16_DENSE_MAX_TFLOPS = 2600
MEMORY_GB = (4, 1024)
TDP_W = (10, 1500)
# GPUs that share one memory with the CPU without being Apple silicon.
NON_APPLE_UNIFIED = {
    "amd-mi300a": "APU: 128 GB HBM3 shared with 24 Zen 4 cores",
    "nvidia-gb10": "DGX Spark: 128 GB LPDDR5X shared with the 20-core Arm CPU",
    "nvidia-jetson-agx-orin-64gb": "Jetson module: LPDDR5 shared with the Arm CPU",
    "nvidia-jetson-agx-orin-32gb": "Jetson module: LPDDR5 shared with the Arm CPU",
    "amd-radeon-8060s-128gb": "Strix Halo APU: LPDDR5X shared with 16 Zen 5 cores",
    "amd-radeon-8060s-64gb": "Strix Halo APU: LPDDR5X shared with 16 Zen 5 cores",
}


@pytest.mark.parametrize("gpu", GPUS, ids=lambda g: g.id)
def test_gpu_figures_are_physical(gpu: GPU) -> None:
    assert BANDWIDTH_GBS[0] <= gpu.bandwidth_gbs <= BANDWIDTH_GBS[1]
    assert MEMORY_GB[0] <= gpu.vram_gb <= MEMORY_GB[1]
    if gpu.fp16_tflops is not None:
        assert 1 <= gpu.fp16_tflops <= FP16_DENSE_MAX_TFLOPS
    if gpu.fp16_tflops is not None and gpu.int8_tops is not None:
        assert gpu.int8_tops >= gpu.fp16_tflops * 0.99
    if gpu.fp16_fp32acc_tflops is not None and gpu.fp16_tflops is not None:
        assert gpu.fp16_fp32acc_tflops <= gpu.fp16_tflops * 1.001
    if gpu.fp32_tflops is not None and gpu.fp16_tflops is not None and gpu.vendor != "apple":
        assert gpu.fp32_tflops <= gpu.fp16_tflops * 1.001
    if gpu.fp8_tflops is not None and gpu.fp16_tflops is not None:
        assert gpu.fp8_tflops >= gpu.fp16_tflops * 0.99
    if gpu.fp4_tflops is not None and gpu.fp8_tflops is not None:
        assert gpu.fp4_tflops >= gpu.fp8_tflops * 0.99
    if gpu.tdp_w is not None:
        assert TDP_W[0] <= gpu.tdp_w <= TDP_W[1]
    if gpu.interconnect_gbs is not None:
        assert 0 < gpu.interconnect_gbs <= 3600


@pytest.mark.parametrize("gpu", GPUS, ids=lambda g: g.id)
def test_fp8_flag_matches_fp8_rate(gpu: GPU) -> None:
    """A listed FP8 rate means FP8 units; FP8 units whose rate no primary source states (the laptop parts, whose
    clocks depend on the maker's power limit) say so in `unknown`."""
    if gpu.fp8_tflops is not None:
        assert gpu.fp8
    elif gpu.fp8:
        assert "fp8_tflops" in gpu.unknown


@pytest.mark.parametrize("gpu", GPUS, ids=lambda g: g.id)
def test_unified_memory_is_apple_silicon(gpu: GPU) -> None:
    if gpu.vendor == "apple":
        assert gpu.unified_memory
        assert not gpu.ecc_on_by_default
    elif gpu.unified_memory:
        assert gpu.id in NON_APPLE_UNIFIED
    if gpu.gpu_memory_fraction is not None:
        assert 0.5 <= gpu.gpu_memory_fraction <= 1.0


def test_gpu_generations_are_ordered_by_bandwidth() -> None:
    """A few well-known generational steps, as a guard against swapped or mistyped rows."""
    g = {x.id: x for x in GPUS}
    pairs = [("nvidia-rtx-3090", "nvidia-rtx-4090"), ("nvidia-t4", "nvidia-a100-40gb-sxm")]
    for slow, fast in pairs:
        if slow in g and fast in g:
            assert g[slow].bandwidth_gbs <= g[fast].bandwidth_gbs


# --- the version hash ------------------------------------------------------------------------------

def test_version_hash_is_stable_and_changes_with_data(tmp_path: Path) -> None:
    copy = tmp_path / "data"
    shutil.copytree(DATA_DIR, copy)
    assert load_from(copy).version == CAT.version

    target = sorted(copy.rglob("*.toml"))[0]
    target.write_text(target.read_text() + "\n# edited\n")
    changed = load_from(copy).version
    assert changed != CAT.version
    assert len(changed) == 16


def test_renaming_a_file_changes_the_version(tmp_path: Path) -> None:
    copy = tmp_path / "data"
    shutil.copytree(DATA_DIR, copy)
    source = copy / "models" / "llama.toml"
    source.rename(copy / "models" / "llama2.toml")
    assert load_from(copy).version != CAT.version


def test_duplicate_id_is_refused(tmp_path: Path) -> None:
    copy = tmp_path / "data"
    shutil.copytree(DATA_DIR, copy)
    original = (copy / "models" / "llama.toml").read_text()
    (copy / "models" / "zz-copy.toml").write_text(original)
    with pytest.raises(CatalogError, match="duplicate"):
        load_from(copy)


def test_invalid_entry_is_refused_with_its_file(tmp_path: Path) -> None:
    copy = tmp_path / "data"
    shutil.copytree(DATA_DIR, copy)
    (copy / "gpus" / "zz-bad.toml").write_text('[[gpu]]\nid = "Bad ID"\nname = "x"\n')
    with pytest.raises(CatalogError, match=r"zz-bad\.toml"):
        load_from(copy)


def test_an_ollama_build_names_a_format_the_catalog_has(tmp_path: Path) -> None:
    ollama = CAT.model("gpt-oss-20b").ollama
    assert ollama is not None and ollama.quant == "mxfp4" and "ollama.com/library/gpt-oss" in ollama.source
    copy = tmp_path / "data"
    shutil.copytree(DATA_DIR, copy)
    gpt_oss = copy / "models" / "gpt-oss.toml"
    gpt_oss.write_text(gpt_oss.read_text().replace('quant = "mxfp4"', 'quant = "mxfp5"'))
    with pytest.raises(CatalogError, match="mxfp5"):
        load_from(copy)


def test_nemotron_3_nano_counts_the_config_blocks() -> None:
    """52 blocks: 23 Mamba-2, 23 MoE, 6 attention (hybrid_override_pattern of the released config)."""
    m = CAT.model("nemotron-3-nano-30b-a3b")
    assert m.layers == 52
    assert m.attention.global_layers == 6 and m.recurrent_layers == 23
    assert m.moe is not None and m.layers - m.moe.dense_layers == 23
    pattern = (m.attention.layer_pattern or "").split()[2]
    assert (pattern.count("M"), pattern.count("E"), pattern.count("*")) == (23, 23, 6) and len(pattern) == 52


@pytest.mark.parametrize("model_id", ["glm-4.5", "glm-4.5-air", "ernie-4.5-vl-28b-a3b", "ernie-4.5-vl-28b-a3b-base"])
def test_no_nominal_totals_left(model_id: str) -> None:
    """These entries used to carry the card's rounded size; the total is now the one the config gives."""
    m = CAT.model(model_id)
    assert abs(stated_vs_derived(m)) < 0.01
    assert m.params_b not in (355.0, 106.0, 28.0)


# --- context windows: native and RoPE-extended ------------------------------------------------------

def test_qwen3_8b_is_32k_native_and_128k_with_yarn() -> None:
    m = CAT.model("qwen3-8b")
    assert m.native_context == m.max_context == 32768
    assert m.context_limit() == 32768 and m.context_limit(with_scaling=True) == 131072
    ext = m.context_extension
    assert ext is not None and ext.method == "yarn" and ext.factor == 4.0
    statuses = [m.context_fit(n).status for n in (32768, 32769, 131072, 131073)]
    assert statuses == ["native", "scaled", "scaled", "too_long"]
    assert m.context_fit(65536).extension == ext and m.context_fit(8192).extension is None
    assert m.scaling_flags("llama.cpp") == "--rope-scaling yarn --rope-scale 4 --yarn-orig-ctx 32768"
    assert m.scaling_flags("vllm") == ""


def test_a_model_without_extension_has_one_window() -> None:
    m = CAT.model("llama-3.1-8b")
    assert m.context_extension is None
    assert m.context_limit(with_scaling=True) == m.max_context
    assert m.context_fit(m.max_context + 1).status == "too_long"
    assert m.scaling_flags("llama.cpp") == ""


@pytest.mark.parametrize("model", [m for m in MODELS if m.context_extension], ids=lambda m: m.id)
def test_extensions_are_consistent(model: Model) -> None:
    ext = model.context_extension
    assert ext is not None
    assert ext.extended_context > model.max_context
    # the factor is applied to the native window: YaRN x4 over 32k is 128k
    assert ext.extended_context <= model.max_context * ext.factor * 1.001
    assert len(ext.source.split()) >= 5


def test_extension_must_exceed_the_native_window() -> None:
    base = CAT.model("qwen3-8b").model_dump()
    base["context_extension"] = {**base["context_extension"], "extended_context": 32768}
    with pytest.raises(ValueError, match="extended context"):
        Model.model_validate(base)


def test_capacity_only_variants_share_one_silicon() -> None:
    """An M3 Ultra's 96, 256 and 512 GB configurations are one silicon (they share fitted offsets, and
    leave-one-GPU-out leaves them out together); an M3 Max with 30 GPU cores (36 GB) and one with 40 (48 GB) are
    not, nor are an H100 PCIe and SXM, nor an A100 40 GB (HBM2, 1555 GB/s) and 80 GB (HBM2e, 2039 GB/s)."""
    silicon = {g.id: g.silicon for g in load_catalog().gpus}
    assert silicon["apple-m3-ultra-96gb"] == silicon["apple-m3-ultra-256gb"] == silicon["apple-m3-ultra-512gb"]
    assert silicon["nvidia-v100-pcie-16gb"] == silicon["nvidia-v100-pcie-32gb"]
    assert silicon["apple-m3-max-36gb"] != silicon["apple-m3-max-48gb"]
    assert silicon["nvidia-h100-pcie"] != silicon["nvidia-h100-sxm"]
    assert silicon["nvidia-a100-40gb-sxm"] != silicon["nvidia-a100-80gb-sxm"]
    assert silicon["nvidia-rtx-4090"] == "nvidia-rtx-4090"
    assert all(s in silicon and silicon[s] == s for s in silicon.values())


def test_a_bandwidth_figure_holds_for_every_capacity_of_its_silicon() -> None:
    """One published copy benchmark of a 40-core M3 Max (memory size not stated) speaks for the 48, 64 and 128 GB
    machines, not for the 30-core chip with its narrower bus."""
    gpus = {g.id: g for g in load_catalog().gpus}
    figures = {gpus[i].achieved_bandwidth_gbs for i in ("apple-m3-max-48gb", "apple-m3-max-64gb", "apple-m3-max-128gb")}
    assert figures == {318.0}
    assert gpus["apple-m3-max-36gb"].achieved_bandwidth_gbs != 318.0


def test_layer_graphs_reach_their_models_with_a_source() -> None:
    """layer_graphs.toml attaches what each architecture's layer adds to a Llama layer; ids win over families."""
    qwen3, llama = CAT.model("qwen3-8b"), CAT.model("llama-3.1-8b")
    assert qwen3.layer_graph is not None and qwen3.layer_graph.qk_norm and not qwen3.layer_graph.sandwich_norms
    assert llama.layer_graph is None
    e4b, moe = CAT.model("gemma-4-e4b"), CAT.model("gemma-4-26b-a4b")
    assert e4b.layer_graph is not None and e4b.layer_graph.per_layer_inputs
    assert moe.layer_graph is not None and moe.layer_graph.sandwich_norms and not moe.layer_graph.per_layer_inputs
    for m in CAT.models:
        if m.layer_graph is not None:
            assert "llama.cpp" in m.layer_graph.source


@pytest.mark.parametrize("entry", [
    '[[layer_graph]]\nfamilies = ["Gemma 9"]\nqk_norm = true\nsource = "src/models/gemma9.cpp"\n',
    '[[layer_graph]]\nmodels = ["no-such-model"]\nqk_norm = true\nsource = "src/models/gemma9.cpp"\n',
    '[[layer_graph]]\nqk_norm = true\nsource = "src/models/gemma9.cpp"\n',
    '[[layer_graph]]\nfamilies = ["Gemma 2"]\nqk_norms = true\nsource = "src/models/gemma2.cpp"\n',
])
def test_a_layer_graph_naming_nothing_real_is_refused(tmp_path: Path, entry: str) -> None:
    copy = tmp_path / "data"
    shutil.copytree(DATA_DIR, copy)
    path = copy / "layer_graphs.toml"
    path.write_text(path.read_text() + "\n" + entry)
    with pytest.raises(CatalogError, match="layer_graphs"):
        load_from(copy)
