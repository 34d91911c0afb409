"""Community reports through the real bot and the loopback Discord: paste → confirm → stored →
shown beside the next /fit; limits, outliers held, deletion, moderation, export, refusals."""

from __future__ import annotations

import asyncio
import json
import subprocess
import sys
import tempfile
from collections.abc import AsyncIterator
from pathlib import Path
from typing import Any

import pytest
import pytest_asyncio

from bot import cli
from bot.sandbox import Sandbox
from bot.sandbox.models import Reply
from tests.inprocess.local_bot import bot_in_this_process

pytestmark = pytest.mark.asyncio(loop_scope="module")

ROOT = Path(__file__).resolve().parents[2]
USER_LIMIT = 3
MANAGE_GUILD = 1 << 5
BENCH = (
    "| model | size | params | backend | ngl | test | t/s |\n"
    "| ----- | ---: | -----: | ------- | --: | ---: | --: |\n"
    "| qwen3 8B Q4_K - Medium | 4.68 GiB | 8.19 B | CUDA | 99 | pp512 | {pp} ± 9.10 |\n"
    "| qwen3 8B Q4_K - Medium | 4.68 GiB | 8.19 B | CUDA | 99 | tg128 | {tg} ± 0.20 |\n"
    "\nbuild: 8e672efe (4446)"
)


@pytest_asyncio.fixture(loop_scope="module", scope="module")
async def sandbox(tmp_path_factory: pytest.TempPathFactory) -> AsyncIterator[tuple[Sandbox, Path]]:
    data_dir = tmp_path_factory.mktemp("reportdata")
    async with Sandbox() as sb, bot_in_this_process(sb, data_dir, rigcheck_owner_ids=str(sb.world.owner.id),
                                                    rigcheck_report_user_limit=USER_LIMIT, rigcheck_report_salt=""):
        yield sb, data_dir


def opt(name: str, value: Any) -> dict[str, Any]:
    kind = 4 if isinstance(value, int) and not isinstance(value, bool) else 5 if isinstance(value, bool) else 3
    return {"name": name, "type": kind, "value": value}


async def report(sb: Sandbox, sub: str, *options: dict[str, Any], user: int | None = None,
                 member_permissions: int | None = None) -> Reply:
    kwargs: dict[str, Any] = {"user": user}
    if member_permissions is not None:
        kwargs["member_permissions"] = member_permissions
    return await sb.driver.invoke_raw("report", [{"type": 1, "name": sub, "options": list(options)}], **kwargs)


def text_of(reply: Reply) -> str:
    return json.dumps(reply.embeds, ensure_ascii=False)


def t4_qwen(*more: dict[str, Any]) -> list[dict[str, Any]]:
    return [opt("gpu", "t4"), opt("model", "qwen3-8b"), opt("quant", "Q4_K_M"), opt("engine", "llama.cpp"), *more]


def _export_everything(source: Path) -> list[dict[str, Any]]:
    with tempfile.TemporaryDirectory() as tmp:
        out = Path(tmp) / "reports.json"
        assert cli.main(["reports", "export", "--json", "--all", "--from", str(source), "-o", str(out)]) == 0
        return list(json.loads(out.read_text(encoding="utf-8"))["measurement"])


async def stored_reports(data_dir: Path) -> list[dict[str, Any]]:
    """What the bot has stored, read by `rigcheck reports export` run in this process (the command as its own
    process is test_export_round_trips_accepted_reports's): a second of imports per read otherwise."""
    return await asyncio.to_thread(_export_everything, data_dir / "state.sqlite3")


