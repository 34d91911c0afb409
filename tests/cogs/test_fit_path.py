"""One /fit from the cog to the reply, measured in-process: the project files its hand-offs pass through
(request built, cache read, estimator called, answer rendered, cache written, reply sent) and how often the
estimator computes the answer. The spies wrap the real functions and record the call stack; they change
nothing the command does."""

from __future__ import annotations

import asyncio
import sys
from collections.abc import Callable
from pathlib import Path
from typing import Any

import pytest
from discord.webhook.async_ import async_context

import estimator.advice
import estimator.curve
import estimator.memory
import estimator.verdict
from bot.client import RigBot
from bot.requests import FitRequest
from tests.cogs.test_cogs_in_process import Captured, bot, slash

__all__ = ["bot"]  # the fixture, shared with the other in-process tests

ROOT = Path(__file__).resolve().parents[2]
PACKAGES = ("bot", "estimator", "catalog")
PATH_FILES_MAX = 8
ONCE = {"fit_answer": 1, "fit": 1, "vram_curves": 1, "memory": 3}


def project_file(filename: str) -> str | None:
    path = Path(filename).resolve()
    if not path.is_relative_to(ROOT):
        return None
    relative = path.relative_to(ROOT)
    return relative.as_posix() if relative.parts[0] in PACKAGES else None


class Trail:
    """The project files on the call stack at each hand-off, and the estimator's calls."""

    def __init__(self) -> None:
        self.files: set[str] = set()
        self.calls: dict[str, int] = {}

    def mark(self, target: Callable[..., Any] | None = None) -> None:
        """The files on the stack here, and the file of `target` (the function being handed to)."""
        frame = sys._getframe(1)
        while frame is not None:
            found = project_file(frame.f_code.co_filename)
            if found:
                self.files.add(found)
            frame = frame.f_back  # type: ignore[assignment]
        if target is None:
            return
        code = getattr(target, "__code__", None) or getattr(getattr(target, "__func__", None), "__code__", None)
        if code is not None and (found := project_file(code.co_filename)):
            self.files.add(found)

    def spy(self, real: Callable[..., Any], *, count: bool = False, hand_off: bool = True) -> Callable[..., Any]:
        """`hand_off`: a step of the path (its stack counts); `count`: how often it runs is kept."""
        def spied(*args: Any, **kwargs: Any) -> Any:
            if count:
                self.calls[real.__name__] = self.calls.get(real.__name__, 0) + 1
            if hand_off:
                self.mark(real)
            return real(*args, **kwargs)

        return spied

    def spy_async(self, real: Callable[..., Any]) -> Callable[..., Any]:
        async def spied(*args: Any, **kwargs: Any) -> Any:
            self.mark(real)
            return await real(*args, **kwargs)

        return spied


def wrap_everywhere(monkeypatch: pytest.MonkeyPatch, real: Callable[..., Any], spied: Callable[..., Any]) -> None:
    """Every loaded module that holds the function under its name (imported at the top, or looked up at
    call time from its own module) gets the spy instead."""
    for module in list(sys.modules.values()):
        if getattr(module, real.__name__, None) is real:
            monkeypatch.setattr(module, real.__name__, spied)


def answered(sent: Captured) -> bool:
    """An embed went out: a follow-up after the defer, or (from the cache) the first response."""
    return any(body.get("data", body).get("embeds") for _, _, body, _ in sent.sent)


async def ask(rig: RigBot, path: Trail, **options: Any) -> Captured:
    class Sent(Captured):
        async def request(self, route: Any, session: Any, **kwargs: Any) -> Any:
            path.mark()
            return await super().request(route, session, **kwargs)

    captured = Sent()
    token = async_context.set(captured)
    try:
        await rig.tree._call(slash(rig, "fit", **options))
        while rig.background:
            await asyncio.gather(*rig.background)
    finally:
        async_context.reset(token)
    return captured


async def test_fit_passes_few_files_from_cog_to_reply_and_computes_once(
    bot: RigBot, tmp_path: Path, monkeypatch: pytest.MonkeyPatch
) -> None:
    await bot.open_stores(tmp_path)  # the answer cache and the state store, as setup_hook opens them
    assert bot.cache is not None and bot.state is not None
    try:
        path = Trail()
        # The estimator's entry is a hand-off; the fit and the curves it computes are counted, wherever called.
        wrap_everywhere(monkeypatch, estimator.advice.fit_answer, path.spy(estimator.advice.fit_answer, count=True))
        for computed in (estimator.verdict.fit, estimator.curve.vram_curves, estimator.memory.memory):
            wrap_everywhere(monkeypatch, computed, path.spy(computed, count=True, hand_off=False))
        monkeypatch.setattr(FitRequest, "build", staticmethod(path.spy(FitRequest.build)))
        monkeypatch.setattr(bot.cache, "get", path.spy_async(bot.cache.get))
        monkeypatch.setattr(bot.cache, "put", path.spy_async(bot.cache.put))
        monkeypatch.setattr(bot.render_pool, "render_split", path.spy_async(bot.render_pool.render_split))

        sent = await ask(bot, path, gpu="T4", model="qwen3-8b")

        assert answered(sent)
        assert {"bot/cogs/fit.py", "bot/requests.py", "bot/store/cache.py", "bot/render/replies.py",
                "estimator/advice.py"} <= path.files, sorted(path.files)
        assert len(path.files) <= PATH_FILES_MAX, " ".join(sorted(path.files))
        # One call into the estimator; inside it, one fit and one set of curves, and each of the three formats
        # /fit compares by default (int4, int8, fp16) has its memory worked out once.
        assert path.calls == ONCE, path.calls

        # The same question again is the cached answer: the estimator is not asked twice.
        again = await ask(bot, path, gpu="T4", model="qwen3-8b")
        assert answered(again)
        assert path.calls == ONCE, path.calls
    finally:
        await bot.cache.close()
        await bot.state.close()
