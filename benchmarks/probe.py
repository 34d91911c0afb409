"""Replays the classes of probes that once found failures, against the real bot process, and counts.

    python benchmarks/probe.py [--per-class 20] [--deadline 300]

Everything stays on loopback: the sandbox stands in for Discord, a small aiohttp app for Hugging Face,
and the bot's own HTTP server takes the signed hook. Each class sends at most `--per-class` probes
(the concurrency classes send that many at once) and the whole run stops at `--deadline` seconds;
classes not reached are reported as skipped. Prints one row per class: tried / held / failed, so a
regression shows up as a number. A probe "held" when the bot answered as it should.
"""

from __future__ import annotations

import argparse
import asyncio
import json
import sys
import tempfile
import time
from collections.abc import Awaitable, Callable
from dataclasses import dataclass, field
from pathlib import Path
from typing import Any

sys.path.insert(0, str(Path(__file__).resolve().parents[1]))

import aiohttp
from aiohttp import web

from bot.sandbox import Sandbox
from bot.sandbox.models import Reply
from bot.web.signing import signed_headers

SECRET = "probe-secret"
QWEN3 = (Path(__file__).resolve().parents[1] / "tests" / "data" / "hf" / "Qwen__Qwen3-8B" / "config.json").read_bytes()
# The hook answers 200 with the deliveries, or 202 when the run continues after the answer.
ACCEPTED = (200, 202)
UNREADABLE = ("Traceback", "validation error", "Something went wrong", "Failed to convert", "pydantic")


@dataclass
class Tally:
    name: str
    tried: int = 0
    held: int = 0
    notes: list[str] = field(default_factory=list)
    skipped: bool = False

    def record(self, ok: bool, note: str = "") -> None:
        self.tried += 1
        self.held += ok
        if not ok and len(self.notes) < 3:
            self.notes.append(note[:160])


class FakeHub:
    """Configs a hostile or broken Hub could serve, and a count of fetches per model."""

    def __init__(self) -> None:
        self.hits: dict[str, int] = {}
        self.port = 0

    def configs(self, org: str) -> bytes | None:
        cfg = json.loads(QWEN3)
        bad = {
            "nan": QWEN3.replace(b'"hidden_size": 4096', b'"hidden_size": NaN'),
            "layers": json.dumps({**cfg, "num_hidden_layers": 10**9}).encode(),
            "kvheads": json.dumps({**cfg, "num_key_value_heads": 64}).encode(),
            "deep": b'{"model_type": "qwen3", "x": ' + b"[" * 100_000 + b"]" * 100_000 + b"}",
        }
        return bad.get(org)

    async def handle(self, request: web.Request) -> web.StreamResponse:
        org, name, filename = request.match_info["org"], request.match_info["name"], request.match_info["file"]
        if filename != "config.json":
            return web.Response(status=404)
        key = f"{org}/{name}"
        self.hits[key] = self.hits.get(key, 0) + 1
        if org == "away":
            elsewhere = f"http://localhost:{self.port}/ok/{name}/resolve/main/config.json"
            return web.Response(status=302, headers={"Location": elsewhere})
        if org == "slow":
            await asyncio.sleep(0.5)
        body = self.configs(org)
        return web.Response(body=body if body is not None else QWEN3, content_type="application/json")


def readable_private(reply: Reply) -> tuple[bool, str]:
    text = json.dumps(reply.embeds)[:2000]
    ok = reply.error is None and reply.ephemeral and not reply.deferred and not any(w in text for w in UNREADABLE)
    return ok, f"ephemeral={reply.ephemeral} deferred={reply.deferred} error={reply.error} {text[:100]}"


def opt(name: str, value: Any) -> dict[str, Any]:
    kind = 4 if isinstance(value, int) else 10 if isinstance(value, float) else 3
    return {"name": name, "type": kind, "value": value}


