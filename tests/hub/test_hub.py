"""HubClient against a local aiohttp server that plays the Hub: configs, errors, slowness, big bodies."""

from __future__ import annotations

import asyncio
import json
import logging
import sqlite3
from datetime import UTC, datetime, timedelta
from pathlib import Path

import pytest
from aiohttp import web

from bot.huggingface_client import (
    BadRepoId,
    HubBadResponse,
    HubClient,
    HubError,
    HubTimeout,
    HubTooLarge,
    RepoGated,
    RepoNotFound,
    validate_repo,
)
from tests.fake_hub import serving, stream_chunked

DATA = Path(__file__).resolve().parents[1] / "data" / "hf"
QWEN3 = (DATA / "Qwen__Qwen3-8B" / "config.json").read_bytes()


def _qwen3_with(**changes: object) -> bytes:
    cfg = json.loads(QWEN3)
    cfg.update(changes)
    return json.dumps(cfg).encode()


BAD_CONFIGS: dict[str, bytes] = {
    "nan": QWEN3.replace(b'"hidden_size": 4096', b'"hidden_size": NaN'),
    "infinity": QWEN3.replace(b'"rope_theta": 1000000', b'"rope_theta": Infinity'),
    "hugelayers": _qwen3_with(num_hidden_layers=10**9),
    "kvheads": _qwen3_with(num_key_value_heads=64),
    "floatlayers": _qwen3_with(num_hidden_layers=36.5),
    "deep": b'{"model_type": "qwen3", "x": ' + b"[" * 100_000 + b"]" * 100_000 + b"}",
    "hugeint": b'{"model_type": "qwen3", "vocab_size": ' + b"9" * 5000 + b"}",
}


class FakeHub:
    def __init__(self) -> None:
        self.hits: dict[str, int] = {}
        self.auth: list[str | None] = []

    async def handle(self, request: web.Request) -> web.StreamResponse:
        org, name, filename = request.match_info["org"], request.match_info["name"], request.match_info["file"]
        key = f"{org}/{name}/{filename}"
        self.hits[key] = self.hits.get(key, 0) + 1
        self.auth.append(request.headers.get("Authorization"))
        n = self.hits[key]
        if filename == "model.safetensors.index.json":
            if org == "withindex":
                return web.json_response({"metadata": {"total_size": 16_381_470_720}, "weight_map": {}})
            if org == "bigindex":
                return await stream_chunked(request, b'{"metadata": {"total_size": 16381470720}, "weight_map": {'
                                           + b'"x": "y", ' * 300_000 + b'"z": "w"}}')
            return web.Response(status=404)
        if org == "gated":
            return web.Response(status=401, text="Access to model is restricted")
        if org == "private":
            return web.Response(status=403)
        if org == "slow":
            await asyncio.sleep(3)
            return web.Response(body=QWEN3)
        if org == "huge":
            return await stream_chunked(request, b" " * (20 * 1024 * 1024))
        if org == "hugelength":
            return web.Response(body=b" " * (20 * 1024 * 1024))
        if org == "badjson":
            return web.Response(text="<html>not json</html>", content_type="text/html")
        if org == "flaky" and n == 1:
            return web.Response(status=500)
        if org == "ratelimited" and n == 1:
            return web.Response(status=429, headers={"Retry-After": "1"})
        if org == "alwaysdown":
            return web.Response(status=503)
        if org == "elsewhere":  # a different host name for the same loopback server
            return web.Response(status=302, headers={"Location": f"http://localhost:{request.url.port}/ok/x/resolve/main/{filename}"})
        if org == "renamed":
            return web.Response(status=307, headers={"Location": f"/ok/{name}/resolve/main/{filename}"})
        if org == "loop":
            return web.Response(status=301, headers={"Location": str(request.rel_url)})
        if org == "slowok":
            await asyncio.sleep(0.3)
            return web.Response(body=QWEN3, content_type="application/json")
        if org in BAD_CONFIGS:
            return web.Response(body=BAD_CONFIGS[org], content_type="application/json")
        if org == "nolayers":
            cfg = json.loads(QWEN3)
            del cfg["num_hidden_layers"]
            return web.json_response(cfg)
        if org in ("flaky", "ratelimited", "withindex", "bigindex", "ok"):
            return web.Response(body=QWEN3, content_type="application/json")
        path = DATA / f"{org}__{name}" / filename
        if path.is_file():
            return web.Response(body=path.read_bytes(), content_type="application/json")
        return web.Response(status=404, text="Entry not found")



