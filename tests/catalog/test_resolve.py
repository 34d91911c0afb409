"""What people type resolves to the right entry, or to NotFound with useful suggestions; never to a guess."""

from __future__ import annotations

import re
import shutil
from pathlib import Path

import pytest
from hypothesis import given, settings
from hypothesis import strategies as st

from catalog import GPU, Model, load_catalog, load_from
from catalog.resolve import MAX_QUERY_CHARS, NotARelease, NotFound, Resolver, split_gpu_count

DATA_DIR = Path(__file__).resolve().parents[2] / "catalog" / "data"

CAT = load_catalog()
R = Resolver(CAT)


@pytest.mark.parametrize(
    ("text", "gpu_id"),
    [
        ("t4", "nvidia-t4"),
        ("Tesla T4", "nvidia-t4"),
        ("NVIDIA Tesla T4", "nvidia-t4"),
        ("a100 40gb", "nvidia-a100-40gb-sxm"),
        ("rtx 4090", "nvidia-rtx-4090"),
        ("RTX-4090", "nvidia-rtx-4090"),
        ("GeForce RTX 4090", "nvidia-rtx-4090"),
        ("4090", "nvidia-rtx-4090"),
        ("  4090  ", "nvidia-rtx-4090"),
    ],
)
def test_gpu_forms(text: str, gpu_id: str) -> None:
    assert R.gpu(text).id == gpu_id


def test_m2_max_is_ambiguous_between_its_configurations() -> None:
    with pytest.raises(NotFound) as err:
        R.gpu("m2 max")
    assert err.value.ambiguous
    assert err.value.kind == "gpu"
    ids = [s.id for s in err.value.suggestions]
    assert len(ids) >= 2
    assert all(i.startswith("apple-m2-max-") for i in ids), ids
    assert set(ids) == {g.id for g in CAT.gpus if g.id.startswith("apple-m2-max-")}


@pytest.mark.parametrize(
    ("text", "model_id", "quant_id"),
    [
        ("qwen3-8b", "qwen3-8b", None),
        ("Qwen3 8B", "qwen3-8b", None),
        ("Qwen/Qwen3-8B", "qwen3-8b", None),
        ("qwen3:8b", "qwen3-8b", None),
        ("qwen3:8b-q8_0", "qwen3-8b", "q8_0"),
        ("llama3.1:8b-instruct-q4_K_M", "llama-3.1-8b", "q4_k_m"),
        ("llama3.1:70b-instruct-q4_K_M", "llama-3.1-70b", "q4_k_m"),
        ("gemma3:27b", "gemma-3-27b", None),
        ("mixtral:8x7b", "mixtral-8x7b", None),
        # Ollama's library ships gpt-oss only as MXFP4 (`Model.ollama`): its tags name that build; the name does not.
        ("gpt-oss:20b", "gpt-oss-20b", "mxfp4"),
        ("gpt-oss:120b", "gpt-oss-120b", "mxfp4"),
        ("gpt-oss 20b", "gpt-oss-20b", None),
        ("openai/gpt-oss-20b", "gpt-oss-20b", None),
        ("MiMo V2 Flash", "mimo-v2-flash", None),
        # A tag left out is ':latest', the library's default size (ollama.com/library/NAME/tags), never the largest.
        ("qwen3:latest", "qwen3-8b", None),
        ("llama3.1:latest", "llama-3.1-8b", None),
        ("llama3.1", "llama-3.1-8b", None),
        ("gpt-oss:latest", "gpt-oss-20b", "mxfp4"),
        ("deepseek-r1:latest", "deepseek-r1-0528-qwen3-8b", None),
        ("deepseek-r1:671b", "deepseek-r1", None),
        ("qwen2.5-coder:latest", "qwen2.5-coder-7b", None),
    ],
)
def test_model_forms(text: str, model_id: str, quant_id: str | None) -> None:
    choice = R.model(text)
    assert choice.model.id == model_id
    assert (choice.quant.id if choice.quant else None) == quant_id


def _names(entry: GPU | Model) -> list[str]:
    names = [entry.id, entry.name]
    if isinstance(entry, Model) and entry.hf_repo:
        names.append(entry.hf_repo)
    return names


