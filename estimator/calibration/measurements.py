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
from typing import Any, Literal

from catalog.resolve import BPW_TEMPLATE, NotFound, Resolver, bpw_variant
from catalog.schema import GPU, Model, QuantFormat
from catalog.store import Catalog
from estimator.query import Engine, backend_of

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
    "m1 7-core gpu 8gb": "apple-m1-7c-8gb",
    "m1 (7-core gpu, 68 gb/s)": "apple-m1-7c-8gb",
    "m1 (8-core gpu, 68 gb/s)": "apple-m1-8gb",
    "m1 ultra 64-core gpu 128gb": "apple-m1-ultra-128gb",
    # The Apple Silicon table of llama.cpp discussion #4167 names chip, GPU cores and bandwidth, not memory: each
    # maps to an entry of that chip (the catalog describes the configuration with the most GPU cores).
    "m1 pro (16-core gpu, 200 gb/s)": "apple-m1-pro-16gb",
    "m1 max (32-core gpu, 400 gb/s)": "apple-m1-max-64gb",
    "m1 ultra (64-core gpu, 800 gb/s)": "apple-m1-ultra-128gb",
    "m2 (10-core gpu, 100 gb/s)": "apple-m2-16gb",
    "m2 pro (19-core gpu, 200 gb/s)": "apple-m2-pro-32gb",
    "m2 max (38-core gpu, 400 gb/s)": "apple-m2-max-64gb",
    "m2 ultra (76-core gpu, 800 gb/s)": "apple-m2-ultra-192gb",
    "m3 (10-core gpu, 100 gb/s)": "apple-m3-16gb",
    "m3 pro (18-core gpu, 150 gb/s)": "apple-m3-pro-36gb",
    "m3 max (30-core gpu, 300 gb/s)": "apple-m3-max-36gb",
    "m3 max (40-core gpu, 400 gb/s)": "apple-m3-max-64gb",
    "m3 ultra (80-core gpu, 800 gb/s)": "apple-m3-ultra-256gb",
    "m3 ultra (32-core cpu, 80-core gpu; mac studio cluster node)": "apple-m3-ultra-512gb",
    "m3 ultra (512 gb, mac studio; 24 threads -> 32-core cpu / 80-core gpu)": "apple-m3-ultra-512gb",
    "mac studio (m3 ultra 512gb)": "apple-m3-ultra-512gb",
    "m4 (10-core gpu, 120 gb/s)": "apple-m4-16gb",
    "m4 pro (20-core gpu, 273 gb/s)": "apple-m4-pro-48gb",
    "m4 max (32-core gpu, 410 gb/s)": "apple-m4-max-36gb",
    "m4 max (40-core gpu, 546 gb/s)": "apple-m4-max-128gb",
    # Speed rows that name a chip but not its memory: every memory option of these chips has the same GPU
    # and bandwidth, so any one entry stands for the chip.
    "m2 ultra": "apple-m2-ultra-192gb",
    "m1 max": "apple-m1-max-64gb",
    "m1 ultra": "apple-m1-ultra-128gb",
    'm3 pro 18gb (macbook pro 14")': "apple-m3-pro-18gb",
    "apple m5 (memory not printed)": "apple-m5-16gb",
    # The catalog's M2 Max entries cover both GPU bins (30 and 38 cores, 400 GB/s each); 30 cores came with 32 GB.
    "m2 max (30-core gpu)": "apple-m2-max-32gb",
    "apple m4 (mac mini, 10-core, 16gb)": "apple-m4-16gb",
    # Both RX 9060 XT memory options have 32 CUs on a 128-bit 20 Gbps bus (320 GB/s); only capacity differs.
    "rx 9060 xt": "amd-rx-9060-xt-16gb",
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
    # LLaMA 1 13B has Llama 2 13B's shapes (the LLaMA paper's table 2: 40 layers, dim 5120, 40 heads; the
    # huggyllama/llama-13b config: FFN 13824, vocabulary 32000).
    "llama 13b": "llama-2-13b",
    # llama-bench's own label with the type left in, on rows that print 3.56 GiB / 6.74 B (Q4_0) or 12.55 GiB / 6.74 B
    # (F16): LLaMA 1 / Llama 2 7B shapes; Mistral 7B, also labelled "llama 7B", has 7.24 B parameters.
    "llama 7b q4_0": "llama-2-7b",
    "llama 7b f16": "llama-2-7b",
}
# Spellings of GGUF types that are not their catalog id; any other catalog id (q4_k_s, iq4_xs, ...) matches as is.
# "Q4_0 (QAT)" is not one of them: Google's QAT Q4_0 GGUFs keep the token embedding table in F16, not Q6_K
# (gemma-3-1b: a 1 GB file against 720 MB for a llama.cpp Q4_0; huggingface.co/stduhpf/
# google-gemma-3-1b-it-qat-q4_0-gguf-small, README), and a tied table is read on every decoded token.
QUANT_NAMES: dict[str, str] = {"bf16": "bf16", "fp16": "f16", "f16": "f16", "mxfp4_moe": "mxfp4"}
# The quantization behind an Ollama library tag that rows name as "Ollama default for <tag>", where Ollama's own
# metadata documents it (`ollama list` / `/api/tags` / `ollama show`: digest and quantization_level) and the tag
# has kept that digest since before the rows' dates. Tags whose quant changed over time (llama3.1:8b went from
# Q4_0, digest 62757c860e01, to Q4_K_M, 46e0c10c039e) or was not found stay unmapped.
#   deepseek-r1:14b  ea35dfe18182, Q4_K_M, listed 2025-01-25 and through 2026 (/api/tags outputs in public repos)
#   deepseek-r1:7b   0a8c26691023, Q4_K_M (/api/tags output, 2025-03-19)
#   llama3.2:3b      a80c4f17acd5, Q4_K_M from 2024-09-26 (a day after release) through 2026; the same digest is
#                    listed as llama3.2:3b-instruct-q4_K_M
#   llama3.2:1b      baf6a787fdff, Q8_0 from 2024-09-26 through 2026 (1.3 GB, 8.50 BPW as loaded)
#   qwen2.5:7b       845dbda0ea48, Q4_K_M; the same digest is listed as qwen2.5:7b-instruct-q4_K_M (early 2025)
OLLAMA_DEFAULTS: dict[str, str] = {
    "deepseek-r1:14b": "q4_k_m", "deepseek-r1:7b": "q4_k_m", "llama3.2:3b": "q4_k_m", "llama3.2:1b": "q8_0",
    "qwen2.5:7b": "q4_k_m",
}
_OLLAMA_DEFAULT = re.compile(r"^ollama default for (\S+)")
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
    flash_attn: bool | None = None  # None: the engine's default at that build
    ubatch: int | None = None  # prompt tokens per pass where the row sets it (llama-bench -ub)
    build: str = ""
    # ROCm rows where the source states them: rocBLAS routed through hipBLASLt (ROCBLAS_USE_HIPBLASLT=1), and a
    # build with rocWMMA flash attention (GGML_HIP_ROCWMMA_FATTN). Either can change prefill by a multiple on RDNA.
    hipblaslt: bool | None = None
    rocwmma: bool | None = None
    sycl_f16: bool | None = None  # GGML_SYCL_F16 as the row's build had it, where the source says
    sycl_reorder: bool | None = None  # a SYCL build's decode reorder kernel for the row's type, where the source says
    mmq: bool | None = None  # a dense model's prompt matmuls on MMQ (or BLAS) where a PR branch changed the choice
    fa_matrix: bool | None = None  # prompt flash attention on matrix units where a PR branch changed the kernel
    # Server rows whose launch command is known: False for vLLM --enforce-eager / SGLang --disable-cuda-graph, whose
    # decode pays a kernel launch per op; None where the command was not printed.
    cuda_graphs: bool | None = None
    file_gib: float | None = None  # the GGUF's size as llama-bench printed it, where the source gives it
    # A decode row read off a prompt test run one token per micro-batch (llama-bench ppN at -ub 1, `prompt_test` in
    # the data): each step runs every layer as decode does, but the batch asks for logits of its last token only, so
    # the output layer runs once, not once per token, and no step waits for the host.
    output_every_token: bool = True
    # A prompt timed on a fresh process's first batched pass, one-time setup included (the data's `cold_prompt`).
    cold_prompt: bool = False

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


