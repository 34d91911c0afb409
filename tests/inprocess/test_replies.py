"""Replies people screenshot, through the real bot and the loopback Discord: settings that stick, context as
people say it, cached answers that keep their buttons, tables that fit a phone, charts."""

from __future__ import annotations

import pytest

from bot.sandbox import Sandbox

pytestmark = pytest.mark.asyncio(loop_scope="module")

MANAGE_GUILD = 1 << 5


def buttons(reply) -> list[dict]:
    return [c for row in reply.components for c in row.get("components", [])]


async def test_settings_update_only_the_given_option(sb: Sandbox) -> None:
    user = 5101
    first = await sb.invoke("/settings me gpu:T4", user=user)
    assert first.ephemeral and "NVIDIA T4" in (first.content or "")
    second = await sb.invoke("/settings me ctx:16k", user=user)
    assert "NVIDIA T4" in (second.content or "") and "16k" in (second.content or "")
    shown = await sb.invoke("/settings me", user=user)  # bare: shows, never wipes
    assert "GPU NVIDIA T4" in (shown.content or "") and "context 16k" in (shown.content or "")
    again = await sb.invoke("/settings me", user=user)
    assert again.content == shown.content


async def test_stored_defaults_fill_every_command_and_say_so(sb: Sandbox) -> None:
    user = 5102
    await sb.invoke("/settings me gpu:rtx 3090 ctx:16k kv:q8_0", user=user)
    fit = await sb.invoke("/fit model:qwen3-8b", user=user)
    assert fit.error is None and not fit.ephemeral
    embed = fit.embeds[0]
    assert embed["title"].endswith("NVIDIA GeForce RTX 3090")
    assert "context 16k" in embed["description"] and "KV q8_0" in embed["description"]
    assert embed["footer"]["text"].startswith(
        "Defaults used: GPU NVIDIA GeForce RTX 3090 (yours), context 16k (yours), KV cache q8_0 (yours)")
    # An option given wins over the default, and the note then leaves it out.
    given = await sb.invoke("/fit model:qwen3-8b ctx:8k", user=user)
    assert "context 8k" in given.embeds[0]["description"]
    assert "context 16k" not in given.embeds[0]["footer"]["text"]
    for command in ("/rank", "/gpu", "/finetune model:qwen3-8b", "/compare model:qwen3-8b gpu2:T4"):
        reply = await sb.invoke(command, user=user)
        assert reply.error is None and not reply.ephemeral, command
        assert "RTX 3090" in reply.embeds[0]["footer"]["text"], command
    zh = await sb.invoke("/fit model:qwen3-8b", user=user, locale="zh-CN")
    assert zh.embeds[0]["footer"]["text"].startswith("使用了默认值：显卡 NVIDIA GeForce RTX 3090（你的设置）")


async def test_reset_clears_and_gpu_is_then_required(sb: Sandbox) -> None:
    user = 5103
    await sb.invoke("/settings me gpu:T4", user=user)
    cleared = await sb.invoke("/settings reset", user=user)
    assert cleared.ephemeral and "Cleared" in (cleared.content or "")
    missing = await sb.invoke("/fit model:qwen3-8b", user=user)
    assert missing.ephemeral and "gpu is missing" in missing.embeds[0]["description"]
    zh = await sb.invoke("/fit model:qwen3-8b", user=user, locale="zh-CN")
    assert "缺少显卡" in zh.embeds[0]["description"]