@pytest.mark.parametrize("gpu", CAT.gpus, ids=lambda g: g.id)
def test_every_gpu_resolves_by_its_own_names(gpu: GPU) -> None:
    for text in (*_names(gpu), *gpu.aliases):
        assert R.gpu(text).id == gpu.id, text


@pytest.mark.parametrize("model", CAT.models, ids=lambda m: m.id)
def test_every_model_resolves_by_its_own_names(model: Model) -> None:
    for text in (*_names(model), *model.aliases):
        assert R.model(text).model.id == model.id, text


@pytest.mark.parametrize("text", ["deepseek-r1:999b", "deepseek-r1:8b"])
def test_tag_size_is_never_dropped(text: str) -> None:
    try:
        choice = R.model(text)
    except NotFound:
        return
    assert choice.model.id != "deepseek-r1", f"{text} resolved to the 685B model"
    assert "8b" in choice.model.id, f"{text} resolved to {choice.model.id}"


def test_hf_path_of_an_alias_resolves() -> None:
    assert R.model("Qwen/Qwen2.5-7B-Instruct").model.id == "qwen2.5-7b"


# --- typos, completion -----------------------------------------------------------------------------

@pytest.mark.parametrize(("text", "wanted"), [("qwen3-8bb", "qwen3-8b"), ("qwen3 8bb", "qwen3-8b")])
def test_model_typo_suggests_the_right_one(text: str, wanted: str) -> None:
    with pytest.raises(NotFound) as err:
        R.model(text)
    assert not err.value.ambiguous
    assert wanted in [s.id for s in err.value.suggestions]
    assert wanted.split("-")[0] in str(err.value).lower()


@pytest.mark.parametrize(
    ("text", "wanted"), [("rtx 4900", "nvidia-rtx-4090"), ("RTX4900", "nvidia-rtx-4090"), ("tesla t44", "nvidia-t4")]
)
def test_gpu_typo_suggests_the_right_one(text: str, wanted: str) -> None:
    with pytest.raises(NotFound) as err:
        R.gpu(text)
    assert wanted in [s.id for s in err.value.suggestions][:5]


def test_complete_model_qw_is_bounded_and_all_qwen() -> None:
    hits = R.complete_model("qw")
    assert 0 < len(hits) <= 25
    assert all("qwen" in CAT.model(h.id).family.lower() or h.id.startswith("qwen") for h in hits), hits
    assert len({h.id for h in hits}) == len(hits)


@pytest.mark.parametrize("prefix", ["", "l", "llama", "rtx", "x" * 1000])
def test_completion_is_bounded(prefix: str) -> None:
    assert len(R.complete_model(prefix)) <= 25
    assert len(R.complete_gpu(prefix)) <= 25
    assert len(R.complete_gpu(prefix, limit=5)) <= 5


def test_completion_ranks_prefix_matches_first() -> None:
    hits = R.complete_gpu("rtx 40")
    assert hits and all(h.id.startswith("nvidia-rtx-40") for h in hits[:3])


# --- garbage ---------------------------------------------------------------------------------------

GARBAGE = [
    "",
    "   ",
    "\t\n",
    "x" * 10_000,
    "🦙🔥",
    "'; DROP TABLE gpus; --",
    "../../etc/passwd",
    "\x00\x01",
    "...",
    ":",
    "::::",
    "a" * (MAX_QUERY_CHARS + 1),
]


@pytest.mark.parametrize("text", GARBAGE, ids=range(len(GARBAGE)))
def test_garbage_is_not_found_for_gpus(text: str) -> None:
    with pytest.raises(NotFound) as err:
        R.gpu(text)
    assert len(str(err.value)) < 1000


@pytest.mark.parametrize("text", GARBAGE, ids=range(len(GARBAGE)))
def test_garbage_is_not_found_for_models(text: str) -> None:
    with pytest.raises(NotFound) as err:
        R.model(text)
    assert len(str(err.value)) < 1000


@settings(max_examples=300, deadline=None)
@given(st.text(max_size=300))
def test_any_text_is_an_entry_or_not_found(text: str) -> None:
    for lookup in (R.gpu, lambda t: R.model(t).model):
        try:
            entry = lookup(text)
        except NotFound as err:
            assert err.suggestions is not None
            assert len(err.suggestions) <= 10
            continue
        assert entry.id in {e.id for e in CAT}