_QUANT_SUFFIX = re.compile(r"-(awq|gptq|fp8|int4|int8|awq-int4|gptq-int4)(-int4)?$", re.IGNORECASE)
_BUILD_SUFFIX = re.compile(r"(-mlx)?([- ](4|6|8)-?bit|-bf16|-fp16)?(-mlx)?$", re.IGNORECASE)
# A printed name's trailing remark ("Llama-3.3-70B-Instruct (FP8 quantized)", "Phi-3.5-MoE (4bit)"): the row's own
# quant field says the format, so the remark is not part of the model's name.
_REMARK = re.compile(r"\s*\(.*\)$")


def _model(resolver: Resolver, catalog: Catalog, name: str) -> Model | None:
    name = _REMARK.sub("", name.strip())
    # "mlx-community/Llama-3.3-70B-Instruct-4bit" is a build of meta-llama/Llama-3.3-70B-Instruct.
    name = _BUILD_SUFFIX.sub("", name.split("/")[-1] if "mlx-community/" in name else name)
    # "Qwen2.5-7B-Instruct-AWQ" is a quantized build of Qwen2.5-7B-Instruct; the row's quant says which.
    name = _QUANT_SUFFIX.sub("", name)
    key = name.lower()
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


LLAMACPP_ENGINES: dict[str, Engine] = {"llama.cpp": "llama.cpp", "llama-bench": "llama.cpp", "ollama": "ollama",
                                        "lm studio": "lm studio", "lmstudio": "lm studio"}


