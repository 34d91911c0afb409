"""What the stand-ins for the Hugging Face Hub (unit and end-to-end) share."""

from __future__ import annotations

from collections.abc import AsyncIterator, Awaitable, Callable
from contextlib import asynccontextmanager

from aiohttp import web

CHUNK_BYTES = 256 * 1024


@asynccontextmanager
async def serving(handle: Callable[[web.Request], Awaitable[web.StreamResponse]], *,
                  shutdown_timeout_s: float) -> AsyncIterator[str]:
    """`handle` answering the Hub's file route on a loopback port; yields the base URL. A handler still
    sleeping for a client that gave up is cut short after `shutdown_timeout_s` (aiohttp waits 60 s)."""
    app = web.Application()
    app.router.add_get("/{org}/{name}/resolve/main/{file}", handle)
    runner = web.AppRunner(app, shutdown_timeout=shutdown_timeout_s)
    await runner.setup()
    try:
        await web.TCPSite(runner, "127.0.0.1", 0).start()
        yield f"http://127.0.0.1:{runner.addresses[0][1]}"
    finally:
        await runner.cleanup()


async def stream_chunked(request: web.Request, body: bytes) -> web.StreamResponse:
    """`body` with chunked encoding and no Content-Length, so a client cannot refuse it before reading."""
    resp = web.StreamResponse()
    resp.enable_chunked_encoding()
    await resp.prepare(request)
    try:
        for i in range(0, len(body), CHUNK_BYTES):
            await resp.write(body[i : i + CHUNK_BYTES])
        await resp.write_eof()
    except (ConnectionError, RuntimeError):
        pass  # the client hung up once it had seen enough
    return resp