@pytest.fixture
async def hub():
    fake = FakeHub()
    async with serving(fake.handle, shutdown_timeout_s=0.5) as base:
        fake.base = base  # type: ignore[attr-defined]
        yield fake


def client(hub: FakeHub, tmp_path: Path, **kw) -> HubClient:
    kw.setdefault("total_timeout_s", 5.0)
    kw.setdefault("backoff_s", 0.05)
    return HubClient(hub.base, kw.pop("token", None), cache_path=tmp_path / "hf.sqlite3", **kw)  # type: ignore[attr-defined]


def rows(tmp_path: Path) -> list[tuple]:
    path = tmp_path / "hf.sqlite3"
    if not path.exists():
        return []
    with sqlite3.connect(path) as db:
        try:
            return db.execute("SELECT repo FROM hf_models").fetchall()
        except sqlite3.OperationalError:
            return []


async def test_fetches_and_derives_a_real_config(hub, tmp_path):
    async with client(hub, tmp_path) as c:
        m = await c.fetch_model("deepseek-ai/DeepSeek-V3")
    assert m.hf_repo == "deepseek-ai/DeepSeek-V3" and m.attention.kind == "mla"
    assert m.source.startswith("https://huggingface.co/deepseek-ai/DeepSeek-V3/blob/main/config.json (fetched ")


async def test_hf_prefix_is_accepted(hub, tmp_path):
    async with client(hub, tmp_path) as c:
        m = await c.fetch_model("hf:Qwen/Qwen3-8B")
    assert m.layers == 36


@pytest.mark.parametrize("bad", ["", "qwen3", "a/b/c", "../etc/passwd", "/Qwen3-8B", "org/na me", "-x/y",
                                 "org/" + "x" * 200])
def test_repo_ids_are_validated(bad):
    with pytest.raises(BadRepoId):
        validate_repo(bad)


@pytest.mark.parametrize(("repo", "error", "words"), [
    ("nobody/nothing", RepoNotFound, "no such model on Hugging Face: nobody/nothing"),
    ("gated/model", RepoGated, "gated or private — rigcheck can only read public configs"),
    ("private/model", RepoGated, "gated or private — rigcheck can only read public configs"),
    ("huge/model", HubTooLarge, "larger than 2000 kB"),
    ("hugelength/model", HubTooLarge, "larger than 2000 kB"),
    ("badjson/model", HubBadResponse, "not valid JSON"),
    ("nolayers/model", HubBadResponse, "num_hidden_layers"),  # the missing field is named
])
async def test_a_refused_lookup_says_why_and_caches_nothing(hub, tmp_path, repo, error, words):
    async with client(hub, tmp_path) as c:
        with pytest.raises(error, match=words):
            await c.get_or_fetch(repo)
    assert rows(tmp_path) == []


async def test_slow_response_times_out(hub, tmp_path):
    async with client(hub, tmp_path, total_timeout_s=0.5) as c:
        loop = asyncio.get_running_loop()
        start = loop.time()
        with pytest.raises(HubTimeout, match=r"did not answer within 0\.5 s"):
            await c.get_or_fetch("slow/model")
        assert loop.time() - start < 2.0
    assert rows(tmp_path) == []


async def test_server_error_is_retried(hub, tmp_path):
    async with client(hub, tmp_path) as c:
        m = await c.get_or_fetch("flaky/model")
    assert m.layers == 36
    assert hub.hits["flaky/model/config.json"] == 2
    assert rows(tmp_path) == [("flaky/model",)]


