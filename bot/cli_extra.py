"""CLI commands that need the bot's heavier parts (discord.py, the sandbox); registered by `bot.cli`."""

from __future__ import annotations

import argparse
import asyncio
import json
import os
import signal
import sys
import threading
from collections.abc import Callable
from pathlib import Path
from typing import Any

REGISTER: list[Callable[[Any], None]] = []


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
        lines.append(f"({embed['footer']['text']})")
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
    results = asyncio.run(ask(list(args.commands), bot_argv=_bot_argv(), locale=args.locale, save_dir=args.save,
                              admin=args.admin))
    for result in results:
        if args.json:
            sys.stdout.write(json.dumps(result, ensure_ascii=False) + "\n")
            continue
        private = ", only you can see this" if result["ephemeral"] else ""
        # No latency: the client refused to send it, so there is no answer to time.
        took = "not sent" if result["latency_ms"] is None else f"{result['latency_ms']} ms{private}"
        print(f"> {result['command']}   ({took})")
        if result["content"]:
            print(result["content"])
        for embed in result["embeds"]:
            print(embed_as_text(embed))
        for f in result["files"]:
            print(f"[attached {f['filename']}, {f['bytes']} bytes]")
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
    p.add_argument("--locale", default="en-US", help="Discord locale, e.g. zh-CN")
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
            print(f"(Discord would not send this: {reply.reason})")
        if reply.content:
            print(reply.content)
        for embed in reply.embeds:
            print(embed_as_text(embed))
        for f in reply.files:
            path = out_dir / f"{reply.interaction_id}-{Path(f.filename).name}"
            await asyncio.to_thread(_write, path, f.data)
            print(f"[chart saved to {path}]")
        print(flush=True)


async def _run_sandbox(args: argparse.Namespace) -> int:
    from bot.sandbox.ask import serve_playground

    _sandbox_env()
    loop = asyncio.get_running_loop()
    stopping = asyncio.Event()
    # SIGTERM (docker/podman stop, systemd) and Ctrl-C both stop the bot child first, then exit: without
    # this a SIGTERM killed only this process and left the bot running on its own.
    for sig in (signal.SIGTERM, signal.SIGINT):
        loop.add_signal_handler(sig, stopping.set)
    try:
        session = await serve_playground(_bot_argv(), host="127.0.0.1", port=args.port, admin=args.admin)
        try:
            print(
                f"rigcheck is running against the local Discord sandbox (no DISCORD_TOKEN set).\n"
                f"Playground: {session.url}\n"
                f"Type a slash command here (e.g. /fit gpu:T4 model:qwen3-8b), or Ctrl-C to stop.",
                flush=True,
            )
            bot_exit = asyncio.ensure_future(session.wait())
            waits: list[asyncio.Future[Any]] = [bot_exit, asyncio.ensure_future(stopping.wait())]
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
                    print(f"rigcheck: the bot exited with status {status}", file=sys.stderr)
                return status
            return 0
        finally:
            await session.close()
    finally:
        for sig in (signal.SIGTERM, signal.SIGINT):
            loop.remove_signal_handler(sig)


def cmd_run(_svc: Any, args: argparse.Namespace) -> int:
    if os.environ.get("DISCORD_TOKEN"):
        from bot.__main__ import main as bot_main

        return asyncio.run(bot_main())
    try:
        return asyncio.run(_run_sandbox(args))
    except KeyboardInterrupt:
        return 0
    except OSError as exc:
        print(f"rigcheck: cannot start the sandbox on 127.0.0.1:{args.port} ({exc.strerror or exc}); "
              f"try --port 0 for any free port", file=sys.stderr)
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


# --- finetune --------------------------------------------------------------------------------------


