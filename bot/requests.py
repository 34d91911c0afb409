"""What each command asks, in people's words, with every default stated once.

The Discord commands, the CLI, the daily summaries and crash-resume records all build these, through the
one constructor each model has. Construction checks what needs no catalog (a context is a token count, an
engine one we estimate) and refuses with a `BadValue` worded for people, never a pydantic dump; names are
resolved against the catalog by `check(svc)` / `cache_key(svc)`, which a command calls before it defers.

Stored settings (a server's and a person's default GPU, engine, context and KV cache) are merged here, in
`Request.build`, for every command alike: each model says which of its options a stored default may fill.
"""

from __future__ import annotations

import math
from collections.abc import Mapping
from dataclasses import dataclass, field
from typing import TYPE_CHECKING, Any, ClassVar, Generic, Literal, Self, TypeVar, cast, get_args, get_origin

import annotated_types
from pydantic import (
    BaseModel,
    ConfigDict,
    PrivateAttr,
    ValidationError,
    ValidationInfo,
    field_validator,
    model_validator,
)
from pydantic.fields import FieldInfo

from bot.params import BOUND_KEYS, BadValue, as_typed, parse_engine, parse_kv, parse_tokens, validation_message
from bot.render.text import FormatNames, Message, engine_name, format_tokens
from bot.reports.paste import DECODE_TPS_MAX, PREFILL_TPS_MAX, Measured, parse_paste, parse_rate
from bot.reports.rules import BUILD_MAX_CHARS, NOTES_MAX_CHARS, clean_text
from catalog.resolve import setup_text
from estimator.engines import nearest_kv, runs_kv
from estimator.query import (
    DEFAULT_CTX,
    DEFAULT_ENGINE,
    DEFAULT_KV,
    DEFAULT_PROMPT_TOKENS,
    MAX_BATCH,
    MAX_GPUS,
    Engine,
    KVDtype,
)
from estimator.rank import Sort

if TYPE_CHECKING:
    from bot.service import Service
    from bot.store.records import GuildSettings, UserSettings
    from catalog.schema import GPU
    from estimator.finetune import FinetuneSettings

Scope = Literal["me", "server"]
# The estimator's methods, in the order a refusal lists them (lightest first, as /finetune offers them).
Method = Literal["qlora", "lora", "full"]
Vendor = Literal["nvidia", "amd", "apple", "intel"]

DEFAULT_SORT: Sort = "quality"
DEFAULT_METHOD: Method = "qlora"
# The sequence a fine-tuning estimate assumes when none is asked (its own default, not the context's).
DEFAULT_FINETUNE_SEQ = 2048
DEFAULT_WHATGPU_LIMIT = 25
# /whatgpu's thresholds: the slash options advertise these bounds, and every request (CLI and batch too) holds them.
MIN_TPS_RANGE = (0.1, 10000.0)
BUDGET_USD_RANGE = (1.0, 10_000_000.0)
# The options a stored default can fill, in the order the "defaults used" note lists them.
STORED_KEYS = ("gpu", "engine", "ctx", "kv")
# A daily summary covers at most this many GPUs: one chart row each keeps the post readable.
DAILY_MAX_GPUS = 4
# Report numbers are shown and typed as Discord integers, which stop at 2^53 - 1.
REPORT_ID_MAX = 2**53 - 1

R = TypeVar("R", bound="Request")


@dataclass(frozen=True)
class Stored:
    """A server's and a person's stored defaults merged (the person's win) and whose each value is."""

    values: Mapping[str, Any] = field(default_factory=dict)
    sources: Mapping[str, Scope] = field(default_factory=dict)

    @classmethod
    def layered(cls, layers: list[tuple[Scope, Mapping[str, Any]]]) -> Stored:
        """Later layers win; a value left empty in a layer is no preference."""
        values: dict[str, Any] = {}
        sources: dict[str, Scope] = {}
        for scope, layer in layers:
            for key, value in layer.items():
                if value is not None and value != "":
                    values[key], sources[key] = value, scope
        return cls(values, sources)


NOTHING_STORED = Stored()


def stored_values(record: GuildSettings | UserSettings) -> dict[str, Any]:
    """A stored settings record as option values (its first GPU is the default GPU); unset ones left out."""
    found = {"gpu": record.gpu_ids[0] if record.gpu_ids else None, "engine": record.engine, "ctx": record.ctx,
             "kv": record.kv}
    return {k: v for k, v in found.items() if v}