def _quant(catalog: Catalog, name: str) -> QuantFormat | None:
    key = name.strip().lower()
    default = _OLLAMA_DEFAULT.match(key)
    if default:
        key = OLLAMA_DEFAULTS.get(default.group(1), key)
    try:
        return catalog.quant(QUANT_NAMES.get(key, key))
    except KeyError:
        return None


def unplaced_entries(catalog: Catalog, paths: list[Path]) -> list[str]:
    """The entries of `paths` the catalog cannot place, each with what it lacks (GPU, model or format), for a
    report on rows collected outside the calibration set."""
    resolver = Resolver(catalog)
    out = []
    for path in paths:
        for m in tomllib.loads(path.read_text()).get("measurement", []):
            missing = [what for what, ok in (
                ("gpu", _gpu(resolver, catalog, str(m.get("gpu", ""))) is not None),
                ("model", _model(resolver, catalog, str(m.get("model", ""))) is not None
                 or _model(resolver, catalog, str(m.get("model_hf", ""))) is not None),
                ("quant", _quant(catalog, str(m.get("quant", ""))) is not None
                 or str(m.get("engine", "")).strip().lower() not in LLAMACPP_ENGINES),
            ) if not ok]
            if missing:
                out.append(f"{path.name}: {m.get('gpu')} / {m.get('model')} / {m.get('quant')}: no catalog "
                           + ", ".join(missing))
    return out


def data_files(*patterns: str) -> list[Path]:
    """The data files matching each pattern in turn, in file-name order within one."""
    return [path for pattern in patterns for path in sorted(DATA_DIR.glob(pattern))]


def _measurements(paths: list[Path]) -> list[dict[str, Any]]:
    """Every [[measurement]] of `paths`, in order."""
    out: list[dict[str, Any]] = []
    for path in paths:
        out += tomllib.loads(path.read_text()).get("measurement", [])
    return out


