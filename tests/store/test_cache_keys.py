"""make_key: logically equal queries share a key; anything that changes the answer changes it."""

from __future__ import annotations

from enum import Enum

import pytest
from hypothesis import given
from hypothesis import strategies as st

from bot.store.cache import make_key

QUERY = {"gpu": "nvidia-t4-16gb", "count": 1, "model": "qwen3-8b", "quant": "q4_k_m", "ctx": 32768}


def test_key_is_sha256_hex() -> None:
    key = make_key(QUERY, "cat-1", "est-1")
    assert len(key) == 64
    assert int(key, 16) >= 0


def test_dict_order_does_not_matter() -> None:
    reordered = dict(reversed(list(QUERY.items())))
    assert list(reordered) != list(QUERY)
    assert make_key(reordered, "cat-1", "est-1") == make_key(QUERY, "cat-1", "est-1")


def test_equivalent_spellings_share_a_key() -> None:
    nested = {"gpus": ("a", "b"), "opts": {"x": 1, "y": 2}, "tags": {"p", "q", "r"}, "ctx": 32768.0, "engine": None}
    same = {"tags": {"r", "q", "p"}, "ctx": 32768, "opts": {"y": 2, "x": 1}, "gpus": ["a", "b"]}
    assert make_key(nested, "c", "e") == make_key(same, "c", "e")


def test_enum_members_key_like_their_values() -> None:
    class Engine(Enum):
        VLLM = "vllm"

    assert make_key({"engine": Engine.VLLM}, "c", "e") == make_key({"engine": "vllm"}, "c", "e")


def test_versions_and_values_change_the_key() -> None:
    base = make_key(QUERY, "cat-1", "est-1")
    assert make_key(QUERY, "cat-2", "est-1") != base
    assert make_key(QUERY, "cat-1", "est-2") != base
    assert make_key({**QUERY, "ctx": 65536}, "cat-1", "est-1") != base
    assert make_key({**QUERY, "count": True}, "cat-1", "est-1") != base
    assert make_key({**QUERY, "gpus": ["a", "b"]}, "c", "e") != make_key({**QUERY, "gpus": ["b", "a"]}, "c", "e")


def test_version_strings_cannot_bleed_into_each_other() -> None:
    assert make_key({}, "a", "bc") != make_key({}, "ab", "c")


@pytest.mark.parametrize("bad", [{"when": object()}, {"x": float("nan")}, {1: "not a str key"}])
def test_values_without_a_canonical_form_are_refused(bad: dict[object, object]) -> None:
    with pytest.raises((TypeError, ValueError)):
        make_key(bad, "c", "e")  # type: ignore[arg-type]


@given(st.dictionaries(st.text(max_size=8), st.one_of(st.integers(), st.text(max_size=8), st.booleans()), max_size=8))
def test_insertion_order_never_matters(query: dict[str, object]) -> None:
    shuffled = dict(sorted(query.items(), key=lambda item: item[0], reverse=True))
    assert make_key(shuffled, "c", "e") == make_key(query, "c", "e")