# Refusals about an option's value, by catalog key prefix, and the options each is about: when a stored
# default filled one of those, the refusal says so and how to change it, or the asker is left guessing why an
# option they never typed is wrong.
REFUSALS_ABOUT: tuple[tuple[str, tuple[str, ...]], ...] = (
    ("bad.engine_gpu", ("engine", "gpu")),
    ("bad.kv_engine", ("kv", "engine")),
    ("quant.other_engine", ("engine",)),
    ("quant.no_engine", ("engine",)),
    ("bad.tp_heads", ("engine",)),
    ("bad.quant_gpu", ("gpu",)),
    ("bad.finetune_", ("gpu",)),
    ("ctx.too_long", ("ctx",)),
)


@dataclass(frozen=True)
class Built(Generic[R]):
    """A request as the command will ask it, and which stored defaults filled options left out."""

    request: R
    used: Mapping[str, Any] = field(default_factory=dict)
    sources: Mapping[str, Scope] = field(default_factory=dict)
    # How a used default is shown where it is not the stored value itself (a KV cache the engine lacks, swapped).
    shown: Mapping[str, Message] = field(default_factory=dict)

    def check(self, svc: Service) -> None:
        """`request.check`; a refusal of a value a stored default gave names that default and how to change it."""
        try:
            self.request.check(svc)
        except BadValue as err:
            raise self.blamed(err, svc) from None

    def blamed(self, err: BadValue, svc: Service) -> BadValue:
        """`err` with which stored default gave the refused value and the `/settings` that changes it; `err`
        itself when the options it is about were all given in the command."""
        about = next((keys for prefix, keys in REFUSALS_ABOUT if (err.key or "").startswith(prefix)), ())
        stored = [k for k in about if k in self.used][:2]
        if err.key is None or not stored:
            return err
        items = [Message("defaults.stored_item", {"name": Message(f"setting.{k}"), "value": self._shown(k, svc),
                                                  "whose": Message(f"defaults.whose.{self.sources[k]}")})
                 for k in stored]
        commands = [f"`/settings {self.sources[k]} {k}:…`" for k in stored]
        return BadValue.of("defaults.caused", reason=Message(err.key, err.values),
                           items=_either("defaults.also", items), commands=_either("defaults.either", commands))

    def _shown(self, key: str, svc: Service) -> str:
        value = self.used[key]
        if key == "gpu":
            found = next((g for g in svc.catalog.gpus if g.id == value), None)
            return found.name if found is not None else str(value)
        return format_tokens(int(value)) if key == "ctx" else str(value)


def _either(key: str, parts: list[Any]) -> Any:
    """One part as it is; two joined by the catalog's `key` ("{first} or {second}"), worded in the reply's locale."""
    return parts[0] if len(parts) == 1 else Message(key, {"first": parts[0], "second": parts[1]})


def _allowed(annotation: Any) -> tuple[str, ...]:
    """The values a Literal (possibly optional) field takes."""
    for arg in (annotation, *get_args(annotation)):
        if get_origin(arg) is Literal:
            return tuple(str(v) for v in get_args(arg))
    return ()


def people_error(model: type[BaseModel], exc: ValidationError) -> BadValue:
    """The first thing wrong, in the words of the message catalog."""
    first = exc.errors()[0]
    name = ".".join(str(p) for p in first["loc"]) or "value"
    cause = (first.get("ctx") or {}).get("error")
    if isinstance(cause, BadValue):
        return cause
    kind = first["type"]
    if kind == "missing":
        # Where a stored default could have filled it, the reply says how to store one.
        stored = name in getattr(model, "STORED", ())
        return BadValue.of("defaults.need_gpu" if stored and name == "gpu" else "bad.missing", name=name)
    if kind == "extra_forbidden":
        return BadValue.of("bad.unknown_option", name=name)
    if kind == "literal_error":
        top = str(first["loc"][0]) if first["loc"] else ""
        spec = model.model_fields.get(top)
        allowed = _allowed(spec.annotation) if spec is not None else ()
        if allowed:
            return BadValue.of("bad.one_of", name=name, values=", ".join(allowed))
    if any(k in BOUND_KEYS for k in first.get("ctx") or {}):
        said = validation_message(first)
        return BadValue.of(said.key, **said.values)
    if kind.startswith("int_"):
        return BadValue.of("bad.whole_number", name=name)
    if kind.startswith("float_") or kind == "finite_number":
        return BadValue.of("bad.number", name=name)
    return BadValue.of("bad.value", name=name)


