"""The published measurements kept beside the fitted sets (other vendors, engines, MoE, small models, depth
sweeps, achieved bandwidth): every row must say where it comes from and when, carry positive figures, and name a
test or engine the loaders understand, so a typo cannot slip a row in silently."""

from __future__ import annotations

import datetime as dt
import re
import tomllib
from importlib import resources
from pathlib import Path

import pytest

from catalog import load_catalog
from estimator.calibration.measurements import _TEST, DATA_DIR, LLAMACPP_FLASH_ATTN_SINCE, llamacpp_rows

CATALOG_DATA = Path(str(resources.files("catalog") / "data"))
LLAMACPP_OTHER = DATA_DIR / "llamacpp_other.toml"
ENGINES_OTHER = DATA_DIR / "engines_other.toml"
BANDWIDTH_OTHER = CATALOG_DATA / "achieved_bandwidth_other.toml"
# Later collections, one file per hardware group or engine kind, held to the same rules.
LLAMACPP_MORE = [DATA_DIR / f"llamacpp_{name}.toml" for name in (
    "amd_rocm", "geforce", "datacenter", "apple_intel", "geforce_files", "datacenter_files", "other_files",
    "older_nvidia", "radeon_arc", "geforce_more", "intel_arc", "volta_fa", "intel_formats", "workstation_datacenter",
    "geforce_2026", "amd_more", "apple_intel_more", "pr_tables_nvidia", "pr_tables_amd", "moe_nvidia_bench",
    "amd_instinct", "amd_consumer", "cloud_instances")]
ENGINES_MORE = [DATA_DIR / f"engines_{name}.toml" for name in (
    "single_stream", "datacenter_files", "hopper_blackwell", "amd_instinct", "cloud_instances")]
BANDWIDTH_MORE = CATALOG_DATA / "achieved_bandwidth_more.toml"
LLAMACPP_FILES = [LLAMACPP_OTHER, *LLAMACPP_MORE]
ENGINE_FILES = [ENGINES_OTHER, *ENGINES_MORE]
BANDWIDTH_FILES = [BANDWIDTH_OTHER, BANDWIDTH_MORE]

LLAMACPP_ENGINES = {"llama.cpp", "ollama", "lm studio"}
BACKENDS = {"CUDA", "ROCm", "Metal", "SYCL", "Vulkan"}
SERVER_ENGINES = {"vllm", "sglang", "exllamav2", "exllamav3", "trt-llm", "mlx"}
POSITIVE_FIELDS = ("tps", "decode_tps", "prompt_tps", "tpot_ms", "ttft_ms", "model_size_gib", "params_b", "bpw",
                   "achieved_gbs", "input_tokens", "output_tokens", "e2e_latency_ms")
SPEED_FIELDS = ("decode_tps", "prompt_tps", "tpot_ms", "ttft_ms", "e2e_latency_ms")
IDENTITY = ("engine", "engine_version", "gpu", "gpu_count", "model", "quant", "bpw", "backend", "driver", "test",
            "flash_attn", "ubatch", "build", "input_tokens", "output_tokens", "source")


def _rows(path: Path) -> list[dict[str, object]]:
    rows: list[dict[str, object]] = tomllib.loads(path.read_text())["measurement"]
    return rows


def _label(row: dict[str, object]) -> str:
    return f"{row.get('gpu')} / {row.get('model', row.get('method'))} / {row.get('test', row.get('engine'))}"


def _check_common(row: dict[str, object], earliest: dt.date) -> None:
    source = str(row.get("source", ""))
    assert source.startswith("https://"), f"{_label(row)}: source must be a URL, got {source!r}"
    date = str(row.get("date", ""))
    assert re.fullmatch(r"\d{4}-\d{2}-\d{2}", date), f"{_label(row)}: date must be YYYY-MM-DD, got {date!r}"
    assert dt.date.fromisoformat(date) >= earliest, f"{_label(row)}: {date} predates what the file holds"
    for field in POSITIVE_FIELDS:
        if field in row:
            value = row[field]
            assert not isinstance(value, bool), f"{_label(row)}: {field} is a flag, not a number"
            assert isinstance(value, (int, float)), f"{_label(row)}: {field} not a number"
            assert value > 0, f"{_label(row)}: {field} = {value}"
    assert str(row.get("gpu", "")).strip(), f"{_label(row)}: no GPU"


@pytest.mark.parametrize("path", [*LLAMACPP_FILES, *ENGINE_FILES, *BANDWIDTH_FILES], ids=lambda p: p.name)
def test_every_row_has_source_date_and_positive_figures(path: Path) -> None:
    rows = _rows(path)
    assert rows
    # LLM speed rows come from engines first released in 2023; memory benchmarks are older.
    earliest = dt.date(2015, 1, 1) if path in BANDWIDTH_FILES else dt.date(2023, 1, 1)
    for row in rows:
        _check_common(row, earliest)