@settings(max_examples=200, deadline=None)
@given(st.text(max_size=300))
def test_completion_never_raises(text: str) -> None:
    assert len(R.complete_model(text)) <= 25
    assert len(R.complete_gpu(text)) <= 25


@settings(max_examples=100, deadline=None)
@given(st.sampled_from([*CAT.gpus]), st.sampled_from(["", " ", "  "]), st.booleans())
def test_case_and_spacing_do_not_matter(gpu: GPU, pad: str, upper: bool) -> None:
    text = pad + (gpu.id.upper() if upper else gpu.id) + pad
    assert R.gpu(text).id == gpu.id


# --- names people type for the GPUs added in 2025-26 -------------------------------------------------

@pytest.mark.parametrize(
    ("text", "gpu_id"),
    [
        ("p40", "nvidia-tesla-p40"),
        ("Tesla P40", "nvidia-tesla-p40"),
        ("p4", "nvidia-tesla-p4"),
        ("p100 sxm2", "nvidia-p100-sxm2-16gb"),
        ("p100", "nvidia-p100-pcie-16gb"),
        ("a10g", "nvidia-a10g"),
        ("A10G (AWS g5)", "nvidia-a10g"),
        ("a10", "nvidia-a10"),
        ("rtx a2000 6gb", "nvidia-rtx-a2000-6gb"),
        ("dgx spark", "nvidia-gb10"),
        ("DGX Spark (GB10)", "nvidia-gb10"),
        ("gb10", "nvidia-gb10"),
        ("jetson agx orin 64gb", "nvidia-jetson-agx-orin-64gb"),
        ("radeon ai pro r9700", "amd-radeon-ai-pro-r9700"),
        ("r9700", "amd-radeon-ai-pro-r9700"),
        ("ryzen ai max+ 395 128gb", "amd-radeon-8060s-128gb"),
        ("8060s 64gb", "amd-radeon-8060s-64gb"),
        ("m5 16gb", "apple-m5-16gb"),
        ("m5 max 128gb", "apple-m5-max-128gb"),
        ("rtx pro 6000 server", "nvidia-rtx-pro-6000-blackwell-server"),
        ("rtx pro 6000 max-q", "nvidia-rtx-pro-6000-blackwell-max-q"),
        ("rtx pro 6000", "nvidia-rtx-pro-6000-blackwell"),
        ("rtx 5060", "nvidia-rtx-5060"),
        ("rtx 5090 laptop", "nvidia-rtx-5090-laptop"),
        ("5090", "nvidia-rtx-5090"),
        ("rx 9070 gre", "amd-rx-9070-gre"),
        ("mi350x", "amd-mi350x"),
        ("b300", "nvidia-b300"),
        ("arc pro b50", "intel-arc-pro-b50"),
        ("rtx 2000 ada", "nvidia-rtx-2000-ada"),
        ("GTX 1080", "nvidia-gtx-1080"),
        ("gtx 1050 ti", "nvidia-gtx-1050-ti"),
        ("RX 580", "amd-rx-580-8gb"),
        ("Radeon RX 6800 (non-XT)", "amd-rx-6800"),
        ("rx 6800 xt", "amd-rx-6800-xt"),
        ("RTX 4060 Laptop", "nvidia-rtx-4060-laptop"),
        ("NVIDIA GB10", "nvidia-gb10"),
        # a trailing memory size that restates the card's own
        ("RTX 4090 24GB", "nvidia-rtx-4090"),
        ("RTX 4080 16GB", "nvidia-rtx-4080"),
        ("B300 SXM 288GB", "nvidia-b300"),
        ("GTX 1080 8GB", "nvidia-gtx-1080"),
        ("RTX 5090 32 GB", "nvidia-rtx-5090"),
    ],
)
def test_new_gpu_forms(text: str, gpu_id: str) -> None:
    assert R.gpu(text).id == gpu_id
    assert R.gpu_setup(text).gpu.id == gpu_id


# --- GPU counts ------------------------------------------------------------------------------------