async def test_server_defaults_apply_and_yours_win(sb: Sandbox) -> None:
    denied = await sb.invoke("/settings reset scope:server", user=5104, member_permissions=0)
    assert denied.ephemeral
    await sb.invoke("/settings server gpu:A30 ctx:32k", user=5104, member_permissions=MANAGE_GUILD)
    await sb.invoke("/settings server engine:llama.cpp", user=5104, member_permissions=MANAGE_GUILD)
    shown = await sb.invoke("/settings server", user=5104, member_permissions=MANAGE_GUILD)
    assert "NVIDIA A30" in (shown.content or "") and "32k" in (shown.content or "")
    someone = await sb.invoke("/fit model:qwen3-4b", user=5105)
    assert someone.embeds[0]["title"].endswith("NVIDIA A30")
    footer = someone.embeds[0]["footer"]["text"]
    assert "GPU NVIDIA A30 (server), engine llama.cpp (server), context 32k (server)" in footer
    await sb.invoke("/settings me gpu:T4", user=5105)
    mine = await sb.invoke("/fit model:qwen3-4b", user=5105)
    assert mine.embeds[0]["title"].endswith("NVIDIA T4")
    assert "GPU NVIDIA T4 (yours), engine llama.cpp (server), context 32k (server)" in mine.embeds[0]["footer"]["text"]
    await sb.invoke("/settings reset scope:server", user=5104, member_permissions=MANAGE_GUILD)


async def test_context_reads_as_people_say_it(sb: Sandbox) -> None:
    reply = await sb.invoke("/fit gpu:rtx 4090 model:llama-3.1-8b ctx:65536")
    assert "context 64k" in reply.embeds[0]["description"]
    assert "65.5k" not in str(reply.embeds)


async def test_cached_rank_keeps_working_buttons(sb: Sandbox) -> None:
    first = await sb.invoke("/rank gpu:rtx 3060 ctx:8k", user=5201)
    second = await sb.invoke("/rank gpu:RTX 3060 ctx:8192", user=5202)
    assert first.deferred and not second.deferred  # the second one came from the cache
    assert {b["custom_id"] for b in buttons(second)} == {"rank:prev", "rank:next"}
    assert second.embeds == first.embeds
    page2 = await sb.driver.click(second, "rank:next", user=5202)
    assert "page 2 of" in page2.embeds[0]["description"]


# --- the VRAM curve on every GPU answer -------------------------------------------------------------

def chart_of(reply) -> dict:
    """What the attached chart shows, as the VRAM-curve renderer recorded it in the PNG."""
    from bot.render.charts import chart_description, png_size

    assert reply.embeds[0]["image"]["url"] == "attachment://vram.png"
    png = next(f for f in reply.files if f.filename == "vram.png")
    assert png_size(png.data) == (1200, 675)
    described = chart_description(png.data)
    assert described is not None and described["kind"] == "memory"
    return described


async def test_fit_chart_says_two_cards(sb: Sandbox) -> None:
    reply = await sb.invoke("/fit gpu:rtx 3090 model:qwen3-32b gpus:2")
    chart = chart_of(reply)
    assert [s["label"] for s in chart["series"]] == ["Q4_K_M", "Q8_0", "F16"]
    assert chart["limits"][0]["label"] == "2× NVIDIA GeForce RTX 3090"
    assert reply.embeds[0]["title"] == "Qwen3-32B on 2× NVIDIA GeForce RTX 3090"


async def test_rank_chart_is_the_pages_top_models(sb: Sandbox) -> None:
    reply = await sb.invoke("/rank gpu:T4 ctx:16k quant:int4", user=5301)
    chart = chart_of(reply)
    table = reply.embeds[0]["description"].split("```")[1].strip("\n").split("\n")
    names = [line[4:26].strip() for line in table[1:] if line[:3].strip().isdigit()]
    assert len(chart["series"]) == 5
    assert [s["label"] for s in chart["series"]] == [f"{n} Q4_K_M" for n in names[:5]]
    assert chart["limits"] == [{"label": "NVIDIA T4", "usable_gib": 15.0}]


async def test_gpu_chart_is_reference_classes_at_4bit(sb: Sandbox) -> None:
    reply = await sb.invoke("/gpu gpu:rtx 4090")
    chart = chart_of(reply)
    assert [s["label"] for s in chart["series"]] == [
        "8B class (Llama 3.1 8B)", "14B class (Qwen3-14B)", "32B class (Qwen3-32B)", "70B class (Llama 3.3 70B)"]
    fits = {s["label"].split()[0]: s["max_x"] > 0 for s in chart["series"]}
    assert fits == {"8B": True, "14B": True, "32B": True, "70B": False}
    assert "Q4_K_M" in reply.embeds[0]["fields"][3]["value"]
    assert not reply.embeds[0]["footer"]["text"].endswith("…")  # the source is shown whole


