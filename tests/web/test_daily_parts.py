"""The daily summary's pure parts: webhook URLs, delivery references, windows, composing."""

from __future__ import annotations

import argparse
import json
import socket
import time
from datetime import UTC, datetime
from pathlib import Path
from typing import Any

import pytest
from aiohttp import web
from aiohttp.test_utils import TestServer
from web_fakes import SECRET

from bot.daily.delivery import (
    CatalogChanges,
    ShownChanges,
    _carries_ref,
    catalog_changes,
    compose,
    parse_webhook_url,
    shown_changes,
    stats_window,
    with_ref,
)
from bot.render.embeds import EMBED_TOTAL_MAX, embed_length
from bot.render.reply import Reply
from bot.service import Service
from bot.store.records import CatalogSnapshot, PairCount, QueryStats
from bot.web import trigger
from bot.web.signing import verify

TOKEN = "A" * 68


@pytest.fixture(scope="module")
def svc() -> Service:
    return Service()


@pytest.mark.parametrize(
    "url",
    [
        f"https://discord.com/api/webhooks/1216052881006788608/{TOKEN}",
        f"https://discordapp.com/api/v10/webhooks/1216052881006788608/{TOKEN}/",
        f"https://canary.discord.com/api/webhooks/1216052881006788608/{TOKEN}",
    ],
)
def test_discord_webhook_urls(url: str) -> None:
    assert parse_webhook_url(url) == (1216052881006788608, TOKEN)


def test_the_configured_api_hosts_webhooks_are_accepted() -> None:
    url = f"http://127.0.0.1:4321/api/webhooks/1216052881006788608/{TOKEN}"
    assert parse_webhook_url(url, "http://127.0.0.1:4321/api/v10")[0] == 1216052881006788608
    with pytest.raises(ValueError, match="Discord"):
        parse_webhook_url(url, "http://127.0.0.1:9999/api/v10")


@pytest.mark.parametrize(
    "url",
    [
        f"http://discord.com/api/webhooks/1216052881006788608/{TOKEN}",
        f"https://discord.com.evil.example/api/webhooks/1216052881006788608/{TOKEN}",
        f"https://evil.example/api/webhooks/1216052881006788608/{TOKEN}",
        "https://discord.com/api/webhooks/1216052881006788608",
        "https://discord.com/api/webhooks/12/abc",
        f"https://discord.com/api/webhooks/1216052881006788608/{TOKEN}?wait=true",
        f"https://discord.com/channels/1216052881006788608/{TOKEN}",
        "not a url",
    ],
)
def test_other_urls_are_refused(url: str) -> None:
    with pytest.raises(ValueError):
        parse_webhook_url(url)


def test_delivery_reference_in_the_footer() -> None:
    reply = Reply(embeds=[{"title": "t", "footer": {"text": "rigcheck daily · 2025-06-15"}}])
    stamped = with_ref(reply, 17)
    assert stamped.embeds[0]["footer"]["text"] == "rigcheck daily · 2025-06-15 · #17"
    assert reply.embeds[0]["footer"]["text"] == "rigcheck daily · 2025-06-15"
    assert _carries_ref({"embeds": stamped.embeds}, 17)
    assert not _carries_ref({"embeds": stamped.embeds}, 7)
    assert not _carries_ref({"embeds": with_ref(reply, 117).embeds}, 17)
    assert not _carries_ref({"embeds": []}, 17)


def test_stats_cover_the_day_before() -> None:
    since, until = stats_window("2025-03-01")
    assert (since, until) == (datetime(2025, 2, 28, tzinfo=UTC), datetime(2025, 3, 1, tzinfo=UTC))


