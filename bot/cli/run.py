"""`rigcheck run` and `rigcheck ask`: the bot on Discord, or the bot and the local sandbox it talks to."""

from __future__ import annotations

import argparse
import asyncio
import contextlib
import json
import os
import signal
import stat
import sys
import threading
from pathlib import Path
from typing import Any

from bot.cli.common import lang
from bot.render.text import t


def _bot_argv() -> list[str]:
    return [sys.executable, "-m", "bot"]


def embed_as_text(embed: dict[str, Any]) -> str:
    """An embed the way a terminal can show it: title, description, fields, footer."""
    lines = []
    if embed.get("title"):
        lines.append(f"== {embed['title']} ==")
    if embed.get("description"):
        lines.append(embed["description"])
    for field in embed.get("fields", []):
        lines.append(f"-- {field['name']}")
        lines.append(field["value"])
    if embed.get("footer", {}).get("text"):
        # Each footer line in its own brackets: a defaults note sits on its own line above the standing footer.
        lines.extend(f"({line})" for line in embed['footer']['text'].splitlines() if line.strip())
    return "\n".join(lines)


def _sandbox_env() -> None:
    """Sandbox runs keep their data under ./data and never clash with a production web port."""
    os.environ.setdefault("RIGCHECK_HTTP_PORT", "0")
    if not os.environ.get("DISCORD_TOKEN"):
        os.environ.pop("DISCORD_TOKEN", None)


# --- ask -------------------------------------------------------------------------------------------


def cmd_ask(_svc: Any, args: argparse.Namespace) -> int:
    from bot.sandbox.ask import ask

    _sandbox_env()
    loc = lang(args)
    # The asker's Discord language: --locale, else the one --lang gave the CLI, so the reply matches its wrapper.
    locale = args.locale or loc or "en-US"
    from bot.sandbox.harness import BotStartError

    try:
        results = asyncio.run(ask(list(args.commands), bot_argv=_bot_argv(), locale=locale, save_dir=args.save,
                                  admin=args.admin))
    except BotStartError as exc:
        return _bot_did_not_start(loc, exc)
    for result in results:
        if args.json:
            sys.stdout.write(json.dumps(result, ensure_ascii=False) + "\n")
            continue
        private = t(loc, "cli.ask.private") if result["ephemeral"] else ""
        # No latency: the client refused to send it, so there is no answer to time.
        took = (t(loc, "cli.ask.not_sent") if result["latency_ms"] is None
                else t(loc, "cli.ask.took", ms=result["latency_ms"], private=private))
        print(f"> {result['command']}   ({took})")
        if result["content"]:
            print(result["content"])
        for embed in result["embeds"]:
            print(embed_as_text(embed))
        for f in result["files"]:
            print(t(loc, "cli.ask.attached", filename=f["filename"], size=f["bytes"]))
        print()
    # Scripts and CI read the status: one command refused, rejected or unanswered fails the run.
    return 0 if all(result["ok"] for result in results) else 1


def _register_ask(sub: Any) -> None:
    p = sub.add_parser(
        "ask", help="run slash commands against the bot in the local sandbox and print the replies",
        description="Run slash commands against the bot in the local sandbox and print the replies. Exit status: "
                    "0 when every command was answered; 1 when any was refused by the client, rejected by "
                    "Discord or got no reply in time (all commands still run and print).")
    p.add_argument("commands", nargs="+", help='e.g. "/fit gpu:T4 model:qwen3-8b"')
    p.add_argument("--locale", default=None, help="Discord locale, e.g. zh-CN (default: --lang's, else en-US)")
    p.add_argument("--admin", action="store_true", help="ask as a server manager (for /daily, /settings server)")
    p.add_argument("--json", action="store_true", help="one JSON object per command")
    p.add_argument("--save", metavar="DIR", help="write attached charts here")
    p.set_defaults(func=cmd_ask)


def _write(path: Path, data: bytes) -> None:
    path.parent.mkdir(parents=True, exist_ok=True)
    path.write_bytes(data)


# --- run -------------------------------------------------------------------------------------------


def _stdin_lines(loop: asyncio.AbstractEventLoop) -> asyncio.Queue[str | None]:
    """Lines from stdin, then None at end of input.

    Read on a daemon thread: a thread blocked in readline() cannot be cancelled, and the event loop's
    default executor would make the process wait for it at exit.
    """
    queue: asyncio.Queue[str | None] = asyncio.Queue()

    def pump() -> None:
        for line in sys.stdin:
            loop.call_soon_threadsafe(queue.put_nowait, line)
        loop.call_soon_threadsafe(queue.put_nowait, None)

    threading.Thread(target=pump, name="stdin", daemon=True).start()
    return queue


async def _prompt(session: Any, args: argparse.Namespace) -> None:
    """Answer commands typed at the terminal until end of input."""
    from bot.sandbox.playground import member_permissions

    out_dir = Path(args.save)
    lines = _stdin_lines(asyncio.get_running_loop())
    while (line := await lines.get()) is not None:
        command = line.strip()
        if not command:
            continue
        if not command.startswith("/"):
            command = "/" + command
        reply = await session.sandbox.driver.invoke(
            command, locale=args.locale, member_permissions=member_permissions(args.admin)
        )
        if reply.rejected_by_client:
            print(t(lang(args), "cli.run.refused", reason=reply.reason))
        if reply.content:
            print(reply.content)
        for embed in reply.embeds:
            print(embed_as_text(embed))
        for f in reply.files:
            path = out_dir / f"{reply.interaction_id}-{Path(f.filename).name}"
            await asyncio.to_thread(_write, path, f.data)
            print(t(lang(args), "cli.run.chart_saved", path=path))
        print(flush=True)