async def test_compare_is_like_for_like_on_one_chart(sb: Sandbox) -> None:
    reply = await sb.invoke("/compare gpu:T4 gpu2:A30 model:qwen3-8b")
    fields = reply.embeds[0]["fields"]
    formats = {f["value"].split("**")[1] for f in fields}
    assert formats == {"Q8_0"}  # the best format both fit, not Q8_0 on one and F16 on the other
    chart = chart_of(reply)
    assert [lim["label"] for lim in chart["limits"]] == ["NVIDIA T4", "NVIDIA A30"]
    assert [s["limit"] for s in chart["series"]] == [0, 1]
    asked = await sb.invoke("/compare gpu:T4 gpu2:A30 model:qwen3-8b quant:Q4_K_M")
    assert {f["value"].split("**")[1] for f in asked.embeds[0]["fields"]} == {"Q4_K_M"}


async def test_compare_shows_the_range_of_each_side(sb: Sandbox) -> None:
    import re

    reply = await sb.invoke("/compare gpu:T4 gpu2:A30 model:qwen3-8b")
    for field in reply.embeds[0]["fields"]:
        tps = re.search(r"~(\d+) tok/s \((\d+)–(\d+)\)", field["value"])
        ttft = re.search(r"TTFT ([\d.]+) (s|ms) \(([\d.]+)–([\d.]+) (s|ms)\)", field["value"])
        assert tps and ttft, field["value"]
        point, low, high = (float(x) for x in tps.groups())
        assert low < point < high
        assert float(ttft[3]) < float(ttft[4])


@pytest.mark.parametrize(("command", "locale", "words"), [
    ("/rank gpu:A30 ctx:32k", "en-US", "80 % range (from cross-validation) is at most"),
    ("/whatgpu model:qwen3-8b", "en-US", "80 % range (from cross-validation) is at most"),
    ("/rank gpu:A30 ctx:32k", "zh-CN", "80% 区间（来自交叉验证）至多为其"),
])
async def test_tables_state_the_widest_range_on_the_page(sb: Sandbox, command: str, locale: str, words: str) -> None:
    import re

    reply = await sb.invoke(command, locale=locale)
    description = reply.embeds[0]["description"]
    assert words in description
    below, above = (int(x) for x in re.search(r"−(\d+) ?% .*?\+(\d+) ?%", description.split("```")[-1]).groups())
    assert 0 < below < 100 and 0 < above


async def test_finetune_chart_and_fp16_without_bf16(sb: Sandbox) -> None:
    t4 = await sb.invoke("/finetune gpu:T4 model:qwen3-8b method:qlora")
    assert "fp16" in t4.embeds[0]["description"] and "bf16" not in t4.embeds[0]["description"]
    chart = chart_of(t4)
    assert [s["label"] for s in chart["series"]] == ["QLoRA", "LoRA", "Full"]
    assert chart["limits"][0]["label"] == "NVIDIA T4"
    a100 = await sb.invoke("/finetune gpu:a100 40gb sxm model:qwen3-8b method:lora")
    assert "bf16" in a100.embeds[0]["description"]


# --- tables that fit a phone, with pages -----------------------------------------------------------

def code_block_lines(reply) -> list[str]:
    from bot.render.table import display_width

    text = reply.embeds[0].get("description", "")
    blocks = text.split("```")[1::2]
    assert blocks, "no table"
    lines = [line for block in blocks for line in block.split("\n") if line.strip()]
    too_wide = [(display_width(line), line) for line in lines if display_width(line) > 56]
    assert not too_wide
    return lines