async def test_pasted_llama_bench_is_confirmed_stored_and_shown_beside_fit(sandbox: tuple[Sandbox, Path]) -> None:
    sb, _ = sandbox
    before = await sb.invoke("/fit gpu:T4 model:qwen3-8b quant:Q4_K_M")
    assert "Community" not in text_of(before)
    preview = await report(sb, "add", *t4_qwen(opt("paste", BENCH.format(pp="1234.56", tg="35.20"))))
    assert preview.error is None and preview.ephemeral, preview
    shown = text_of(preview)
    assert "decode 35 tok/s" in shown and "prompt 1,235 tok/s" in shown and "8e672efe (4446)" in shown
    assert "rigcheck's estimate" in shown and "80 % range" in shown and "held for review" not in shown
    # Nothing is stored until the reporter confirms.
    assert "Community" not in text_of(await sb.invoke("/fit gpu:T4 model:qwen3-8b quant:Q4_K_M"))
    stranger = await sb.driver.click(preview, "report:confirm", user=9999)
    assert stranger.rejected_by_client  # an ephemeral preview: nobody else sees its buttons
    done = await sb.driver.click(preview, "report:confirm")
    assert done.error is None and "Stored as report #" in text_of(done)
    assert done.components == []  # pressed once: the buttons are gone
    after = await sb.invoke("/fit gpu:T4 model:qwen3-8b quant:Q4_K_M")
    assert not after.deferred  # served from the reply cache, and still showing the new report
    fields = {f["name"]: f["value"] for f in after.embeds[0]["fields"]}
    community = fields["Community measurements (reported by people, not estimates)"]
    assert community == "Q4_K_M: community 35 tok/s (1 report)"
    # The estimate's own field is untouched by the report.
    assert fields["Q4_K_M · fits"] == next(f["value"] for f in before.embeds[0]["fields"]
                                           if f["name"] == "Q4_K_M · fits")


async def test_second_report_updates_the_median_and_spread(sandbox: tuple[Sandbox, Path]) -> None:
    sb, _ = sandbox
    preview = await report(sb, "add", *t4_qwen(opt("decode_tps", "31 tok/s")), user=sb.world.owner.id)
    done = await sb.driver.click(preview, "report:confirm", user=sb.world.owner.id)
    assert "Stored" in text_of(done)
    after = await sb.invoke("/fit gpu:T4 model:qwen3-8b quant:Q4_K_M")
    assert "Q4_K_M: community 33 tok/s (2 reports, median; 31–35)" in text_of(after)
    ranked = await sb.invoke("/rank gpu:T4")
    [field] = [f for f in ranked.embeds[0].get("fields", []) if f["name"].startswith("Community measurements")]
    assert field["value"] == "Qwen3-8B Q4_K_M: community 33 tok/s (2 reports, median; 31–35)"
    assert "Community" not in text_of(await sb.invoke("/rank gpu:T4 gpus:2"))  # another setup


async def test_outlier_is_held_not_shown_until_an_owner_accepts_it(sandbox: tuple[Sandbox, Path]) -> None:
    sb, _ = sandbox
    user = 4242
    preview = await report(sb, "add", *t4_qwen(opt("decode_tps", "900")), user=user)
    assert "Will be held for review" in text_of(preview)
    done = await sb.driver.click(preview, "report:confirm", user=user)
    assert "held for review" in text_of(done)
    assert "(2 reports" in text_of(await sb.invoke("/fit gpu:T4 model:qwen3-8b quant:Q4_K_M"))
    refused = await report(sb, "moderate", opt("action", "held"), user=user)
    assert refused.ephemeral and "Only the bot's owners" in text_of(refused)
    held = await report(sb, "moderate", opt("action", "held"), user=sb.world.owner.id)
    [line] = [x for x in held.embeds[0]["description"].splitlines() if "900 tok/s" in x]
    report_id = int(line.split(" ")[0].lstrip("#"))
    accepted = await report(sb, "moderate", opt("action", "accept"), opt("id", report_id), user=sb.world.owner.id)
    assert f"Report #{report_id} is accepted" in (accepted.content or "")
    assert "(3 reports" in text_of(await sb.invoke("/fit gpu:T4 model:qwen3-8b quant:Q4_K_M"))
    removed = await report(sb, "moderate", opt("action", "remove"), opt("id", report_id), user=sb.world.owner.id)
    assert "removed" in (removed.content or "")
    assert "(2 reports" in text_of(await sb.invoke("/fit gpu:T4 model:qwen3-8b quant:Q4_K_M"))


