"""Measure the GPU at hand and write calibration rows: achieved memory bandwidth, and Hugging Face transformers
bf16 decode / prefill of a few model shapes built from the catalog's configs with random weights (nothing is
downloaded).

    python benchmarks/measure_gpu.py                                  # default shapes, rows to stdout
    python benchmarks/measure_gpu.py --models llama-3.2-1b qwen3-8b --out measured.toml
    python benchmarks/measure_gpu.py --device cpu --models tiny       # try the script without a GPU

Needs PyTorch and transformers (not dependencies of rigcheck). Each row names the GPU as the driver prints it,
the date, and the torch / transformers / CUDA versions as its source. The bandwidth row is in the
`catalog/data/achieved_bandwidth*.toml` schema, the speed rows in the `estimator/calibration/data/engines_*.toml`
one (engine "transformers": eager PyTorch, recorded for reference; the estimator does not model that engine).
"""

from __future__ import annotations

import argparse
import datetime as dt
import sys
import time
from dataclasses import dataclass, field
from pathlib import Path
from typing import Any

sys.path.insert(0, str(Path(__file__).resolve().parents[1]))

DEFAULT_MODELS = ("llama-3.2-1b", "llama-3.1-8b", "qwen3-8b")
# A shape small enough for a CPU: four layers of 256 wide, for checking the script itself.
TINY = {"layers": 4, "hidden_size": 256, "attention_heads": 4, "kv_heads": 2, "head_dim": 64,
        "intermediate_size": 512, "vocab_size": 1024}
BANDWIDTH_BUFFER_BYTES = 2 * 2**30
REPEATS = 5


@dataclass
class Measured:
    """One row: a bandwidth figure (achieved_gbs) or a decode/prefill run (decode_tps / prompt_tps)."""

    gpu: str
    date: str
    source: str
    fields: dict[str, Any] = field(default_factory=dict)


def parse_args(argv: list[str] | None = None) -> argparse.Namespace:
    p = argparse.ArgumentParser(description=__doc__, formatter_class=argparse.RawDescriptionHelpFormatter)
    p.add_argument("--models", nargs="+", default=list(DEFAULT_MODELS),
                   help="catalog model ids (dense, Llama/Qwen-style) or 'tiny'")
    p.add_argument("--prompt", type=int, default=512, help="prompt tokens for the prefill run")
    p.add_argument("--generate", type=int, default=128, help="tokens generated for the decode run")
    p.add_argument("--device", default="cuda", help="torch device (cuda, cuda:1, cpu)")
    p.add_argument("--bandwidth-gib", type=float, default=BANDWIDTH_BUFFER_BYTES / 2**30,
                   help="size of the copied buffer for the bandwidth test, GiB")
    p.add_argument("--out", type=Path, help="write the TOML rows here (default: stdout)")
    args = p.parse_args(argv)
    if args.prompt < 1 or args.generate < 2:
        p.error("--prompt must be ≥ 1 and --generate ≥ 2")
    return args


def _toml_value(v: Any) -> str:
    if isinstance(v, bool):
        return "true" if v else "false"
    if isinstance(v, int | float):
        return repr(round(v, 3) if isinstance(v, float) else v)
    text = str(v).replace("\\", "\\\\").replace('"', '\\"')
    return f'"{text}"'


def render_rows(rows: list[Measured]) -> str:
    out = ["# Written by benchmarks/measure_gpu.py; random-weight models built from catalog configs.", ""]
    for r in rows:
        out.append("[[measurement]]")
        for key, value in {"gpu": r.gpu, **r.fields, "date": r.date, "source": r.source}.items():
            out.append(f"{key} = {_toml_value(value)}")
        out.append("")
    return "\n".join(out)


def shape_of(model_id: str) -> dict[str, int]:
    if model_id == "tiny":
        return dict(TINY)
    from catalog import load_catalog

    m = load_catalog().model(model_id)
    if m.moe is not None or m.intermediate_size is None:
        raise SystemExit(f"{model_id}: only dense models are built by this script")
    return {"layers": m.layers, "hidden_size": m.hidden_size, "attention_heads": m.attention_heads,
            "kv_heads": m.kv_heads, "head_dim": m.head_dim, "intermediate_size": m.intermediate_size,
            "vocab_size": m.vocab_size}


