"""One place that turns a question in people's words into estimator calls.

The CLI, the Discord commands and the daily summaries all go through `Service`, so a name resolves the
same way and an answer is computed the same way wherever it is asked.
"""

from __future__ import annotations

import hashlib
from collections.abc import Callable
from dataclasses import dataclass, field
from functools import cache, cached_property
from typing import Any

from bot.huggingface_client import HubClient, HubError
from bot.params import BadValue, format_tokens
from bot.requests import FitRequest, RankRequest
from catalog.resolve import NotFound, Resolver
from catalog.schema import GPU, Model, QuantFormat
from catalog.store import Catalog, load_catalog
from estimator import ESTIMATOR_VERSION
from estimator.engines import DEFAULT_FORMAT, DEFAULT_LEVELS, runs_format, supports
from estimator.memory import memory
from estimator.query import (
    ENGINES,
    MAX_GPUS,
    Engine,
    Query,
)
from estimator.rank import RankRow, rank
from estimator.verdict import FitResult, default_formats, fit


@dataclass(frozen=True)
class GpuChoice:
    """The GPU and card count a text names (`2x 3090`), and for a chip typed without its memory size
    (`m2 ultra`) which memory option was picked and why."""

    gpu: GPU
    count: int
    family: str | None = None
    options: tuple[GPU, ...] = ()
    fitted: bool = False  # picked as the smallest option that runs the model, not just the smallest

    def note_values(self, sep: str = ", ") -> dict[str, Any] | None:
        if self.family is None:
            return None
        sizes = sep.join(f"{g.vram_gb:g}" for g in self.options)
        return {"family": self.family, "sizes": sizes, "picked": f"{self.gpu.vram_gb:g}"}


@dataclass
class Service:
    catalog: Catalog = field(default_factory=load_catalog)
    extra_models: dict[str, Model] = field(default_factory=dict)
    hub: HubClient | None = None

    async def resolve_hf(self, text: str) -> None:
        """`hf:org/name` → fetched (and cached) into extra_models under that exact text."""
        key = text.strip()
        if key.lower().startswith("hf:") and key not in self.extra_models:
            if self.hub is None:
                raise BadValue.of("bad.hf_off")
            try:
                self.extra_models[key] = await self.hub.get_or_fetch(key)
            except HubError as exc:
                raise BadValue(str(exc), key=exc.key, values=exc.values) from None

    @cached_property
    def resolver(self) -> Resolver:
        return Resolver(self.catalog)

    @property
    def version(self) -> str:
        """Catalog data + estimator code + fitted constants + the replies' templates and render code: a change to
        any of them retires cached answers."""
        from bot.render.version import render_digest

        return f"{self.catalog.version}+{ESTIMATOR_VERSION}+{constants_digest()}+{render_digest()}"

    # --- parsing ----------------------------------------------------------------------------------

    def gpu(self, text: str) -> GPU:
        """The GPU a text names; for a chip family (`m2 ultra`) its smallest memory option."""
        return self.gpu_choice(text).gpu

    def gpu_choice(self, text: str, gpus: int = 1, runs: Callable[[GPU, int], bool] | None = None) -> GpuChoice:
        """GPU and count from `text` and the `gpus` option: a count written in the text (`2x 3090`) is the
        count unless `gpus` says otherwise too. A chip family answers with its smallest memory option, or
        with the smallest for which `runs(gpu, count)` holds."""
        setup = self.resolver.gpu_setup(text)
        count = self.gpus(gpus)
        if setup.count > 1:
            if count not in (1, setup.count):
                raise BadValue.of("gpus.conflict", text=text.strip()[:40], written=setup.count, option=count)
            count = self.gpus(setup.count)
        if not setup.is_family:
            return GpuChoice(gpu=setup.options[0], count=count)
        options = tuple(setup.options)
        if runs is not None:
            for gpu in options:
                if runs(gpu, count):
                    return GpuChoice(gpu, count, setup.family, options, fitted=True)
        return GpuChoice(options[0], count, setup.family, options)

    def model(self, text: str) -> tuple[Model, QuantFormat | None]:
        key = text.strip()
        if key in self.extra_models:
            return self.extra_models[key], None
        choice = self.resolver.model(text)
        return choice.model, choice.quant

    @staticmethod
    def gpus(count: int) -> int:
        if not 1 <= int(count) <= MAX_GPUS:
            raise BadValue.of("bad.gpus", most=MAX_GPUS)
        return int(count)

    def quant(self, text: str, engine: Engine) -> QuantFormat:
        key = text.strip().lower()
        if key in DEFAULT_FORMAT[engine]:
            return self.catalog.quant(DEFAULT_FORMAT[engine][key])
        fmt = self.resolver.quant_or_none(key)
        if fmt is None:
            levels = ", ".join(DEFAULT_FORMAT[engine])
            formats = ", ".join(q.name for q in self.catalog.quants if runs_format(engine, q))
            raise BadValue.of("bad.quant", got=repr(text[:30]), levels=levels, formats=formats)
        if not runs_format(engine, fmt):
            own = ", ".join(q.name for q in self.catalog.quants if runs_format(engine, q))
            runs_on = [e for e in ENGINES if runs_format(e, fmt)]
            if runs_on:
                raise BadValue.of("quant.other_engine", quant=fmt.name, engines=engine_names(fmt.engines),
                                  engine=engine, suggestion=runs_on[0], formats=own)
            raise BadValue.of("quant.no_engine", quant=fmt.name, engines=engine_names(fmt.engines), engine=engine,
                              formats=own)
        return fmt

    def formats(self, engine: Engine, quant: str | None) -> list[QuantFormat]:
        if quant:
            return [self.quant(quant, engine)]
        return default_formats(self.catalog, engine)

    # --- questions --------------------------------------------------------------------------------

    def fit_choice(self, req: FitRequest) -> GpuChoice:
        """For /fit, a chip family answers with the smallest memory option on which some format runs."""
        model, tagged = self.model(req.model)
        engine = req.engine
        formats = self.formats(engine, req.quant) if req.quant or tagged is None else [tagged]

        def runs(gpu: GPU, count: int) -> bool:
            if not supports(engine, gpu):
                return False
            q = Query(gpu=gpu, gpus=count, model=model, quant=formats[0], engine=engine, ctx=req.ctx, kv=req.kv,
                      batch=req.batch)
            return any(memory(q.model_copy(update={"quant": f})).verdict != "does_not_fit" for f in formats)

        return self.gpu_choice(req.gpu, req.gpus, runs)

    def base_query(self, req: FitRequest) -> tuple[Query, list[QuantFormat]]:
        choice = self.fit_choice(req)
        gpu = choice.gpu
        model, tagged = self.model(req.model)
        engine = req.engine
        check_engine(engine, gpu)
        formats = self.formats(engine, req.quant) if req.quant or tagged is None else [tagged]
        self.check_context(model, req.ctx)
        q = Query(
            gpu=gpu,
            gpus=choice.count,
            model=model,
            quant=formats[0],
            engine=engine,
            ctx=req.ctx,
            prompt_tokens=min(req.prompt, req.ctx),
            kv=req.kv,
            batch=req.batch,
        )
        return q, formats

    @staticmethod
    def check_context(model: Model, ctx: int) -> None:
        """A context past every window the publisher documents is refused with the longest there is."""
        fit_ = model.context_fit(ctx)
        if fit_.status == "too_long":
            raise BadValue.of("ctx.too_long", model=model.name, ctx=format_tokens(ctx),
                              limit=format_tokens(fit_.limit))

    def fit(self, req: FitRequest) -> FitResult:
        q, formats = self.base_query(req)
        return fit(q, formats)

    def rank(self, req: RankRequest) -> tuple[GPU, list[RankRow]]:
        choice = self.gpu_choice(req.gpu, req.gpus)
        gpu = choice.gpu
        check_engine(req.engine, gpu)
        rows = rank(
            self.catalog.models,
            self.formats(req.engine, req.quant),
            gpu,
            gpus=choice.count,
            ctx=req.ctx,
            engine=req.engine,
            kv=req.kv,
            sort=req.sort,
        )
        return gpu, rows[: req.limit] if req.limit else rows



