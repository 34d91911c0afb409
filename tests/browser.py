"""Headless Chromium for the playground tests: Debian's binary driven by Playwright, skipped when absent."""

from __future__ import annotations

import shutil
from collections.abc import AsyncIterator
from contextlib import asynccontextmanager
from pathlib import Path
from typing import Any

import pytest

CHROMIUM = "/usr/bin/chromium"
# No background traffic: the machine's network is closed and the tests talk to loopback only.
CHROMIUM_ARGS = [
    "--headless",
    "--no-sandbox",
    "--disable-gpu",
    "--disable-background-networking",
    "--disable-component-update",
    "--disable-sync",
]


def missing_browser() -> str | None:
    try:
        import playwright.async_api  # noqa: F401
    except ImportError:
        return "playwright is not installed"
    if not Path(CHROMIUM).exists() and shutil.which("chromium") is None:
        return "chromium is not installed"
    return None


@asynccontextmanager
async def chromium() -> AsyncIterator[Any]:
    """A launched browser; skips the calling test when Chromium or Playwright is missing."""
    missing = missing_browser()
    if missing:
        pytest.skip(missing)
    from playwright.async_api import async_playwright

    executable = CHROMIUM if Path(CHROMIUM).exists() else str(shutil.which("chromium"))
    async with async_playwright() as playwright:
        browser = await playwright.chromium.launch(executable_path=executable, args=CHROMIUM_ARGS)
        try:
            yield browser
        finally:
            await browser.close()
