"""One place that turns a question in people's words into estimator calls.

The CLI, the Discord commands and the daily summaries all go through `Service`, so a name resolves the
same way and an answer is computed the same way wherever it is asked.
"""

from __future__ import annotations

import difflib
import hashlib
from collections.abc import Callable
from dataclasses import dataclass, field
from functools import cache, cached_property
from pathlib import Path
from typing import Any

import estimator
from bot.huggingface_client import HubClient, HubError
from bot.params import BadValue, Typed, level_alias
from bot.render.text import FormatNames, engine_name, format_tokens
from bot.requests import FitRequest, RankRequest, WhatGpuRequest
from catalog.resolve import NotFound, Resolver
from catalog.schema import GPU, Model, QuantFormat
from catalog.store import Catalog, load_catalog
from estimator import ESTIMATOR_VERSION
from estimator.engines import (
    DEFAULT_FORMAT,
    DEFAULT_LEVELS,
    engine_floor,
    format_as_run,
    format_runs_on,
    kv_dtypes,
    nearest_kv,
    released_for,
    runs_format,
    runs_kv,
    splits_over,
    supports,
    tensor_parallel_sizes,
)
from estimator.memory import memory
from estimator.query import (
    ENGINES,
    MAX_GPUS,
    Engine,
    KVDtype,
    Query,
    prompt_for,
)
from estimator.rank import RankRow, rank
from estimator.verdict import FitResult, default_formats, fit
from estimator.whatgpu import Setup, what_gpu_setups

# A mistyped format is answered with at most this many near spellings, each at least this alike (difflib's ratio:
# `q4km` and `ud-q4_k_m` reach Q4_K_M at 0.8).
CLOSE_FORMATS = 3
CLOSE_FORMAT_CUTOFF = 0.75


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


@dataclass(frozen=True)
class WhatGpuAnswer:
    """/whatgpu's answer: the model, the context it was read as, the formats compared and the setups that run it."""

    model: Model
    ctx: int
    formats: list[QuantFormat]
    setups: list[Setup]
    unpriced: int = 0  # setups left out under a budget for having no known launch price