@pytest.mark.parametrize("action", ["held", "accept"])
async def test_moderating_as_anyone_but_an_owner_is_not_allowed(sandbox: tuple[Sandbox, Path], action: str) -> None:
    # No option is wrong: the asker may not moderate, and the reply's title says that.
    sb, _ = sandbox
    refused = await report(sb, "moderate", opt("action", action), opt("id", 1), user=4242)
    assert refused.ephemeral and refused.embeds[0]["title"] == "Not allowed", refused.embeds
    assert refused.embeds[0]["description"] == "Only the bot's owners can moderate reports."


async def test_per_user_rate_limit(sandbox: tuple[Sandbox, Path]) -> None:
    sb, _ = sandbox
    user = 5151
    for n in range(USER_LIMIT):
        preview = await report(sb, "add", *t4_qwen(opt("gpus", 2), opt("decode_tps", f"{20 + n}")), user=user)
        assert "Stored" in text_of(await sb.driver.click(preview, "report:confirm", user=user))
    over = await report(sb, "add", *t4_qwen(opt("decode_tps", "22")), user=user)
    assert over.ephemeral and over.components == [] and f"made {USER_LIMIT} reports" in text_of(over)


async def test_mine_lists_and_deletes_only_your_own(sandbox: tuple[Sandbox, Path]) -> None:
    sb, data_dir = sandbox
    user = 6161
    preview = await report(sb, "add", *t4_qwen(opt("gpus", 3), opt("decode_tps", "9.5")), user=user)
    await sb.driver.click(preview, "report:confirm", user=user)
    mine = await report(sb, "mine", user=user)
    assert mine.ephemeral and "decode 9.5 tok/s" in text_of(mine) and "decode 35 tok/s" not in text_of(mine)
    [menu] = [c for row in mine.components for c in row["components"] if c.get("custom_id") == "report:delete"]
    [option] = menu["options"]
    gone = await sb.driver.click(mine, "report:delete", values=[option["value"]], user=user)
    assert f"Deleted report #{option['value']}" in text_of(gone) and "You have no reports" in text_of(gone)
    assert all(r["source"] != f"rigcheck community report #{option['value']}" for r in await stored_reports(data_dir))


async def test_managers_hide_and_opt_out(sandbox: tuple[Sandbox, Path]) -> None:
    sb, _ = sandbox
    not_manager = await report(sb, "optout", opt("off", True), member_permissions=0)
    assert not_manager.ephemeral and "Manage Server" in text_of(not_manager)
    off = await report(sb, "optout", opt("off", True), member_permissions=MANAGE_GUILD)
    assert "off in this server" in (off.content or "")
    assert "Community" not in text_of(await sb.invoke("/fit gpu:T4 model:qwen3-8b quant:Q4_K_M"))
    refused = await report(sb, "add", *t4_qwen(opt("decode_tps", "30")), user=7171)
    assert refused.ephemeral and "turned community reports off" in text_of(refused)
    await report(sb, "optout", opt("off", False), member_permissions=MANAGE_GUILD)
    assert "(2 reports" in text_of(await sb.invoke("/fit gpu:T4 model:qwen3-8b quant:Q4_K_M"))
    owners = await report(sb, "mine", user=sb.world.owner.id)
    [line] = [x for x in owners.embeds[0]["description"].splitlines() if "decode 31 tok/s" in x]
    report_id = int(line.split(" ")[0].lstrip("#"))
    refused_hide = await report(sb, "hide", opt("id", report_id), member_permissions=0)
    assert refused_hide.ephemeral and "Manage Server" in text_of(refused_hide)
    hidden = await report(sb, "hide", opt("id", report_id), member_permissions=MANAGE_GUILD)
    assert f"Report #{report_id} is hidden" in (hidden.content or "")
    after = await sb.invoke("/fit gpu:T4 model:qwen3-8b quant:Q4_K_M")
    assert "Q4_K_M: community 35 tok/s (1 report)" in text_of(after)