def cmd_finetune(svc: Any, args: argparse.Namespace) -> int:
    from bot.finetune_cli import finetune_json

    data = finetune_json(svc, {k: v for k, v in vars(args).items() if k not in ("func", "command", "json")})
    if args.json:
        sys.stdout.write(json.dumps(data) + "\n")
        return 0
    s = data["settings"]
    verdict = {"fits": "fits", "tight": "fits, tight", "does_not_fit": "does not fit"}[data["verdict"]]
    mem = data["memory_gb"]
    # The verdict weighs what must stay on the GPU; paged optimizer state may move to host memory.
    weighed = f"{mem['required']:.2f} of {data['usable_gb']:.2f} GiB usable per GPU"
    if mem["pageable"] and mem["total"] > data["usable_gb"]:
        weighed += f", {mem['total']:.2f} GiB with the paged optimizer state"
    print(
        f"{data['method']} fine-tuning of {data['model']['name']} on {data['gpu']['count']}× {data['gpu']['name']}: "
        f"{verdict} ({weighed})"
    )
    knobs = [data["framework"] or "default", s["regime"], s["optimizer"], f"checkpointing {s['checkpointing_mode']}",
             f"loss {s['loss']}", f"attention {s['attention']}"]
    if s["activation_offload"]:
        knobs.append("activation offload")
    print("  " + " · ".join(knobs))
    if mem["pageable"] and mem["total"] > data["usable_gb"] and data["verdict"] != "does_not_fit":
        print(f"  the paged optimizer state ({mem['pageable']:.2f} GiB) spills to CPU memory: it runs, slower")
    for key, value in mem.items():
        print(f"  {key:14s} {value:8.2f} GiB")
    print(f"  largest seq {data['max_seq'] or 'none fits'}, largest micro-batch {data['max_batch'] or 'none fits'}"
          f" (at seq {s['seq']})")
    for c in data["changes"]:
        print(f"  try {_FINETUNE_CHANGE_FLAGS[c['change']].format(c['to'])}: {c['total_gb']:.2f} GiB ({c['verdict']})")
    return 0


# Each suggested change (estimator.finetune.ChangeKey) as the flags that make it.
_FINETUNE_CHANGE_FLAGS = {
    "checkpointing": "--checkpointing-mode {}",
    "optimizer_8bit": "--optimizer {}",
    "offload": "--activation-offload",
    "lora": "--method {}",
    "qlora": "--method {}",
    "framework": "--framework {}",
    "seq": "--seq {}",
    "batch": "--batch {}",
    "qlora_seq": "--method qlora --seq {}",
}


def _register_finetune(sub: Any) -> None:
    from estimator import finetune as ft
    from estimator.finetune_presets import FRAMEWORKS

    def choices(literal: Any) -> list[str]:
        return list(literal.__args__)

    p = sub.add_parser("finetune", help="peak memory of full, LoRA or QLoRA fine-tuning")
    p.add_argument("--gpu", required=True)
    p.add_argument("--model", required=True)
    p.add_argument("--method", default="qlora", choices=choices(ft.Method))
    p.add_argument("--framework", choices=list(FRAMEWORKS), help="take every unset knob from this framework")
    p.add_argument("--seq", default="2048", help="sequence length (2048, 8k, 32k)")
    p.add_argument("--batch", type=int, default=1, help="micro-batch per GPU")
    p.add_argument("--gpus", type=int, default=1)
    p.add_argument("--sharding", choices=choices(ft.Sharding))
    p.add_argument("--offload", choices=choices(ft.Offload), help="CPU offload of optimizer state or parameters")
    p.add_argument("--rank", type=int)
    p.add_argument("--targets", choices=choices(ft.Targets))
    p.add_argument("--lora-dropout", type=float, dest="lora_dropout")
    p.add_argument("--lora-head", action=argparse.BooleanOptionalAction, default=None, dest="lora_head")
    p.add_argument("--train-embeddings", action=argparse.BooleanOptionalAction, default=None, dest="train_embeddings")
    p.add_argument("--optimizer", choices=choices(ft.Optimizer))
    p.add_argument("--optimizer-in-backward", action=argparse.BooleanOptionalAction, default=None,
                   dest="optimizer_in_backward")
    p.add_argument("--fused-optimizer", action=argparse.BooleanOptionalAction, default=None, dest="fused_optimizer",
                   help="torch AdamW(fused=True): no foreach step temporaries")
    p.add_argument("--regime", choices=choices(ft.Regime),
                   help="bf16: pure bf16 (no fp32 copy); amp_bf16/amp_fp16: fp32 master weights; fp32")
    p.add_argument("--precision", choices=choices(ft.Precision), help="compute dtype (see --regime)")
    p.add_argument("--checkpointing", action=argparse.BooleanOptionalAction, default=None)
    p.add_argument("--checkpointing-mode", choices=choices(ft.Checkpointing), dest="checkpointing_mode")
    p.add_argument("--activation-offload", action=argparse.BooleanOptionalAction, default=None,
                   dest="activation_offload")
    p.add_argument("--attention", choices=choices(ft.Attention))
    p.add_argument("--loss", choices=choices(ft.Loss),
                   help="fp32_upcast (Hugging Face >= 4.46), fp32_upcast_forward (older), chunked, fused")
    p.add_argument("--packing", action=argparse.BooleanOptionalAction, default=None)
    p.add_argument("--grad-accum", type=int, dest="gradient_accumulation_steps", help="gradient accumulation steps")
    p.add_argument("--json", action="store_true")
    p.set_defaults(func=cmd_finetune)


