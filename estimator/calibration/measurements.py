"""Published measurements, matched to catalog entries, as rows the fit and the validation read.

Rows name GPUs and models the way their sources print them; `GPU_NAMES` and `MODEL_NAMES` map the
spellings the resolver cannot place. A row whose GPU, model or format is not in the catalog is skipped
(and counted), never guessed. About a quarter of the rows are held out of the fit, chosen by a hash of
the row's identity so the split is stable and independent of the numbers.
"""

from __future__ import annotations

import hashlib
import re
import tomllib
from dataclasses import dataclass
from pathlib import Path
from typing import Literal

from catalog.resolve import NotFound, Resolver
from catalog.schema import GPU, Model, QuantFormat
from catalog.store import Catalog
from estimator.query import Engine

DATA_DIR = Path(__file__).parent / "data"
HOLDOUT_PERCENT = 25

GPU_NAMES: dict[str, str] = {
    "a100-sxm4-80gb": "nvidia-a100-80gb-sxm",
    "a100 80gb pcie": "nvidia-a100-80gb-pcie",
    "h100 pcie": "nvidia-h100-pcie",
    "rtx 4000 ada generation": "nvidia-rtx-4000-ada",
    "rtx 5000 ada generation": "nvidia-rtx-5000-ada",
    "rtx 6000 ada generation": "nvidia-rtx-6000-ada",
    "amd instinct mi300x": "amd-mi300x",
    "m1 max 32-core gpu 64gb": "apple-m1-max-64gb",
    "m2 ultra 76-core gpu 192gb": "apple-m2-ultra-192gb",
    "m3 max 40-core gpu 64gb": "apple-m3-max-64gb",
    "m1 7-core gpu 8gb": "apple-m1-8gb",
    "m1 (7-core gpu, 68 gb/s)": "apple-m1-8gb",
    "m1 (8-core gpu, 68 gb/s)": "apple-m1-8gb",
    "m1 ultra 64-core gpu 128gb": "apple-m1-ultra-128gb",
    # Speed rows that name a chip but not its memory: every memory option of these chips has the same GPU
    # and bandwidth, so any one entry stands for the chip.
    "m2 ultra": "apple-m2-ultra-192gb",
    "m1 max": "apple-m1-max-64gb",
    "m1 ultra": "apple-m1-ultra-128gb",
    'm3 pro 18gb (macbook pro 14")': "apple-m3-pro-18gb",
    # "H100-80GB-HBM3" is the SXM part (the PCIe card carries HBM2e); 8×H200 servers are HGX (SXM) boards.
    "h100-80gb-hbm3": "nvidia-h100-sxm",
    "h200": "nvidia-h200-sxm",
    "v100-pcie-32gb": "nvidia-v100-pcie-32gb",
}
MODEL_NAMES: dict[str, str] = {
    "llama 3 8b": "llama-3-8b",
    "llama 3 70b": "llama-3-70b",
    "llama 2 7b": "llama-2-7b",
    "llama 2 13b": "llama-2-13b",
    "llama 3.1 8b": "llama-3.1-8b",
    "llama 3.2 1b": "llama-3.2-1b",
    "llama 3.2 3b": "llama-3.2-3b",
    "llama 3.3 70b instruct": "llama-3.3-70b",
    # LLaMA 1 7B and CodeLlama 7B share Llama 2 7B's shapes (32 layers, 4096 hidden, 32 heads, 11008 FFN);
    # CodeLlama's vocabulary is 16 rows larger, a 0.01 % difference in bytes.
    "llama 7b": "llama-2-7b",
    "codellama 7b": "llama-2-7b",
}
QUANT_NAMES: dict[str, str] = {"f16": "f16", "q4_0": "q4_0", "q4_k_m": "q4_k_m", "q8_0": "q8_0", "q6_k": "q6_k",
                               "q5_k_m": "q5_k_m", "bf16": "bf16", "fp16": "bf16"}
BACKENDS = {"CUDA": "cuda", "ROCm": "rocm", "Metal": "metal", "SYCL": "sycl"}

Kind = Literal["decode", "prefill"]


@dataclass(frozen=True)
class Row:
    kind: Kind
    gpu: GPU
    gpus: int
    model: Model
    quant: QuantFormat
    tokens: int  # tokens generated (decode) or prompt length (prefill)
    depth: int  # context already in the cache when the test starts
    measured_tps: float
    source: str
    holdout: bool
    date: str = ""  # YYYY-MM[-DD] of the measurement where the source gives it
    engine: Engine = "llama.cpp"

    @property
    def family(self) -> str:
        return f"{self.gpu.vendor}/{self.gpu.architecture}"


def _held_out(*identity: object) -> bool:
    digest = hashlib.sha256("|".join(map(str, identity)).encode()).digest()
    return digest[0] * 100 // 256 < HOLDOUT_PERCENT


def _gpu(resolver: Resolver, catalog: Catalog, name: str) -> GPU | None:
    key = name.strip().lower()
    if key in GPU_NAMES:
        try:
            return catalog.gpu(GPU_NAMES[key])
        except KeyError:
            return None
    try:
        return resolver.gpu(name)
    except NotFound:
        return None


_BUILD_SUFFIX = re.compile(r"(-mlx)?(-(4|6|8)bit|-bf16|-fp16)?(-mlx)?$", re.IGNORECASE)


def _model(resolver: Resolver, catalog: Catalog, name: str) -> Model | None:
    # "mlx-community/Llama-3.3-70B-Instruct-4bit" is a build of meta-llama/Llama-3.3-70B-Instruct.
    name = _BUILD_SUFFIX.sub("", name.strip().split("/")[-1] if "mlx-community/" in name else name.strip())
    key = re.sub(r"\s*\(.*\)$", "", name.lower())
    if key in MODEL_NAMES:
        try:
            return catalog.model(MODEL_NAMES[key])
        except KeyError:
            return None
    try:
        return resolver.model(name).model
    except NotFound:
        return None


