"""Loads the TOML data files once, validates every entry and indexes them by id."""

from __future__ import annotations

import hashlib
import statistics
import tomllib
from collections.abc import Iterator
from functools import cache
from importlib import resources
from pathlib import Path
from typing import TypeVar

from pydantic import ValidationError

from catalog.schema import GPU, LayerGraph, Model, NotARelease, QuantFormat

T = TypeVar("T", GPU, Model, QuantFormat)


class CatalogError(ValueError):
    """The data files are inconsistent (duplicate ids, bad fields)."""


class UnknownEntry(KeyError):
    """No entry has that id."""


class Catalog:
    def __init__(
        self,
        gpus: list[GPU],
        models: list[Model],
        quants: list[QuantFormat],
        version: str,
        not_releases: list[NotARelease] | None = None,
    ) -> None:
        self._gpus = _index("gpu", gpus)
        self._models = _index("model", models)
        self._quants = _index("quant", quants)
        for m in models:
            if m.ollama is not None and m.ollama.quant not in self._quants:
                raise CatalogError(f"model {m.id!r}: its Ollama build's format {m.ollama.quant!r} is no quant id")
        self.not_releases: tuple[NotARelease, ...] = tuple(not_releases or ())
        self.version = version

    def gpu(self, gpu_id: str) -> GPU:
        try:
            return self._gpus[gpu_id]
        except KeyError:
            raise UnknownEntry(gpu_id) from None

    def model(self, model_id: str) -> Model:
        try:
            return self._models[model_id]
        except KeyError:
            raise UnknownEntry(model_id) from None

    def quant(self, quant_id: str) -> QuantFormat:
        try:
            return self._quants[quant_id]
        except KeyError:
            raise UnknownEntry(quant_id) from None

    @property
    def gpus(self) -> tuple[GPU, ...]:
        return tuple(self._gpus.values())

    @property
    def models(self) -> tuple[Model, ...]:
        return tuple(self._models.values())

    @property
    def quants(self) -> tuple[QuantFormat, ...]:
        return tuple(self._quants.values())

    def __iter__(self) -> Iterator[GPU | Model]:
        yield from self._gpus.values()
        yield from self._models.values()

    def __len__(self) -> int:
        return len(self._gpus) + len(self._models)


def _index(kind: str, entries: list[T]) -> dict[str, T]:
    out: dict[str, T] = {}
    for entry in entries:
        if entry.id in out:
            raise CatalogError(f"duplicate {kind} id {entry.id!r}")
        out[entry.id] = entry
    return dict(sorted(out.items()))


def _data_dir() -> Path:
    return Path(str(resources.files("catalog") / "data"))


def load_from(data_dir: Path) -> Catalog:
    digest = hashlib.sha256()
    gpus: list[GPU] = []
    models: list[Model] = []
    quants: list[QuantFormat] = []
    not_releases: list[NotARelease] = []
    for path in sorted(data_dir.rglob("*.toml")):
        raw = path.read_bytes()
        digest.update(path.relative_to(data_dir).as_posix().encode() + b"\0" + raw)
        try:
            doc = tomllib.loads(raw.decode("utf-8"))
            gpus += [GPU.model_validate(e) for e in doc.get("gpu", [])]
            models += [Model.model_validate(e) for e in doc.get("model", [])]
            quants += [QuantFormat.model_validate(e) for e in doc.get("quant", [])]
            not_releases += [NotARelease.model_validate(e) for e in doc.get("not_a_release", [])]
        except (tomllib.TOMLDecodeError, ValidationError) as exc:
            raise CatalogError(f"{path.relative_to(data_dir)}: {exc}") from exc
    gpus = with_achieved_bandwidth(with_silicon(gpus), sorted(data_dir.glob(ACHIEVED_BANDWIDTH_FILES)))
    models = with_layer_graphs(models, data_dir / LAYER_GRAPHS_FILE)
    return Catalog(gpus, models, quants, digest.hexdigest()[:16], not_releases)


ACHIEVED_BANDWIDTH_FILES = "achieved_bandwidth*.toml"
LAYER_GRAPHS_FILE = "layer_graphs.toml"