@pytest.mark.parametrize(
    ("text", "gpu_id", "count"),
    [
        ("2x 3090", "nvidia-rtx-3090", 2),
        ("2×4090", "nvidia-rtx-4090", 2),
        ("2x4090", "nvidia-rtx-4090", 2),
        ("4 x a100 80gb", "nvidia-a100-80gb-sxm", 4),
        ("8x H100 SXM", "nvidia-h100-sxm", 8),
        ("8*h100 sxm", "nvidia-h100-sxm", 8),
        ("3090 x2", "nvidia-rtx-3090", 2),
        ("rtx 3090 x 2", "nvidia-rtx-3090", 2),
        ("t4x2", "nvidia-t4", 2),
        ("T4X4", "nvidia-t4", 4),
        ("4090x2", "nvidia-rtx-4090", 2),
        ("a100 80gb x8", "nvidia-a100-80gb-sxm", 8),
        ("dual 3090", "nvidia-rtx-3090", 2),
        ("2x p40", "nvidia-tesla-p40", 2),
        ("4x dgx spark", "nvidia-gb10", 4),
        ("rtx 4090", "nvidia-rtx-4090", 1),
        ("6800 xt", "amd-rx-6800-xt", 1),
        ("7900 xtx", "amd-rx-7900-xtx", 1),
        ("rx 7900 xt", "amd-rx-7900-xt", 1),
    ],
)
def test_gpu_count_forms(text: str, gpu_id: str, count: int) -> None:
    setup = R.gpu_setup(text)
    assert (setup.gpu.id, setup.count) == (gpu_id, count)


@pytest.mark.parametrize(("text", "name", "count"), [("2x 3090", "3090", 2), ("rtx 4090", "rtx 4090", 1),
                                                     ("0x 3090", "0x 3090", 1), ("99x 3090", "99x 3090", 1),
                                                     ("t4x2", "t4", 2), ("rx 7900 xtx", "rx 7900 xtx", 1),
                                                     ("mi250x", "mi250x", 1)])
def test_split_gpu_count(text: str, name: str, count: int) -> None:
    assert split_gpu_count(text) == (name, count)


def test_a_written_count_no_setup_has_is_handed_on_for_the_range_check() -> None:
    """'0x 3090' is not a count `split_gpu_count` takes, but the card is named: the setup carries the 0 (or 100) so
    the request's range check answers, rather than "unknown GPU" or a silent single card."""
    assert (R.gpu_setup("0x 3090").gpu.id, R.gpu_setup("0x 3090").count) == ("nvidia-rtx-3090", 0)
    assert R.gpu_setup("100x h100 sxm").count == 100
    with pytest.raises(NotFound):
        R.gpu_setup("0x zzz-not-a-gpu")


def test_a_count_no_setup_has_before_an_ambiguous_name_asks_which_card() -> None:
    with pytest.raises(NotFound) as err:
        R.gpu_setup("999x h100")
    assert err.value.ambiguous
    assert {s.id for s in err.value.suggestions} >= {"nvidia-h100-sxm", "nvidia-h100-pcie"}


@pytest.mark.parametrize("text", ["rtx 4090 48gb", "rtx 3090 12gb"])
def test_a_memory_size_that_contradicts_the_card_is_not_dropped(text: str) -> None:
    with pytest.raises(NotFound):
        R.gpu(text)


def test_a_count_does_not_rescue_garbage() -> None:
    with pytest.raises(NotFound):
        R.gpu_setup("2x notagpu")


# --- chip families without a memory size -----------------------------------------------------------

@pytest.mark.parametrize(
    ("text", "stem", "count"),
    [
        ("m2 ultra", "apple-m2-ultra", 1),
        ("M4 Max", "apple-m4-max", 1),
        ("m2 max", "apple-m2-max", 1),
        ("m5", "apple-m5", 1),
        ("2x m2 ultra", "apple-m2-ultra", 2),
        ("jetson agx orin", "nvidia-jetson-agx-orin", 1),
        ("ryzen ai max+ 395", "amd-radeon-8060s", 1),
        ("8060s", "amd-radeon-8060s", 1),
        ("rtx 4060 ti", "nvidia-rtx-4060-ti", 1),
        ("rtx 5060 ti", "nvidia-rtx-5060-ti", 1),
        ("rx 9060 xt", "amd-rx-9060-xt", 1),
        ("rtx a2000", "nvidia-rtx-a2000", 1),
    ],
)
def test_chip_family_answers_with_every_memory_option(text: str, stem: str, count: int) -> None:
    setup = R.gpu_setup(text)
    expected = {g.id for g in CAT.gpus if re.sub(r"-\d+gb$", "", g.id) == stem and g.id != stem}
    assert setup.is_family and setup.count == count
    assert {g.id for g in setup.options} == expected and len(expected) >= 2
    sizes = [g.vram_gb for g in setup.options]
    assert sizes == sorted(sizes), "smallest memory first"
    assert setup.family and "(" not in setup.family
    with pytest.raises(ValueError):
        setup.gpu  # noqa: B018 - several options: no single GPU


