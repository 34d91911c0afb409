"""A digest of what shapes a reply's wording and layout: the templates, the message catalogs and the render code.

It is part of every cached answer's key, so a release that rewords or re-lays a reply (a new range on /compare, a
fixed translation) retires the answers rendered by the old one instead of serving them until they are evicted.
"""

from __future__ import annotations

import hashlib
from functools import cache
from pathlib import Path

RENDER_ROOTS = (Path(__file__).resolve().parent, Path(__file__).resolve().parent.parent / "templates")


def tree_digest(roots: tuple[Path, ...]) -> str:
    """sha256 over every file's path (relative to its root) and bytes, in a fixed order; caches are skipped."""
    h = hashlib.sha256()
    for root in roots:
        for path in sorted(p for p in root.rglob("*") if p.is_file() and "__pycache__" not in p.parts):
            h.update(f"{root.name}/{path.relative_to(root).as_posix()}\0".encode())
            h.update(path.read_bytes())
            h.update(b"\0")
    return h.hexdigest()[:12]


@cache
def render_digest() -> str:
    return tree_digest(RENDER_ROOTS)