def with_layer_graphs(models: list[Model], path: Path) -> list[Model]:
    """Attach each [[layer_graph]] entry to the models of its `families`, or of its `models` (ids), which win over
    a family entry. Every family and id named must exist: a typo would silently drop the fact."""
    if not path.exists():
        return models
    by_family: dict[str, LayerGraph] = {}
    by_id: dict[str, LayerGraph] = {}
    families = {m.family for m in models}
    ids = {m.id for m in models}
    for entry in tomllib.loads(path.read_text()).get("layer_graph", []):
        names_f = tuple(entry.pop("families", ()))
        names_m = tuple(entry.pop("models", ()))
        try:
            graph = LayerGraph.model_validate(entry)
        except ValidationError as exc:
            raise CatalogError(f"{path.name}: {exc}") from exc
        unknown = sorted(set(names_f) - families) + sorted(set(names_m) - ids)
        if unknown or not (names_f or names_m):
            raise CatalogError(f"{path.name}: unknown family or model {unknown or 'none named'}")
        by_family.update(dict.fromkeys(names_f, graph))
        by_id.update(dict.fromkeys(names_m, graph))
    out = []
    for m in models:
        found = by_id.get(m.id) or by_family.get(m.family)
        out.append(m.model_copy(update={"layer_graph": found}) if found else m)
    return out


def with_achieved_bandwidth(gpus: list[GPU], paths: list[Path]) -> list[GPU]:
    """Attach published memory-benchmark figures ([[measurement]] gpu = id or printed name, achieved_gbs,
    method, source) to their GPUs: the median where a card has several. A figure is the silicon's: it holds for every
    card that differs from the one it names only in memory capacity (`GPU.silicon`, set first). Rows naming no
    catalog GPU are skipped; `unmatched_bandwidth_rows` counts them."""
    global unmatched_bandwidth_rows
    unmatched_bandwidth_rows = 0
    if not paths:
        return gpus
    by_name: dict[str, GPU] = {}
    for g in gpus:
        for name in (g.id, g.name, *g.aliases):
            by_name.setdefault(name.strip().lower(), g)
    found: dict[str, list[tuple[float, str]]] = {}
    rows = [m for path in paths for m in tomllib.loads(path.read_text()).get("measurement", [])]
    for m in rows:
        gpu = by_name.get(str(m.get("gpu", "")).strip().lower())
        gbs = m.get("achieved_gbs")
        if gpu is None or not isinstance(gbs, int | float) or gbs <= 0:
            unmatched_bandwidth_rows += 1
            continue
        where = f"{m.get('method', '')}: {m.get('source', '')}".strip(": ")
        found.setdefault(gpu.silicon or gpu.id, []).append((float(gbs), where))
    out = []
    for g in gpus:
        figures = found.get(g.silicon or g.id, [])
        if figures:
            median = statistics.median(v for v, _ in figures)
            nearest = min(figures, key=lambda f: abs(f[0] - median))[1]
            g = g.model_copy(update={"achieved_bandwidth_gbs": median, "achieved_bandwidth_source": nearest})
        out.append(g)
    return out


unmatched_bandwidth_rows = 0

# What may differ between two cards of one silicon: the memory fitted (capacity, and with it price, the GPU's share
# of unified memory, the year that size came out) and what is written about them. Clocks, memory type and bus,
# FLOPS, board power and form factor may not: an M3 Ultra with 96, 256 or 512 GB, a V100 PCIe with 16 or 32 GB.
CAPACITY_ONLY_FIELDS = frozenset({
    "id", "name", "aliases", "vram_gb", "launch_price_usd", "gpu_memory_fraction", "release_year", "source", "notes",
    "unknown", "achieved_bandwidth_gbs", "achieved_bandwidth_source", "silicon"})


def with_silicon(gpus: list[GPU]) -> list[GPU]:
    """Give every GPU the id its capacity-only variants share: the first of them by id."""
    specs = {g.id: _spec(g) for g in gpus}
    first: dict[tuple[tuple[str, str], ...], str] = {}
    for gpu_id in sorted(specs):
        first.setdefault(specs[gpu_id], gpu_id)
    return [g.model_copy(update={"silicon": first[specs[g.id]]}) for g in gpus]


def _spec(g: GPU) -> tuple[tuple[str, str], ...]:
    return tuple((k, repr(v)) for k, v in sorted(g.model_dump().items()) if k not in CAPACITY_ONLY_FIELDS)


@cache
def load_catalog() -> Catalog:
    """The shipped catalog, validated once per process."""
    return load_from(_data_dir())