# How people name the engines a format runs on (SGLang and TensorRT-LLM load vLLM's formats).
ENGINE_NAMES = {"llama.cpp": "llama.cpp (Ollama, LM Studio)", "vllm": "vLLM/SGLang/TensorRT-LLM", "mlx": "MLX",
                "exllamav2": "ExLlamaV2", "exllamav3": "ExLlamaV3"}


def check_engine(engine: Engine, gpu: GPU) -> None:
    """Refuse, with the reason, an engine that does not run on this GPU (MLX off Apple, ExLlamaV3 before Ampere)."""
    if supports(engine, gpu):
        return
    key = ("bad.engine_gpu_apple" if gpu.vendor == "apple" else
           "bad.engine_gpu_ampere" if engine == "exllamav3" and gpu.vendor == "nvidia" else "bad.engine_gpu")
    raise BadValue.of(key, engine=engine, gpu=gpu.name)


def engine_names(engines: tuple[str, ...]) -> str:
    return "/".join(ENGINE_NAMES.get(e, e) for e in engines)


@cache
def constants_digest() -> str:
    # The fitted constants are code, fixed for the process's life, and every command's cache key reads it.
    from estimator.calibration import constants

    text = repr((sorted(constants.DECODE_OFFSETS.items()), sorted(constants.PREFILL_OFFSETS.items()),
                 sorted(constants.BANDS.items()), sorted(constants.ACHIEVED_BANDWIDTH_RATIO.items())))
    return hashlib.sha256(text.encode()).hexdigest()[:12]


def suggestions_of(err: NotFound) -> list[dict[str, Any]]:
    return [{"id": s.id, "name": s.label} for s in err.suggestions]


__all__ = ["DEFAULT_LEVELS", "FitRequest", "RankRequest", "Service", "suggestions_of"]
