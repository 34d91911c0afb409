"""The real bot with `hf:org/name` models read from a loopback Hugging Face Hub, plus /whatgpu and partial
offload: what Discord would receive, checked against the estimator run directly."""

from __future__ import annotations

import asyncio
import json
import re
import sqlite3
from collections.abc import AsyncIterator
from dataclasses import dataclass
from pathlib import Path

import pytest
import pytest_asyncio
from aiohttp import web

from bot.cogs.common import HF_DEFER_AFTER_S
from bot.render.replies import WHATGPU_PAGE, whatgpu_columns
from bot.render.table import setup_label
from bot.sandbox import Sandbox
from bot.sandbox.models import Reply
from bot.service import Service
from estimator.memory import memory
from estimator.query import Query
from estimator.whatgpu import DEFAULT_PROMPT_TOKENS, what_gpu_setups
from tests.fake_hub import serving, stream_chunked
from tests.inprocess.local_bot import bot_in_this_process

pytestmark = pytest.mark.asyncio(loop_scope="module")

DATA = Path(__file__).resolve().parents[1] / "data" / "hf"
HF_TIMEOUT_S = 3.0
SLOW_S = HF_TIMEOUT_S + 2.0  # the slow repo answers well after the bot has given up
QWEN = "Qwen/Qwen3-8B"
# A repo the catalog does not list that serves Qwen/Qwen3-8B's config.json: asked for, it has to be read from
# the Hub (Qwen/Qwen3-8B itself is the catalog's hf_repo, answered without the Hub).
MIRROR = "mirror/Qwen3-8B"
PNG_MAGIC = b"\x89PNG\r\n\x1a\n"


# --- a loopback Hub -----------------------------------------------------------------------------------


class LoopbackHub:
    """Serves tests/data/hf/<org>__<name>/<file>; a few orgs stand for the Hub's failure modes."""

    def __init__(self) -> None:
        self.hits: dict[str, int] = {}
        self.fail_everything = False
        self.base = ""

    async def handle(self, request: web.Request) -> web.StreamResponse:
        org, name, filename = request.match_info["org"], request.match_info["name"], request.match_info["file"]
        key = f"{org}/{name}/{filename}"
        self.hits[key] = self.hits.get(key, 0) + 1
        if self.fail_everything:
            return web.Response(status=503, text="down for maintenance")
        if org == "gated":
            return web.Response(status=401, text="Access to model is restricted")
        if filename == "model.safetensors.index.json":
            return web.Response(status=404, text="Entry not found")
        if org == "slow":
            await asyncio.sleep(SLOW_S)
            return web.Response(body=(DATA / "Qwen__Qwen3-8B" / "config.json").read_bytes())
        if org == "huge":  # 20 MB, chunked: no Content-Length to refuse early
            return await stream_chunked(request, b" " * (20 * 1024 * 1024))
        if org == "hugelength":  # 20 MB with its Content-Length
            return web.Response(body=b" " * (20 * 1024 * 1024))
        path = DATA / f"{'Qwen' if org == 'mirror' else org}__{name}" / filename
        if path.is_file():
            return web.Response(body=path.read_bytes(), content_type="application/json")
        return web.Response(status=404, text="Repository not found")



@dataclass
class World:
    sb: Sandbox
    hub: LoopbackHub
    data_dir: Path

    def cached_repos(self) -> set[str]:
        """Rows of the bot's hub cache, read through a read-only connection."""
        path = self.data_dir / "hf_models.sqlite3"
        if not path.exists():
            return set()
        db = sqlite3.connect(f"{path.as_uri()}?mode=ro", uri=True)
        try:
            return {row[0] for row in db.execute("SELECT repo FROM hf_models")}
        except sqlite3.OperationalError:  # the table is created on first use
            return set()
        finally:
            db.close()

    def cached_model(self, repo: str) -> dict:
        path = self.data_dir / "hf_models.sqlite3"
        db = sqlite3.connect(f"{path.as_uri()}?mode=ro", uri=True)
        try:
            row = db.execute("SELECT model_json FROM hf_models WHERE repo = ?", (repo.lower(),)).fetchone()
        finally:
            db.close()
        assert row is not None, f"no hub cache row for {repo}"
        return json.loads(row[0])


@pytest_asyncio.fixture(loop_scope="module", scope="module")
async def hub() -> AsyncIterator[LoopbackHub]:
    fake = LoopbackHub()
    async with serving(fake.handle, shutdown_timeout_s=1.0) as base:
        fake.base = base
        yield fake


