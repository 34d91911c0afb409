"""Renders replies in worker processes, so chart drawing never holds the event loop's GIL.

Rendering in a thread is off the loop but not off the interpreter lock: matplotlib's Agg renderer keeps
the GIL for tens of milliseconds, and the loop stalls that long (the loop-lag benchmark shows it). Each
worker builds its own `Service` once and answers `(job, args, locale)` with a picklable `Reply`.
"""

from __future__ import annotations

import asyncio
import contextlib
import hashlib
import logging
import multiprocessing
import os
import pickle
import time
from collections import OrderedDict
from concurrent.futures import Executor, ProcessPoolExecutor, ThreadPoolExecutor

from bot.answers import reply_to
from bot.lifeline import die_with_parent
from bot.render import charts
from bot.render.reply import Reply
from bot.requests import Request
from bot.service import Service
from catalog.schema import Model

log = logging.getLogger(__name__)

_worker_service: Service | None = None

# Chart workers yield the CPU to the bot process: the answer a person sees first (the embed) comes from
# there, the chart a moment later from here.
WORKER_NICENESS = 4


def _init_worker(parent_pid: int) -> None:
    global _worker_service
    die_with_parent(parent_pid)
    with contextlib.suppress(OSError):
        os.nice(WORKER_NICENESS)
    _worker_service = Service()
    from bot.render import charts  # noqa: F401  (fonts and matplotlib load once, not on the first request)


CHART_CACHE_ENTRIES = 512
# One drawing's seconds before any was timed (a chart takes 50-150 ms of one core), and the weight of each
# new timing in the running mean.
FIRST_DRAW_GUESS_S = 0.1
DRAW_MEAN_WEIGHT = 0.2


def _run_split(request: Request, page: int, locale: str, service: Service) -> tuple[Reply, list[charts.ChartJob]]:
    """The reply with placeholders for its charts, and what to draw for them."""
    with charts.charts_deferred() as jobs:
        reply = reply_to(request, service, page, locale=locale)
    return reply, list(jobs)


def _draw(job: charts.ChartJob) -> tuple[bytes, float]:
    """The PNG and the seconds drawing it took (in the worker, not counting the wait for one)."""
    started = time.perf_counter()
    png = charts.draw(job)
    return png, time.perf_counter() - started


def chart_digest(job: charts.ChartJob) -> str:
    """Same inputs, same picture: the key under which a drawn chart is kept."""
    return hashlib.sha256(pickle.dumps((job.name, job.args, sorted(job.kwargs.items())), protocol=5)).hexdigest()


def _run(request: Request, page: int, locale: str, extra_models: dict[str, Model],
         service: Service | None = None) -> Reply:
    svc = service if service is not None else _worker_service
    assert svc is not None, "worker not initialised"
    svc.extra_models.update(extra_models)
    return reply_to(request, svc, page, locale=locale)


def _ping() -> None:
    """Nothing: proves a worker is up (its imports done)."""


class RenderPool:
    """`await pool.render(request, page, locale=…)`; with `workers=0` it renders in threads instead."""

    def __init__(self, service: Service, workers: int) -> None:
        self.service = service
        self.workers = workers
        self._executor: Executor
        if workers > 0:
            # spawn, not fork: the parent has a running loop and database threads that must not be copied.
            self._executor = ProcessPoolExecutor(
                max_workers=workers, mp_context=multiprocessing.get_context("spawn"),
                initializer=_init_worker, initargs=(os.getpid(),),
            )
        else:
            self._executor = ThreadPoolExecutor(max_workers=2, thread_name_prefix="render")
        # Answers without their charts are computed here, in the bot process (milliseconds each), so
        # they never queue behind chart drawing; charts go to niced worker processes.
        self._answers = ThreadPoolExecutor(max_workers=2, thread_name_prefix="answer")
        self._charts: Executor = self._executor
        self._drawn: OrderedDict[str, bytes] = OrderedDict()
        self._drawing: dict[str, asyncio.Future[tuple[bytes, float]]] = {}
        # A running mean of one drawing's seconds, to tell whether a chart can be waited for.
        self._draw_s = FIRST_DRAW_GUESS_S

    async def render(self, request: Request, page: int = 1, *, locale: str) -> Reply:
        loop = asyncio.get_running_loop()
        extra = {k: v for k, v in self.service.extra_models.items()}
        if self.workers > 0:
            return await loop.run_in_executor(self._executor, _run, request, page, locale, extra)
        return await loop.run_in_executor(self._executor, _run, request, page, locale, {}, self.service)

    async def render_split(self, request: Request, page: int = 1, *,
                           locale: str) -> tuple[Reply, list[charts.ChartJob]]:
        """The reply with chart placeholders, computed off the loop but not behind chart drawing."""
        loop = asyncio.get_running_loop()
        return await loop.run_in_executor(self._answers, _run_split, request, page, locale, self.service)

    def expected_draw_s(self, jobs: list[charts.ChartJob]) -> float:
        """About how long until `jobs` are drawn if asked now: behind the drawings already queued, spread
        over the workers; 0 when every one is in the digest cache."""
        new = [job for job in jobs if chart_digest(job) not in self._drawn]
        if not new:
            return 0.0
        lanes = max(self.workers, 1)
        return (len(self._drawing) // lanes + len(new)) * self._draw_s

    async def draw(self, jobs: list[charts.ChartJob]) -> list[bytes]:
        """PNGs for the jobs, from the digest cache when the same chart was drawn before; one drawing
        per digest at a time."""
        return list(await asyncio.gather(*(self._draw_one(job) for job in jobs)))

    async def _draw_one(self, job: charts.ChartJob) -> bytes:
        key = chart_digest(job)
        if key in self._drawn:
            self._drawn.move_to_end(key)
            return self._drawn[key]
        running = self._drawing.get(key)
        if running is None:
            loop = asyncio.get_running_loop()
            running = asyncio.ensure_future(loop.run_in_executor(self._charts, _draw, job))
            self._drawing[key] = running
            running.add_done_callback(lambda done: self._drew(key, done))
        png, _took = await asyncio.shield(running)
        self._drawn[key] = png
        while len(self._drawn) > CHART_CACHE_ENTRIES:
            self._drawn.popitem(last=False)
        return png

    def _drew(self, key: str, done: asyncio.Future[tuple[bytes, float]]) -> None:
        self._drawing.pop(key, None)
        if not done.cancelled() and done.exception() is None:
            self._draw_s += (done.result()[1] - self._draw_s) * DRAW_MEAN_WEIGHT

    async def warm(self) -> None:
        """Start every worker now (a few seconds of imports) rather than on the first command."""
        loop = asyncio.get_running_loop()
        await asyncio.gather(*(loop.run_in_executor(self._executor, _ping) for _ in range(max(self.workers, 1))))

        log.info("render pool ready: %s", f"{self.workers} processes" if self.workers else "threads")

    def close(self) -> None:
        self._executor.shutdown(wait=False, cancel_futures=True)
        self._answers.shutdown(wait=False, cancel_futures=True)


__all__ = ["RenderPool", "Reply"]