def test_m2_ultra_family_is_labelled_without_the_memory_size() -> None:
    assert R.gpu_setup("m2 ultra").family == "Apple M2 Ultra"


@pytest.mark.parametrize("text", ["a100", "v100"])
def test_variants_that_differ_in_more_than_memory_stay_ambiguous(text: str) -> None:
    with pytest.raises(NotFound) as err:
        R.gpu_setup(text)
    assert err.value.ambiguous


@pytest.mark.parametrize("text", ["8x h100", "2x a100", "a100 x4"])
def test_a_count_before_an_ambiguous_name_still_lists_the_candidates(text: str) -> None:
    with pytest.raises(NotFound) as err:
        R.gpu_setup(text)
    assert err.value.ambiguous
    bare = text.replace("8x ", "").replace("2x ", "").replace(" x4", "")
    assert [s.id for s in err.value.suggestions] == [s.id for s in _not_found(bare).suggestions]


def _not_found(text: str) -> NotFound:
    with pytest.raises(NotFound) as err:
        R.gpu_setup(text)
    return err.value


def test_completion_ignores_a_typed_count() -> None:
    assert [s.id for s in R.complete_gpu("2x 309")][:1] == [s.id for s in R.complete_gpu("309")][:1]


@pytest.mark.parametrize(
    ("text", "model_id", "quant_id"),
    [
        ("qwen3:4b-instruct-2507", "qwen3-4b-instruct-2507", None),
        ("qwen3:4b-thinking-2507-q8_0", "qwen3-4b-thinking-2507", "q8_0"),
        ("qwen3:30b-a3b-instruct-2507-q4_K_M", "qwen3-30b-a3b-instruct-2507", "q4_k_m"),
        ("Qwen/Qwen3-235B-A22B-Thinking-2507", "qwen3-235b-a22b-thinking-2507", None),
        ("Qwen3-30B-A3B-Instruct-2507", "qwen3-30b-a3b-instruct-2507", None),
        ("qwen3:4b", "qwen3-4b", None),
        ("qwen3:4b-q4_K_M", "qwen3-4b", "q4_k_m"),
        # A format whose name holds a dash is read whole from the tag, not dropped.
        ("qwen3:8b-exl2-4.65bpw", "qwen3-8b", "exl2-4.65bpw"),
        ("qwen3:30b-a3b-ud-q4_k_xl", "qwen3-30b-a3b", "ud-q4_k_xl"),
        ("qwen2.5 7b 1m", "qwen2.5-7b-instruct-1m", None),
        ("llama 33b", "llama-1-33b", None),
        ("huggyllama/llama-30b", "llama-1-33b", None),
        ("openlm-research/open_llama_3b", "open-llama-3b", None),
        ("phi3:mini-128k", "phi-3-mini-128k", None),
        ("phi3:mini", "phi-3-mini", None),
        ("mistral large 2411", "mistral-large-2411", None),
        ("smollm2:135m", "smollm2-135m", None),
        ("SmolLM2-360M-Instruct", "smollm2-360m", None),
        ("Qwen3-Coder-30B-A3B-Instruct", "qwen3-coder-30b-a3b", None),
        ("qwen3-coder:30b", "qwen3-coder-30b-a3b", None),
        ("Qwen1.5-1.8B-Chat", "qwen1.5-1.8b", None),
        ("deepseek-coder-6.7b-instruct", "deepseek-coder-6.7b", None),
        ("OpenCodeInterpreter-DS-6.7B", "opencodeinterpreter-ds-6.7b", None),
        ("dolphin-2.6-mistral-7b-dpo-laser", "dolphin-2.6-mistral-7b", None),
        ("glm-4.6", "glm-4.6", None),
        ("MiniMax-M2", "minimax-m2", None),
        ("seed-oss:36b", "seed-oss-36b", None),
        ("granite4:1b", "granite-4.0-1b", None),
        ("Qwen/Qwen3-VL-8B-Instruct", "qwen3-vl-8b", None),
        ("deepseek-v3.1", "deepseek-v3.1", None),
        ("mistral-small3.2:24b", "mistral-small-3.2-24b-2506", None),
    ],
)
def test_new_model_forms(text: str, model_id: str, quant_id: str | None) -> None:
    choice = R.model(text)
    assert choice.model.id == model_id
    assert (choice.quant.id if choice.quant else None) == quant_id