REGISTER.extend([_register_ask, _register_run, _register_finetune])


# --- trigger-daily ---------------------------------------------------------------------------------


def _register_trigger_daily(sub: Any) -> None:
    from bot.web.trigger import register

    register(sub)


REGISTER.append(_register_trigger_daily)


# --- state export / import -------------------------------------------------------------------------


def _state_target(given: str | None, *, default_sqlite: bool) -> str:
    """A SQLite path or a postgresql:// URL; by default the one the bot itself would use."""
    if given:
        return given
    from bot.settings import Settings

    settings = Settings()
    if settings.database_url:
        return settings.database_url
    if default_sqlite:
        return str(Path(settings.rigcheck_data_dir) / "state.sqlite3")
    raise ValueError("say where to import into: --to postgresql://… or set RIGCHECK_DATABASE_URL")


async def _export(target: str) -> dict[str, Any]:
    from bot.store.state import StateStore

    async with StateStore.open(target) as store:
        return await store.export_tables()


async def _import(target: str, data: dict[str, Any]) -> dict[str, int]:
    from bot.store.state import StateStore

    async with StateStore.open(target) as store:
        return await store.import_tables(data)


def cmd_state(_svc: Any, args: argparse.Namespace) -> int:
    from bot.store.db import redacted
    from bot.store.errors import StateStoreError

    try:
        if args.action == "export":
            source = _state_target(args.source, default_sqlite=True)
            if not source.startswith(("postgresql:", "postgres:")) and not Path(source).is_file():
                raise ValueError(f"no state database at {source}")  # exporting must not create one
            data = asyncio.run(_export(source))
            text = json.dumps(data, ensure_ascii=False)
            if args.output in (None, "-"):
                sys.stdout.write(text + "\n")
            else:
                out = Path(args.output)
                out.write_text(text + "\n", encoding="utf-8")
                out.chmod(0o600)  # webhook URLs carry their own tokens
            counts = {t: len(v["rows"]) for t, v in data["tables"].items()}
            print(f"rigcheck: exported {redacted(source)}: {counts}", file=sys.stderr)
        else:
            target = _state_target(args.target, default_sqlite=False)
            raw = sys.stdin.read() if args.input == "-" else Path(args.input).read_text(encoding="utf-8")
            counts = asyncio.run(_import(target, json.loads(raw)))
            print(f"rigcheck: imported into {redacted(target)}: {counts}", file=sys.stderr)
    except (StateStoreError, ValueError, OSError) as exc:
        print(f"rigcheck: {exc}", file=sys.stderr)
        return 2
    return 0


def _register_state(sub: Any) -> None:
    p = sub.add_parser("state", help="export the durable state, or import it into another database",
                       description="Move a single-process SQLite state into PostgreSQL: "
                                   "`rigcheck state export -o state.json` with the bot stopped, then "
                                   "`RIGCHECK_DATABASE_URL=postgresql://… rigcheck state import state.json`.")
    actions = p.add_subparsers(dest="action", required=True)
    exp = actions.add_parser("export", help="write every table as JSON")
    exp.add_argument("--from", dest="source", metavar="TARGET",
                     help="SQLite file or postgresql:// URL (default: RIGCHECK_DATABASE_URL, else "
                          "<RIGCHECK_DATA_DIR>/state.sqlite3)")
    exp.add_argument("-o", "--output", metavar="FILE", help="where to write (default: stdout)")
    imp = actions.add_parser("import", help="load an export into an empty state database")
    imp.add_argument("input", metavar="FILE", help="an export, or - for stdin")
    imp.add_argument("--to", dest="target", metavar="TARGET",
                     help="postgresql:// URL or SQLite file (default: RIGCHECK_DATABASE_URL)")
    p.set_defaults(func=cmd_state)


REGISTER.append(_register_state)


def _register_reports(sub: Any) -> None:
    from bot.reports.cli import register

    register(sub)


REGISTER.append(_register_reports)