def _whole(name: str, value: Any) -> int:
    """A count as typed, JSON or a flag gives it: 2, 2.0 or "2"; never True, 2.5 or "two"."""
    if isinstance(value, bool) or not isinstance(value, int | float | str):
        raise BadValue.of("bad.whole_number", name=name)
    try:
        number = float(value)
    except ValueError:
        raise BadValue.of("bad.whole_number", name=name) from None
    if not math.isfinite(number) or not number.is_integer():
        raise BadValue.of("bad.whole_number", name=name)
    return int(number)


def _in_range(name: str, value: Any, low: int, high: int, key: str = "bad.range") -> int:
    number = _whole(name, value)
    if not low <= number <= high:
        raise BadValue.of(key, name=name, low=str(low), high=str(high), got=str(number), most=high)
    return number


def _text(name: str, value: Any) -> str:
    """A name or word: JSON's `["x"]` or `3` is refused as such, not read as the text "['x']"."""
    if not isinstance(value, str):
        raise BadValue.of("bad.not_text", name=name, got=as_typed(value))
    if not value.strip():
        raise BadValue.of("bad.missing", name=name)
    return value


class Request(BaseModel):
    """One command's question. Frozen (it is a cache key and crosses to render processes), no unknown fields."""

    model_config = ConfigDict(frozen=True, extra="forbid")
    # The context came from a stored default, not from this command: like the built-in default, it yields to a
    # model whose window is shorter (`ctx_yields`).
    _ctx_stored: bool = PrivateAttr(default=False)

    COMMAND: ClassVar[str]
    # Options a stored server or personal default fills when they are left out.
    STORED: ClassVar[tuple[str, ...]] = ()

    def __init__(self, **options: Any) -> None:
        # None is "left out" everywhere (an option not given, a flag not passed): the model's default holds.
        try:
            super().__init__(**{k: v for k, v in options.items() if v is not None})
        except ValidationError as exc:
            raise people_error(type(self), exc) from None

    @classmethod
    def of(cls, **options: Any) -> Self:
        """The request from options as people, flags or JSON give them (`ctx="32k"`, `engine="LM Studio"`,
        None for left out): the one way commands and the CLI make one. The generated `__init__` is typed
        with the parsed values, which is what code that already holds them passes."""
        return cls(**options)

    @classmethod
    def build(cls, stored: Stored = NOTHING_STORED, **options: Any) -> Built[Self]:
        """`of` with stored defaults filling the options this command takes from them that were left out
        (None); the model's own defaults fill the rest."""
        given = {k: v for k, v in options.items() if v is not None}
        used = {k: stored.values[k] for k in cls.STORED if k not in given and k in stored.values}
        request = cls.of(**given, **used)
        shown: dict[str, Message] = {}
        engine = getattr(request, "engine", None)
        kv = getattr(request, "kv", None)
        if "kv" in used and engine is not None and kv is not None and not runs_kv(engine, kv):
            # A stored KV cache the engine asked for does not keep yields to the nearest one it does, as a stored
            # context yields to a short window; one typed in the command is still refused.
            nearest = nearest_kv(engine, kv)
            request = cls.of(**given, **{**used, "kv": nearest})
            shown["kv"] = Message("defaults.kv_swapped", {"kv": nearest, "stored": kv, "engine": engine_name(engine)})
        request._ctx_stored = "ctx" in used
        return Built(request, used, {k: stored.sources[k] for k in used}, shown)

    @property
    def ctx_yields(self) -> bool:
        """No context was typed in this command (the built-in or a stored default holds): a model whose window is
        shorter is answered at its window, not refused."""
        return "ctx" not in self.model_fields_set or self._ctx_stored

    def cache_key(self, svc: Service) -> dict[str, Any]:
        """The question as resolved: two spellings of one question share one cached answer."""
        return self.model_dump(mode="json")

    def check(self, svc: Service) -> None:
        """Resolve every name now, so a typo is answered (privately, with "did you mean") before any defer."""
        self.cache_key(svc)


