"""The gateway websocket: HELLO, heartbeats, IDENTIFY → READY (+ GUILD_CREATE), RESUME with replay.

Frames are uncompressed JSON text even though the client asks for zlib-stream: discord.py parses
text frames as plain JSON.
"""

from __future__ import annotations

import json
import logging
import secrets
import time
from collections import deque
from collections.abc import Callable
from dataclasses import dataclass, field
from typing import Any

from aiohttp import WSMsgType, web

from bot.sandbox.recording import Notifier
from bot.sandbox.snowflake import shard_of
from bot.sandbox.world import World, member_json

log = logging.getLogger(__name__)

HEARTBEAT_INTERVAL_MS = 41_250
REPLAY_BUFFER = 1000

OP_DISPATCH = 0
OP_HEARTBEAT = 1
OP_IDENTIFY = 2
OP_PRESENCE = 3
OP_VOICE_STATE = 4
OP_RESUME = 6
OP_REQUEST_MEMBERS = 8
OP_INVALID_SESSION = 9
OP_HELLO = 10
OP_HEARTBEAT_ACK = 11

CLOSE_UNKNOWN_ERROR = 4000
CLOSE_AUTH_FAILED = 4004
CLOSE_INVALID_SHARD = 4010


@dataclass
class GatewaySession:
    session_id: str
    shard_id: int
    shard_count: int
    intents: int
    guild_ids: list[int]
    seq: int = 0
    socket: web.WebSocketResponse | None = None
    sent: deque[dict[str, Any]] = field(default_factory=lambda: deque(maxlen=REPLAY_BUFFER))
    identified_at: float = field(default_factory=time.monotonic)
    resumes: int = 0
    events: list[str] = field(default_factory=list)

    @property
    def connected(self) -> bool:
        return self.socket is not None and not self.socket.closed

    async def dispatch(self, event: str, data: Any) -> int:
        """Sends now when connected; otherwise keeps it for the RESUME replay."""
        self.seq += 1
        frame = {"op": OP_DISPATCH, "t": event, "s": self.seq, "d": data}
        self.sent.append(frame)
        self.events.append(event)
        if self.socket is not None and not self.socket.closed:
            try:
                await self.socket.send_str(json.dumps(frame))
            except (ConnectionError, RuntimeError):
                log.debug("shard %s: socket gone, %s kept for replay", self.shard_id, event)
        return self.seq


