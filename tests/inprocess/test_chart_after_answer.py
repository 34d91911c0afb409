"""When a chart is slower than the answer, the answer is posted first and the chart edited in."""

from __future__ import annotations

from pathlib import Path

from bot.sandbox import Sandbox
from tests.inprocess.local_bot import bot_in_this_process


async def test_answer_first_then_the_chart_then_the_cache_serves_both(tmp_path: Path) -> None:
    async with Sandbox() as sb, bot_in_this_process(sb, tmp_path, rigcheck_chart_wait_s=0):
        first = await sb.invoke("/fit gpu:T4 model:qwen3-8b ctx:20k")
        assert first.error is None and not first.ephemeral
        assert first.embeds[0]["title"] == "Qwen3-8B on 1× NVIDIA T4" and "image" not in first.embeds[0]
        assert first.files == []
        record = sb.state.interactions[first.interaction_id or 0]
        edit = await sb.state.changed.wait_until(
            lambda: next((e for e in record.exchanges if e.kind == "edit_original" and e.files), None), 20)
        assert edit.error is None and edit.message is not None
        assert edit.message["embeds"][0]["image"]["url"] == "attachment://vram.png"
        assert edit.files[0].filename == "vram.png" and edit.files[0].data[:8] == b"\x89PNG\r\n\x1a\n"
        assert edit.message["embeds"][0]["fields"] == first.embeds[0]["fields"]

        again = await sb.invoke("/fit gpu:T4 model:qwen3-8b ctx:20k")
        assert not again.deferred and again.embeds == edit.message["embeds"]
        assert [f.sha256 for f in again.files] == [f.sha256 for f in edit.files]