class _Options(Request):
    """How the options several commands share are read; each applies where a request has that field."""

    @field_validator("ctx", mode="before", check_fields=False)
    @classmethod
    def _ctx(cls, value: Any) -> int:
        return parse_tokens(value, name="ctx")

    @field_validator("engine", mode="before", check_fields=False)
    @classmethod
    def _engine(cls, value: Any) -> Engine:
        return parse_engine(_text("engine", value))

    @field_validator("kv", mode="before", check_fields=False)
    @classmethod
    def _kv(cls, value: Any) -> KVDtype:
        return parse_kv(_text("kv", value))

    @field_validator("gpus", mode="before", check_fields=False)
    @classmethod
    def _gpus(cls, value: Any) -> int:
        return _in_range("gpus", value, 1, MAX_GPUS, key="bad.gpus")

    @field_validator("gpu", "model", "quant", mode="before", check_fields=False)
    @classmethod
    def _named(cls, value: Any, info: ValidationInfo) -> str:
        return _text(info.field_name or "value", value)

    @field_validator("limit", mode="before", check_fields=False)
    @classmethod
    def _limit(cls, value: Any) -> int:
        # A row count: 0 would print an empty table, and -1 slice the last row off.
        number = _whole("limit", value)
        if number < 1:
            raise BadValue.of("bad.at_least", name="limit", limit="1")
        return number


class FitRequest(_Options):
    """/fit and `rigcheck fit`: one model on one GPU setup."""

    COMMAND: ClassVar[str] = "fit"
    STORED: ClassVar[tuple[str, ...]] = STORED_KEYS

    gpu: str
    model: str
    quant: str | None = None
    engine: Engine = DEFAULT_ENGINE
    ctx: int = DEFAULT_CTX
    prompt: int = DEFAULT_PROMPT_TOKENS
    kv: KVDtype = DEFAULT_KV
    gpus: int = 1
    batch: int = 1

    @field_validator("prompt", mode="before")
    @classmethod
    def _prompt(cls, value: Any) -> int:
        return parse_tokens(value, name="prompt", allow_zero=True)

    @field_validator("batch", mode="before")
    @classmethod
    def _batch(cls, value: Any) -> int:
        return _in_range("batch", value, 1, MAX_BATCH)

    def cache_key(self, svc: Service) -> dict[str, Any]:
        q, formats = svc.base_query(self)
        return {
            "gpu": q.gpu.id,
            "gpus": q.gpus,
            "model": q.model.id,
            "quant": [f.id for f in formats],
            "engine": q.engine,
            "ctx": q.ctx,
            "prompt": q.prompt_tokens,
            # The prompt as asked too: one longer than the context is cut to it and the reply says so, a default one
            # silently; the two replies differ though the cut prompt is the same.
            "prompt_asked": self.prompt,
            # The reply says why a context differs from the one asked (a default yielding, "1M" meant).
            "ctx_asked": self.ctx,
            "ctx_yields": self.ctx_yields,
            # The format the model name's tag names: beside another asked with `quant`, the reply says so.
            "tagged": tagged.id if (tagged := svc.model(self.model)[1]) else None,
            "kv": q.kv,
            "batch": q.batch,
        }


class RankRequest(_Options):
    """/rank and `rigcheck rank`: the best models that fit a GPU setup."""

    COMMAND: ClassVar[str] = "rank"
    STORED: ClassVar[tuple[str, ...]] = STORED_KEYS

    gpu: str
    ctx: int = DEFAULT_CTX
    sort: Sort = DEFAULT_SORT
    kv: KVDtype = DEFAULT_KV
    gpus: int = 1
    engine: Engine = DEFAULT_ENGINE
    quant: str | None = None
    limit: int | None = None

    def cache_key(self, svc: Service) -> dict[str, Any]:
        choice = svc.gpu_choice(self.gpu, self.gpus)
        svc.rank_formats(self.engine, self.quant, choice.gpu)
        svc.check_kv(self.engine, self.kv)
        svc.check_rank_split(self.engine, choice.count)
        return {**self.model_dump(mode="json"), "gpu": choice.gpu.id, "gpus": choice.count}