def _flag(value: object) -> bool | None:
    if value is None or value == "":
        return None
    if isinstance(value, bool):
        return value
    return str(value).strip().lower() in ("1", "true", "on", "yes")


# llama.cpp gained flash attention with ggml-org/llama.cpp#5021 (merged 2024-04-30): a build dated before it ran the
# unfused attention whatever its source left unsaid.
LLAMACPP_FLASH_ATTN_SINCE = "2024-04-30"


def _build_flash_attn(stated: bool | None, date: str) -> bool | None:
    """A row's flash attention: as stated, else off for a build that predates the kernel, else unknown."""
    if stated is None and date and date < LLAMACPP_FLASH_ATTN_SINCE:
        return False
    return stated


def llamacpp_rows(
    catalog: Catalog, pattern: str = "llamacpp*.toml", paths: list[Path] | None = None,
) -> tuple[list[Row], int]:
    """llama-bench (and Ollama / LM Studio) rows on each vendor's native backend, from every data file
    matching `pattern` (or from `paths`); returns (rows, skipped)."""
    resolver = Resolver(catalog)
    rows: list[Row] = []
    skipped = 0
    for m in _measurements(data_files(pattern) if paths is None else paths):
        if is_flagged(m):
            skipped += 1
            continue
        test = _TEST.match(str(m.get("test", "")).replace(" ", "").replace("@d", " @ d"))
        if test and test.group(1) == "pp" and not test.group(2):
            test = None
        backend = BACKENDS.get(str(m.get("backend", "")))
        gpu = _gpu(resolver, catalog, str(m.get("gpu", "")))
        model = _model(resolver, catalog, str(m.get("model", "")))
        if model is None and m.get("model_hf"):
            model = _model(resolver, catalog, str(m["model_hf"]))
        quant = _quant(catalog, str(m.get("quant", "")))
        engine = LLAMACPP_ENGINES.get(str(m.get("engine", "llama.cpp")).strip().lower())
        if not (test and backend and gpu and model and quant and engine and m.get("tps")):
            skipped += 1
            continue
        if backend_of(gpu) != backend:
            skipped += 1
            continue
        kind: Kind = "decode" if test.group(1) == "tg" else "prefill"
        ubatch = m.get("ubatch")
        date = str(m.get("date", ""))
        rows.append(Row(
            kind=kind, gpu=gpu, gpus=int(str(m.get("gpu_count", 1))), model=model, quant=quant,
            tokens=int(test.group(2) or 1), depth=int(test.group(3) or 0), measured_tps=float(str(m["tps"])),
            source=str(m["source"]), date=date, engine=engine,
            flash_attn=_build_flash_attn(_flag(m.get("flash_attn")), date),
            ubatch=int(str(ubatch)) if ubatch else None, build=str(m.get("build", "")),
            hipblaslt=_flag(m.get("hipblaslt")), rocwmma=_flag(m.get("rocwmma")), sycl_f16=_flag(m.get("sycl_f16")),
            sycl_reorder=_flag(m.get("sycl_reorder")), mmq=_flag(m.get("mmq")), fa_matrix=_flag(m.get("fa_matrix")),
            cuda_graphs=_flag(m.get("cuda_graphs")),
            file_gib=float(str(m["model_size_gib"])) if m.get("model_size_gib") else None,
            output_every_token=_flag(m.get("prompt_test")) is not True,
            cold_prompt=kind == "prefill" and _flag(m.get("cold_prompt")) is True,
            holdout=_held_out(m["gpu"], m["model"], m["quant"], m["test"], m.get("gpu_count", 1), m["source"]),
        ))
    return rows, skipped


