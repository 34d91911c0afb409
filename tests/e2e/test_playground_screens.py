"""Playground screenshots of every answer with a chart, in English and Simplified Chinese, and a server
manager trying /daily preview and /settings server from the page."""

from __future__ import annotations

import sys
from collections.abc import AsyncIterator
from pathlib import Path

import pytest
import pytest_asyncio

from bot.sandbox import BotProcess, Sandbox
from tests.browser import chromium

pytestmark = [pytest.mark.e2e, pytest.mark.long, pytest.mark.browser, pytest.mark.asyncio(loop_scope="module")]

SCREENS = Path(__file__).resolve().parents[2] / "artifacts" / "screens"
COMMANDS = {
    "fit": "/fit gpu:T4 model:qwen3-8b ctx:32k",
    "rank": "/rank gpu:rtx 3090 ctx:16k",
    "gpu": "/gpu gpu:rtx 4090",
    "compare": "/compare gpu:T4 gpu2:A30 model:qwen3-8b",
    "finetune": "/finetune gpu:a100 40gb sxm model:qwen3-8b method:lora",
    "whatgpu": "/whatgpu model:llama-3.3-70b ctx:16k",
}
TITLES = {
    "en-US": {"fit": "Qwen3-8B on", "rank": "Best models on", "gpu": "GeForce RTX 4090", "compare": " vs ",
              "finetune": "Fine-tune", "whatgpu": "What runs"},
    "zh-CN": {"fit": "Qwen3-8B", "rank": "最佳运行模型", "gpu": "GeForce RTX 4090", "compare": " vs ",
              "finetune": "Qwen3-8B", "whatgpu": "需要什么显卡"},
}


@pytest_asyncio.fixture(loop_scope="module", scope="module")
async def running(tmp_path_factory: pytest.TempPathFactory) -> AsyncIterator[Sandbox]:
    async with Sandbox() as sb:
        process: BotProcess = await sb.start_bot([sys.executable, "-m", "bot"], env={
            "RIGCHECK_DATA_DIR": str(tmp_path_factory.mktemp("screens")), "RIGCHECK_HTTP_ENABLED": "false",
            "RIGCHECK_GUILD_READY_TIMEOUT": "0.2"}, ready_timeout=60)
        assert process is not None
        yield sb


async def _send(page, command: str) -> object:
    count = await page.locator(".message").count()
    await page.fill("#input", command)
    await page.keyboard.press("Enter")
    await page.wait_for_function(f"() => document.querySelectorAll('.message').length > {count} && "
                                 "!document.querySelector('.thinking')", timeout=60_000)
    return page.locator(".message").last


@pytest.mark.parametrize("locale", ["en-US", "zh-CN"])
async def test_screenshots_of_every_chart_answer(running: Sandbox, locale: str) -> None:
    SCREENS.mkdir(parents=True, exist_ok=True)
    async with chromium() as browser:
        page = await browser.new_page(viewport={"width": 900, "height": 1200}, device_scale_factor=1)
        await page.goto(running.url + "/")
        await page.evaluate("window.playground.ready")
        await page.select_option("#locale", locale)
        for name, command in COMMANDS.items():
            message = await _send(page, command)
            await message.locator(".embed-title").first.wait_for(timeout=60_000)
            title = await message.locator(".embed-title").first.inner_text()
            assert TITLES[locale][name] in title, (name, title)
            await page.wait_for_function(
                "() => { const last = [...document.querySelectorAll('.message')].pop();"
                " const imgs = last.querySelectorAll('.embed-image img');"
                " return imgs.length > 0 && [...imgs].every(i => i.complete && i.naturalWidth === 1200); }",
                timeout=60_000)
            await message.screenshot(path=str(SCREENS / f"{name}-{locale}.png"))


async def test_a_server_manager_tries_daily_and_server_settings(running: Sandbox) -> None:
    async with chromium() as browser:
        page = await browser.new_page(viewport={"width": 900, "height": 1200})
        await page.goto(running.url + "/")
        await page.evaluate("window.playground.ready")
        assert not await page.is_checked("#admin")
        member = await _send(page, "/settings server ctx:32k")
        assert "Saved" not in await member.inner_text()
        await page.check("#admin")
        saved = await _send(page, "/settings server ctx:32k")
        assert "Saved (this server): context 32k" in await saved.inner_text()
        preview = await _send(page, "/daily preview")
        text = await preview.inner_text()
        assert "Manage Server" not in text and "Not allowed" not in text, text
        await preview.screenshot(path=str(SCREENS / "daily-preview-admin.png"))
