"""The real bot process against the loopback Discord: every command, what Discord would receive."""

from __future__ import annotations

import io
import sys
from pathlib import Path

import pytest
from matplotlib import image as mpimg

from bot.sandbox import Sandbox

pytestmark = [pytest.mark.e2e, pytest.mark.asyncio(loop_scope="module")]

ARTIFACTS = Path(__file__).resolve().parents[2] / "artifacts" / "e2e"
MANAGE_GUILD = 1 << 5
EXPECTED_COMMANDS = {"fit", "rank", "gpu", "compare", "finetune", "models", "gpus", "help", "settings", "whatgpu",
                     "daily"}


def decode_png(data: bytes) -> tuple[int, int]:
    assert data[:8] == b"\x89PNG\r\n\x1a\n"
    pixels = mpimg.imread(io.BytesIO(data), format="png")
    return pixels.shape[1], pixels.shape[0]


def save(name: str, data: bytes) -> None:
    ARTIFACTS.mkdir(parents=True, exist_ok=True)
    (ARTIFACTS / name).write_bytes(data)


async def test_command_sync_matches_tree(sb: Sandbox) -> None:
    synced = {c["name"] for c in sb.driver.commands.values()} if isinstance(sb.driver.commands, dict) else {
        c["name"] for c in sb.driver.commands}
    assert EXPECTED_COMMANDS <= synced
    fit = next(c for c in (sb.driver.commands.values() if isinstance(sb.driver.commands, dict)
                           else sb.driver.commands) if c["name"] == "fit")
    options = {o["name"]: o for o in fit["options"]}
    # gpu may come from /settings, so only the model is required.
    assert not options["gpu"].get("required") and options["gpu"].get("autocomplete")
    assert options["model"]["required"]
    assert options["gpus"]["min_value"] == 1 and options["gpus"]["max_value"] == 8
    assert {c["value"] for c in options["kv"]["choices"]} == {"f16", "q8_0", "q4_0", "fp8"}
    # Descriptions are localised for Simplified Chinese clients; names stay English.
    assert fit["description_localizations"]["zh-CN"].startswith("模型能否在显卡上运行")
    assert options["gpu"]["description_localizations"]["zh-CN"].startswith("显卡")
    assert not fit.get("name_localizations")


async def test_fit_embed_and_chart(sb: Sandbox) -> None:
    reply = await sb.invoke("/fit gpu:T4 model:qwen3-8b ctx:32k")
    assert reply.error is None and not reply.ephemeral
    embed = reply.embeds[0]
    assert embed["title"] == "Qwen3-8B on 1× NVIDIA T4"
    names = [f["name"] for f in embed["fields"]]
    assert names[:3] == ["Q4_K_M · fits", "Q8_0 · fits", "F16 · does not fit"]
    assert "KV cache 4.5 GiB" in embed["fields"][0]["value"]  # 36 layers × 8 heads × 128 × 2 × 2 B × 32768
    assert embed["image"]["url"] == "attachment://vram.png"
    png = reply.files[0]
    assert png.filename == "vram.png" and 20_000 < png.bytes < 200_000
    width, height = decode_png(png.data)
    assert (width, height) == (1200, 675)
    save("fit-t4-qwen3-8b.png", png.data)


async def test_second_identical_fit_is_served_from_cache(sb: Sandbox) -> None:
    first = await sb.invoke("/fit gpu:rtx 4090 model:llama-3.1-8b ctx:16k")
    second = await sb.invoke("/fit gpu:RTX 4090 model:Llama 3.1 8B ctx:16384")
    assert first.deferred  # computed and rendered: deferred first
    assert not second.deferred  # answered straight from the cache, normalised query → same key
    assert second.embeds == first.embeds
    assert [f.sha256 for f in second.files] == [f.sha256 for f in first.files]


async def test_unknown_model_gets_did_you_mean(sb: Sandbox) -> None:
    reply = await sb.invoke("/fit gpu:T4 model:qwen3-8bb")
    assert reply.ephemeral
    text = reply.embeds[0]["description"]
    assert "Did you mean" in text and "Qwen3-8B" in text


async def test_ambiguous_gpu_lists_choices(sb: Sandbox) -> None:
    reply = await sb.invoke("/fit gpu:a100 model:qwen3-8b")
    assert reply.ephemeral
    assert "A100 40GB SXM4" in reply.embeds[0]["description"]


async def test_nonsense_context_is_explained(sb: Sandbox) -> None:
    reply = await sb.invoke("/fit gpu:T4 model:qwen3-8b ctx:-1")
    assert reply.ephemeral and "ctx" in reply.embeds[0]["description"]
    huge = await sb.invoke("/fit gpu:T4 model:qwen3-8b ctx:9999999k")
    assert huge.ephemeral and "too large" in huge.embeds[0]["description"]


