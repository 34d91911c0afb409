"""Facts about GPUs, models and quantization formats, each with its source, and name resolution."""

from catalog.schema import GPU, Attention, ContextExtension, ContextFit, Model, MoE, NotARelease, Quality, QuantFormat
from catalog.store import Catalog, CatalogError, UnknownEntry, load_catalog, load_from

__all__ = [
    "GPU",
    "Attention",
    "Catalog",
    "CatalogError",
    "ContextExtension",
    "ContextFit",
    "MoE",
    "Model",
    "NotARelease",
    "Quality",
    "QuantFormat",
    "UnknownEntry",
    "load_catalog",
    "load_from",
]