# --- names listed as no public release -------------------------------------------------------------

def test_a_listed_name_answers_not_a_known_release(tmp_path: Path) -> None:
    data = tmp_path / "data"
    shutil.copytree(DATA_DIR, data)
    (data / "zz-not-released.toml").write_text(
        '[[not_a_release]]\nname = "Imaginary 9B"\naliases = ["imaginary-9b"]\n'
        'reason = "no publisher has released weights under this name"\n'
        'source = "searched model hubs and vendor announcements; listed on a calculator page only"\n'
    )
    resolver = Resolver(load_from(data))
    for text in ("Imaginary 9B", "imaginary-9b", "  IMAGINARY 9b "):
        with pytest.raises(NotARelease) as err:
            resolver.model(text)
        assert "not a known release" in str(err.value)
        assert isinstance(err.value, NotFound) and err.value.suggestions == []
    assert resolver.model("qwen3-8b").model.id == "qwen3-8b"
    with pytest.raises(NotFound) as other:
        resolver.model("imaginary 10b")
    assert not isinstance(other.value, NotARelease)


@pytest.mark.parametrize(("typed", "fid", "bpw", "level"), [
    ("exl2-4.65bpw", "exl2-4.65bpw", 4.65, "int4"), ("EXL2 4.65 bpw", "exl2-4.65bpw", 4.65, "int4"),
    ("exl3 3.5bpw", "exl3-3.5bpw", 3.5, "int3"), ("exl3-1.6", "exl3-1.6bpw", 1.6, "int2"),
    ("exl2_6.5bpw", "exl2-6.5bpw", 6.5, "int6"),
])
def test_exllama_formats_at_any_bitrate_in_range(typed: str, fid: str, bpw: float, level: str) -> None:
    resolver = Resolver(load_catalog())
    fmt = resolver.quant_or_none(typed)
    assert fmt is not None and (fmt.id, fmt.bits_per_weight, fmt.level) == (fid, bpw, level)
    family = fid[:4]
    assert fmt.engines == ("exllamav2",) if family == "exl2" else fmt.engines == ("exllamav3",)
    assert fmt.output_bits == 6 and fmt.kernel == load_catalog().quant(f"{family}-4.0bpw").kernel


@pytest.mark.parametrize("typed", ["exl2-9bpw", "exl2-1.5bpw", "exl3-0.5bpw", "exl3-12bpw", "exl4-4bpw"])
def test_exllama_bitrates_outside_the_converters_range_are_unknown(typed: str) -> None:
    assert Resolver(load_catalog()).quant_or_none(typed) is None


# --- Unicode: what an input method types is the name it looks like -------------------------------------------


@pytest.mark.parametrize(("text", "gpu_id", "count"), [
    ("ｒｔｘ４０９０", "nvidia-rtx-4090", 1),  # full-width, a CJK input method's default
    ("ＲＴＸ　４０９０", "nvidia-rtx-4090", 1),  # with an ideographic space
    ("２× ４０９０", "nvidia-rtx-4090", 2),
    ("ＲＴＸ ４０９０ ２４ＧＢ", "nvidia-rtx-4090", 1),
    ("Ｔ４", "nvidia-t4", 1),
])
def test_full_width_and_compatibility_forms_name_the_gpu(text: str, gpu_id: str, count: int) -> None:
    setup = R.gpu_setup(text)
    assert (setup.gpu.id, setup.count) == (gpu_id, count)
    assert R.gpu(text.replace("２× ", "")).id == gpu_id