def test_catalog_changes(svc: Service) -> None:
    first = catalog_changes(svc, None)
    assert first.first and first.gpu_count == len(svc.catalog.gpus)
    gpu_ids = [g.id for g in svc.catalog.gpus]
    model_ids = [m.id for m in svc.catalog.models]
    snapshot = CatalogSnapshot(id=1, version="old", gpu_ids=(*gpu_ids[1:], "retired-gpu"), model_ids=model_ids[:-1],
                               recorded_at=datetime(2025, 1, 1, tzinfo=UTC))
    changes = catalog_changes(svc, snapshot)
    assert changes.added_gpus == (svc.catalog.gpus[0].name,)
    assert changes.removed_gpus == ("retired-gpu",)
    assert changes.added_models == (svc.catalog.models[-1].name,) and not changes.removed_models
    same = CatalogSnapshot(id=2, version="v", gpu_ids=tuple(gpu_ids), model_ids=tuple(model_ids),
                           recorded_at=datetime(2025, 1, 1, tzinfo=UTC))
    assert catalog_changes(svc, same).empty


@pytest.mark.parametrize("locale", ["en-US", "zh-CN"])
def test_compose_one_embed_one_png_within_limits(svc: Service, locale: str) -> None:
    usage = QueryStats(count=40, cache_hits=3, by_command={"fit": 40}, by_outcome={"ok": 40},
                       top_pairs=tuple(PairCount(gpu=f"gpu-{i}", model="m" * 200, count=40 - i) for i in range(10)))
    many = tuple(f"Model {i} " + "x" * 80 for i in range(300))
    changes = CatalogChanges(first=False, gpu_count=1, model_count=1, added_models=many, removed_gpus=many)
    reply = compose(svc, day="2025-06-15", gpu_ids=["t4", "nvidia-a30", "no-such-gpu"], ctx=32768, locale=locale,
                    usage=usage, changes=changes, guild_name="G" * 300)
    (embed,) = reply.embeds
    (png,) = reply.files
    assert png.filename == "daily.png" and png.data.startswith(b"\x89PNG")
    assert embed["image"]["url"] == "attachment://daily.png"
    assert embed_length(embed) <= EMBED_TOTAL_MAX and len(embed["title"]) <= 256
    assert all(len(f["value"]) <= 1024 for f in embed["fields"])
    assert "NVIDIA T4" in [f["name"] for f in embed["fields"]]
    assert any("no-such-gpu" in f["value"] for f in embed["fields"])


@pytest.mark.parametrize("locale", ["en-US", "zh-CN"])
def test_the_most_asked_pairs_are_named_as_replies_name_them(svc: Service, locale: str) -> None:
    """They were printed as logged ids ("nvidia-rtx-3090 · qwen3-8b ×12"); an id the catalog no longer lists stays."""
    usage = QueryStats(count=13, cache_hits=0, by_command={"fit": 13}, by_outcome={"ok": 13},
                       top_pairs=(PairCount(gpu="nvidia-rtx-3090", model="qwen3-8b", count=12),
                                  PairCount(gpu="retired-gpu", model="qwen3-8b", count=1)))
    changes = CatalogChanges(first=False, gpu_count=1, model_count=1)
    embed = compose(svc, day="2025-06-15", gpu_ids=["t4"], ctx=8192, locale=locale, usage=usage,
                    changes=changes).embeds[0]
    asked = embed["fields"][-1]["value"]
    assert "1. NVIDIA GeForce RTX 3090 · Qwen3-8B ×12" in asked and "2. retired-gpu · Qwen3-8B ×1" in asked, asked
    assert "nvidia-rtx-3090" not in asked


@pytest.mark.parametrize("locale", ["en-US", "zh-CN"])
def test_every_kind_of_catalog_change_gets_its_share(svc: Service, locale: str) -> None:
    """29 added models once filled the field and "…and 29 more" hid the added GPU and the removed entries."""
    added = tuple(f"Model {i} " + "x" * 40 for i in range(60))
    changes = CatalogChanges(first=False, gpu_count=1, model_count=1, added_models=added,
                             added_gpus=("NVIDIA New Card",), removed_models=("old-model",),
                             removed_gpus=("old-gpu",))
    embed = compose(svc, day="2025-06-15", gpu_ids=["t4"], ctx=8192, locale=locale, usage=None,
                    changes=changes).embeds[0]
    value = next(f["value"] for f in embed["fields"] if f["name"] in ("Catalog changes", "目录变化"))
    assert len(value) <= 1024
    assert "NVIDIA New Card" in value and "`old-model`" in value and "`old-gpu`" in value, value
    shown = sum(name in value for name in added)
    assert 0 < shown < len(added)
    more = f"+ {len(added) - shown} more models" if locale == "en-US" else f"+ 另有 {len(added) - shown} 个模型"
    assert more in value, value
    assert "…" not in value, "nothing cut by the embed's own limit"


