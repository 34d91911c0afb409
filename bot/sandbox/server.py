"""The stand-in Discord: an aiohttp app serving REST under /api/v10 and the gateway at /gateway."""

from __future__ import annotations

import ipaddress
import logging
from pathlib import Path
from types import TracebackType
from typing import TypedDict

from aiohttp import web

from bot.sandbox import routes_interactions, routes_rest
from bot.sandbox.http_util import STATE, record_middleware
from bot.sandbox.state import SandboxState
from bot.sandbox.world import World

log = logging.getLogger(__name__)

STATIC_DIR = Path(__file__).with_name("static")


def ensure_loopback(host: str) -> None:
    """The sandbox must never be reachable from outside the machine."""
    if host == "localhost":
        return
    try:
        if ipaddress.ip_address(host).is_loopback:
            return
    except ValueError:
        pass
    raise ValueError(f"the sandbox binds to loopback addresses only, not {host!r}")


def create_app(state: SandboxState, *, playground: bool = True) -> web.Application:
    app = web.Application(middlewares=[record_middleware], client_max_size=64 * 1024 * 1024)
    app[STATE] = state
    app.router.add_routes(routes_rest.routes)
    app.router.add_routes(routes_interactions.routes)
    app.router.add_get("/gateway", state.hub.handle)
    if playground:
        from bot.sandbox import playground as playground_routes

        playground_routes.setup(app)

    async def close_gateway(_: web.Application) -> None:
        await state.hub.close_all()

    app.on_shutdown.append(close_gateway)
    return app


class ServerOptions(TypedDict, total=False):
    """SandboxServer's keyword options, for a wrapper that passes them through (defaults stay with the server)."""

    host: str
    port: int
    response_deadline_s: float
    playground: bool


class SandboxServer:
    """Runs the app on a loopback port; `port=0` picks a free one."""

    def __init__(
        self,
        world: World | None = None,
        *,
        host: str = "127.0.0.1",
        port: int = 0,
        response_deadline_s: float = 3.0,
        playground: bool = True,
    ) -> None:
        ensure_loopback(host)
        self.host = host
        self.port = port
        self.state = SandboxState(world or World(), response_deadline_s=response_deadline_s)
        self.app = create_app(self.state, playground=playground)
        self._runner: web.AppRunner | None = None

    @property
    def url(self) -> str:
        return self.state.base_url

    async def start(self) -> None:
        self._runner = web.AppRunner(self.app, access_log=None, shutdown_timeout=1.0)
        await self._runner.setup()
        site = web.TCPSite(self._runner, self.host, self.port)
        await site.start()
        server = site._server
        sockets = getattr(server, "sockets", None) or []
        self.port = sockets[0].getsockname()[1] if sockets else self.port
        host = f"[{self.host}]" if ":" in self.host else self.host
        self.state.base_url = f"http://{host}:{self.port}"
        log.info("sandbox Discord listening on %s", self.state.base_url)

    async def stop(self) -> None:
        if self._runner is not None:
            await self._runner.cleanup()
            self._runner = None

    async def __aenter__(self) -> SandboxServer:
        await self.start()
        return self

    async def __aexit__(
        self, exc_type: type[BaseException] | None, exc: BaseException | None, tb: TracebackType | None
    ) -> None:
        await self.stop()
