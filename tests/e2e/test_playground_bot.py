"""The playground page with the real bot behind it, in headless Chromium: type /fit, see embed and chart."""

from __future__ import annotations

import shutil
import sys
from collections.abc import AsyncIterator
from pathlib import Path

import pytest
import pytest_asyncio

from bot.sandbox import BotProcess, Sandbox

pytestmark = [pytest.mark.e2e, pytest.mark.browser, pytest.mark.asyncio(loop_scope="module")]

CHROMIUM = "/usr/bin/chromium"
CHROMIUM_ARGS = ["--headless", "--no-sandbox", "--disable-gpu", "--disable-background-networking",
                 "--disable-component-update", "--disable-sync"]
ARTIFACTS = Path(__file__).resolve().parents[2] / "artifacts"


def _missing() -> str | None:
    try:
        import playwright.async_api  # noqa: F401
    except ImportError:
        return "playwright is not installed"
    if not Path(CHROMIUM).exists() and shutil.which("chromium") is None:
        return "chromium is not installed"
    return None


@pytest_asyncio.fixture(loop_scope="module", scope="module")
async def running(tmp_path_factory: pytest.TempPathFactory) -> AsyncIterator[tuple[Sandbox, BotProcess]]:
    async with Sandbox() as sb:
        process = await sb.start_bot([sys.executable, "-m", "bot"], env={
            "RIGCHECK_DATA_DIR": str(tmp_path_factory.mktemp("pgdata")), "RIGCHECK_HTTP_ENABLED": "false",
            "RIGCHECK_GUILD_READY_TIMEOUT": "0.2"}, ready_timeout=60)
        yield sb, process


async def test_fit_in_the_playground(running: tuple[Sandbox, BotProcess]) -> None:
    missing = _missing()
    if missing:
        pytest.skip(missing)
    from playwright.async_api import async_playwright

    sandbox, _ = running
    executable = CHROMIUM if Path(CHROMIUM).exists() else str(shutil.which("chromium"))
    async with async_playwright() as playwright:
        browser = await playwright.chromium.launch(executable_path=executable, args=CHROMIUM_ARGS)
        try:
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
        finally:
            await browser.close()
