"""Byte units, named so a binary size and a decimal one cannot be mixed up.

Memory is binary: engines log GiB/MiB, and the "16 GB" a vendor sells is 16 GiB of chips (see
`catalog.schema`). Decimal GB (10^9 bytes) appear only where a source states them that way, such as
bandwidth in GB/s or a checkpoint's size as a hub lists it. The JSON keys `memory_gb`, `usable_gb`, …
predate these names and keep them (a contract); their values are GiB.
"""

from __future__ import annotations

GIB = 2**30  # gibibyte, binary
MIB = 2**20  # mebibyte, binary
GB_DECIMAL = 10**9  # gigabyte, decimal


def to_gib(nbytes: float, digits: int = 2) -> float:
    """Bytes → GiB, rounded for JSON and tables."""
    return round(nbytes / GIB, digits)


def gib_text(nbytes: float, digits: int = 1) -> str:
    """Bytes → GiB as replies show it: one decimal ("14.3"), thousands grouped as every other count ("1,909.7")."""
    return f"{nbytes / GIB:,.{digits}f}"