@pytest.mark.parametrize(("options", "words"), [
    (t4_qwen(opt("decode_tps", "-35")), "decode_tps must be a speed"),
    (t4_qwen(opt("decode_tps", "0")), "positive"),
    (t4_qwen(opt("decode_tps", "123456")), "not plausible"),
    (t4_qwen(opt("decode_tps", "35 GB/s")), "must be a speed"),
    (t4_qwen(), "give decode_tps"),
    (t4_qwen(opt("paste", "| model | test |\n| x | y |")), "could not be read"),
    (t4_qwen(opt("paste", "eval rate: lots")), "could not be read"),
    (t4_qwen(opt("paste", "A" * 10_000)), "longer than 4000"),
    (t4_qwen(opt("decode_tps", "30"), opt("notes", "N" * 10_000)), "longer than 200"),
    (t4_qwen(opt("decode_tps", "30"), opt("notes", "hi @everyone")), "must not contain mentions"),
    (t4_qwen(opt("decode_tps", "30"), opt("build", "<@123456789012345678>")), "must not contain mentions"),
    ([opt("gpu", "t4"), opt("model", "qwen3-8b"), opt("quant", "Q4_K_M"), opt("engine", "onnxruntime"),
      opt("decode_tps", "30")], "engine must be one of"),
])
async def test_bad_input_is_refused_privately_and_nothing_is_stored(
        sandbox: tuple[Sandbox, Path], options: list[dict[str, Any]], words: str) -> None:
    sb, data_dir = sandbox
    before = len(await stored_reports(data_dir))
    reply = await report(sb, "add", *options, user=8181)
    assert reply.error is None and reply.ephemeral and reply.components == [], reply
    assert words in text_of(reply)
    assert "<@123456789012345678>" not in text_of(reply) and "@everyone" not in text_of(reply)
    assert len(await stored_reports(data_dir)) == before


async def test_export_round_trips_accepted_reports(sandbox: tuple[Sandbox, Path], tmp_path: Path) -> None:
    _, data_dir = sandbox
    source = str(data_dir / "state.sqlite3")
    as_json = subprocess.run([sys.executable, "-m", "bot.cli", "reports", "export", "--json", "--from", source],
                             capture_output=True, text=True, cwd=ROOT, check=True)
    rows = json.loads(as_json.stdout)["measurement"]
    decode = [r for r in rows if r["test"].startswith("tg")]
    assert sorted(r["tps"] for r in decode if r["gpu_count"] == 1) == [35.2]  # the hidden 31 is left out
    everything = await stored_reports(data_dir)
    assert {r["status"] for r in everything if r["tps"] == 31.0} == {"hidden"}
    bench = next(r for r in rows if r["report_source"] == "llama-bench" and r["test"] == "tg128")
    assert bench["gpu"] == "NVIDIA T4" and bench["model"] == "Qwen3-8B" and bench["quant"] == "Q4_K_M"
    assert bench["build"] == "8e672efe (4446)" and bench["estimate_decode_tps"] > 0
    assert "reporter" not in bench and "guild_id" not in bench
    assert any(r["test"] == "pp512" and r["tps"] == 1234.56 for r in rows)
    out = tmp_path / "reports.csv"
    subprocess.run([sys.executable, "-m", "bot.cli", "reports", "export", "--csv", "--from", source, "-o", str(out)],
                   cwd=ROOT, check=True, capture_output=True)
    from bot.reports.export import read_csv

    assert read_csv(out.read_text(encoding="utf-8")) == rows