async def test_client_refuses_what_discord_would_refuse(sb: Sandbox) -> None:
    typo = await sb.invoke("/fit gpu:T4 modle:qwen3-8b")
    assert typo.rejected_by_client
    too_many = await sb.invoke("/fit gpu:T4 model:qwen3-8b gpus:9")
    assert too_many.rejected_by_client


async def test_does_not_fit_says_what_to_change(sb: Sandbox) -> None:
    reply = await sb.invoke("/fit gpu:T4 model:llama-3.3-70b quant:Q4_K_M")
    embed = reply.embeds[0]
    assert embed["description"].startswith("**Does not fit**")
    fields = {f["name"]: f["value"] for f in embed["fields"]}
    assert "What to change" in fields or "Partial offload" in fields


async def test_rank_pages_with_owner_only_buttons(sb: Sandbox) -> None:
    reply = await sb.invoke("/rank gpu:A30 ctx:32k", user=1001)
    assert reply.error is None
    desc = reply.embeds[0]["description"]
    assert "page 1 of" in desc and "```" in desc
    width, _ = decode_png(reply.files[0].data)
    assert width == 1200
    save("rank-a30-32k.png", reply.files[0].data)
    buttons = [c for row in reply.components for c in row.get("components", [])]
    assert {b["custom_id"] for b in buttons} == {"rank:prev", "rank:next"}
    stranger = await sb.driver.click(reply, "rank:next", user=2002)
    assert stranger.ephemeral
    page2 = await sb.driver.click(reply, "rank:next", user=1001)
    assert "page 2 of" in page2.embeds[0]["description"]


async def test_autocomplete_is_fast_and_bounded(sb: Sandbox) -> None:
    choices = await sb.driver.autocomplete("/fit", "gpu", "409")
    assert 0 < len(choices) <= 25
    assert any(c["value"] == "nvidia-rtx-4090" for c in choices)
    models = await sb.driver.autocomplete("/fit", "model", "qwen3")
    assert 0 < len(models) <= 25 and all("qwen" in c["name"].lower() for c in models)


async def test_chinese_locale(sb: Sandbox) -> None:
    reply = await sb.invoke("/fit gpu:T4 model:qwen3-8b", locale="zh-CN")
    embed = reply.embeds[0]
    assert "可用显存" in embed["description"]
    assert any("权重" in f["value"] for f in embed["fields"])


async def test_gpu_card(sb: Sandbox) -> None:
    reply = await sb.invoke("/gpu gpu:t4")
    fields = {f["name"]: f["value"] for f in reply.embeds[0]["fields"]}
    assert "Largest model at 8k context" in fields and "QLoRA" in fields["Fine-tuning (seq 2048, batch 1, fp16)"]
    decode_png(reply.files[0].data)
    save("gpu-t4.png", reply.files[0].data)


async def test_compare_finetune_browse_help(sb: Sandbox) -> None:
    compare = await sb.invoke("/compare gpu:t4 model:qwen3-8b gpu2:rtx 4090")
    assert len(compare.embeds[0]["fields"]) == 2
    finetune = await sb.invoke("/finetune gpu:a100 40gb model:llama-3.1-8b method:lora")
    assert any(f["name"].startswith("Memory at the peak") for f in finetune.embeds[0]["fields"])
    models = await sb.invoke("/models family:gemma")
    assert "Gemma" in models.embeds[0]["description"]
    gpus = await sb.invoke("/gpus vendor:apple")
    assert "M2 Max" in gpus.embeds[0]["description"]
    help_reply = await sb.invoke("/help")
    assert help_reply.ephemeral and help_reply.embeds[0]["title"].startswith("How to read")


async def test_server_settings_need_manage_server(sb: Sandbox) -> None:
    denied = await sb.invoke("/settings server ctx:32k", member_permissions=0)
    assert denied.ephemeral and (denied.rejected_by_client or denied.embeds)
    allowed = await sb.invoke("/settings server ctx:32k engine:llama.cpp", member_permissions=MANAGE_GUILD)
    assert allowed.ephemeral and "32k" in (allowed.content or "")
    reply = await sb.invoke("/fit gpu:T4 model:qwen3-4b")
    assert "context 32k" in reply.embeds[0]["description"]


async def test_ask_as_a_server_manager(tmp_path: Path) -> None:
    """`rigcheck ask` starts its own bot process; `--admin` makes the asker a server manager."""
    from bot.sandbox.ask import ask

    argv = [sys.executable, "-m", "bot"]
    env = {"RIGCHECK_DATA_DIR": str(tmp_path), "RIGCHECK_HTTP_ENABLED": "false", "RIGCHECK_GUILD_READY_TIMEOUT": "0.2"}
    member = await ask(["/settings server ctx:32k"], bot_argv=argv, env=env)
    manager = await ask(["/settings server ctx:32k"], bot_argv=argv, env=env, admin=True)
    assert member[0]["ephemeral"] and "Saved" not in str(member[0])
    assert manager[0]["content"] == "Saved (this server): context 32k"