class GpuRequest(_Options):
    """/gpu and `rigcheck gpu`: a GPU's spec card at a context."""

    COMMAND: ClassVar[str] = "gpu"
    STORED: ClassVar[tuple[str, ...]] = ("gpu", "ctx")

    gpu: str
    ctx: int = DEFAULT_CTX
    gpus: int = 1

    def cache_key(self, svc: Service) -> dict[str, Any]:
        # The card count written in the GPU text (`8x h100 nvl`) counts as `gpus` does, as in /fit.
        choice = svc.gpu_choice(self.gpu, self.gpus)
        return {"gpu": choice.gpu.id, "gpus": choice.count, "ctx": self.ctx}


class CompareRequest(_Options):
    """/compare: two GPUs for one model, or two models on one GPU, in one format."""

    COMMAND: ClassVar[str] = "compare"
    STORED: ClassVar[tuple[str, ...]] = STORED_KEYS

    gpu: str
    model: str
    gpu2: str | None = None
    model2: str | None = None
    ctx: int = DEFAULT_CTX
    engine: Engine = DEFAULT_ENGINE
    kv: KVDtype = DEFAULT_KV
    quant: str | None = None

    @model_validator(mode="after")
    def _two_sides(self) -> Self:
        if not self.gpu2 and not self.model2:
            raise BadValue.of("compare.needs_second")
        return self

    def sides(self, svc: Service) -> list[FitRequest]:
        found = [svc.model(name) for name in (self.model, self.model2 or self.model)]
        ctx = self.ctx
        if self.ctx_yields:
            # A default context yields to the shorter window of the two models, the same on both sides.
            ctx = min(svc.context_as_asked(model, ctx, yields=True) for model, _ in found)
        quant = self.quant
        if quant is None:
            # A format one name's tag sets (an Ollama tag's -q8_0) is the format of both sides; two that differ
            # leave no one format to compare in.
            named = {tag.id: tag for _, tag in found if tag is not None}
            if len(named) > 1:
                raise BadValue.of("compare.tags_differ", formats=FormatNames(tuple(t.name for t in named.values())))
            quant = next(iter(named), None)
        shared = {"ctx": ctx, "engine": self.engine, "kv": self.kv, "quant": quant}
        return [FitRequest.of(gpu=self.gpu, model=self.model, **shared),
                FitRequest.of(gpu=self.gpu2 or self.gpu, model=self.model2 or self.model, **shared)]

    def cache_key(self, svc: Service) -> dict[str, Any]:
        first, second = self.sides(svc)
        a, b = first.cache_key(svc), second.cache_key(svc)
        # Like for like: one thing changes between the sides, the GPU setup or the model, never both (the
        # figures would then say nothing about either), and never neither.
        gpus_differ = (a["gpu"], a["gpus"]) != (b["gpu"], b["gpus"])
        models_differ = a["model"] != b["model"]
        if gpus_differ and models_differ:
            raise BadValue.of("compare.both_differ")
        if not gpus_differ and not models_differ and a["quant"] == b["quant"]:
            model, _ = svc.model(first.model)
            raise BadValue.of("compare.same_twice", model=model.name, gpu=svc.gpu_choice(first.gpu).gpu.name)
        # The sides carry the context answered; the reply also says why it differs from the one asked.
        return {"a": a, "b": b, "ctx_asked": self.ctx, "ctx_yields": self.ctx_yields}


class WhatGpuRequest(_Options):
    """/whatgpu and `rigcheck whatgpu`: which GPU setups run a model."""

    COMMAND: ClassVar[str] = "whatgpu"
    # No GPU to store a default for; the KV cache is the stored one, as for /fit.
    STORED: ClassVar[tuple[str, ...]] = ("engine", "ctx", "kv")

    model: str
    ctx: int = DEFAULT_CTX
    quant: str | None = None
    min_tps: float | None = None
    budget: float | None = None
    engine: Engine = DEFAULT_ENGINE
    kv: KVDtype = DEFAULT_KV
    max_gpus: int = MAX_GPUS
    limit: int = DEFAULT_WHATGPU_LIMIT

    @field_validator("max_gpus", mode="before")
    @classmethod
    def _max_gpus(cls, value: Any) -> int:
        # Named as asked: "gpus must be …" would point at an option this command does not have.
        return _in_range("max_gpus", value, 1, MAX_GPUS)

    @field_validator("min_tps", "budget")
    @classmethod
    def _finite(cls, value: float | None, info: ValidationInfo) -> float | None:
        if value is None:
            return value
        if not math.isfinite(value):
            raise BadValue.of("bad.number", name=info.field_name)
        low, high = MIN_TPS_RANGE if info.field_name == "min_tps" else BUDGET_USD_RANGE
        if not low <= value <= high:
            raise BadValue.of("bad.range", name=info.field_name, low=f"{low:.10g}", high=f"{high:.10g}",
                              got=f"{value:.10g}")
        return value

    def cache_key(self, svc: Service) -> dict[str, Any]:
        # Everything /fit would refuse (KV cache, format, a context past the model's window) is refused here,
        # before any defer.
        found, ctx, formats = svc.whatgpu_question(self)
        return {"model": found.id, "ctx": ctx, "quant": [f.id for f in formats], "min_tps": self.min_tps,
                "budget": self.budget, "engine": self.engine, "kv": self.kv, "max_gpus": self.max_gpus,
                # The reply says why a context differs from the one asked (a default yielding, "1M" meant).
                "ctx_asked": self.ctx, "ctx_yields": self.ctx_yields}


