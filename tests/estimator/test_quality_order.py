"""The quality order: the arena snapshot first, the retired signals only for models it has not rated."""

from __future__ import annotations

from catalog.quality import arena_snapshot
from catalog.store import load_catalog
from estimator.rank import quality_percentiles, rank
from estimator.verdict import default_formats

CATALOG = load_catalog()


def test_every_arena_row_names_a_catalog_model_and_is_sourced() -> None:
    snap = arena_snapshot()
    ids = {m.id for m in CATALOG.models}
    assert snap.source.startswith("https://") and snap.date == "2026-09-10"
    assert {s.model for s in snap.score} <= ids
    assert len({s.model for s in snap.score}) == len(snap.score)


def test_arena_rated_models_rank_above_fallback_ones() -> None:
    quality = quality_percentiles(CATALOG.models)
    arena = arena_snapshot().by_model()
    rated = [q for mid, q in quality.items() if mid in arena]
    others = [q for mid, q in quality.items() if mid not in arena]
    assert min(rated) >= 2.0 > 1.0 >= max(others)
    # Within the arena tier the order is the arena's: Gemma 3 12B (1341.8) above Llama 3.1 8B (1211.3).
    assert quality["gemma-3-12b"] > quality["llama-3.1-8b"]


def test_t4_quality_order_puts_well_rated_small_models_first() -> None:
    rows = rank(CATALOG.models, default_formats(CATALOG, "llama.cpp"), CATALOG.gpu("nvidia-t4"), ctx=8192)
    top = [r.model.id for r in rows[:10]]
    assert "llama-3.1-8b" in top and "falcon3-7b" not in top
    assert all(r.ranked for r in rows[:10])


def test_the_quality_order_is_worked_out_per_set_of_models() -> None:
    whole = quality_percentiles(CATALOG.models)
    again = quality_percentiles(tuple(CATALOG.models))  # the same entries in another tuple
    assert again == whole and again is not whole
    again.clear()  # a caller's copy: the next ranking still gets the whole order
    assert quality_percentiles(CATALOG.models) == whole
    # A subset is ranked among itself: the best of the catalog's five lowest (all unrated by the arena) tops the
    # fallback scale, 1.0, where in the whole catalog it sits near its bottom.
    lowest = sorted(whole, key=whole.__getitem__)[:5]
    few = tuple(m for m in CATALOG.models if m.id in set(lowest))
    assert max(quality_percentiles(few).values()) == 1.0 > whole[lowest[4]]
