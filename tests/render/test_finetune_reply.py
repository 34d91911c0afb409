"""/finetune's embed: the paged-optimizer note only on runs that fit with it."""

from __future__ import annotations

import pytest

from bot.render.replies import finetune_reply
from bot.requests import FinetuneRequest
from bot.service import Service


@pytest.fixture(scope="module")
def svc() -> Service:
    return Service()


def description(svc: Service, gpu: str, model: str, method: str, seq: int, knobs: dict[str, object]) -> str:
    reply = finetune_reply(svc, FinetuneRequest.of(gpu=gpu, model=model, method=method, seq=seq, knobs=knobs),
                           locale="en-US")
    return str(reply.embeds[0]["description"])


def test_a_run_that_does_not_fit_is_not_said_to_run(svc: Service) -> None:
    # QLoRA of a 32B model on 24 GB: over the card even without its (small) paged optimizer state.
    text = description(svc, "3090", "qwen3-32b", "qlora", 2048, {})
    assert text.splitlines()[1].startswith("Does not fit")
    assert "it runs" not in text


def test_a_run_that_fits_by_paging_says_so(svc: Service) -> None:
    text = description(svc, "4090", "llama-3.1-8b", "full", 4096, {"framework": "torchtune"})
    assert "with little headroom" in text.splitlines()[1]
    assert "spills to CPU memory: it runs, slower" in text


def test_a_suggestion_that_fits_only_by_paging_says_so(svc: Service) -> None:
    # At 16k tokens torchtune's full run is over the card; shortening the sequence brings what must stay on
    # the GPU under the line, but the paged optimizer state then lives in host memory.
    reply = finetune_reply(svc, FinetuneRequest.of(gpu="4090", model="llama-3.1-8b", method="full", seq=16384,
                                                   knobs={"framework": "torchtune"}), locale="en-US")
    lines = next(f["value"] for f in reply.embeds[0]["fields"] if f["name"] == "What to change").splitlines()
    shorter = [line for line in lines if line.startswith("• sequence length ≤")]
    assert shorter and shorter[0].endswith("(fits only by paging 15.0 GiB of optimizer state to CPU memory: slower)")
    qlora = [line for line in lines if line.startswith("• QLoRA instead")]
    assert qlora and "paging" not in qlora[0]