class FinetuneRequest(_Options):
    """/finetune and `rigcheck finetune`: peak memory of one fine-tuning run. `knobs` are the estimator's
    own settings (`estimator.finetune.FinetuneSettings` names); those left out come from the framework or
    the method's defaults."""

    COMMAND: ClassVar[str] = "finetune"
    STORED: ClassVar[tuple[str, ...]] = ("gpu",)

    gpu: str
    model: str
    method: Method = DEFAULT_METHOD
    seq: int = DEFAULT_FINETUNE_SEQ
    batch: int = 1
    gpus: int = 1
    knobs: dict[str, Any] = {}

    @field_validator("seq", mode="before")
    @classmethod
    def _seq(cls, value: Any) -> int:
        return parse_tokens(value, name="seq")

    @field_validator("batch", mode="before")
    @classmethod
    def _batch(cls, value: Any) -> int:
        # The estimator bounds a micro-batch; here it only has to be a whole number.
        return _whole("batch", value)

    @field_validator("knobs")
    @classmethod
    def _knobs(cls, value: dict[str, Any]) -> dict[str, Any]:
        from estimator.finetune import FinetuneSettings

        for name in value:
            if name not in FinetuneSettings.model_fields:
                raise BadValue.of("bad.unknown_option", name=name)
        given = {k: v for k, v in value.items() if v is not None}
        for name, knob in given.items():
            _check_interval(name, knob, FinetuneSettings.model_fields[name])
        _check_regime(given)
        return given

    def settings(self, gpu: GPU, gpus: int | None = None) -> FinetuneSettings:
        """The run's settings on `gpu` (`gpus` of them: the count a GPU text such as `2x 3090` named);
        knobs left out come from the framework preset or the method's defaults."""
        from estimator import finetune as ft

        try:
            settings = ft.settings_on(gpu, method=self.method, seq=self.seq, batch=self.batch,
                                      gpus=self.gpus if gpus is None else gpus, **self.knobs)
        except ValidationError as exc:
            # A knob out of the estimator's range is named as the estimator names it.
            raise people_error(ft.FinetuneSettings, exc) from None
        conflict = ft.hardware_conflict(gpu, settings)
        if conflict is not None:
            raise BadValue.of(f"bad.finetune_{conflict}", gpu=gpu.name)
        return settings

    def cache_key(self, svc: Service) -> dict[str, Any]:
        choice = svc.gpu_choice(self.gpu, self.gpus)
        model, _ = svc.model(self.model)
        svc.check_context(model, self.seq)
        self.settings(choice.gpu, choice.count)
        return {"gpu": choice.gpu.id, "model": model.id, "method": self.method, "seq": self.seq,
                "batch": self.batch, "gpus": choice.count, **self.knobs}


def _check_interval(name: str, value: Any, spec: FieldInfo) -> None:
    """NaN or infinity for a knob bounded on both sides, [low, high), refused with that interval: pydantic
    would say "less than 1" of a NaN, which is not more than anything either. Finite values it words itself."""
    low = next((cast(float, m.ge) for m in spec.metadata if isinstance(m, annotated_types.Ge)), None)
    high = next((cast(float, m.lt) for m in spec.metadata if isinstance(m, annotated_types.Lt)), None)
    if low is None or high is None or isinstance(value, bool):
        return
    try:
        number = float(value)
    except (TypeError, ValueError):
        return  # not a number at all: pydantic's type check words it
    if not math.isfinite(number):
        raise BadValue.of("bad.number_in", name=name, low=f"{low:g}", high=f"{high:g}", got=as_typed(value))


