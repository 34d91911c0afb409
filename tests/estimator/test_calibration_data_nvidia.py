"""The published NVIDIA measurements parse, and every row carries what the fit and the validation need:
a source, a date, positive numbers and a test name the loader understands."""

from __future__ import annotations

import datetime
import re
import tomllib
from pathlib import Path
from typing import Any

import pytest

from catalog import load_catalog
from catalog.resolve import NotFound, Resolver
from estimator.calibration.measurements import _TEST, DATA_DIR

ROOT = Path(__file__).resolve().parents[2]
LLAMACPP = DATA_DIR / "llamacpp_nvidia.toml"
ENGINES = DATA_DIR / "engines_nvidia.toml"
BANDWIDTH = ROOT / "catalog" / "data" / "achieved_bandwidth.toml"

LLAMACPP_ENGINES = {"llama.cpp", "ik_llama.cpp", "ollama", "lm studio"}
SERVER_ENGINES = {"vllm", "sglang", "tensorrt-llm", "exllamav2", "exllamav3"}
BACKENDS = {"CUDA", "Vulkan"}


def _rows(path: Path, table: str = "measurement") -> list[dict[str, Any]]:
    rows = tomllib.loads(path.read_text())[table]
    assert isinstance(rows, list) and rows, f"{path.name} has no [[{table}]] rows"
    return rows


def _check_common(row: dict[str, Any]) -> None:
    assert str(row.get("source", "")).startswith(("https://", "http://")), row
    datetime.date.fromisoformat(str(row["date"]))  # raises on anything but YYYY-MM-DD
    assert str(row["date"]) <= datetime.datetime.now(tz=datetime.UTC).date().isoformat(), row
    assert isinstance(row.get("gpu"), str) and row["gpu"].strip(), row
    count = row.get("gpu_count", 1)
    assert isinstance(count, int) and count >= 1, row


def _positive(value: object) -> bool:
    return isinstance(value, int | float) and not isinstance(value, bool) and value > 0


LLAMACPP_ROWS = _rows(LLAMACPP)


@pytest.mark.parametrize("row", LLAMACPP_ROWS, ids=lambda r: f"{r['gpu']}|{r['model']}|{r['quant']}|{r['test']}")
def test_llamacpp_row_is_complete(row: dict[str, Any]) -> None:
    _check_common(row)
    assert row["engine"] in LLAMACPP_ENGINES, row
    assert row["backend"] in BACKENDS, row
    assert row["model"].strip() and row["quant"].strip(), row
    # The same normalisation the loader applies, so a row that passes here is one it can read.
    test = _TEST.match(row["test"].replace(" ", "").replace("@d", " @ d"))
    assert test, f"unknown test format {row['test']!r}"
    # A decode rate quoted without its token count (an Ollama issue, a blog table) is still a decode rate; a prompt rate
    # means nothing without the prompt length.
    assert test.group(2) or test.group(1) == "tg", row
    assert _positive(row["tps"]), row
    for key in ("model_size_gib", "params_b"):
        if key in row:
            assert _positive(row[key]), row
    if "flash_attn" in row:
        assert isinstance(row["flash_attn"], bool), row
    if "ubatch" in row:
        assert isinstance(row["ubatch"], int) and row["ubatch"] > 0, row


def test_llamacpp_rows_are_not_duplicated() -> None:
    keys = [(r["gpu"], r["model"], r["quant"], r["test"], r.get("ubatch"), r.get("flash_attn"), r["source"],
             r.get("note")) for r in LLAMACPP_ROWS]
    assert len(keys) == len(set(keys))


def test_llamacpp_rows_cite_sources_not_already_in_the_shared_file() -> None:
    existing = {m["source"] for m in _rows(DATA_DIR / "llamacpp.toml")}
    assert not existing & {r["source"] for r in LLAMACPP_ROWS}


def test_decode_is_slower_than_prefill_for_each_published_pair() -> None:
    # A pp/tg mix-up while copying shows as a "decode" faster than the prefill of the same run.
    pairs: dict[tuple[str, ...], dict[str, float]] = {}
    for r in LLAMACPP_ROWS:
        depth = re.search(r"@ ?d(\d+)", r["test"])
        key = (r["gpu"], r["model"], r["quant"], r["source"], str(r.get("note")), depth.group(1) if depth else "0")
        pairs.setdefault(key, {})[r["test"][:2]] = max(pairs.get(key, {}).get(r["test"][:2], 0.0), float(r["tps"]))
    both = [p for p in pairs.values() if {"pp", "tg"} <= p.keys()]
    assert both
    for p in both:
        assert p["tg"] < p["pp"], p


@pytest.mark.skipif(not ENGINES.exists(), reason="no server-engine rows yet")
def test_engine_rows_are_complete() -> None:
    for row in _rows(ENGINES):
        _check_common(row)
        assert row["engine"] in SERVER_ENGINES, row
        assert str(row.get("batch", "")).split()[0] == "1", row
        rates = [row[k] for k in ("decode_tps", "tpot_ms", "ttft_ms", "ttft_s", "prompt_tps") if k in row]
        assert rates and all(_positive(v) for v in rates), row
        for key in ("input_tokens", "output_tokens", "tp"):
            if key in row:
                assert isinstance(row[key], int) and row[key] > 0, row


@pytest.mark.skipif(not BANDWIDTH.exists(), reason="no bandwidth measurements yet")
def test_achieved_bandwidth_is_below_the_datasheet_figure() -> None:
    catalog = load_catalog()
    resolver = Resolver(catalog)
    for row in _rows(BANDWIDTH):
        _check_common(row)
        assert _positive(row["achieved_gbs"]) and str(row.get("method", "")).strip(), row
        try:
            gpu = catalog.gpu(row["gpu"])
        except KeyError:
            try:
                gpu = resolver.gpu(row["gpu"])
            except NotFound:
                continue
        # Streaming benchmarks reach a share of the interface's peak, never more (copies count read + write).
        assert row["achieved_gbs"] <= gpu.bandwidth_gbs, (row, gpu.bandwidth_gbs)
