"""The playground's JSON endpoints, and (when Chromium and Playwright are present) the page itself."""

from __future__ import annotations

from pathlib import Path
from types import ModuleType
from typing import Any

import aiohttp
import pytest

from bot.sandbox import BotProcess, Sandbox
from tests.browser import chromium

pytestmark = [pytest.mark.e2e, pytest.mark.asyncio(loop_scope="module")]

Running = tuple[Sandbox, BotProcess]
async def post(sandbox: Sandbox, path: str, body: dict[str, Any]) -> Any:
    async with aiohttp.ClientSession() as http, http.post(sandbox.url + path, json=body) as response:
        assert response.status == 200, await response.text()
        return await response.json()


async def test_suggestions_cover_commands_options_and_bot_choices(running: Running) -> None:
    sandbox, _ = running
    commands = await post(sandbox, "/playground/autocomplete", {"text": "/ec"})
    assert [s["insert"] for s in commands["suggestions"]] == ["/echo "]
    options = await post(sandbox, "/playground/autocomplete", {"text": "/echo text:hi "})
    assert [s["insert"] for s in options["suggestions"]] == ["count:"]
    assert options["replace_from"] == len("/echo text:hi ")
    from_bot = await post(sandbox, "/playground/autocomplete", {"text": "/model name:qwen3-1"})
    assert from_bot["from_bot"] and [s["label"] for s in from_bot["suggestions"]] == ["qwen3-1.7b", "qwen3-14b"]
    assert from_bot["replace_from"] == len("/model name:")
    choices = await post(sandbox, "/playground/autocomplete", {"text": "/pick size:la"})
    assert [s["label"] for s in choices["suggestions"]] == ["large"]
    sub = await post(sandbox, "/playground/autocomplete", {"text": "/daily s"})
    assert [s["insert"] for s in sub["suggestions"]] == ["subscribe "]


async def test_invoke_and_click_through_json(running: Running, minibot: ModuleType) -> None:
    sandbox, _ = running
    reply = await post(sandbox, "/playground/invoke", {"command": "/echo text:hi", "locale": "en-US"})
    assert reply["embeds"][0]["description"] == "hi"
    url = reply["files"][0]["url"]
    assert url.startswith("/playground/files/")
    async with aiohttp.ClientSession() as http, http.get(sandbox.url + url) as response:
        assert response.headers["Content-Type"] == "image/png"
        assert await response.read() == minibot.ECHO_PNG
    vote = await post(sandbox, "/playground/invoke", {"command": "/vote"})
    clicked = await post(
        sandbox,
        "/playground/click",
        {"interaction_id": vote["interaction_id"], "message_id": vote["message_id"], "custom_id": "vote:yes"},
    )
    assert clicked["content"] == "tester voted yes"
    refused = await post(sandbox, "/playground/invoke", {"command": "/echo"})
    assert refused["rejected_by_client"] and refused["reason"] == "missing required option 'text'"


@pytest.mark.browser
async def test_playground_page_in_headless_chromium(running: Running, artifacts_dir: Path) -> None:
    sandbox, _ = running
    async with chromium() as browser:
        page = await browser.new_page(viewport={"width": 1000, "height": 900})
        await page.goto(sandbox.url + "/")
        await page.evaluate("window.playground.ready")
        assert await page.text_content("#status") == "rigcheck online"

        await page.type("#input", "/model name:qwen3-1")
        await page.wait_for_selector("#suggestions li:has-text('qwen3-14b')")
        await page.keyboard.press("Escape")
        await page.fill("#input", "")

        for command in ("/echo text:hello **world** count:2", "/secret", "/vote"):
            await page.fill("#input", command)
            await page.keyboard.press("Enter")
        await page.wait_for_selector(".embed-title:has-text('Echo')")
        await page.wait_for_selector("text=Only you can see this")
        await page.wait_for_function(
            "() => [...document.querySelectorAll('.embed-image img')].some(i => i.complete && i.naturalWidth === 8)"
        )
        await page.click("button:has-text('Yes')")
        await page.wait_for_selector("text=tester voted yes")
        await page.fill("#input", "/echo text:hi count:9")
        await page.keyboard.press("Enter")
        await page.wait_for_selector("#client-error:has-text('must be at most 5')")
        await page.fill("#input", "/ec")
        await page.wait_for_selector("#suggestions li:has-text('/echo')")
        await page.screenshot(path=str(artifacts_dir / "playground.png"))