def _check_regime(knobs: Mapping[str, Any]) -> None:
    """`regime` is short for a precision and master weights: given beside a `precision` (or
    `master_weights_fp32`) that says otherwise, one of the two would be silently dropped: refused instead."""
    from estimator.finetune import FinetuneSettings

    regime = knobs.get("regime")
    if regime is None:
        return
    try:
        implied = FinetuneSettings(method="lora", regime=regime)
    except ValidationError:
        return  # not a regime: the settings' own check names it
    for other in ("precision", "master_weights_fp32"):
        given = knobs.get(other)
        if given is not None and given != getattr(implied, other):
            raise BadValue.of("bad.conflict", name="regime", value=regime, other=other,
                              implied=_said(getattr(implied, other)), given=_said(given))


def _said(value: Any) -> str:
    """A knob's value as a flag or JSON spells it: `true`, not Python's `True`."""
    return str(value).lower() if isinstance(value, bool) else str(value)


class ModelsRequest(Request):
    """/models: the catalog's models, by family and size."""

    COMMAND: ClassVar[str] = "models"

    family: str | None = None
    max_params: float | None = None


class GpusRequest(Request):
    """/gpus: the catalog's GPUs, by vendor."""

    COMMAND: ClassVar[str] = "gpus"

    vendor: Vendor | None = None


class SettingsRequest(_Options):
    """/settings me|server: the defaults to store; every option given updates only itself."""

    COMMAND: ClassVar[str] = "settings"

    gpu: str | None = None
    engine: Engine | None = None
    ctx: int | None = None
    kv: KVDtype | None = None

    def given(self) -> dict[str, Any]:
        return self.model_dump(exclude_none=True)


class DailyRequest(Request):
    """/daily subscribe: where the summary goes, for which GPUs, at which context. GPUs and context left
    out come from the server's stored defaults (the summary is the server's, not one person's)."""

    COMMAND: ClassVar[str] = "daily"

    channel_id: int | None = None
    webhook_url: str | None = None
    gpus: tuple[str, ...] = ()
    ctx: int = DEFAULT_CTX
    # The language the summary is written in: the server's stored one, else the server's Discord locale.
    locale: str | None = None

    @field_validator("ctx", mode="before")
    @classmethod
    def _ctx(cls, value: Any) -> int:
        return parse_tokens(value, name="ctx")

    @field_validator("gpus", mode="before")
    @classmethod
    def _gpu_list(cls, value: Any) -> tuple[str, ...]:
        # How many GPUs these are is known once they are resolved (`t4, T4, nvidia-t4` is one): `cache_key` counts.
        names = [g.strip() for g in value.split(",")] if isinstance(value, str) else list(value)
        return tuple(n for n in names if n)

    @model_validator(mode="after")
    def _somewhere(self) -> Self:
        if self.channel_id is None and self.webhook_url is None:
            raise BadValue.of("daily.need_target")
        if not self.gpus:
            raise BadValue.of("daily.need_gpus")
        return self

    @classmethod
    def for_server(cls, server: Mapping[str, Any], **options: Any) -> DailyRequest:
        """`server`: the server's stored `gpu_ids`, `ctx` and `locale`, which fill `gpus`, `ctx` and `locale`
        when left out."""
        given = {k: v for k, v in options.items() if v is not None and v != ""}
        if "gpus" not in given and server.get("gpu_ids"):
            given["gpus"] = tuple(server["gpu_ids"])
        for key in ("ctx", "locale"):
            if key not in given and server.get(key):
                given[key] = server[key]
        return cls.of(**given)

    def cache_key(self, svc: Service) -> dict[str, Any]:
        """The GPU setups as stored, each once (`t4,t4` and `t4, nvidia-t4` are one GPU) and at most
        DAILY_MAX_GPUS of them; a typed count is kept (`2x a30` is stored as '2x nvidia-a30', ranked for 2 cards)."""
        setups: list[str] = []
        for name in self.gpus:
            choice = svc.gpu_choice(name)
            setup = setup_text(choice.gpu.id, choice.count)
            if setup in setups:
                continue
            if len(setups) == DAILY_MAX_GPUS:
                raise BadValue.of("daily.max_gpus", count=DAILY_MAX_GPUS)
            setups.append(setup)
        return {"gpus": setups, "ctx": self.ctx}


