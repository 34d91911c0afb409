"""Facts about GPUs, models and quantization formats, each with its source, and name resolution."""

from catalog.schema import GPU, Attention, Model, MoE, Quality, QuantFormat
from catalog.store import Catalog, CatalogError, UnknownEntry, load_catalog, load_from

__all__ = [
    "GPU",
    "Attention",
    "Catalog",
    "CatalogError",
    "MoE",
    "Model",
    "Quality",
    "QuantFormat",
    "UnknownEntry",
    "load_catalog",
    "load_from",
]