async def test_rate_limit_honours_retry_after(hub, tmp_path):
    async with client(hub, tmp_path) as c:
        loop = asyncio.get_running_loop()
        start = loop.time()
        m = await c.fetch_model("ratelimited/model")
        assert loop.time() - start >= 0.95
    assert m.layers == 36 and hub.hits["ratelimited/model/config.json"] == 2


async def test_retry_after_beyond_the_deadline_fails_fast(hub, tmp_path):
    async with client(hub, tmp_path, total_timeout_s=0.5) as c:
        with pytest.raises(HubError):
            await c.fetch_model("ratelimited/model")


async def test_persistent_outage_stops_after_three_tries(hub, tmp_path):
    async with client(hub, tmp_path) as c:
        with pytest.raises(HubError, match="busy"):
            await c.get_or_fetch("alwaysdown/model")
    assert hub.hits["alwaysdown/model/config.json"] == 3
    assert rows(tmp_path) == []


async def test_safetensors_index_gives_the_exact_count(hub, tmp_path):
    async with client(hub, tmp_path) as c:
        m = await c.fetch_model("withindex/model")
        big = await c.fetch_model("bigindex/model")
    assert m.params == pytest.approx(16_381_470_720 / 2, rel=1e-6)
    assert "parameters exact" in m.source
    # an index past the size limit still yields the metadata that leads it
    assert big.params == pytest.approx(16_381_470_720 / 2, rel=1e-6)


async def test_cache_serves_repeat_lookups_and_expires(hub, tmp_path):
    now = datetime(2025, 6, 1, tzinfo=UTC)
    clock = [now]
    async with client(hub, tmp_path, clock=lambda: clock[0]) as c:
        first = await c.get_or_fetch("ok/model", max_age_s=3600)
        again = await c.get_or_fetch("ok/model", max_age_s=3600)
        assert first == again
        assert hub.hits["ok/model/config.json"] == 1
        clock[0] = now + timedelta(hours=2)
        await c.get_or_fetch("ok/model", max_age_s=3600)
        assert hub.hits["ok/model/config.json"] == 2
        assert "(fetched 2025-06-01)" in first.source
    assert rows(tmp_path) == [("ok/model",)]


async def test_token_is_sent_but_never_shown(hub, tmp_path, caplog):
    caplog.set_level(logging.DEBUG)
    async with client(hub, tmp_path, token="hf_secret_value") as c:
        await c.fetch_model("ok/model")
        assert "hf_secret_value" not in repr(c)
    assert hub.auth[0] == "Bearer hf_secret_value"
    assert "hf_secret_value" not in caplog.text


async def test_no_token_sends_no_header(hub, tmp_path):
    async with client(hub, tmp_path) as c:
        await c.fetch_model("ok/model")
    assert hub.auth[0] is None


def test_from_settings_reads_base_url_and_token(tmp_path):
    from bot.settings import Settings

    s = Settings(rigcheck_hf_base_url="http://127.0.0.1:9", rigcheck_hf_token="hf_tok_123",  # type: ignore[arg-type]
                 rigcheck_data_dir=tmp_path)
    c = HubClient.from_settings(s)
    assert c.base_url == "http://127.0.0.1:9"
    assert c.cache_path == tmp_path / "hf_models.sqlite3"
    assert "hf_tok_123" not in repr(c)


async def test_redirects_to_another_host_are_refused(hub, tmp_path):
    async with client(hub, tmp_path) as c:
        with pytest.raises(HubBadResponse, match="another host"):
            await c.fetch_model("elsewhere/Qwen3-8B")
    assert not any(k.startswith("ok/") for k in hub.hits)


async def test_same_origin_redirect_is_followed_and_loops_are_bounded(hub, tmp_path):
    async with client(hub, tmp_path) as c:
        assert (await c.fetch_model("renamed/Qwen3-8B")).layers == 36
        with pytest.raises(HubBadResponse, match="more than 3 times"):
            await c.fetch_model("loop/Qwen3-8B")
    assert hub.hits["loop/Qwen3-8B/config.json"] == 4


