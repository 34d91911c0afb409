from __future__ import annotations

from typing import Any

import pytest

from bot.sandbox import slash

FIT: dict[str, Any] = {
    "id": "1",
    "name": "fit",
    "type": 1,
    "description": "Does it fit?",
    "name_localizations": {"zh-CN": "适配"},
    "options": [
        {"name": "gpu", "type": 3, "description": "GPU", "required": True, "autocomplete": True},
        {"name": "model", "type": 3, "description": "Model", "required": True, "autocomplete": True},
        {"name": "count", "type": 4, "description": "GPUs", "min_value": 1, "max_value": 8},
        {"name": "util", "type": 10, "description": "Share", "min_value": 0, "max_value": 1},
        {"name": "chart", "type": 5, "description": "Chart?", "name_localizations": {"zh-CN": "图表"}},
        {"name": "note", "type": 3, "description": "Note", "max_length": 5},
        {
            "name": "quant",
            "type": 3,
            "description": "Format",
            "choices": [
                {"name": "4-bit", "value": "q4", "name_localizations": {"zh-CN": "四位"}},
                {"name": "fp16", "value": "fp16"},
            ],
        },
    ],
}
DAILY: dict[str, Any] = {
    "id": "2",
    "name": "daily",
    "type": 1,
    "description": "Daily",
    "options": [
        {
            "name": "subscribe",
            "type": 1,
            "description": "Subscribe",
            "options": [{"name": "channel", "type": 7, "description": "Where", "required": True, "channel_types": [0]}],
        },
        {
            "name": "admin",
            "type": 2,
            "description": "Admin",
            "options": [{"name": "reset", "type": 1, "description": "Reset", "options": []}],
        },
    ],
}
COMMANDS = [FIT, DAILY]

RESOLVER = slash.Resolver(
    user=lambda uid: {"id": str(uid), "username": "u"},
    member=lambda uid: None,
    channel=lambda text: (
        {"id": "55", "name": "general", "type": 0, "permissions": "0"} if text in ("55", "general") else None
    ),
    role=lambda text: None,
)


def values(text: str, **kwargs: Any) -> dict[str, Any]:
    return slash.parse(text, COMMANDS, resolver=RESOLVER, **kwargs).values


def test_values_run_until_the_next_known_option() -> None:
    assert values("/fit gpu:rtx 4090 model:qwen3-8b count:2") == {"gpu": "rtx 4090", "model": "qwen3-8b", "count": 2}


def test_types_are_converted() -> None:
    got = values("/fit gpu:T4 model:m util:0.5 chart:True quant:4-bit")
    assert got == {"gpu": "T4", "model": "m", "util": 0.5, "chart": True, "quant": "q4"}


def test_localised_names_map_to_canonical_ones() -> None:
    invocation = slash.parse("/适配 gpu:T4 model:m 图表:false quant:四位", COMMANDS, locale="zh-CN")
    assert invocation.command["name"] == "fit"
    assert invocation.values == {"gpu": "T4", "model": "m", "chart": False, "quant": "q4"}


def test_subcommands_nest_their_options() -> None:
    invocation = slash.parse("/daily subscribe channel:general", COMMANDS, resolver=RESOLVER)
    assert invocation.options == [
        {"name": "subscribe", "type": 1, "options": [{"name": "channel", "type": 7, "value": "55"}]}
    ]
    assert invocation.resolved["channels"]["55"]["name"] == "general"
    group = slash.parse("/daily admin reset", COMMANDS)
    assert group.options == [{"name": "admin", "type": 2, "options": [{"name": "reset", "type": 1, "options": []}]}]


@pytest.mark.parametrize(
    ("text", "reason"),
    [
        ("/fitt gpu:T4 model:m", "unknown command /fitt (did you mean /fit?)"),
        ("/fit gpu:T4 modle:m", "unknown option 'modle' (did you mean 'model'?)"),
        ("/fit gpu:T4", "missing required option 'model'"),
        ("/fit gpu:T4 model:m count:9", "'count' must be at most 8"),
        ("/fit gpu:T4 model:m count:two", "'count' must be a whole number, not 'two'"),
        ("/fit gpu:T4 model:m util:x", "'util' must be a number, not 'x'"),
        ("/fit gpu:T4 model:m chart:maybe", "'chart' must be True or False, not 'maybe'"),
        ("/fit gpu:T4 model:m note:too long", "'note' must be at most 5 characters"),
        ("/fit gpu:T4 model:m quant:q8", "'q8' is not a choice for 'quant' (choices: 4-bit, fp16)"),
        ("/fit gpu:T4 model:m gpu:A100", "option 'gpu' given twice"),
        ("/daily", "/daily needs a subcommand: one of subscribe, admin"),
        ("/daily subscribe channel:#nowhere", "'channel': nothing called '#nowhere' can be picked here"),
        ("/fit hello gpu:T4 model:m", "unexpected text 'hello' before the first option"),
    ],
)
def test_client_refuses(text: str, reason: str) -> None:
    with pytest.raises(slash.ClientRejection) as caught:
        values(text)
    assert caught.value.reason == reason


def test_focused_option_is_sent_raw_and_unchecked() -> None:
    invocation = slash.parse("/fit gpu:T4 model:qw", COMMANDS, focused="model")
    assert {"name": "model", "type": 3, "value": "qw", "focused": True} in invocation.options


def test_value_may_contain_colons_unlike_option_names() -> None:
    assert values("/fit gpu:T4 model:hf:Qwen/Qwen3-8B")["model"] == "hf:Qwen/Qwen3-8B"