SERVER_QUANTS: dict[str, str] = {
    "bf16": "bf16", "fp16": "bf16", "float16": "bf16", "bfloat16": "bf16", "fp8": "fp8", "awq-int4": "awq-int4",
    "awq": "awq-int4", "gptq-int4": "gptq-int4", "gptq": "gptq-int4", "mlx-4bit": "mlx-4bit", "4bit": "mlx-4bit",
    "mlx-8bit": "mlx-8bit", "8bit": "mlx-8bit", "nvfp4": "nvfp4", "mxfp4": "mxfp4",
}
SERVER_ENGINES: dict[str, Engine] = {
    "vllm": "vllm", "sglang": "sglang", "mlx": "mlx", "mlx-lm": "mlx", "exllamav2": "exllamav2", "exl2": "exllamav2",
    "exllamav3": "exllamav3", "exl3": "exllamav3", "trt-llm": "trt-llm", "tensorrt-llm": "trt-llm",
}


def _server_quant(catalog: Catalog, m: dict[str, Any]) -> QuantFormat | None:
    name = str(m.get("quant", "")).strip().lower()
    bpw = m.get("bpw")
    base = name.split("-")[0].split(" ")[0]
    # EXL2/EXL3 rows name their average bits per weight: the catalog's entry of that family at that rate.
    if base in BPW_TEMPLATE and isinstance(bpw, int | float):
        return bpw_variant(catalog.quant(BPW_TEMPLATE[base]), base, float(bpw))
    quant_id = SERVER_QUANTS.get(name)
    if quant_id is None:
        return None
    try:
        return catalog.quant(quant_id)
    except KeyError:
        return None


def server_rows(catalog: Catalog, paths: list[Path] | None = None) -> tuple[list[Row], int]:
    """Single-stream vLLM / SGLang / TensorRT-LLM / ExLlama / MLX measurements from every `vllm_single*.toml`,
    `mlx*.toml` and `engines_*.toml` (or from `paths`). Decode from tokens/s or time per output token; prefill from
    TTFT over the prompt."""
    resolver = Resolver(catalog)
    rows: list[Row] = []
    skipped = 0
    if paths is None:
        paths = data_files("vllm_single*.toml", "mlx*.toml", "engines_*.toml")
    for m in _measurements(paths):
        engine = SERVER_ENGINES.get(str(m.get("engine", "")).strip().lower())
        gpu = _gpu(resolver, catalog, str(m.get("gpu", "")))
        model = _model(resolver, catalog, str(m.get("model_hf") or m.get("model", "")))
        if model is None:
            model = _model(resolver, catalog, str(m.get("model", "")))
        quant = _server_quant(catalog, m)
        batch = str(m.get("batch", "1")).split()[0]
        if not (engine and gpu and model and quant) or batch != "1" or is_flagged(m):
            skipped += 1
            continue
        prompt = int(m.get("input_tokens") or 0)
        output = int(m.get("output_tokens") or 0)
        gpus = int(m.get("tp") or m.get("gpu_count") or 1)
        source, date = str(m["source"]), str(m.get("date", ""))
        identity = (m.get("gpu"), m.get("model"), m.get("quant"), prompt, output, m["source"])
        tps = m.get("decode_tps") or (1000 / float(m["tpot_ms"]) if m.get("tpot_ms") else None)
        graphs = _flag(m.get("cuda_graphs"))
        if tps:
            rows.append(Row(kind="decode", gpu=gpu, gpus=gpus, model=model, quant=quant, tokens=max(output, 2),
                            depth=prompt, measured_tps=float(tps), source=source, date=date, engine=engine,
                            cuda_graphs=graphs, holdout=_held_out("decode", *identity)))
        ttft = m.get("ttft_s") or (float(m["ttft_ms"]) / 1000 if m.get("ttft_ms") else None)
        prefill_tps = m.get("prompt_tps") or (prompt / float(ttft) if ttft and prompt else None)
        if prefill_tps and prompt:
            rows.append(Row(kind="prefill", gpu=gpu, gpus=gpus, model=model, quant=quant, tokens=prompt, depth=0,
                            measured_tps=float(prefill_tps), source=source, date=date, engine=engine,
                            cuda_graphs=graphs, holdout=_held_out("prefill", *identity)))
    return rows, skipped