@pytest.mark.parametrize(("text", "model_id", "quant_id"), [
    ("ｑｗｅｎ３-８ｂ", "qwen3-8b", None),
    ("Ｑｗｅｎ／Ｑｗｅｎ３-８Ｂ", "qwen3-8b", None),
    ("qwen3：8b-q8_0", "qwen3-8b", "q8_0"),  # a full-width colon in an Ollama tag
])
def test_full_width_and_compatibility_forms_name_the_model(text: str, model_id: str, quant_id: str | None) -> None:
    choice = R.model(text)
    assert (choice.model.id, choice.quant.id if choice.quant else None) == (model_id, quant_id)


@pytest.mark.parametrize("text", ["🤖", "!!!", "—", "🤖:", "   ", "「」"])
def test_text_with_no_letter_or_digit_gets_no_arbitrary_suggestions(text: str) -> None:
    for find in (R.gpu_setup, R.model):
        with pytest.raises(NotFound) as err:
            find(text)
        assert err.value.suggestions == [], (find, text)


def test_a_typo_still_gets_suggestions() -> None:
    with pytest.raises(NotFound) as err:
        R.gpu("ｒｔｘ ４９００")
    assert "nvidia-rtx-4090" in [s.id for s in err.value.suggestions]


@pytest.mark.parametrize("text", ["hf:Qwen/Qwen3-8B", " HF: qwen/QWEN3-8b ", "Qwen/Qwen3-8B",
                                  "hf:Ｑｗｅｎ/Ｑｗｅｎ３-８Ｂ"])
def test_a_hugging_face_repo_the_catalog_lists_is_its_entry(text: str) -> None:
    found = R.hf_model(text)
    assert found is not None and found.id == "qwen3-8b"


@pytest.mark.parametrize("text", ["hf:nobody/unlisted", "hf:Qwen/Qwen3-8B-Extra", "hf:", "qwen3-8b"])
def test_a_repo_the_catalog_does_not_list_is_left_to_the_hub(text: str) -> None:
    assert R.hf_model(text) is None


@pytest.mark.parametrize(("text", "gpu"), [
    ("A100 80G", "nvidia-a100-80gb-sxm"), ("a100 80", "nvidia-a100-80gb-sxm"), ("a100-40", "nvidia-a100-40gb-sxm"),
    ("a100 40g", "nvidia-a100-40gb-sxm"), ("rtx 3060 12", "nvidia-rtx-3060-12gb"),
    ("4060 ti 16g", "nvidia-rtx-4060-ti-16gb"),
    ("rx 7900 xtx 24", "amd-rx-7900-xtx"), ("mi300x 192", "amd-mi300x"),
])
def test_a_memory_size_written_short_reads_as_the_catalog_writes_it(text: str, gpu: str) -> None:
    assert R.gpu(text).id == gpu


@pytest.mark.parametrize(("text", "among"), [
    ("H100 80G", {"nvidia-h100-pcie", "nvidia-h100-sxm"}),
    ("v100 32", {"nvidia-v100-pcie-32gb", "nvidia-v100-sxm2-32gb"}),
])
def test_a_short_memory_size_of_several_cards_lists_them(text: str, among: set[str]) -> None:
    with pytest.raises(NotFound) as err:
        R.gpu(text)
    assert err.value.ambiguous and {s.id for s in err.value.suggestions} >= among and err.value.query == text


def test_a_memory_size_the_card_does_not_have_is_not_read_away() -> None:
    with pytest.raises(NotFound):
        R.gpu("rtx 4090 23")


@pytest.mark.parametrize("tag", ["gemma3:27b-it-qat", "gemma3:12b-it-qat"])
def test_an_ollama_qat_tag_is_googles_q4_0_file(tag: str) -> None:
    choice = R.model(tag)
    assert choice.quant is not None and choice.quant.id == "q4_0-qat"
    # Q4_0 blocks, the tied embedding table at F16: larger than a plain Q4_0 of the same model.
    plain = CAT.quant("q4_0")
    assert choice.quant.bits_per_weight == plain.bits_per_weight and choice.quant.embedding_bits == 16