@pytest.mark.parametrize("locale", ["en-US", "zh-CN"])
async def test_every_table_fits_a_phone_and_pages(sb: Sandbox, locale: str) -> None:
    for command, prefix in (("/rank gpu:a100 80gb sxm ctx:32k", "rank"), ("/whatgpu model:llama-3.3-70b", "whatgpu"),
                            ("/models", "models"), ("/gpus", "gpus")):
        reply = await sb.invoke(command, user=5401, locale=locale)
        assert reply.error is None, command
        lines = code_block_lines(reply)
        assert len(lines) > 5, command
        assert {b["custom_id"] for b in buttons(reply)} == {f"{prefix}:prev", f"{prefix}:next"}, command
        page2 = await sb.driver.click(reply, f"{prefix}:next", user=5401, locale=locale)
        assert page2.error is None, command
        code_block_lines(page2)
        assert page2.embeds[0] != reply.embeds[0], command


async def test_names_are_shortened_by_whole_words(sb: Sandbox) -> None:
    import re

    from catalog.store import load_catalog

    words = {w for m in load_catalog().models for w in re.split(r"[\s_()-]+", m.name) if w}
    words |= {f"{m.params_b:.3g}B" for m in load_catalog().models}
    reply = await sb.invoke("/rank gpu:h100 sxm ctx:8k sort:size", user=5402)
    for _page in range(3):
        for line in code_block_lines(reply)[1:]:
            name = line[4:26].strip()
            if line[:3].strip() in ("", "#") or not name:
                continue
            # whole words of a real name, never a cut one
            assert all(w in words for w in re.split(r"[\s_()-]+", name) if w), line
        reply = await sb.driver.click(reply, "rank:next", user=5402)


async def test_rank_matrix_columns_and_footers(sb: Sandbox) -> None:
    quality = await sb.invoke("/rank gpu:T4", user=5403)
    header = code_block_lines(quality)[0]
    assert header.split()[-3:] == ["INT4", "INT8", "FP16"]
    footer = quality.embeds[0]["footer"]["text"]
    assert footer.startswith("Order: LMArena text arena scores (snapshot of 2026-09-10 or later)")
    speed = await sb.invoke("/rank gpu:T4 sort:speed", user=5403)
    assert speed.embeds[0]["footer"]["text"].startswith("Order: each model's fastest decode tok/s")
    assert "quality" not in speed.embeds[0]["footer"]["text"]
    size = await sb.invoke("/rank gpu:T4 sort:size", user=5403)
    assert size.embeds[0]["footer"]["text"].startswith("Order: total parameters")


async def test_help_lists_every_command(sb: Sandbox) -> None:
    reply = await sb.invoke("/help")
    text = str(reply.embeds[0])
    for command in sb.driver.commands:
        assert f"/{command['name']}" in text, command["name"]
    assert "LMArena text arena scores (snapshot of 2026-09-10 or later)" in text and "Open LLM Leaderboard" in text


async def test_help_is_said_whole_in_every_language(sb: Sandbox) -> None:
    # Discord cuts nothing itself: a field past 1024 characters was cut by the builder mid-word ("…memo…").
    for locale in ("en-US", "zh-CN"):
        reply = await sb.invoke("/help", locale=locale)
        for field in reply.embeds[0].get("fields", []):
            assert not field["value"].endswith("…"), (locale, field["name"])
            assert len(field["value"]) < 1024, (locale, field["name"])


# --- what people type ------------------------------------------------------------------------------

async def test_a_count_in_the_gpu_name_sets_the_gpu_count(sb: Sandbox) -> None:
    reply = await sb.invoke("/fit gpu:2x 3090 model:llama-3.3-70b")
    assert reply.error is None and not reply.ephemeral
    assert reply.embeds[0]["title"] == "Llama 3.3 70B on 2× NVIDIA GeForce RTX 3090"
    assert chart_of(reply)["limits"][0]["label"] == "2× NVIDIA GeForce RTX 3090"
    ranked = await sb.invoke("/rank gpu:2×3090", user=5501)
    assert ranked.embeds[0]["title"].startswith("Best models on 2× NVIDIA GeForce RTX 3090")
    single = await sb.invoke("/rank gpu:3090", user=5501)
    assert single.embeds[0]["title"].startswith("Best models on NVIDIA GeForce RTX 3090 ")  # not the cached 2×
    clash = await sb.invoke("/fit gpu:2x 3090 model:qwen3-8b gpus:4")
    assert clash.ephemeral and "give the count once" in clash.embeds[0]["description"]