async def _run_sandbox(args: argparse.Namespace) -> int:
    from bot.sandbox.ask import serve_playground
    from bot.sandbox.harness import BotStartError

    _sandbox_env()
    loop = asyncio.get_running_loop()
    stopping = asyncio.Event()
    # SIGTERM (docker/podman stop, systemd) and Ctrl-C both stop the bot child first, then exit: without
    # this a SIGTERM killed only this process and left the bot running on its own.
    for sig in (signal.SIGTERM, signal.SIGINT):
        loop.add_signal_handler(sig, stopping.set)
    try:
        # The bot runs where `rigcheck run` was started, as `python -m bot` would: that directory's `.env`
        # and relative paths (RIGCHECK_DATA_DIR=./data) are read there, not in the project.
        starting = asyncio.ensure_future(serve_playground(_bot_argv(), host="127.0.0.1", port=args.port,
                                                          admin=args.admin, cwd=os.getcwd()))
        interrupted = asyncio.ensure_future(stopping.wait())
        await asyncio.wait([starting, interrupted], return_when=asyncio.FIRST_COMPLETED)
        interrupted.cancel()
        if stopping.is_set():
            # Ctrl-C while starting reaches the bot too (same process group) and it exits with -2; that is
            # the interrupt, not a failure to start. Cancelling the start stops the bot and the sandbox.
            starting.cancel()
            with contextlib.suppress(asyncio.CancelledError, BotStartError):
                session = await starting
                await session.close()
            return 0
        session = starting.result()
        try:
            print(t(lang(args), "cli.run.banner", url=session.url), flush=True)
            bot_exit = asyncio.ensure_future(session.wait())
            waits: list[asyncio.Future[Any]] = [bot_exit, asyncio.ensure_future(stopping.wait())]
            if not sys.stdin.isatty() and not args.prompt and _piped(sys.stdin):
                print(t(lang(args), "cli.run.piped"), file=sys.stderr, flush=True)
            if sys.stdin.isatty() or args.prompt:
                waits.append(asyncio.ensure_future(_prompt(session, args)))
            try:
                done, _ = await asyncio.wait(waits, return_when=asyncio.FIRST_COMPLETED)
            finally:
                for waiting in waits:
                    waiting.cancel()
            for finished in done:
                if finished is not bot_exit and finished.exception() is not None:
                    raise finished.exception()  # type: ignore[misc]
            if bot_exit in done:
                status = int(bot_exit.result())
                if status:
                    print("rigcheck: " + t(lang(args), "cli.run.bot_exited", status=status), file=sys.stderr)
                return status
            return 0
        finally:
            await session.close()
    finally:
        for sig in (signal.SIGTERM, signal.SIGINT):
            loop.remove_signal_handler(sig)


def _piped(stream: Any) -> bool:
    """Commands piped or redirected in from a file (not a service's empty /dev/null)."""
    try:
        mode = os.fstat(stream.fileno()).st_mode
    except (OSError, ValueError):
        return False
    return stat.S_ISFIFO(mode) or stat.S_ISREG(mode)


def _token_given() -> bool:
    """DISCORD_TOKEN from the environment or from `.env` in the current directory, as the bot reads it."""
    if os.environ.get("DISCORD_TOKEN"):
        return True
    from dotenv import dotenv_values

    from bot.settings import Settings

    env_file = Settings.model_config.get("env_file")
    if not isinstance(env_file, (str, os.PathLike)) or "DISCORD_TOKEN" in os.environ:
        return False  # an empty DISCORD_TOKEN in the environment wins over `.env`, as in Settings
    return bool(dotenv_values(env_file, encoding=Settings.model_config.get("env_file_encoding")).get("DISCORD_TOKEN"))


def _bot_did_not_start(loc: str | None, exc: Any) -> int:
    """What the bot printed says why (a full disk, a bad setting); the harness's traceback would only hide it."""
    if exc.status is None:
        print("rigcheck: " + t(loc, "cli.run.bot_not_ready"), file=sys.stderr)
    else:
        print("rigcheck: " + t(loc, "cli.run.bot_not_started", status=exc.status), file=sys.stderr)
    if exc.output.strip():
        print(exc.output.rstrip(), file=sys.stderr)
    return exc.status or 1


def cmd_run(_svc: Any, args: argparse.Namespace) -> int:
    # Ctrl-C stops `run` at any moment, starting or started, with status 0 and nothing printed.
    from bot.sandbox.harness import BotStartError

    try:
        if _token_given():
            from bot.__main__ import main as bot_main

            return asyncio.run(bot_main())
        return asyncio.run(_run_sandbox(args))
    except KeyboardInterrupt:
        return 0
    except BotStartError as exc:
        return _bot_did_not_start(lang(args), exc)
    except OSError as exc:
        print("rigcheck: " + t(lang(args), "cli.run.no_port", port=args.port, reason=exc.strerror or exc),
              file=sys.stderr)
        return 2


def _register_run(sub: Any) -> None:
    p = sub.add_parser("run", help="run the bot: on Discord with DISCORD_TOKEN, else in the local sandbox")
    p.add_argument("--port", type=int, default=8765, help="sandbox/playground port on 127.0.0.1 (0 = any free)")
    p.add_argument("--locale", default="en-US")
    p.add_argument("--save", default="rigcheck-charts", help="where the terminal prompt saves charts")
    p.add_argument("--prompt", action="store_true", help="read commands from stdin even when it is not a terminal")
    p.add_argument("--admin", action="store_true",
                   help="act as a server manager in the sandbox (try /daily preview, /settings server)")
    p.set_defaults(func=cmd_run)


def register(sub: Any) -> None:
    _register_ask(sub)
    _register_run(sub)
