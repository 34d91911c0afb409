"""/gpu and `rigcheck gpu` answer the same question; their fine-tuning and capability lines must agree."""

from __future__ import annotations

import json

import pytest

from bot import cli
from bot.render.replies import gpu_reply
from bot.requests import GpuRequest
from bot.service import Service

SVC = Service()


@pytest.mark.parametrize("gpu", ["t4", "rtx 4090", "a100 40gb", "m2 max"])
def test_gpu_reply_names_what_the_cli_card_names(gpu: str, capsys: pytest.CaptureFixture[str]) -> None:
    assert cli.main(["gpu", "--gpu", gpu, "--json"]) == 0
    card = json.loads(capsys.readouterr().out)
    fields = {f["name"]: f["value"] for f in gpu_reply(SVC, GpuRequest.of(gpu=gpu), locale="en-US").embeds[0]["fields"]}
    finetune = next(v for k, v in fields.items() if k.startswith("Fine-tuning"))
    lines = dict(line.split(": ", 1) for line in finetune.splitlines())
    for method, label in (("qlora", "**QLoRA**"), ("lora", "**LoRA**"), ("full", "**Full**")):
        best = card["finetune"][method]
        if best is not None:
            assert lines[label] == best["name"], (method, lines)
    largest = next(v for k, v in fields.items() if k.startswith("Largest model"))
    for level in ("int4", "int8", "fp16"):
        model = card["capability"][level]["model"]
        if model is not None:
            assert f"largest in catalog: {model['name']} " in largest, (level, largest)


@pytest.mark.parametrize(("gpu", "label", "zh"), [
    ("rx 580", "FP16 (vector units)", "FP16 算力（向量单元）"),  # GCN 4: no matrix units
    ("rx 6800", "FP16 (vector units)", "FP16 算力（向量单元）"),  # RDNA 2
    ("p100 pcie", "FP16 (vector units)", "FP16 算力（向量单元）"),  # Pascal: no tensor cores
    ("rtx 4090", "Tensor FP16", "FP16 张量算力"),
    ("rx 7900 xtx", "Tensor FP16", "FP16 张量算力"),  # RDNA 3's WMMA
])
def test_the_fp16_figure_is_called_tensor_only_where_there_are_matrix_units(gpu: str, label: str, zh: str) -> None:
    names = [f["name"] for f in gpu_reply(SVC, GpuRequest.of(gpu=gpu), locale="en-US").embeds[0]["fields"]]
    assert label in names and ("Tensor FP16" in names) == (label == "Tensor FP16"), names
    assert zh in [f["name"] for f in gpu_reply(SVC, GpuRequest.of(gpu=gpu), locale="zh-CN").embeds[0]["fields"]]


def test_the_matrix_unit_rule_agrees_with_the_catalogs_notes() -> None:
    import re

    from estimator.capability import has_matrix_units

    # The catalog marks a listed FP16 rate that is a vector rate in the entry's notes ("no matrix units", "No
    # Tensor Cores"); the rule that labels /gpu's figure must agree with every such mark.
    marked = re.compile(r"no (matrix (units|cores)|tensor cores)", re.IGNORECASE)
    for gpu in SVC.catalog.gpus:
        if gpu.fp16_tflops and marked.search(gpu.notes):
            assert not has_matrix_units(gpu), gpu.name
        if gpu.vendor == "nvidia" and gpu.architecture.startswith(("Turing", "Ampere", "Hopper", "Blackwell")):
            assert has_matrix_units(gpu), gpu.name


@pytest.mark.parametrize(("gpu", "en", "zh"), [
    ("dgx spark", "what Linux gives CUDA", "Linux 交给 CUDA"),
    ("strix halo 128gb", "GTT limit raised (ttm.pages_limit) to all but 8 GiB", "GTT 上限已调高"),
    ("m2 max 64gb", "macOS's default GPU share", "macOS 默认分配给 GPU"),
])
def test_usable_memory_names_what_sets_a_unified_share(gpu: str, en: str, zh: str) -> None:
    # A DGX Spark or a Strix Halo was said to get "macOS's default GPU share of unified memory".
    from bot.render.replies import fit_reply
    from bot.requests import FitRequest

    apple = gpu.startswith("m2")
    for locale, said in (("en-US", en), ("zh-CN", zh)):
        card = gpu_reply(SVC, GpuRequest.of(gpu=gpu), locale=locale).embeds[0]["description"]
        fitted = fit_reply(SVC, FitRequest.of(gpu=gpu, model="qwen3-8b", quant="q4_k_m"),
                           locale=locale).embeds[0]["description"]
        for text in (card, fitted):
            assert said in text and ("macOS" in text) == apple, text


def test_a_count_typed_with_the_gpu_is_the_card_answered_for(capsys: pytest.CaptureFixture[str]) -> None:
    """`8x h100 nvl` is eight cards, in /gpu and `rigcheck gpu` alike (both once answered for one)."""
    one = gpu_reply(SVC, GpuRequest.of(gpu="nvidia-h100-nvl"), locale="en-US").embeds[0]
    eight = gpu_reply(SVC, GpuRequest.of(gpu="8x nvidia-h100-nvl"), locale="en-US").embeds[0]
    assert (one["title"], eight["title"]) == ("NVIDIA H100 NVL 94GB", "8× NVIDIA H100 NVL 94GB")
    assert "Usable for models: 8 × " in eight["description"] and " × " not in one["description"]
    largest = {e["title"]: next(f["value"] for f in e["fields"] if f["name"].startswith("Largest model"))
               for e in (one, eight)}
    assert largest["NVIDIA H100 NVL 94GB"] != largest["8× NVIDIA H100 NVL 94GB"]
    zh = gpu_reply(SVC, GpuRequest.of(gpu="8x h100 nvl"), locale="zh-CN").embeds[0]
    assert zh["title"] == "8× NVIDIA H100 NVL 94GB" and "8 × " in zh["description"]
    assert cli.main(["gpu", "--gpu", "8x h100 nvl", "--json"]) == 0
    card = json.loads(capsys.readouterr().out)
    assert (card["gpu"]["id"], card["gpus"]) == ("nvidia-h100-nvl", 8)
    assert card["capability"]["int4"]["model"]["name"] in largest["8× NVIDIA H100 NVL 94GB"]
    assert cli.main(["gpu", "--gpu", "8x h100 nvl"]) == 0
    assert capsys.readouterr().out.startswith("8× NVIDIA H100 NVL 94GB: 94.0 GB HBM3")


def test_the_recommendation_is_for_the_context_asked() -> None:
    from estimator.advice import gpu_card
    from estimator.memory import memory
    from estimator.query import Query

    fields = {f["name"]: f["value"] for f in
              gpu_reply(SVC, GpuRequest.of(gpu="rtx 4090", ctx="32k"), locale="en-US").embeds[0]["fields"]}
    rec = fields["Recommendation"]
    assert "at Q8 (32k context)" in rec and "at Q4 with 128k" in rec
    card = gpu_card(SVC.catalog, SVC.gpu("rtx 4090"), ctx=32768)
    comfortable = card.recommendation.comfortable_high_precision
    assert comfortable.model is not None
    q = Query(gpu=SVC.gpu("rtx 4090"), model=comfortable.model, quant=comfortable.quant, ctx=32768)
    assert memory(q).verdict == "fits"
