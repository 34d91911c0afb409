"""Answers to commands without Discord: for `rigcheck ask` and `rigcheck run` without a token."""

from __future__ import annotations

import contextlib
import os
from collections.abc import Mapping, Sequence
from pathlib import Path
from typing import Any

from bot.sandbox.driver import ReplyTimeout
from bot.sandbox.harness import BotProcess, Sandbox
from bot.sandbox.models import Reply
from bot.sandbox.server import ensure_loopback


def reply_summary(command: str, reply: Reply | None) -> dict[str, Any]:
    """Exactly the keys `rigcheck ask` prints: command, ok (answered, neither refused by the client, nor
    rejected by Discord, nor timed out), latency_ms, ephemeral, content, embeds, components (buttons as
    Discord would show them), files."""
    if reply is None:
        return {"command": command, "ok": False, "latency_ms": None, "ephemeral": False, "content": None,
                "embeds": [], "components": [], "files": []}
    content = reply.content
    if reply.rejected_by_client:
        content = f"(Discord would not send this: {reply.reason})"
    elif reply.error is not None:
        content = f"(Discord rejected the reply: {reply.error.status} code {reply.error.code} {reply.error.message})"
    return {
        "command": command,
        "ok": reply.ok,
        "latency_ms": round(reply.latency_ms, 1) if reply.latency_ms is not None else None,
        "ephemeral": reply.ephemeral,
        "content": content,
        "embeds": reply.embeds,
        "components": reply.components,
        "files": [{"filename": f.filename, "bytes": f.bytes, "sha256": f.sha256} for f in reply.files],
    }


async def ask(
    commands: list[str],
    *,
    bot_argv: list[str],
    locale: str = "en-US",
    save_dir: str | Path | None = None,
    env: Mapping[str, str] | None = None,
    reply_timeout_s: float = 30.0,
    admin: bool = False,
) -> list[dict[str, Any]]:
    """Starts a sandbox and the bot process, runs each command in turn, and returns one dict per command.
    `admin`: the commands come from a member with the Manage Server permission."""
    from bot.sandbox.playground import member_permissions

    results: list[dict[str, Any]] = []
    target = Path(save_dir) if save_dir is not None else None
    async with Sandbox(reply_timeout_s=reply_timeout_s, playground=False) as sandbox:
        # One question at a time, with its chart saved: wait for the chart rather than edit it in later.
        process = await sandbox.start_bot(bot_argv, env={"RIGCHECK_CHART_WAIT_S": "30", **(env or {})})
        try:
            for index, command in enumerate(commands):
                try:
                    reply: Reply | None = await sandbox.driver.invoke(
                        command, locale=locale, member_permissions=member_permissions(admin)
                    )
                except ReplyTimeout:
                    reply = None
                results.append(reply_summary(command, reply))
                if target is not None and reply is not None:
                    _save_files(target, index, reply)
        finally:
            await sandbox.stop_bot(process)
    return results


def _save_files(target: Path, index: int, reply: Reply) -> None:
    target.mkdir(parents=True, exist_ok=True)
    for file in reply.files:
        # The command index keeps two answers' `chart.png` apart.
        (target / f"{index:02d}-{Path(file.filename).name}").write_bytes(file.data)


class PlaygroundSession:
    """A running sandbox with the bot process behind it; `url` opens the playground page."""

    def __init__(self, sandbox: Sandbox, process: BotProcess) -> None:
        self.sandbox = sandbox
        self.process = process

    @property
    def url(self) -> str:
        return self.sandbox.url + "/"

    async def wait(self) -> int:
        """Returns when the bot process exits, with its status."""
        return await self.process.process.wait()

    async def close(self) -> None:
        with contextlib.suppress(ProcessLookupError):
            await self.sandbox.stop_bot(self.process)
        await self.sandbox.__aexit__(None, None, None)

    async def __aenter__(self) -> PlaygroundSession:
        return self

    async def __aexit__(self, *exc: object) -> None:
        await self.close()


async def serve_playground(
    bot_argv: Sequence[str],
    host: str = "127.0.0.1",
    port: int = 0,
    *,
    env: Mapping[str, str] | None = None,
    reply_timeout_s: float = 30.0,
    admin: bool = False,
    cwd: str | os.PathLike[str] | None = None,
) -> PlaygroundSession:
    """Starts the sandbox (with its playground page) and the bot; call `close()` when done. With `admin`
    the page starts acting as a server manager (a tick box on the page turns it off). `cwd` is where the bot
    runs: where its `.env` and relative paths such as RIGCHECK_DATA_DIR are read (default: the project)."""
    from bot.sandbox.playground import ADMIN

    ensure_loopback(host)
    sandbox = Sandbox(host=host, port=port, reply_timeout_s=reply_timeout_s)
    sandbox.server.app[ADMIN] = admin
    await sandbox.__aenter__()
    try:
        process = await sandbox.start_bot(list(bot_argv), env=env, cwd=cwd)
    except BaseException:
        await sandbox.__aexit__(None, None, None)
        raise
    return PlaygroundSession(sandbox, process)