@pytest_asyncio.fixture(loop_scope="module", scope="module")
async def world(hub: LoopbackHub, tmp_path_factory: pytest.TempPathFactory) -> AsyncIterator[World]:
    data_dir = tmp_path_factory.mktemp("hubbotdata")
    async with Sandbox() as sb, bot_in_this_process(sb, data_dir, rigcheck_hf_base_url=hub.base,
                                                    rigcheck_hf_timeout_s=HF_TIMEOUT_S, rigcheck_hf_token=""):
        yield World(sb, hub, data_dir)


@pytest.fixture(scope="module")
def svc() -> Service:
    return Service()


# --- reading embeds -----------------------------------------------------------------------------------

NUMBER = re.compile(r"(\d+(?:\.\d+)?)")


def fit_numbers(embed: dict) -> dict[str, list[str]]:
    """Per format field: every number in it as shown (weights, KV, runtime, total GiB, tok/s, TTFT, max ctx)."""
    return {f["name"]: NUMBER.findall(SCALED_FIGURE.sub("", f["value"])) for f in embed["fields"]
            if "Weights" in f["value"]}


# The context reachable with RoPE scaling: only the catalog documents Qwen3-8B's YaRN window (the
# config.json carries no rope_scaling), so that figure is left out of the comparison.
SCALED_FIGURE = re.compile(r" \(\S+ with RoPE scaling\)")


def last_digit_step(shown: str) -> float:
    """One unit of the last digit shown: 0.1 for "4.7", 1 for "48"."""
    return 10.0 ** -len(shown.partition(".")[2])


def table_rows(embed: dict) -> list[dict[str, str]]:
    """The whatgpu code block → setup, format, tok/s, TTFT, free GiB. The setup and format columns are as wide as
    the page needs (the format column starts under its header); tok/s, TTFT and free GiB are right-aligned columns
    of 5, 5 and 8 that end the line."""
    block = embed["description"].split("```")[1]
    lines = [line for line in block.splitlines() if line.strip()]
    assert lines[0].split() == ["setup", "format", "tok/s", "TTFT", "free", "GiB"]
    fmt_at = lines[0].index("format")
    return [{"setup": line[:fmt_at].rstrip(), "quant": line[fmt_at:-21].strip(), "tps": line[-20:-15].strip(),
             "ttft": line[-14:-9].strip(), "free": line[-8:].strip()} for line in lines[1:]]


def error_text(reply: Reply) -> str:
    return " ".join(str(e.get(k) or "") for e in reply.embeds for k in ("title", "description"))


# --- hf: models ---------------------------------------------------------------------------------------


async def test_fit_with_hub_model_matches_catalog_entry(world: World) -> None:
    hf = await world.sb.invoke(f"/fit gpu:T4 model:hf:{MIRROR}")
    assert hf.ok and not hf.ephemeral, hf.reason or hf.error
    embed = hf.embeds[0]
    assert embed["title"] == "Qwen3-8B on 1× NVIDIA T4"
    assert embed["image"]["url"] == "attachment://vram.png"
    png = hf.files[0]
    assert png.filename == "vram.png" and png.data[:8] == PNG_MAGIC and png.bytes > 10_000
    hf_numbers = fit_numbers(embed)
    assert set(hf_numbers) == {"Q4_K_M · fits", "Q8_0 · fits", "F16 · does not fit"}
    assert all("GiB" in f["value"] and "**Total" in f["value"] for f in embed["fields"] if f["name"] in hf_numbers)
    assert world.hub.hits.get(f"{MIRROR}/config.json", 0) >= 1
    assert MIRROR.lower() in world.cached_repos()

    catalog = await world.sb.invoke("/fit gpu:T4 model:qwen3-8b")
    assert catalog.ok and not catalog.ephemeral
    assert catalog.embeds[0]["title"] == embed["title"]
    catalog_numbers = fit_numbers(catalog.embeds[0])
    assert [f["name"] for f in catalog.embeds[0]["fields"] if SCALED_FIGURE.search(f["value"])] == ["Q4_K_M · fits",
                                                                                                  "Q8_0 · fits"]
    assert catalog_numbers.keys() == hf_numbers.keys()
    # Same config.json: layers, heads, head_dim and max context are identical; the parameter count
    # differs only by the catalog's rounding to 8.19B (8,190,427,000 derived, 5e-5 relative), far below
    # the display precision. So each shown number may differ at most by one step of its last digit
    # (0.1 GiB, 1 tok/s, 0.1 s), should an exact value sit on a rounding boundary. A largest context is exact to
    # the token: 5e-5 of F16 weights is 0.8 MB, under 6 tokens of Qwen3-8B's 144 KiB-per-token cache.
    for name, values in hf_numbers.items():
        assert len(values) == len(catalog_numbers[name])
        for got, want in zip(values, catalog_numbers[name], strict=True):
            step = last_digit_step(want)
            tolerance = max(step * 1.01, 8.0 if float(want) >= 100 and step == 1 else 0.0)
            assert float(got) == pytest.approx(float(want), abs=tolerance), (name, got, want)