@pytest.mark.parametrize("path", LLAMACPP_FILES, ids=lambda p: p.name)
def test_llamacpp_rows_name_a_test_engine_and_backend_the_loader_reads(path: Path) -> None:
    for row in _rows(path):
        test = str(row["test"])
        # The same normalisation llamacpp_rows applies before matching.
        assert _TEST.match(test.replace(" ", "").replace("@d", " @ d")), f"{_label(row)}: unreadable test {test!r}"
        assert row.get("engine") in LLAMACPP_ENGINES, f"{_label(row)}: engine {row.get('engine')!r}"
        assert row.get("backend") in BACKENDS, f"{_label(row)}: backend {row.get('backend')!r}"
        gpus = row.get("gpu_count")
        assert isinstance(gpus, int) and gpus >= 1, f"{_label(row)}: gpu_count {gpus!r}"
        assert str(row.get("model", "")).strip() and str(row.get("quant", "")).strip(), _label(row)
        if row["engine"] == "ollama":
            assert str(row.get("build", "")).strip(), f"{_label(row)}: Ollama rows carry the Ollama version"


@pytest.mark.parametrize("path", ENGINE_FILES, ids=lambda p: p.name)
def test_engine_rows_are_single_stream_with_a_speed(path: Path) -> None:
    for row in _rows(path):
        assert row.get("engine") in SERVER_ENGINES, f"{_label(row)}: engine {row.get('engine')!r}"
        assert any(f in row for f in SPEED_FIELDS), f"{_label(row)}: no speed figure"
        assert str(row.get("batch", "1")).split()[0] == "1", f"{_label(row)}: not single-stream: {row.get('batch')!r}"
        if str(row.get("quant", "")).startswith("exl"):
            assert row["quant"] in ("exl2", "exl3") and "bpw" in row, f"{_label(row)}: EXL rows carry bpw"


@pytest.mark.parametrize("path", BANDWIDTH_FILES, ids=lambda p: p.name)
def test_bandwidth_rows_under_the_datasheet_where_the_catalog_has_the_gpu(path: Path) -> None:
    catalog = load_catalog()
    known = {g.id: g for g in catalog.gpus}
    for row in _rows(path):
        assert str(row.get("method", "")).strip(), f"{_label(row)}: no method"
        gpu = known.get(str(row["gpu"]))
        if gpu is not None:
            assert float(str(row["achieved_gbs"])) <= gpu.bandwidth_gbs, f"{_label(row)}: above the datasheet"


def test_no_row_repeats_and_no_source_is_already_in_the_fitted_sets() -> None:
    existing = set()
    for name in ("llamacpp.toml", "vllm_single.toml", "mlx.toml", "vllm.toml"):
        for row in _rows(DATA_DIR / name):
            existing.add(str(row["source"]).split(" ")[0])
    for path in (LLAMACPP_OTHER, ENGINES_OTHER):
        seen: set[tuple[object, ...]] = set()
        for row in _rows(path):
            identity = tuple(row.get(k) for k in IDENTITY)
            assert identity not in seen, f"{path.name}: duplicate row {identity}"
            seen.add(identity)
            assert str(row["source"]).split(" ")[0] not in existing, f"{_label(row)}: source already in the fitted sets"


FIGURE = ("gpu", "model", "quant", "test", "tps", "decode_tps", "tpot_ms", "achieved_gbs")


def _figures(path: Path) -> list[tuple[object, ...]]:
    rows = tomllib.loads(path.read_text()).get("measurement", [])
    return [(*(row.get(k) for k in FIGURE), row.get("gpu_count", 1), row.get("input_tokens")) for row in rows
            if any(row.get(k) for k in ("tps", "decode_tps", "tpot_ms", "achieved_gbs"))]


def test_a_figure_is_recorded_once_across_the_data() -> None:
    # A fork or mirror of a published table cites another URL for the same run: the same card, model, format, test
    # and figure in two files would count one measurement (and one source) twice.
    later = [*LLAMACPP_MORE, *ENGINES_MORE, BANDWIDTH_MORE]
    earlier = [p for p in (*sorted(DATA_DIR.glob("*.toml")), *sorted(CATALOG_DATA.glob("achieved_bandwidth*.toml")))
               if p not in later]
    known = {f: p.name for p in earlier for f in _figures(p)}
    for path in later:
        mine = _figures(path)
        assert len(set(mine)) == len(mine), f"{path.name}: a figure appears twice"
        for f in mine:
            assert f not in known, f"{path.name}: {f} is already recorded in {known.get(f)}"
            known[f] = path.name