def is_flagged(row: dict[str, object]) -> bool:
    """Rows whose note records the figure as anomalous in its own source (an A100 SXM F16 prompt rate a
    tenth of the same source's A100 PCIe figure, say) are kept in the data but neither fitted nor scored."""
    return "anomalous" in str(row.get("note", "")).lower()


# "tg128", "pp512", "pp512 @ d4096", and "tg@d32768" (one-token micro-batches at a depth: decode there).
_TEST = re.compile(r"^(pp|tg)(\d*)(?:\s*@\s*d(\d+))?$")


def llamacpp_rows(catalog: Catalog) -> tuple[list[Row], int]:
    """llama-bench rows on each vendor's native backend; returns (rows, skipped)."""
    resolver = Resolver(catalog)
    doc = tomllib.loads((DATA_DIR / "llamacpp.toml").read_text())
    rows: list[Row] = []
    skipped = 0
    for m in doc["measurement"]:
        if is_flagged(m):
            skipped += 1
            continue
        test = _TEST.match(m["test"].replace(" ", "").replace("@d", " @ d"))
        if test and test.group(1) == "pp" and not test.group(2):
            test = None
        backend = BACKENDS.get(m.get("backend", ""))
        gpu = _gpu(resolver, catalog, m["gpu"])
        model = _model(resolver, catalog, m["model"])
        quant_id = QUANT_NAMES.get(m["quant"].lower())
        if not (test and backend and gpu and model and quant_id):
            skipped += 1
            continue
        if {"nvidia": "cuda", "amd": "rocm", "apple": "metal", "intel": "sycl"}[gpu.vendor] != backend:
            skipped += 1
            continue
        kind: Kind = "decode" if test.group(1) == "tg" else "prefill"
        rows.append(Row(
            kind=kind, gpu=gpu, gpus=int(m.get("gpu_count", 1)), model=model, quant=catalog.quant(quant_id),
            tokens=int(test.group(2) or 1), depth=int(test.group(3) or 0), measured_tps=float(m["tps"]),
            source=m["source"], date=str(m.get("date", "")),
            holdout=_held_out(m["gpu"], m["model"], m["quant"], m["test"], m.get("gpu_count", 1), m["source"]),
        ))
    return rows, skipped


SERVER_QUANTS: dict[str, str] = {
    "bf16": "bf16", "fp16": "bf16", "float16": "bf16", "bfloat16": "bf16", "fp8": "fp8", "awq-int4": "awq-int4",
    "awq": "awq-int4", "gptq-int4": "gptq-int4", "gptq": "gptq-int4", "mlx-4bit": "mlx-4bit", "4bit": "mlx-4bit",
    "mlx-8bit": "mlx-8bit", "8bit": "mlx-8bit",
}
SERVER_ENGINES: dict[str, Engine] = {"vllm": "vllm", "sglang": "vllm", "mlx": "mlx"}


def server_rows(catalog: Catalog) -> tuple[list[Row], int]:
    """Single-stream vLLM/SGLang and MLX measurements (SGLang's kernels and scheduling are close enough to
    vLLM's at batch 1 to share its constants). Decode from tokens/s or time per output token; prefill from
    TTFT over the prompt."""
    resolver = Resolver(catalog)
    rows: list[Row] = []
    skipped = 0
    for name in ("vllm_single.toml", "mlx.toml"):
        path = DATA_DIR / name
        if not path.exists():
            continue
        for m in tomllib.loads(path.read_text())["measurement"]:
            engine = SERVER_ENGINES.get(str(m.get("engine", "")).lower())
            gpu = _gpu(resolver, catalog, str(m.get("gpu", "")))
            model = _model(resolver, catalog, str(m.get("model_hf") or m.get("model", "")))
            if model is None:
                model = _model(resolver, catalog, str(m.get("model", "")))
            quant_id = SERVER_QUANTS.get(str(m.get("quant", "")).lower())
            batch = str(m.get("batch", "1")).split()[0]
            if not (engine and gpu and model and quant_id) or batch != "1" or is_flagged(m):
                skipped += 1
                continue
            quant = catalog.quant(quant_id)
            prompt = int(m.get("input_tokens") or 0)
            output = int(m.get("output_tokens") or 0)
            gpus = int(m.get("tp") or m.get("gpu_count") or 1)
            source, date = str(m["source"]), str(m.get("date", ""))
            identity = (m.get("gpu"), m.get("model"), m.get("quant"), prompt, output, m["source"])
            tps = m.get("decode_tps") or (1000 / float(m["tpot_ms"]) if m.get("tpot_ms") else None)
            if tps:
                rows.append(Row(kind="decode", gpu=gpu, gpus=gpus, model=model, quant=quant, tokens=max(output, 2),
                                depth=prompt, measured_tps=float(tps), source=source, date=date, engine=engine,
                                holdout=_held_out("decode", *identity)))
            ttft = m.get("ttft_s") or (float(m["ttft_ms"]) / 1000 if m.get("ttft_ms") else None)
            prefill_tps = m.get("prompt_tps") or (prompt / float(ttft) if ttft and prompt else None)
            if prefill_tps and prompt:
                rows.append(Row(kind="prefill", gpu=gpu, gpus=gpus, model=model, quant=quant, tokens=prompt, depth=0,
                                measured_tps=float(prefill_tps), source=source, date=date, engine=engine,
                                holdout=_held_out("prefill", *identity)))
    return rows, skipped