async def test_concurrent_lookups_of_one_model_share_one_fetch(hub, tmp_path):
    async with client(hub, tmp_path) as c:
        models = await asyncio.gather(*(c.get_or_fetch("slowok/Qwen3-8B") for _ in range(10)))
        other = await c.get_or_fetch("SlowOK/qwen3-8b")
    assert {m.layers for m in models} == {36} and other.layers == 36
    assert hub.hits["slowok/Qwen3-8B/config.json"] == 1


async def test_one_cancelled_asker_does_not_cancel_the_shared_fetch(hub, tmp_path):
    async with client(hub, tmp_path) as c:
        first = asyncio.ensure_future(c.get_or_fetch("slowok/Qwen3-8B"))
        second = asyncio.ensure_future(c.get_or_fetch("slowok/Qwen3-8B"))
        await asyncio.sleep(0.05)
        first.cancel()
        assert (await second).layers == 36


@pytest.mark.parametrize(("org", "words", "chinese"), [
    ("nan", "not valid JSON", "不是有效的 JSON"),
    ("infinity", "not valid JSON", "不是有效的 JSON"),
    ("deep", "not valid JSON", "不是有效的 JSON"),
    ("hugeint", "not valid JSON", "不是有效的 JSON"),
    ("hugelayers", "num_hidden_layers is 1,000,000,000; rigcheck accepts 1–1,024",
     "num_hidden_layers 的值为 1,000,000,000；rigcheck 接受 1–1,024"),
    ("kvheads", "more key/value heads (64) than attention heads (32)", "KV 头数（64）多于注意力头数（32）"),
    ("floatlayers", "not an integer", "配置字段 num_hidden_layers 不是整数：36.5"),
])
async def test_absurd_configs_get_one_clear_sentence(hub, tmp_path, org, words, chinese):
    async with client(hub, tmp_path) as c:
        with pytest.raises(HubBadResponse) as info:
            await c.get_or_fetch(f"{org}/Qwen3-8B")
    text = str(info.value)
    assert words in text and "validation error" not in text and "\n" not in text
    said = info.value.text("zh-CN")
    assert said.startswith(f"{org}/Qwen3-8B") and chinese in said and "\n" not in said
    assert rows(tmp_path) == []


async def test_a_corrupt_cache_file_is_moved_aside_and_rebuilt(hub, tmp_path):
    (tmp_path / "hf.sqlite3").write_bytes(b"this is not a database" * 200)
    async with client(hub, tmp_path) as c:
        assert (await c.get_or_fetch("ok/Qwen3-8B")).layers == 36
        assert (await c.get_or_fetch("ok/Qwen3-8B")).layers == 36
    assert hub.hits["ok/Qwen3-8B/config.json"] == 1, "the rebuilt cache serves the second lookup"
    assert rows(tmp_path) == [("ok/qwen3-8b",)]
    assert [p.name for p in tmp_path.glob("hf.sqlite3.corrupt-*")]


async def test_a_cache_that_cannot_be_written_still_answers(hub, tmp_path):
    blocked = tmp_path / "file-not-dir"
    blocked.write_text("x")
    c = HubClient(hub.base, None, cache_path=blocked / "hf.sqlite3", total_timeout_s=5.0)
    async with c:
        assert (await c.get_or_fetch("ok/Qwen3-8B")).layers == 36


async def test_an_unreachable_hub_is_said_without_the_exception_class(tmp_path):
    import socket

    with socket.socket() as sock:  # a loopback port nothing listens on: the connection is refused
        sock.bind(("127.0.0.1", 0))
        base = f"http://127.0.0.1:{sock.getsockname()[1]}"
    async with HubClient(base, None, cache_path=tmp_path / "hf.sqlite3", backoff_s=0.05) as c:
        with pytest.raises(HubError) as info:
            await c.get_or_fetch("nobody/unlisted")
    assert str(info.value) == "could not connect to Hugging Face; try again later"
    assert info.value.text("zh-CN") == "无法连接 Hugging Face，请稍后再试"
    assert rows(tmp_path) == []