def _check_build_flags(keys: dict[str, str | None], backends: tuple[str, ...]) -> None:
    """Each key present on a llama.cpp row is a bool, on a row of one of `backends`, and where its value maps to a
    marker, the row's note contains the marker (the reason the flag was set)."""
    for path in sorted(DATA_DIR.glob("llamacpp*.toml")):
        for row in _rows(path):
            for key, marker in keys.items():
                if key in row:
                    assert isinstance(row[key], bool), f"{path.name}: {_label(row)}: {key} = {row[key]!r}"
                    backend = row.get("backend")
                    assert backend in backends, f"{path.name}: {_label(row)}: {key} on {backend}"
                    assert marker is None or marker in str(row.get("note", "")), f"{path.name}: {_label(row)}: say why"


def test_rocm_library_flags_are_flags_on_rocm_rows_only() -> None:
    # hipBLASLt and rocWMMA change ROCm prefill by multiples; a flag copied onto a CUDA or Vulkan row, or written
    # as a string ("1", "on"), would describe a build the row never ran.
    _check_build_flags({"hipblaslt": None, "rocwmma": None}, ("ROCm",))


def test_sycl_build_flags_are_flags_on_sycl_rows_only() -> None:
    # GGML_SYCL_F16 and a branch's reorder decode kernel describe a SYCL build; on another backend's row, or as text,
    # they would re-price a run that never had them.
    _check_build_flags({"sycl_f16": None, "sycl_reorder": "sycl_reorder"}, ("SYCL",))


def test_mmq_flags_mark_pr_branches_on_cuda_and_rocm_rows() -> None:
    # A row's own MMQ/BLAS choice overrides the one its date implies (a PR column that ran kernels master did not have
    # yet); it says so in its note, and only CUDA/HIP builds make that choice.
    _check_build_flags({"mmq": "mmq:"}, ("CUDA", "ROCm"))


def test_fa_kernel_flags_mark_pr_branches_on_cuda_and_rocm_rows() -> None:
    # Likewise for the prompt's flash-attention kernel: a PR column that ran a matrix-unit kernel before master had it.
    _check_build_flags({"fa_matrix": "fa_matrix:"}, ("CUDA", "ROCm"))


def test_cuda_graph_flags_are_flags() -> None:
    # A launch flag recorded as text ("--enforce-eager") would read as truthy and say the opposite of the command.
    for path in sorted(DATA_DIR.glob("*.toml")):
        for row in tomllib.loads(path.read_text()).get("measurement", []):
            if "cuda_graphs" in row:
                assert isinstance(row["cuda_graphs"], bool), f"{path.name}: {_label(row)}: {row['cuda_graphs']!r}"


def test_prompt_tests_run_one_token_at_a_time_and_say_so() -> None:
    # A decode row read off a ppN test at microbatch 1 skips the output layer for all but the last token; the fit
    # prices it without that layer only where the row says `prompt_test`, so every such row must say it.
    for path in sorted(DATA_DIR.glob("llamacpp*.toml")):
        for row in tomllib.loads(path.read_text()).get("measurement", []):
            label = f"{path.name}: {_label(row)}"
            decode = str(row.get("test", "")).startswith("tg")
            if "prompt_test" in row:
                assert row["prompt_test"] is True and decode and row.get("ubatch") == 1, label
            elif decode and row.get("ubatch") == 1:
                raise AssertionError(f"{label}: a microbatch-1 decode row is a prompt test; mark it prompt_test")


def test_a_build_before_flash_attention_existed_ran_without_it(tmp_path: Path) -> None:
    # A 2023 llama-bench table prints no fa column because the kernel did not exist yet: its rows are priced as the
    # unfused attention they ran, while a later row that does not say stays unknown and one that says keeps its word.
    rows = "".join(f"""
[[measurement]]
engine = "llama.cpp"
gpu = "RTX 3090"
model = "Llama 2 7B"
quant = "Q4_0"
backend = "CUDA"
test = "pp512"
tps = 3000.0
date = "{date}"
source = "https://example.invalid/{date}"
{flag}
""" for date, flag in (("2023-12-22", ""), ("2024-06-05", ""), ("2024-06-06", "flash_attn = true")))
    path = tmp_path / "llamacpp_probe.toml"
    path.write_text(rows)
    got = {r.date: r.flash_attn for r in llamacpp_rows(load_catalog(), paths=[path])[0]}
    assert "2023-12-22" < LLAMACPP_FLASH_ATTN_SINCE < "2024-06-05"
    assert got == {"2023-12-22": False, "2024-06-05": None, "2024-06-06": True}