def versions() -> str:  # pragma: no cover - needs torch
    import torch
    import transformers

    cuda = torch.version.cuda or "none"
    return f"torch {torch.__version__}, transformers {transformers.__version__}, CUDA {cuda}"


def gpu_name(device: str) -> str:  # pragma: no cover - needs torch
    import torch

    if device.startswith("cuda"):
        return str(torch.cuda.get_device_name(torch.device(device)))
    return "cpu"


def _sync(device: str) -> None:  # pragma: no cover - needs torch
    import torch

    if device.startswith("cuda"):
        torch.cuda.synchronize(torch.device(device))


def measure_bandwidth_gbs(device: str, nbytes: int) -> float:  # pragma: no cover - needs torch
    """Device-local copy of a large buffer: bytes read + bytes written over the best of REPEATS runs."""
    import torch

    src = torch.empty(nbytes // 2, dtype=torch.bfloat16, device=device).fill_(1)
    dst = torch.empty_like(src)
    dst.copy_(src)
    _sync(device)
    best = float("inf")
    for _ in range(REPEATS):
        t0 = time.perf_counter()
        dst.copy_(src)
        _sync(device)
        best = min(best, time.perf_counter() - t0)
    return 2 * src.numel() * src.element_size() / best / 1e9


def measure_model(device: str, shape: dict[str, int], prompt: int, generate: int
                  ) -> tuple[float, float]:  # pragma: no cover - needs torch
    """(prefill tokens/s, decode tokens/s) of a random-weight Llama-style model in bf16."""
    import torch
    from transformers import LlamaConfig, LlamaForCausalLM

    config = LlamaConfig(
        hidden_size=shape["hidden_size"], intermediate_size=shape["intermediate_size"],
        num_hidden_layers=shape["layers"], num_attention_heads=shape["attention_heads"],
        num_key_value_heads=shape["kv_heads"], head_dim=shape["head_dim"], vocab_size=shape["vocab_size"],
        max_position_embeddings=max(4096, prompt + generate + 8),
    )
    dtype = torch.bfloat16
    with torch.device(device):
        model = LlamaForCausalLM(config).to(dtype).eval()
    ids = torch.randint(0, shape["vocab_size"], (1, prompt), device=device)
    with torch.inference_mode():
        model(ids[:, : min(prompt, 16)], use_cache=True)  # warm-up: kernels, allocator
        _sync(device)
        t0 = time.perf_counter()
        out = model(ids, use_cache=True)
        _sync(device)
        prefill_s = time.perf_counter() - t0
        past = out.past_key_values
        token = out.logits[:, -1:].argmax(-1)
        t0 = time.perf_counter()
        for _ in range(generate):
            out = model(token, past_key_values=past, use_cache=True)
            past = out.past_key_values
            token = out.logits[:, -1:].argmax(-1)
        _sync(device)
        decode_s = time.perf_counter() - t0
    del model
    return prompt / prefill_s, generate / decode_s


def main(argv: list[str] | None = None) -> int:  # pragma: no cover - needs torch
    args = parse_args(argv)
    try:
        import torch  # noqa: F401
        import transformers  # noqa: F401
    except ImportError:
        print("measure_gpu.py needs PyTorch and transformers (pip install torch transformers)", file=sys.stderr)
        return 2
    today = dt.datetime.now(dt.UTC).date().isoformat()
    name = gpu_name(args.device)
    source = f"benchmarks/measure_gpu.py on {name} ({versions()})"
    rows = [Measured(name, today, source, {
        "achieved_gbs": measure_bandwidth_gbs(args.device, int(args.bandwidth_gib * 2**30)),
        "method": "torch copy_ device-local (bytes read + written), best of 5"})]
    for model_id in args.models:
        prefill_tps, decode_tps = measure_model(args.device, shape_of(model_id), args.prompt, args.generate)
        rows.append(Measured(name, today, source, {
            "engine": "transformers", "gpu_count": 1, "model": model_id, "quant": "bf16", "batch": 1,
            "input_tokens": args.prompt, "output_tokens": args.generate, "prompt_tps": prefill_tps,
            "decode_tps": decode_tps, "note": "random weights from the catalog config; eager attention defaults"}))
        print(f"{model_id}: prefill {prefill_tps:.0f} tok/s, decode {decode_tps:.1f} tok/s", file=sys.stderr)
    text = render_rows(rows)
    if args.out:
        args.out.write_text(text)
    else:
        print(text)
    return 0


if __name__ == "__main__":
    sys.exit(main())