class DailyUnsubscribeRequest(Request):
    """/daily unsubscribe: one channel's subscription, or (no channel) every one of the server's."""

    COMMAND: ClassVar[str] = "daily"

    channel_id: int | None = None


class DailyPreviewRequest(Request):
    """/daily preview: today's summary for the server, shown only to the asker."""

    COMMAND: ClassVar[str] = "daily"


class ReportAddRequest(_Options):
    """/report add: one measured speed, typed (`decode_tps`, `prefill_tps`) or pasted from llama-bench or
    Ollama (`paste`), for a GPU setup, model, format and engine; `ctx` is the context it ran with and
    `engine_build` the engine's version (the `build` option)."""

    COMMAND: ClassVar[str] = "report"

    gpu: str
    model: str
    quant: str
    engine: Engine
    engine_build: str | None = None
    notes: str | None = None
    decode_tps: float | None = None
    prefill_tps: float | None = None
    paste: str | None = None
    ctx: int | None = None
    gpus: int = 1

    @field_validator("engine_build", mode="before")
    @classmethod
    def _engine_build(cls, value: Any) -> str | None:
        return clean_text(value, "build", BUILD_MAX_CHARS)

    @field_validator("notes", mode="before")
    @classmethod
    def _notes(cls, value: Any) -> str | None:
        return clean_text(value, "notes", NOTES_MAX_CHARS)

    @field_validator("decode_tps", mode="before")
    @classmethod
    def _decode(cls, value: Any) -> float:
        return parse_rate(str(value), "decode_tps", DECODE_TPS_MAX)

    @field_validator("prefill_tps", mode="before")
    @classmethod
    def _prefill(cls, value: Any) -> float:
        return parse_rate(str(value), "prefill_tps", PREFILL_TPS_MAX)

    @model_validator(mode="after")
    def _one_measurement(self) -> Self:
        if self.paste is not None and (self.decode_tps is not None or self.prefill_tps is not None):
            raise BadValue.of("report.paste_and_values")
        self.measured()
        return self

    def measured(self) -> Measured:
        """The speeds as measured: parsed from the paste, or as typed."""
        if self.paste is not None:
            return parse_paste(self.paste)
        if self.decode_tps is None:
            raise BadValue.of("report.need_decode")
        return Measured(source="manual", decode_tps=self.decode_tps, prefill_tps=self.prefill_tps)

    def fit_request(self) -> FitRequest:
        """The estimate the report is shown beside (and stored with)."""
        return FitRequest.of(gpu=self.gpu, model=self.model, quant=self.quant, engine=self.engine,
                             ctx=self.ctx or DEFAULT_CTX, gpus=self.gpus)


class _ReportNumber(Request):
    """A request naming a report by the number /report shows."""

    @field_validator("id", mode="before", check_fields=False)
    @classmethod
    def _id(cls, value: Any) -> int:
        return _in_range("id", value, 1, REPORT_ID_MAX)


class ReportMineRequest(Request):
    """/report mine: the asker's own reports."""

    COMMAND: ClassVar[str] = "report"


class ReportHideRequest(_ReportNumber):
    """/report hide: a report made in this server, hidden by a manager."""

    COMMAND: ClassVar[str] = "report"

    id: int


class ReportOptOutRequest(Request):
    """/report optout: no reports made or shown in this server (`off`), or back on."""

    COMMAND: ClassVar[str] = "report"

    off: bool


ModerateAction = Literal["held", "accept", "hide", "remove"]


class ReportModerateRequest(_ReportNumber):
    """/report moderate: list the held reports, or accept, hide or remove one (`id`)."""

    COMMAND: ClassVar[str] = "report"

    action: ModerateAction
    id: int | None = None

    @model_validator(mode="after")
    def _needs_id(self) -> Self:
        if self.action != "held" and self.id is None:
            raise BadValue.of("report.need_id")
        return self


REQUEST_TYPES: dict[str, type[Request]] = {
    cls.__name__: cls
    for cls in (FitRequest, RankRequest, GpuRequest, CompareRequest, WhatGpuRequest, FinetuneRequest,
                ModelsRequest, GpusRequest, SettingsRequest, DailyRequest)
}
