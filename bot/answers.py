"""What each request is answered with, chosen by the request's type.

`reply_to(request, svc, page, locale=…)` is the one entry the render pool, crash resume and page buttons
call; a request type without a reply registered here is refused loudly, never answered by a guess.
"""

from __future__ import annotations

from functools import singledispatch

from bot.render import replies
from bot.render.reply import Reply
from bot.requests import (
    CompareRequest,
    FinetuneRequest,
    FitRequest,
    GpuRequest,
    RankRequest,
    Request,
    WhatGpuRequest,
)
from bot.service import Service


@singledispatch
def reply_to(request: Request, svc: Service, page: int = 1, *, locale: str) -> Reply:
    raise TypeError(f"no reply is registered for {type(request).__name__}")


@reply_to.register
def _fit(request: FitRequest, svc: Service, page: int = 1, *, locale: str) -> Reply:
    return replies.fit_reply(svc, request, locale=locale)


@reply_to.register
def _rank(request: RankRequest, svc: Service, page: int = 1, *, locale: str) -> Reply:
    return replies.rank_reply(svc, request, page, locale=locale)


@reply_to.register
def _gpu(request: GpuRequest, svc: Service, page: int = 1, *, locale: str) -> Reply:
    return replies.gpu_reply(svc, request, locale=locale)


@reply_to.register
def _compare(request: CompareRequest, svc: Service, page: int = 1, *, locale: str) -> Reply:
    return replies.compare_reply(svc, request, locale=locale)


@reply_to.register
def _finetune(request: FinetuneRequest, svc: Service, page: int = 1, *, locale: str) -> Reply:
    return replies.finetune_reply(svc, request, locale=locale)


@reply_to.register
def _whatgpu(request: WhatGpuRequest, svc: Service, page: int = 1, *, locale: str) -> Reply:
    return replies.whatgpu_reply(svc, request, page, locale=locale)


__all__ = ["reply_to"]