async def test_unknown_repo_is_a_private_error_and_not_cached(world: World) -> None:
    reply = await world.sb.invoke("/fit gpu:T4 model:hf:nobody/no-such-model")
    assert reply.ok and reply.ephemeral
    text = error_text(reply)
    assert "no such model" in text and "nobody/no-such-model" in text
    assert not reply.files
    assert "nobody/no-such-model" not in world.cached_repos()


async def test_slow_repo_times_out_privately_and_not_cached(world: World) -> None:
    loop = asyncio.get_running_loop()
    started = loop.time()
    reply = await world.sb.invoke("/fit gpu:T4 model:hf:slow/model", timeout=HF_TIMEOUT_S + 7)
    elapsed = loop.time() - started
    assert reply.ok, reply.error
    assert reply.deferred  # the private "thinking…" after 2 s; the error is its follow-up
    assert reply.ephemeral
    text = error_text(reply)
    assert f"did not answer within {HF_TIMEOUT_S:g} s" in text and "slow/model" in text
    assert elapsed >= HF_DEFER_AFTER_S  # only then is the private defer sent
    assert "slow/model" not in world.cached_repos()


@pytest.mark.parametrize("org", ["huge", "hugelength"])
async def test_oversized_config_is_refused_and_not_cached(world: World, org: str) -> None:
    reply = await world.sb.invoke(f"/fit gpu:T4 model:hf:{org}/model")
    assert reply.ok and reply.ephemeral
    text = error_text(reply)
    assert "too large" in text.lower() or "larger than" in text
    assert f"{org}/model" in text
    assert f"{org}/model" not in world.cached_repos()


async def test_gated_repo_is_a_private_error(world: World) -> None:
    reply = await world.sb.invoke("/fit gpu:T4 model:hf:gated/model")
    assert reply.ok and reply.ephemeral
    text = error_text(reply)
    assert "gated or private" in text and "gated/model" in text
    assert "gated/model" not in world.cached_repos()


async def test_known_hub_model_is_answered_while_the_hub_is_down(world: World) -> None:
    first = await world.sb.invoke(f"/fit gpu:T4 model:hf:{MIRROR}")
    assert first.ok and not first.ephemeral
    assert world.cached_model(MIRROR)["layers"] == 36
    before = dict(world.hub.hits)
    world.hub.fail_everything = True
    try:
        again = await world.sb.invoke(f"/fit gpu:T4 model:hf:{MIRROR}")
        # not in the reply cache (another context), so it is computed from the model already read
        other = await world.sb.invoke(f"/fit gpu:T4 model:hf:{MIRROR} ctx:16k")
    finally:
        world.hub.fail_everything = False
    assert world.hub.hits == before  # the Hub was not asked at all
    assert again.ok and not again.ephemeral and again.embeds == first.embeds
    assert other.ok and not other.ephemeral
    assert other.embeds[0]["title"] == "Qwen3-8B on 1× NVIDIA T4" and "context 16k" in other.embeds[0]["description"]
    assert other.files and other.files[0].data[:8] == PNG_MAGIC


@pytest.mark.parametrize("typed", [QWEN, "qwen/QWEN3-8b"])
async def test_a_repo_the_catalog_lists_is_answered_from_the_catalog_without_the_hub(world: World,
                                                                                    typed: str) -> None:
    before = dict(world.hub.hits)
    world.hub.fail_everything = True
    try:
        hf = await world.sb.invoke(f"/fit gpu:T4 model:hf:{typed} ctx:4k")
    finally:
        world.hub.fail_everything = False
    assert world.hub.hits == before, "the Hub was asked for a model the catalog lists"
    assert typed.lower() not in world.cached_repos()
    assert hf.ok and not hf.ephemeral, error_text(hf)
    catalog = await world.sb.invoke("/fit gpu:T4 model:qwen3-8b ctx:4k")
    assert hf.embeds == catalog.embeds


# --- /whatgpu ------------------------------------------------------------------------------------------


