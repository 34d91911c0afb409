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