async def run(per_class: int, deadline_s: float) -> list[Tally]:
    hub = FakeHub()
    hub_app = web.Application()
    hub_app.router.add_get("/{org}/{name}/resolve/main/{file}", hub.handle)
    hub_runner = web.AppRunner(hub_app)
    await hub_runner.setup()
    site = web.TCPSite(hub_runner, "127.0.0.1", 0)
    await site.start()
    hub.port = hub_runner.addresses[0][1]
    tallies: list[Tally] = []
    stop_at = time.monotonic() + deadline_s
    users = iter(range(70_000, 10_000_000))
    with tempfile.TemporaryDirectory() as data:
        async with Sandbox(reply_timeout_s=30, strict=False) as sb:
            await sb.start_bot([sys.executable, "-m", "bot"], env={
                "RIGCHECK_DATA_DIR": data, "RIGCHECK_HTTP_PORT": "0", "RIGCHECK_WEBHOOK_SECRET": SECRET,
                "RIGCHECK_HF_BASE_URL": f"http://127.0.0.1:{hub.port}", "RIGCHECK_LOG_LEVEL": "WARNING",
                "RIGCHECK_GUILD_READY_TIMEOUT": "0.2"}, ready_timeout=120)
            base = f"http://127.0.0.1:{(Path(data) / 'http.port').read_text().strip()}"
            http = aiohttp.ClientSession()

            async def hook(body: bytes | Callable[[], Any], headers: dict[str, str]) -> int:
                data_arg = body() if callable(body) else body
                async with http.post(base + "/hooks/daily", data=data_arg, headers=headers) as response:
                    return response.status

            def slowly(body: bytes, chunk: int) -> Callable[[], Any]:
                async def gen() -> Any:
                    for i in range(0, len(body), chunk):
                        yield body[i:i + chunk]
                        await asyncio.sleep(0.002)
                return gen

            async def hook_in_several_reads(t: Tally) -> None:
                for i in range(per_class):
                    body = json.dumps({"dry_run": True}).encode() + b" " * (4000 + i)  # JSON allows the padding
                    status = await hook(slowly(body, 1024), signed_headers(SECRET, body, time.time()))
                    t.record(status in ACCEPTED, f"status {status}")

            async def hook_slow_and_large(t: Tally) -> None:
                for i in range(min(per_class, 5)):
                    body = b'{"x": "' + b"a" * (70_000 + i) + b'"}'
                    status = await hook(slowly(body, 8192), signed_headers(SECRET, body, time.time()))
                    t.record(status == 413, f"status {status}")

            async def hook_malformed(t: Tally) -> None:
                bodies = [b'{"x": ' + b"[" * 30_000 + b"]" * 30_000 + b"}", b'{"guild": ' + b"9" * 30 + b"}",
                          b'{"guild": ' + b"1" * 5000 + b"}", '{"guild": "١٢٣"}'.encode(),
                          '{"date": "٢٠٢٥-06-15"}'.encode(), b'{"guild": 18446744073709551616}']
                for body in bodies[:per_class]:
                    status = await hook(body, signed_headers(SECRET, body, time.time()))
                    t.record(status == 400, f"status {status} for {body[:30]!r}")
                body = b"{}"
                headers = signed_headers(SECRET, body, time.time())
                headers["X-Rigcheck-Timestamp"] = headers["X-Rigcheck-Timestamp"].translate(
                    str.maketrans("0123456789", "٠١٢٣٤٥٦٧٨٩"))
                status = await hook(body, headers)
                t.record(status == 401, f"non-ASCII timestamp: status {status}")

            async def hook_concurrent(t: Tally) -> None:
                async def one(i: int) -> None:
                    body = json.dumps({"dry_run": True}).encode() + b" " * i  # a distinct signature each
                    status = await hook(body, signed_headers(SECRET, body, time.time()))
                    t.record(status in ACCEPTED, f"status {status}")
                await asyncio.gather(*(one(i) for i in range(per_class)))

            async def probes_overlapping(t: Tally) -> None:
                async def one() -> None:
                    async with http.get(base + "/readyz") as response:
                        t.record(response.status == 200, f"status {response.status}")
                await asyncio.gather(*(one() for _ in range(per_class)))

            async def options_before_defer(t: Tally) -> None:
                cases = [("rank", [opt("gpu", "a30"), opt("quant", "nonsense")]),
                         ("rank", [opt("gpu", "a30"), opt("sort", "bogus")]),
                         ("rank", [opt("gpu", "a30"), opt("gpus", 9)]),
                         ("whatgpu", [opt("model", "qwen3-8b"), opt("quant", "nonsense")]),
                         ("fit", [opt("gpu", "t4"), opt("model", "qwen3-8b"), opt("batch", 0)]),
                         ("fit", [opt("gpu", "t4"), opt("model", "qwen3-8b"), opt("batch", -3)]),
                         ("finetune", [opt("gpu", "t4"), opt("model", "qwen3-8b"), opt("method", "bogus")]),
                         ("finetune", [opt("gpu", "t4"), opt("model", "qwen3-8b"), opt("batch", 0)])]
                for name, options in (cases * 3)[:per_class]:
                    ok, note = readable_private(await sb.driver.invoke_raw(name, options, user=next(users)))
                    t.record(ok, f"/{name}: {note}")

            async def hub_hostile(t: Tally) -> None:
                for org in ["away", "nan", "layers", "kvheads", "deep"][:per_class]:
                    reply = await sb.invoke(f"/fit gpu:t4 model:hf:{org}/Model", user=next(users))
                    text = json.dumps(reply.embeds)
                    ok = reply.ephemeral and reply.error is None and not any(w in text for w in UNREADABLE) \
                        and "e+" not in text
                    t.record(ok, f"{org}: {text[:120]}")

            async def hub_coalesced(t: Tally) -> None:
                for round_ in range(max(1, per_class // 10)):
                    name = f"Coalesce{round_}"
                    replies = await asyncio.gather(*(sb.invoke(f"/fit gpu:t4 model:hf:slow/{name}", user=next(users))
                                                     for _ in range(10)))
                    fetched = hub.hits.get(f"slow/{name}", 0)
                    t.record(fetched == 1 and all(r.error is None and r.embeds for r in replies),
                             f"{fetched} fetches for 10 concurrent asks")

            async def echo_bounded(t: Tally) -> None:
                for i in range(min(per_class, 5)):
                    family = "[x](https://evil.example) @everyone " + "A" * (1000 * (i + 1))
                    reply = await sb.driver.invoke_raw("models", [opt("family", family)], user=next(users))
                    text = reply.embeds[0].get("description", "") if reply.embeds else ""
                    t.record(reply.error is None and len(text) < 1000 and "@everyone" not in text
                             and "\\[x]" in text, text[:120])

            async def mixed_none_lost(t: Tally) -> None:
                commands = ["/fit gpu:t4 model:qwen3-8b ctx:{k}k", "/rank gpu:a30 ctx:{k}k", "/gpu gpu:l4 ctx:{k}k",
                            "/whatgpu model:qwen3-8b ctx:{k}k", "/models family:qwen", "/help"]
                sem = asyncio.Semaphore(25)

                async def one(i: int) -> None:
                    async with sem:
                        text = commands[i % len(commands)].format(k=8 + i)
                        reply = await sb.invoke(text, user=next(users))
                        record = sb.state.interactions[reply.interaction_id or 0]
                        answers = [e for e in record.exchanges if e.error is None and e.kind in ("callback", "followup")
                                   and e.message and e.message.get("embeds")]
                        t.record(reply.error is None and len(answers) == 1, f"{text}: {len(answers)} answers")

                await asyncio.gather(*(one(i) for i in range(per_class * 5)))

            async def requests_valid(t: Tally) -> None:
                bot_requests = [r for r in sb.requests if r.method in ("POST", "PATCH", "PUT")]
                refused = {id(v.request) for v in sb.bot_violations()}
                for request in bot_requests:
                    t.record(id(request) not in refused, f"{request.method} {request.route} {request.response}")

            classes: list[tuple[str, Callable[[Tally], Awaitable[None]]]] = [
                ("hook: signed body in several reads", hook_in_several_reads),
                ("hook: slow chunked body over 64 kB", hook_slow_and_large),
                ("hook: malformed signed body", hook_malformed),
                ("hook: concurrent signed calls", hook_concurrent),
                ("probes: overlapping /readyz", probes_overlapping),
                ("options checked before any defer", options_before_defer),
                ("hf: off-host redirect, absurd configs", hub_hostile),
                ("hf: one fetch per model", hub_coalesced),
                ("echo bounded and escaped", echo_bounded),
                ("mixed commands: none lost or doubled", mixed_none_lost),
                ("bot requests valid under Discord's spec", requests_valid),
            ]
            try:
                for name, probe in classes:
                    tally = Tally(name)
                    tallies.append(tally)
                    left = stop_at - time.monotonic()
                    if left <= 0:
                        tally.skipped = True
                        continue
                    try:
                        await asyncio.wait_for(probe(tally), left)
                    except TimeoutError:
                        tally.notes.append("stopped at the deadline")
                    except Exception as exc:  # a probe that crashes is a failure of that class, not of the run
                        tally.record(False, f"{type(exc).__name__}: {exc}")
            finally:
                await http.close()
    await hub_runner.cleanup()
    return tallies


def main() -> None:
    parser = argparse.ArgumentParser()
    parser.add_argument("--per-class", type=int, default=20)
    parser.add_argument("--deadline", type=float, default=300.0, help="seconds for the whole run")
    args = parser.parse_args()
    started = time.monotonic()
    tallies = asyncio.run(run(max(1, min(args.per_class, 200)), args.deadline))
    width = max(len(t.name) for t in tallies)
    print(f"{'class':{width}s}  tried   held  failed")
    for t in tallies:
        if t.skipped:
            print(f"{t.name:{width}s}  skipped (deadline)")
            continue
        print(f"{t.name:{width}s}  {t.tried:5d}  {t.held:5d}  {t.tried - t.held:6d}")
        for note in t.notes:
            print(f"{'':{width}s}    {note}")
    print(f"{sum(t.tried for t in tallies)} probes in {time.monotonic() - started:.0f} s")


if __name__ == "__main__":
    main()
