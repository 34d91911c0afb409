"""One place that starts the stand-in Discord and runs the bot against it as a separate process."""

from __future__ import annotations

import asyncio
import contextlib
import logging
import os
import signal
import time
from collections import deque
from collections.abc import Callable, Mapping, Sequence
from pathlib import Path
from types import TracebackType
from typing import Unpack

from bot.sandbox.driver import Driver
from bot.sandbox.faults import FaultInjector
from bot.sandbox.models import RecordedRequest
from bot.sandbox.server import SandboxServer, ServerOptions
from bot.sandbox.state import SandboxState, Violation
from bot.sandbox.world import World

# The variable `bot.lifeline` reads to end the bot with this process (the sandbox imports nothing from the rest
# of bot, so the name is repeated here; tests/deploy/test_lifeline.py holds the two equal).
PARENT_PID_ENV = "RIGCHECK_PARENT_PID"

log = logging.getLogger(__name__)

PROJECT_ROOT = Path(__file__).resolve().parents[2]
STDERR_TAIL_LINES = 200


class BotStartError(RuntimeError):
    """The bot process exited (`status`), or did not sync and connect in time (`status` None); `output` is the
    tail of what it printed, which says why."""

    def __init__(self, message: str, *, status: int | None, output: str) -> None:
        super().__init__(message)
        self.status = status
        self.output = output


class BotProcess:
    """A running bot process and the tail of what it printed."""

    def __init__(self, process: asyncio.subprocess.Process, argv: Sequence[str]) -> None:
        self.process = process
        self.argv = list(argv)
        self.output: deque[str] = deque(maxlen=STDERR_TAIL_LINES)
        self._pump = asyncio.create_task(self._read_output())

    @property
    def pid(self) -> int:
        return self.process.pid

    @property
    def returncode(self) -> int | None:
        return self.process.returncode

    def output_tail(self, lines: int = 60) -> str:
        return "\n".join(list(self.output)[-lines:])

    async def _read_output(self) -> None:
        # Chunks, not readline(): one huge line must not stop the pump and leave the bot blocked on a full pipe.
        stream = self.process.stdout
        if stream is None:
            return
        pending = b""
        while chunk := await stream.read(65536):
            *lines, pending = (pending + chunk).split(b"\n")
            self.output.extend(line.decode(errors="replace").rstrip() for line in lines)
            if len(pending) > 65536:
                self.output.append(pending.decode(errors="replace"))
                pending = b""
        if pending:
            self.output.append(pending.decode(errors="replace").rstrip())

    async def stop(self, timeout: float = 5.0) -> int:  # noqa: ASYNC109 - a plain deadline, as in asyncio.wait_for
        """SIGTERM, then SIGKILL after `timeout` seconds; returns the exit status."""
        if self.process.returncode is None:
            with contextlib.suppress(ProcessLookupError):
                self.process.send_signal(signal.SIGTERM)
            try:
                await asyncio.wait_for(self.process.wait(), timeout)
            except TimeoutError:
                with contextlib.suppress(ProcessLookupError):
                    self.process.kill()
                await self.process.wait()
        with contextlib.suppress(asyncio.CancelledError, TimeoutError):
            await asyncio.wait_for(self._pump, 2.0)
        return self.process.returncode if self.process.returncode is not None else -1