async def test_whatgpu_rows_are_the_estimators_and_all_fit(world: World, svc: Service) -> None:
    reply = await world.sb.invoke("/whatgpu model:llama-3.3-70b ctx:32k")
    assert reply.ok and not reply.ephemeral
    embed = reply.embeds[0]
    model, _ = svc.model("llama-3.3-70b")
    assert embed["title"] == f"What runs {model.name} at 32k context?"
    rows = table_rows(embed)
    assert 0 < len(rows) <= WHATGPU_PAGE

    q4 = svc.quant("int4", "llama.cpp")
    expected = what_gpu_setups(model, [q4], svc.catalog.gpus, ctx=32768, engine="llama.cpp").setups
    assert f"{len(expected)} setups" in embed["description"]
    shown = expected[:WHATGPU_PAGE]
    width = whatgpu_columns(shown, "en-US")[0].width
    assert [r["setup"] for r in rows] == [setup_label(s.gpu, s.count, short=True, width=width,
                                                      among=svc.catalog.gpus) for s in shown]
    assert {r["quant"] for r in rows} == {q4.name}

    for row, setup in zip(rows, shown, strict=True):
        q = Query(gpu=setup.gpu, gpus=setup.count, model=model, quant=q4, engine="llama.cpp", ctx=32768,
                  prompt_tokens=DEFAULT_PROMPT_TOKENS, kv="f16")
        mem = memory(q)
        assert mem.verdict != "does_not_fit", row
        assert float(row["free"]) == pytest.approx(mem.headroom_bytes / 2**30, abs=0.051), row
        assert float(row["free"]) >= 0

    big_single = [s for s in shown if s.count == 1 and s.gpu.vram_bytes >= 80e9]
    assert big_single, "no single card with at least 80 GB among the rows shown"


def gpu_count(setup: str) -> int:
    counted = re.match(r"([2-8])× ", setup)
    return int(counted.group(1)) if counted else 1


async def test_whatgpu_pages_list_fewest_gpus_first_as_they_say(world: World) -> None:
    # The reply says "fewest GPUs first" and "Ordered by GPU count, then launch price": no two-card setup may
    # come before a single card, on any page (it used to list 2× RTX 5090 among the single H100s and H200s).
    first = await world.sb.invoke("/whatgpu model:llama-3.1-70b min_tps:30")
    assert "fewest GPUs first" in first.embeds[0]["description"]
    setups = [r["setup"] for r in table_rows(first.embeds[0])]
    page = first
    while any(b.get("custom_id") == "whatgpu:next" and not b.get("disabled")
              for row in page.components for b in row.get("components", [])):
        page = await world.sb.driver.click(first, "whatgpu:next")
        assert page.ok, page.reason
        setups += [r["setup"] for r in table_rows(page.embeds[0])]
    counts = [gpu_count(s) for s in setups]
    assert counts == sorted(counts), setups
    assert "2× RTX 5090" in setups and 1 in counts, setups


async def test_whatgpu_under_a_budget_shows_single_cards_before_three(world: World) -> None:
    reply = await world.sb.invoke("/whatgpu model:qwen3-8b budget:1000")
    setups = [r["setup"] for r in table_rows(reply.embeds[0])]
    assert len(setups) == WHATGPU_PAGE and all(gpu_count(s) == 1 for s in setups), setups
    assert "RTX 4060" in setups and not any("GTX 1050 Ti" in s for s in setups), setups


async def test_whatgpu_cli_lists_multi_gpu_and_big_single_setups(capsys: pytest.CaptureFixture[str],
                                                                  svc: Service) -> None:
    from bot.cli import main

    argv = ["whatgpu", "--model", "llama-3.3-70b", "--ctx", "32k", "--json", "--limit", "200"]
    assert await asyncio.to_thread(main, argv) == 0
    setups = json.loads(capsys.readouterr().out)["setups"]
    assert setups and all(s["verdict"] != "does_not_fit" for s in setups)
    counts = [s["count"] for s in setups]
    assert counts == sorted(counts)
    assert any(s["count"] >= 2 for s in setups)
    vram = {g.id: g.vram_bytes for g in svc.catalog.gpus}
    assert any(s["count"] == 1 and vram[s["gpu"]] >= 80e9 for s in setups)


# --- partial offload -----------------------------------------------------------------------------------


async def test_partial_offload_for_70b_on_t4(world: World, svc: Service) -> None:
    reply = await world.sb.invoke("/fit gpu:T4 model:llama-3.3-70b quant:Q4_K_M")
    assert reply.ok and not reply.ephemeral
    embed = reply.embeds[0]
    assert embed["description"].startswith("**Does not fit**")
    fields = {f["name"]: f["value"] for f in embed["fields"]}
    assert "Partial offload" in fields, list(fields)
    text = fields["Partial offload"]
    found = re.search(r"with (\d+) of 80 layers on the GPU.*~(\d+(?:\.\d+)?) tok/s .*`-ngl (\d+)`", text)
    assert found, text
    layers, tps, ngl = int(found.group(1)), float(found.group(2)), int(found.group(3))
    assert 0 < layers < 80 and ngl == layers and tps > 0

    from estimator.offload import offload_plan

    model, _ = svc.model("llama-3.3-70b")
    plan = offload_plan(Query(gpu=svc.gpu("T4"), model=model, quant=svc.quant("Q4_K_M", "llama.cpp"), ctx=8192))
    assert plan is not None and plan.total_layers == 80
    assert plan.gpu_layers == layers and tps == pytest.approx(plan.decode_tps, abs=0.051)
