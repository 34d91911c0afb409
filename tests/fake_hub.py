"""What the stand-ins for the Hugging Face Hub (unit and end-to-end) share."""

from __future__ import annotations

from aiohttp import web

CHUNK_BYTES = 256 * 1024


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
