from __future__ import annotations

import hashlib
from pathlib import Path
from types import ModuleType

import pytest

from bot.sandbox.ask import ask

pytestmark = pytest.mark.e2e


async def test_ask_returns_one_summary_per_command(
    tmp_path: Path, minibot: ModuleType, minibot_argv: list[str]
) -> None:
    results = await ask(["/ping", "/echo text:hi", "/echo nope:1", "/vote"], bot_argv=minibot_argv,
                        save_dir=tmp_path)
    assert [set(r) for r in results] == [
        {"command", "ok", "latency_ms", "ephemeral", "content", "embeds", "components", "files"}] * 4
    ping, echo, refused, vote = results
    assert [r["ok"] for r in results] == [True, True, False, True]
    # Buttons come back as Discord shows them: action rows of buttons with their custom ids.
    buttons = [b for row in vote["components"] for b in row["components"]]
    assert [(b["label"], b["custom_id"]) for b in buttons] == [("Yes", "vote:yes"), ("Later", "vote:later")]
    assert ping["components"] == []
    assert ping["content"] == "pong from shard 0" and ping["files"] == []
    assert echo["embeds"][0]["description"] == "hi"
    digest = hashlib.sha256(minibot.ECHO_PNG).hexdigest()
    assert echo["files"] == [{"filename": "echo.png", "bytes": len(minibot.ECHO_PNG), "sha256": digest}]
    assert (tmp_path / "01-echo.png").read_bytes() == minibot.ECHO_PNG
    assert refused["content"].startswith("(Discord would not send this: unknown option 'nope'")


async def test_serve_playground_runs_until_closed(minibot_argv: list[str]) -> None:
    import aiohttp

    from bot.sandbox import serve_playground

    session = await serve_playground(minibot_argv)
    try:
        assert session.url.startswith("http://127.0.0.1:")
        async with aiohttp.ClientSession() as http, http.get(session.url) as page:
            assert page.status == 200 and "rigcheck sandbox" in await page.text()
    finally:
        await session.close()
    assert session.process.returncode is not None


async def test_only_loopback_addresses(minibot_argv: list[str]) -> None:
    from bot.sandbox import Sandbox, serve_playground

    with pytest.raises(ValueError, match="loopback"):
        await serve_playground(minibot_argv, host="0.0.0.0")
    with pytest.raises(ValueError, match="loopback"):
        Sandbox(host="192.168.1.10")