class GatewayHub:
    def __init__(self, world: World, resume_url: Callable[[], str]) -> None:
        self.world = world
        self._resume_url = resume_url
        self.sessions: dict[str, GatewaySession] = {}
        self.by_shard: dict[int, GatewaySession] = {}
        self.identifies = 0
        # While True the gateway refuses connections, the way it looks during a Discord outage.
        self.down = False
        self.changed = Notifier()

    # -- queries -----------------------------------------------------------------------------------
    @property
    def shard_count(self) -> int:
        return next(iter(self.by_shard.values())).shard_count if self.by_shard else 1

    def session_for_guild(self, guild_id: int | None) -> GatewaySession | None:
        shard_id = shard_of(guild_id, self.shard_count) if guild_id is not None else 0
        return self.by_shard.get(shard_id)

    def all_ready(self) -> bool:
        if not self.by_shard:
            return False
        count = self.shard_count
        return all(s in self.by_shard for s in range(count))

    # -- actions -----------------------------------------------------------------------------------
    async def dispatch(self, guild_id: int | None, event: str, data: Any) -> GatewaySession:
        session = self.session_for_guild(guild_id)
        if session is None:
            raise RuntimeError("no gateway session covers this guild: is the bot connected?")
        await session.dispatch(event, data)
        return session

    async def drop(self, shard_id: int | None = None) -> list[int]:
        """Closes the shard's socket (all shards when None) the way a network blip would."""
        dropped = []
        for session in list(self.by_shard.values()):
            if shard_id is not None and session.shard_id != shard_id:
                continue
            socket = session.socket
            session.socket = None
            if socket is not None and not socket.closed:
                await socket.close(code=CLOSE_UNKNOWN_ERROR, message=b"sandbox dropped the connection")
                dropped.append(session.shard_id)
        self.changed.notify()
        return dropped

    async def close_all(self) -> None:
        for session in self.sessions.values():
            if session.socket is not None and not session.socket.closed:
                await session.socket.close(code=1001, message=b"sandbox shutting down")

    # -- the websocket -----------------------------------------------------------------------------
    async def outage(self, down: bool = True) -> None:
        """Start (or end) an outage: connected shards are dropped and reconnects refused meanwhile."""
        self.down = down
        if down:
            await self.drop()
        self.changed.notify()

    async def handle(self, request: web.Request) -> web.StreamResponse:
        if self.down:
            return web.Response(status=503, text="gateway unavailable (sandbox outage)")
        socket = web.WebSocketResponse(max_msg_size=0)
        await socket.prepare(request)
        await socket.send_str(json.dumps({"op": OP_HELLO, "d": {"heartbeat_interval": HEARTBEAT_INTERVAL_MS}}))
        session: GatewaySession | None = None
        async for message in socket:
            if message.type != WSMsgType.TEXT:
                continue
            payload = json.loads(message.data)
            op = payload.get("op")
            data = payload.get("d")
            if op == OP_HEARTBEAT:
                await socket.send_str(json.dumps({"op": OP_HEARTBEAT_ACK}))
            elif op == OP_IDENTIFY:
                session = await self._identify(socket, data)
            elif op == OP_RESUME:
                session = await self._resume(socket, data)
            elif op == OP_REQUEST_MEMBERS and session is not None:
                await self._members_chunk(session, data)
            elif op in (OP_PRESENCE, OP_VOICE_STATE):
                continue
            else:
                log.debug("ignoring gateway op %s", op)
        if session is not None and session.socket is socket:
            session.socket = None
            self.changed.notify()
        return socket

    async def _identify(self, socket: web.WebSocketResponse, data: dict[str, Any]) -> GatewaySession | None:
        if data.get("token") != self.world.token:
            await socket.close(code=CLOSE_AUTH_FAILED, message=b"Authentication failed.")
            return None
        shard_id, shard_count = data.get("shard") or (0, 1)
        if not 0 <= shard_id < shard_count:
            await socket.close(code=CLOSE_INVALID_SHARD, message=b"Invalid shard.")
            return None
        guild_ids = [g.id for g in self.world.guilds if shard_of(g.id, shard_count) == shard_id]
        session = GatewaySession(
            session_id=secrets.token_hex(16),
            shard_id=shard_id,
            shard_count=shard_count,
            intents=int(data.get("intents", 0)),
            guild_ids=guild_ids,
            socket=socket,
        )
        self.identifies += 1
        old = self.by_shard.get(shard_id)
        if old is not None and old.shard_count != shard_count:
            self.by_shard.clear()
        self.sessions[session.session_id] = session
        ready: dict[str, Any] = {
            "v": 10,
            "user": self.world.bot_user.to_json(),
            "guilds": [{"id": str(gid), "unavailable": True} for gid in guild_ids],
            "session_id": session.session_id,
            "session_type": "normal",
            "resume_gateway_url": self._resume_url(),
            "application": {"id": str(self.world.application_id), "flags": 0},
            "private_channels": [],
            "relationships": [],
            "presences": [],
            "user_settings": {},
            "guild_join_requests": [],
            "geo_ordered_rtc_regions": [],
        }
        if data.get("shard") is not None:
            ready["shard"] = [shard_id, shard_count]
        await session.dispatch("READY", ready)
        for gid in guild_ids:
            guild = self.world.guild(gid)
            if guild is not None:
                await session.dispatch("GUILD_CREATE", self.world.guild_create_json(guild))
        self.by_shard[shard_id] = session
        self.changed.notify()
        return session

    async def _resume(self, socket: web.WebSocketResponse, data: dict[str, Any]) -> GatewaySession | None:
        session = self.sessions.get(str(data.get("session_id")))
        if session is None or data.get("token") != self.world.token:
            await socket.send_str(json.dumps({"op": OP_INVALID_SESSION, "d": False}))
            return None
        last_seen = int(data.get("seq") or 0)
        session.socket = socket
        session.resumes += 1
        for frame in list(session.sent):
            if frame["s"] > last_seen:
                await socket.send_str(json.dumps(frame))
        await session.dispatch("RESUMED", {})
        self.changed.notify()
        return session

    async def _members_chunk(self, session: GatewaySession, data: dict[str, Any]) -> None:
        guild = self.world.guild(int(data.get("guild_id", 0)))
        if guild is None:
            return
        await session.dispatch(
            "GUILD_MEMBERS_CHUNK",
            {
                "guild_id": str(guild.id),
                "members": [member_json(self.world.bot_user)],
                "chunk_index": 0,
                "chunk_count": 1,
                "nonce": data.get("nonce"),
            },
        )
