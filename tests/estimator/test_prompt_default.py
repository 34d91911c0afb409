"""The prompt an answer's time to first token is for: what was asked (up to the context), or the default, which
in a short window leaves room for the reply."""

from __future__ import annotations

import pytest

from catalog import load_catalog
from estimator.query import DEFAULT_PROMPT_TOKENS, Query, prompt_for


@pytest.mark.parametrize(("ctx", "expected"), [(8192, 2048), (4096, 2048), (2048, 1024), (1000, 500), (1, 0)])
def test_the_default_prompt_leaves_at_least_half_the_window_for_the_reply(ctx, expected):
    assert prompt_for(ctx) == expected


@pytest.mark.parametrize(("ctx", "asked", "expected"), [(2048, 1500, 1500), (2048, 4096, 2048), (8192, 0, 0),
                                                         (8192, 3000, 3000)])
def test_an_asked_prompt_is_kept_up_to_the_context(ctx, asked, expected):
    assert prompt_for(ctx, asked) == expected


def test_a_query_without_a_prompt_gets_the_default_for_its_context():
    catalog = load_catalog()
    base = {"gpu": catalog.gpu("nvidia-t4"), "model": catalog.model("phi-1"), "quant": catalog.quant("q4_k_m")}
    assert Query(**base, ctx=2048).prompt_tokens == 1024
    assert Query(**base).prompt_tokens == DEFAULT_PROMPT_TOKENS
    assert Query(**base, ctx=2048, prompt_tokens=2048).prompt_tokens == 2048  # an explicit value is the caller's