def test_change_shares_go_round_the_kinds(svc: Service) -> None:
    long = tuple("m" * 50 for _ in range(100))
    shares = shown_changes(CatalogChanges(first=False, gpu_count=1, model_count=1, added_models=long,
                                          removed_gpus=long), room=400)
    assert abs(len(shares["added_models"].names) - len(shares["removed_gpus"].names)) <= 1
    assert shares["added_models"].more == 100 - len(shares["added_models"].names) > 0
    assert shares["added_gpus"] == ShownChanges((), 0)


def test_trigger_payload_and_secret_file(tmp_path: Path) -> None:
    parser = argparse.ArgumentParser()
    trigger.register(parser.add_subparsers())
    args = parser.parse_args(["trigger-daily", "--secret-file", "s", "--date", "2025-06-15", "--guild", "42",
                              "--dry-run"])
    assert trigger.payload_of(args) == {"dry_run": True, "force": False, "date": "2025-06-15", "guild": "42"}
    with pytest.raises(SystemExit):
        parser.parse_args(["trigger-daily", "--secret-file", "s", "--date", "15/06/2025"])
    (tmp_path / "secret").write_text(f"  {SECRET}\n")
    assert trigger.read_secret(str(tmp_path / "secret")) == SECRET
    with pytest.raises(trigger.TriggerError, match="cannot read"):
        trigger.read_secret(str(tmp_path / "absent"))


async def test_trigger_signs_what_it_sends() -> None:
    seen: dict[str, Any] = {}

    async def handler(request: web.Request) -> web.Response:
        body = await request.read()
        seen["sig"] = verify(SECRET, request.headers.get("X-Rigcheck-Timestamp"),
                             request.headers.get("X-Rigcheck-Signature"), body, time.time())
        return web.json_response({"ok": True, "echo": json.loads(body)}, status=200)

    app = web.Application()
    app.router.add_post("/hooks/daily", handler)
    async with TestServer(app, host="127.0.0.1") as server:
        status, answer = await trigger.send(str(server.make_url("/hooks/daily")), SECRET, {"force": True})
    assert status == 200 and answer["echo"] == {"force": True} and seen["sig"].startswith("sha256=")


async def test_trigger_reports_an_unreachable_bot() -> None:
    with socket.socket() as sock:  # a port nobody listens on
        sock.bind(("127.0.0.1", 0))
        port = sock.getsockname()[1]
    with pytest.raises(trigger.TriggerError, match="could not reach"):
        await trigger.send(f"http://127.0.0.1:{port}/hooks/daily", SECRET, {})


@pytest.mark.parametrize(("counts", "code"), [({"sent": 2}, 0), ({"sent": 1, "failed": 1}, 3), ({"failed": 2}, 3)])
def test_a_run_with_failed_deliveries_exits_3(tmp_path: Path, monkeypatch: pytest.MonkeyPatch,
                                              capsys: pytest.CaptureFixture[str], counts: dict[str, int],
                                              code: int) -> None:
    # cron mails, and systemd logs, only what exits non-zero: a run whose every delivery failed used to exit 0.
    async def send(url: str, secret: str, payload: dict[str, Any]) -> tuple[int, dict[str, Any]]:
        return 202, {"ok": True, "run": "r1"}

    async def follow(url: str, secret: str, run_id: str, **_: Any) -> dict[str, Any]:
        return {"ok": True, "run": run_id, "status": "done", "counts": counts}

    monkeypatch.setattr(trigger, "send", send)
    monkeypatch.setattr(trigger, "follow", follow)
    (tmp_path / "secret").write_text(SECRET)
    parser = argparse.ArgumentParser()
    trigger.register(parser.add_subparsers())
    args = parser.parse_args(["trigger-daily", "--secret-file", str(tmp_path / "secret")])
    assert trigger.cmd_trigger_daily(None, args) == code
    err = capsys.readouterr().err
    assert ("deliveries failed" in err) == (code == 3)