async def test_a_chip_without_its_memory_size_answers(sb: Sandbox) -> None:
    reply = await sb.invoke("/fit gpu:m2 ultra model:llama-3.3-70b quant:q8_0")
    assert reply.error is None and not reply.ephemeral
    assert reply.embeds[0]["title"] == "Llama 3.3 70B on 1× Apple M2 Ultra (128 GB unified memory)"
    assert reply.embeds[0]["footer"]["text"].startswith(
        "Apple M2 Ultra comes with 64, 128, 192 GB: this is the smallest that runs it (128 GB)")
    card = await sb.invoke("/gpu gpu:m2 ultra")
    assert card.embeds[0]["title"].startswith("Apple M2 Ultra (64 GB")
    assert "showing 64 GB" in card.embeds[0]["footer"]["text"]


async def test_a_context_past_every_window_is_one_clear_refusal(sb: Sandbox) -> None:
    reply = await sb.invoke("/fit gpu:T4 model:llama-3.1-8b ctx:1M")
    assert reply.ephemeral
    assert "past Llama 3.1 8B's longest documented context (128k)" in reply.embeds[0]["description"]


# --- zh-CN at the same level as English -------------------------------------------------------------

async def test_chinese_errors_offload_and_footers(sb: Sandbox) -> None:
    import re

    zh = "zh-CN"
    unknown = await sb.invoke("/fit gpu:T4 model:qwen3-8bb", locale=zh)
    assert unknown.ephemeral and unknown.embeds[0]["title"] == "找不到模型"
    tokens = await sb.invoke("/fit gpu:T4 model:qwen3-8b ctx:lots", locale=zh)
    assert tokens.embeds[0]["title"] == "参数无效" and "须为 token 数" in tokens.embeds[0]["description"]
    quant = await sb.invoke("/fit gpu:T4 model:qwen3-8b quant:q9_z", locale=zh)
    assert "未知的量化" in quant.embeds[0]["description"]
    engine = await sb.invoke("/fit gpu:T4 model:qwen3-8b engine:mlx", locale=zh)
    assert "只能在 Apple 显卡上运行，不支持 NVIDIA T4" in engine.embeds[0]["description"]
    big = await sb.invoke("/fit gpu:T4 model:llama-3.3-70b quant:Q4_K_M", locale=zh)
    fields = {f["name"]: f["value"] for f in big.embeds[0]["fields"]}
    offload = next((v for k, v in fields.items() if "卸载" in k or "-ngl" in v), "")
    assert re.search(r"`-ngl \d+`", offload), fields  # the layer count survives the translation
    card = await sb.invoke("/gpu gpu:t4", locale=zh)
    rec = next(f["value"] for f in card.embeds[0]["fields"] if f["name"] == "负载与选型建议")
    assert "、" in rec and "(" not in rec
    cjk = re.compile(r"[\u4e00-\u9fff]")
    for command in ("/fit gpu:T4 model:qwen3-8b", "/rank gpu:T4", "/gpu gpu:T4",
                    "/compare gpu:T4 gpu2:A30 model:qwen3-8b", "/finetune gpu:T4 model:qwen3-8b",
                    "/whatgpu model:qwen3-8b", "/models", "/gpus"):
        reply = await sb.invoke(command, locale=zh, user=5601)
        footer = reply.embeds[0].get("footer", {}).get("text", "")
        assert cjk.search(footer) or command == "/gpu gpu:T4", (command, footer)  # /gpu's footer is the datasheet
        assert cjk.search(reply.embeds[0]["title"]) or cjk.search(reply.embeds[0].get("description", "")), command