class Sandbox:
    """`async with Sandbox() as sb:` — a loopback Discord with a driver, ready for a bot process."""

    def __init__(
        self,
        world: World | None = None,
        *,
        reply_timeout_s: float = 10.0,
        strict: bool = True,
        **server: Unpack[ServerOptions],
    ) -> None:
        self.server = SandboxServer(world, **server)
        self.driver = Driver(self.server.state, default_timeout=reply_timeout_s)
        # What a test does most, one step shorter: the driver's and the state's own methods, signatures and all.
        self.invoke = self.driver.invoke
        self.wait_for_reply = self.driver.wait_for_reply
        self.wait_for_message = self.server.state.wait_for_message
        self._bots: list[BotProcess] = []
        # Strict: leaving the block fails if the bot sent anything Discord would have refused.
        self.strict = strict

    # -- shortcuts -----------------------------------------------------------------------------------
    @property
    def state(self) -> SandboxState:
        return self.server.state

    @property
    def world(self) -> World:
        return self.server.state.world

    @property
    def url(self) -> str:
        return self.server.url

    @property
    def api_base(self) -> str:
        return self.state.api_base

    @property
    def gateway_url(self) -> str:
        return self.state.gateway_url

    @property
    def faults(self) -> FaultInjector:
        return self.state.faults

    @property
    def requests(self) -> list[RecordedRequest]:
        return self.state.log.requests

    def bot_env(self) -> dict[str, str]:
        return {
            "DISCORD_TOKEN": self.world.token,
            "DISCORD_API_BASE": self.api_base,
            "DISCORD_GATEWAY_URL": self.gateway_url,
        }

    async def wait_for_request(
        self,
        method: str | None = None,
        route_glob: str | None = None,
        *,
        after_seq: int = 0,
        timeout: float = 10.0,  # noqa: ASYNC109 - a plain deadline, as in asyncio.wait_for
    ) -> RecordedRequest:
        return await self.state.log.wait_for(method, route_glob, after_seq=after_seq, timeout=timeout)

    async def drop_gateway(self, shard_id: int | None = None) -> list[int]:
        """Closes the gateway socket(s); the client should RESUME on its own."""
        return await self.state.hub.drop(shard_id)

    async def gateway_outage(self, down: bool = True) -> None:
        """Drop every shard and refuse reconnects until called again with `down=False`."""
        await self.state.hub.outage(down)

    async def wait_for_resume(self, shard_id: int = 0, *, resumes: int = 1, timeout: float = 10.0) -> None:  # noqa: ASYNC109 - a plain deadline, as in asyncio.wait_for
        def check() -> bool | None:
            session = self.state.hub.by_shard.get(shard_id)
            return True if session is not None and session.resumes >= resumes and session.connected else None

        await self.state.hub.changed.wait_until(check, timeout)

    # -- lifecycle ---------------------------------------------------------------------------------
    async def __aenter__(self) -> Sandbox:
        await self.server.start()
        return self

    async def __aexit__(
        self, exc_type: type[BaseException] | None, exc: BaseException | None, tb: TracebackType | None
    ) -> None:
        for bot in list(self._bots):
            await self.stop_bot(bot)
        await self.server.stop()
        refused = self.bot_violations()
        if self.strict and exc_type is None and refused:
            raise AssertionError(
                f"the bot sent {len(refused)} request(s) Discord would refuse:\n"
                + "\n".join(v.describe() for v in refused[:10]))

    def bot_violations(self) -> list[Violation]:
        """Requests from the bot process (discord.py) that Discord would have answered 400."""
        return [v for v in self.state.violations if v.from_discord_py]

    async def start_bot(
        self,
        argv: Sequence[str],
        env: Mapping[str, str] | None = None,
        *,
        cwd: str | os.PathLike[str] | None = None,
        ready_timeout: float = 30.0,
        wait_for_sync: bool = True,
    ) -> BotProcess:
        """Starts the bot and returns once it has synced commands and finished IDENTIFY → READY."""
        full_env = dict(os.environ)
        full_env.update(env or {})
        full_env.update(self.bot_env())
        full_env["PYTHONPATH"] = os.pathsep.join(filter(None, [str(PROJECT_ROOT), full_env.get("PYTHONPATH")]))
        full_env["PYTHONUNBUFFERED"] = "1"
        full_env["NO_PROXY"] = "127.0.0.1,localhost,::1"
        # The bot ends with this process even when it is killed outright (SIGKILL, a closed terminal).
        full_env[PARENT_PID_ENV] = str(os.getpid())
        syncs_before = self.state.commands.syncs
        identifies_before = self.state.hub.identifies
        process = await asyncio.create_subprocess_exec(
            *argv,
            cwd=str(cwd or PROJECT_ROOT),
            env=full_env,
            stdin=asyncio.subprocess.DEVNULL,
            stdout=asyncio.subprocess.PIPE,
            stderr=asyncio.subprocess.STDOUT,
        )
        bot = BotProcess(process, argv)
        self._bots.append(bot)

        def ready() -> bool:
            if process.returncode is not None:
                return True
            synced = not wait_for_sync or self.state.commands.syncs > syncs_before
            return synced and self.state.hub.identifies > identifies_before and self.state.hub.all_ready()

        started = time.monotonic()
        try:
            await _poll_until(ready, ready_timeout)
        except TimeoutError:
            await self.stop_bot(bot)
            raise BotStartError(
                f"bot {list(argv)} did not sync and connect within {ready_timeout:.0f}s\n--- its output ---\n"
                + bot.output_tail(), status=None, output=bot.output_tail()
            ) from None
        if process.returncode is not None:
            await self.stop_bot(bot)
            raise BotStartError(
                f"bot {list(argv)} exited with status {process.returncode}\n--- its output ---\n" + bot.output_tail(),
                status=process.returncode, output=bot.output_tail()
            )
        log.info("bot pid %s ready after %.2fs", process.pid, time.monotonic() - started)
        return bot

    async def stop_bot(self, bot: BotProcess, timeout: float = 5.0) -> int:  # noqa: ASYNC109 - a plain deadline, as in asyncio.wait_for
        status = await bot.stop(timeout)
        if bot in self._bots:
            self._bots.remove(bot)
        return status


async def _poll_until(check: Callable[[], bool], timeout: float, interval: float = 0.05) -> None:  # noqa: ASYNC109 - a plain deadline, as in asyncio.wait_for
    """Polls rather than waits on events because a process exit must end the wait too."""
    deadline = time.monotonic() + timeout
    while not check():
        if time.monotonic() >= deadline:
            raise TimeoutError
        await asyncio.sleep(interval)
