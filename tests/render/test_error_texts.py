"""Errors raised far from a reply (the Hugging Face client, webhook URLs) still reach the asker in their
language: they carry a message-catalog key, and `str()` stays the English the CLI prints."""

from __future__ import annotations

from typing import Any, cast

import pytest

from bot.daily.delivery import parse_webhook_url
from bot.huggingface_client import BadRepoId, HubBadResponse, HubClient, RepoNotFound, validate_repo
from bot.params import BadValue
from bot.render.text import Message
from bot.requests import FinetuneRequest
from bot.service import Service
from catalog.huggingface.config import UnsupportedConfig, model_from_config


def test_a_bad_repo_id_is_worded_per_locale() -> None:
    with pytest.raises(BadRepoId) as caught:
        validate_repo("qwen3")
    assert str(caught.value) == "not a Hugging Face model id: 'qwen3' (expected org/name, e.g. Qwen/Qwen3-8B)"
    assert caught.value.text("zh-CN") == "这不是 Hugging Face 模型 ID：'qwen3'（应为 组织/名称，例如 Qwen/Qwen3-8B）"
    assert caught.value.text("en-GB") == str(caught.value)


@pytest.mark.parametrize(("url", "english", "chinese"), [
    ("http://example.com/api/webhooks/1/x", "the webhook URL must be a Discord channel webhook", "Webhook URL 必须是"),
    ("https://discord.com/api/webhooks/1/x", "the webhook URL must look like", "Webhook URL 的格式应为"),
])
def test_a_bad_webhook_url_is_worded_per_locale(url: str, english: str, chinese: str) -> None:
    with pytest.raises(BadValue) as caught:
        parse_webhook_url(url)
    assert str(caught.value).startswith(english) and caught.value.text("zh-CN").startswith(chinese)


class _MissingHub:
    async def get_or_fetch(self, text: str) -> Any:
        raise RepoNotFound.of("hub.not_found", repo=text.removeprefix("hf:"))


async def test_the_service_keeps_a_hub_error_in_the_askers_language() -> None:
    svc = Service(hub=cast(HubClient, _MissingHub()))
    with pytest.raises(BadValue) as caught:
        await svc.resolve_hf("hf:nobody/nothing")
    assert str(caught.value) == "no such model on Hugging Face: nobody/nothing"
    assert caught.value.text("zh-CN") == "Hugging Face 上没有这个模型：nobody/nothing"


@pytest.mark.parametrize(("knobs", "english", "chinese"), [
    ({"rank": 0}, "rank must be at least 1", "rank 须不小于 1"),
    ({"lora_dropout": 1.5}, "lora_dropout must be less than 1", "lora_dropout 须小于 1"),
    ({"lora_dropout": -0.5}, "lora_dropout must be at least 0", "lora_dropout 须不小于 0"),
    ({"gradient_accumulation_steps": 0}, "gradient_accumulation_steps must be at least 1",
     "gradient_accumulation_steps 须不小于 1"),
])
def test_a_fine_tuning_knob_out_of_range_says_its_bound(knobs: dict[str, Any], english: str, chinese: str) -> None:
    svc = Service()
    req = FinetuneRequest.of(gpu="T4", model="qwen3-8b", knobs=knobs)
    with pytest.raises(BadValue) as caught:
        req.settings(svc.gpu("T4"))
    assert (str(caught.value), caught.value.text("zh-CN")) == (english, chinese)


def test_an_unsupported_hugging_face_architecture_is_worded_per_locale() -> None:
    cfg = {"architectures": ["MambaForCausalLM"], "model_type": "mamba", "hidden_size": 768}
    with pytest.raises(UnsupportedConfig) as caught:
        model_from_config("state-spaces/mamba-130m-hf", cfg)
    reason = Message(f"hf.{caught.value.reason}", caught.value.values)
    err = HubBadResponse.of("hub.unsupported", repo="state-spaces/mamba-130m-hf", reason=reason)
    assert str(err).startswith("state-spaces/mamba-130m-hf: unsupported architecture MambaForCausalLM "
                               "(model_type 'mamba'); supported: cohere, cohere2, ")
    assert err.text("zh-CN").startswith("state-spaces/mamba-130m-hf：不支持的架构 MambaForCausalLM"
                                        "（model_type 'mamba'）；支持的有：cohere, cohere2, ")
    assert err.text("en-US") == str(err)