@dataclass
class Service:
    catalog: Catalog = field(default_factory=load_catalog)
    extra_models: dict[str, Model] = field(default_factory=dict)
    hub: HubClient | None = None

    def needs_hub(self, text: str) -> bool:
        """Whether `text` is an `hf:org/name` only the Hub can answer: not read yet, and not a repo the
        catalog lists (that one is answered from the catalog, with no network and its curated figures)."""
        key = text.strip()
        return (key.lower().startswith("hf:") and key not in self.extra_models
                and self.resolver.hf_model(key) is None)

    async def resolve_hf(self, text: str) -> None:
        """`hf:org/name` → fetched (and cached) into extra_models under that exact text."""
        key = text.strip()
        if self.needs_hub(key):
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

        return f"{self.catalog.version}+{ESTIMATOR_VERSION}.{estimator_digest()}+{constants_digest()}+{render_digest()}"

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
        if setup.count != 1:
            if count not in (1, setup.count):
                raise BadValue.of("gpus.conflict", text=Typed(text.strip()[:40]), written=setup.count, option=count)
            count = self.gpus(setup.count)
        if count > 1 and setup.options[0].unified_memory and "socketed" not in setup.options[0].form_factor.lower():
            # One machine's unified memory: several do not pool into one GPU setup (RPC or exo clusters over the
            # network are another thing), and /whatgpu never lists such setups. A socketed data-center APU (MI300A)
            # is built four to a node, linked by Infinity Fabric, as GPUs are.
            raise BadValue.of("gpus.unified", gpu=setup.family or setup.options[0].name)
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
        listed = self.resolver.hf_model(key) if key.lower().startswith("hf:") else None
        if listed is not None:
            return listed, None
        choice = self.resolver.model(text)
        return choice.model, choice.quant

    @staticmethod
    def gpus(count: int) -> int:
        if not 1 <= int(count) <= MAX_GPUS:
            raise BadValue.of("bad.gpus", most=MAX_GPUS)
        return int(count)

    def quant(self, text: str, engine: Engine) -> QuantFormat:
        key = level_alias(text.strip().lower())
        if key in DEFAULT_FORMAT[engine]:
            return self.catalog.quant(DEFAULT_FORMAT[engine][key])
        fmt = self.resolver.quant_or_none(key)
        if fmt is None:
            raise self.bad_quant(text, engine)
        self.check_format(fmt, engine)
        return fmt

    def bad_quant(self, text: str, engine: Engine) -> BadValue:
        """The refusal of a format name nobody has: the engine's levels and formats, led by the near spellings
        (`ud-q4_k_m` → UD-Q4_K_XL, Q4_K_M) where there are any."""
        got, levels, formats = Typed(repr(text[:30])), ", ".join(DEFAULT_FORMAT[engine]), self.engine_formats(engine)
        close = self.close_formats(text, engine)
        if close:
            return BadValue.of("bad.quant_close", got=got, close=FormatNames(close), levels=levels, formats=formats)
        return BadValue.of("bad.quant", got=got, levels=levels, formats=formats)

    def close_formats(self, text: str, engine: Engine) -> tuple[str, ...]:
        """Up to CLOSE_FORMATS of the engine's format names whose id, name or alias is spelled like `text`."""
        spellings: dict[str, str] = {}
        for q in self._loaded_formats(engine):
            for spelling in (q.id, q.name, *q.aliases):
                spellings.setdefault(spelling.lower(), q.name)
        near = difflib.get_close_matches(text.strip().lower(), list(spellings), n=4 * CLOSE_FORMATS,
                                         cutoff=CLOSE_FORMAT_CUTOFF)
        return tuple(dict.fromkeys(spellings[n] for n in near))[:CLOSE_FORMATS]

    def engine_formats(self, engine: Engine) -> FormatNames:
        """The formats an engine loads, as a refusal lists them: not the trained ones (Gemma 3's QAT Q4_0), which
        exist only for the models released in them and would be refused for any other."""
        return FormatNames(tuple(q.name for q in self._loaded_formats(engine)))

    def _loaded_formats(self, engine: Engine) -> list[QuantFormat]:
        return [q for q in self.catalog.quants if runs_format(engine, q) and not q.released_for]

    def check_format(self, fmt: QuantFormat, engine: Engine) -> None:
        """Refuse a format the engine does not load, naming the engines that do and the engine's own formats."""
        if runs_format(engine, fmt):
            return
        own = self.engine_formats(engine)
        runs_on = [e for e in ENGINES if runs_format(e, fmt)]
        if runs_on:
            raise BadValue.of("quant.other_engine", quant=FormatNames((fmt.name,)), engines=engine_names(fmt.engines),
                              engine=engine_name(engine), suggestion=runs_on[0], formats=own)
        raise BadValue.of("quant.no_engine", quant=FormatNames((fmt.name,)), engines=engine_names(fmt.engines),
                          engine=engine_name(engine), formats=own)

    def formats(self, engine: Engine, quant: str | None, tagged: QuantFormat | None = None,
                model: Model | None = None) -> list[QuantFormat]:
        """The asked format; else the one a model tag names (an Ollama tag's `-q4_K_M`), checked like an asked
        one; else the engine's default levels. With `model`, an asked format that model was never released in (a
        trained one, Gemma 3's QAT Q4_0) is refused with the format it converts to."""
        if quant:
            fmt = self.quant(quant, engine)
            if model is not None:
                self.check_released(fmt, model)
            return [fmt]
        if tagged is None and model is not None:
            tagged = self.ollama_build(engine, model)
        if tagged is not None:
            self.check_format(tagged, engine)
            if model is not None:
                self.check_released(tagged, model)
            return [tagged]
        return default_formats(self.catalog, engine)

    def ollama_build(self, engine: Engine, model: Model) -> QuantFormat | None:
        """On Ollama, the one build its library ships of a model that has no other (gpt-oss: MXFP4 only): the
        engine's three-format ladder would price files Ollama cannot pull."""
        if engine != "ollama" or model.ollama is None:
            return None
        return self.catalog.quant(model.ollama.quant)

    def check_released(self, fmt: QuantFormat, model: Model) -> None:
        if released_for(fmt, model):
            return
        plain = next((q for q in self.catalog.quants if q.id == fmt.kernel and not q.released_for), None)
        raise BadValue.of("quant.not_released", quant=FormatNames((fmt.name,)), model=model.name,
                          families=" / ".join(fmt.released_for), suggestion=(plain or fmt).id)

    # --- questions --------------------------------------------------------------------------------

    def fit_choice(self, req: FitRequest) -> GpuChoice:
        """For /fit, a chip family answers with the smallest memory option on which some format runs."""
        model, tagged = self.model(req.model)
        engine = req.engine
        formats = self.formats(engine, req.quant, tagged, model)

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
        self.check_kv(engine, req.kv)
        formats = self.formats(engine, req.quant, tagged, model)
        check_split(engine, model, choice.count)
        runnable = [f for f in formats if format_runs_on(f, gpu)]
        if not runnable:
            check_format_on(formats[0], gpu)
        formats = [format_as_run(f, gpu) for f in runnable]  # named for what runs on this GPU
        ctx = self.context_as_asked(model, req.ctx, req.ctx_yields)  # the title names the window it is for
        q = Query(
            gpu=gpu,
            gpus=choice.count,
            model=model,
            quant=formats[0],
            engine=engine,
            ctx=ctx,
            prompt_tokens=prompt_for(ctx, req.prompt),
            kv=req.kv,
            batch=req.batch,
        )
        return q, formats

    @staticmethod
    def check_kv(engine: Engine, kv: KVDtype) -> None:
        """Refuse a KV-cache precision the engine does not run (see `kv_refusal`)."""
        refusal = kv_refusal(engine, kv)
        if refusal is not None:
            raise refusal

    @classmethod
    def context_as_asked(cls, model: Model, ctx: int, yields: bool = False) -> int:
        """The context a question means for this model (`Model.context_as_meant`: a "1M" window of 1,010,000 for
        `ctx:1M`), refused past every window the publisher documents; one the asker did not type (`yields`: a
        default) is the model's own window where that is shorter."""
        meant = model.context_as_meant(ctx)
        fit_ = model.context_fit(meant)
        if yields and fit_.status == "too_long":
            return fit_.limit  # the longest the publisher documents (with its RoPE scaling, where it has one)
        cls.check_context(model, meant)
        return meant

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

    def whatgpu_question(self, req: WhatGpuRequest) -> tuple[Model, int, list[QuantFormat]]:
        """/whatgpu's model, context and formats, checked as /fit checks them (`base_query`): the KV cache against
        the engine, the format, and the context as meant, refused past the model's longest documented window."""
        model, tagged = self.model(req.model)
        tagged = tagged or self.ollama_build(req.engine, model)
        self.check_kv(req.engine, req.kv)
        formats = self.formats(req.engine, req.quant, tagged, model)
        if not req.quant and tagged is None:
            formats = [self.quant("int4", req.engine)]  # one level to list setups for, not /fit's three
        return model, self.context_as_asked(model, req.ctx, req.ctx_yields), formats

    def what_gpu(self, req: WhatGpuRequest) -> WhatGpuAnswer:
        """/whatgpu and `rigcheck whatgpu`: every setup that runs the model, in the estimator's order."""
        model, ctx, formats = self.whatgpu_question(req)
        found = what_gpu_setups(model, formats, self.catalog.gpus, ctx=ctx, engine=req.engine, kv=req.kv,
                                min_tps=req.min_tps, max_gpus=req.max_gpus, budget_usd=req.budget)
        return WhatGpuAnswer(model, ctx, formats, found.setups, found.unpriced)

    def check_rank_split(self, engine: Engine, gpus: int) -> None:
        """A ranking over a tensor-parallel group few models' heads split over would list next to nothing and
        say nothing of why (3 or 5 cards: almost none), so it is refused with the counts that work."""
        if gpus <= 1:
            return
        splitting = sum(splits_over(engine, m, gpus) for m in self.catalog.models)
        if splitting < RANK_SPLIT_SHARE * len(self.catalog.models):
            raise BadValue.of("bad.tp_rank", engine=engine_name(engine), gpus=gpus, n=splitting,
                              total=len(self.catalog.models))

    def rank_formats(self, engine: Engine, quant: str | None, gpu: GPU) -> list[QuantFormat]:
        """The formats a ranking compares, once the engine and each asked format are known to run on `gpu`."""
        check_engine(engine, gpu)
        formats = self.formats(engine, quant)
        if quant:
            check_format_on(formats[0], gpu)
        return [format_as_run(f, gpu) for f in formats if format_runs_on(f, gpu)]

    def rank(self, req: RankRequest) -> tuple[GPU, list[RankRow]]:
        choice = self.gpu_choice(req.gpu, req.gpus)
        gpu = choice.gpu
        formats = self.rank_formats(req.engine, req.quant, gpu)
        self.check_kv(req.engine, req.kv)
        self.check_rank_split(req.engine, choice.count)
        rows = rank(
            self.catalog.models,
            formats,
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


# Below this share of catalog models splitting over a tensor-parallel group, /rank refuses the group.
RANK_SPLIT_SHARE = 0.05


def check_engine(engine: Engine, gpu: GPU) -> None:
    """Refuse, with the reason, an engine that does not run on this GPU (MLX off Apple, ExLlamaV3 before Ampere,
    vLLM before Turing or on a ROCm target its builds leave out)."""
    floor = engine_floor(engine, gpu)
    if floor is None:
        return
    reason, figures = floor
    if gpu.vendor == "apple":
        raise BadValue.of("bad.engine_gpu_apple", engine=engine_name(engine), gpu=gpu.name)
    if reason == "cc" and engine == "exllamav3":
        raise BadValue.of("bad.engine_gpu_ampere", engine=engine_name(engine), gpu=gpu.name)
    key = {"cc": "bad.engine_gpu_cc", "rocm_target": "bad.engine_gpu_rocm"}.get(reason, "bad.engine_gpu_vendor")
    raise BadValue.of(key, engine=engine_name(engine), gpu=gpu.name, **figures)


def kv_refusal(engine: Engine, kv: KVDtype) -> BadValue | None:
    """Why `engine` cannot keep a `kv` cache (vLLM has no q8_0, llama.cpp no fp8), with the nearest precision it
    runs and all it has; None where it can."""
    if runs_kv(engine, kv):
        return None
    return BadValue.of("bad.kv_engine", engine=engine_name(engine), kv=kv, suggestion=nearest_kv(engine, kv),
                       kinds=", ".join(kv_dtypes(engine)))


def check_split(engine: Engine, model: Model, gpus: int) -> None:
    """Refuse a tensor-parallel group the model's attention heads do not shard over, with the sizes that do."""
    if splits_over(engine, model, gpus):
        return
    options = " / ".join(str(n) for n in tensor_parallel_sizes(engine, model, MAX_GPUS) if n > 1) or "1"
    raise BadValue.of("bad.tp_heads", engine=engine_name(engine), model=model.name, heads=model.attention_heads,
                      kv=model.kv_heads, gpus=gpus, options=options)


def check_format_on(fmt: QuantFormat, gpu: GPU) -> None:
    """Refuse a checkpoint format the GPU cannot run (FP8 without FP8 units or weight-only kernels, NVFP4 off
    NVIDIA)."""
    if format_runs_on(fmt, gpu):
        return
    raise BadValue.of("bad.quant_gpu_nvfp4" if fmt.id == "nvfp4" else "bad.quant_gpu_fp8",
                      quant=FormatNames((fmt.name,)), gpu=gpu.name)


def engine_names(engines: tuple[str, ...]) -> str:
    return "/".join(ENGINE_NAMES.get(e, e) for e in engines)


@cache
def estimator_digest() -> str:
    """The estimator's code: a changed rule (a default prompt, a kernel choice) retires the answers the old one
    computed, as a refit does through the constants' digest."""
    from bot.render.version import tree_digest

    return tree_digest((Path(estimator.__file__).resolve().parent,))


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
