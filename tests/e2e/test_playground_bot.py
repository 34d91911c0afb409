"""The playground page with the real bot behind it, in headless Chromium: type /fit, see embed and chart."""

from __future__ import annotations

import sys
from collections.abc import AsyncIterator
from pathlib import Path

import pytest
import pytest_asyncio

from bot.sandbox import BotProcess, Sandbox
from tests.browser import chromium

pytestmark = [pytest.mark.e2e, pytest.mark.browser, pytest.mark.asyncio(loop_scope="module")]

ARTIFACTS = Path(__file__).resolve().parents[2] / "artifacts"


@pytest_asyncio.fixture(loop_scope="module", scope="module")
async def running(tmp_path_factory: pytest.TempPathFactory) -> AsyncIterator[tuple[Sandbox, BotProcess]]:
    async with Sandbox() as sb:
        process = await sb.start_bot([sys.executable, "-m", "bot"], env={
            "RIGCHECK_DATA_DIR": str(tmp_path_factory.mktemp("pgdata")), "RIGCHECK_HTTP_ENABLED": "false",
            "RIGCHECK_GUILD_READY_TIMEOUT": "0.2"}, ready_timeout=60)
        yield sb, process


async def test_fit_in_the_playground(running: tuple[Sandbox, BotProcess]) -> None:
    sandbox, _ = running
    async with chromium() as browser:
        page = await browser.new_page(viewport={"width": 1000, "height": 1400})
        await page.goto(sandbox.url + "/")
        await page.evaluate("window.playground.ready")
        await page.type("#input", "/fit gpu:T4 model:qwen3-8")
        await page.wait_for_selector("#suggestions li:has-text('Qwen3-8B')")  # from the bot's autocomplete
        await page.keyboard.press("Escape")
        await page.fill("#input", "/fit gpu:T4 model:qwen3-8b ctx:32k")
        await page.keyboard.press("Enter")
        await page.wait_for_selector(".embed-title:has-text('Qwen3-8B on 1× NVIDIA T4')", timeout=20_000)
        await page.wait_for_function(
            "() => [...document.querySelectorAll('.embed-image img')]"
            ".some(i => i.complete && i.naturalWidth === 1200)"
        )
        await page.fill("#input", "/fit gpu:T4 model:qwen3-8bb")
        await page.keyboard.press("Enter")
        await page.wait_for_selector("text=Only you can see this")
        ARTIFACTS.mkdir(exist_ok=True)
        await page.screenshot(path=str(ARTIFACTS / "playground-fit.png"), full_page=True)
