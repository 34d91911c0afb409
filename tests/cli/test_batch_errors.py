"""`rigcheck batch`: a line it cannot use gets one sentence a person can act on, not a parser's or
pydantic's wording, and the lines around it are still answered."""

from __future__ import annotations

import io
import json

import pytest

from bot import cli


def batch(text: str, monkeypatch: pytest.MonkeyPatch, capsys: pytest.CaptureFixture[str]) -> list[dict[str, object]]:
    monkeypatch.setattr("sys.stdin", io.StringIO(text))
    assert cli.main(["batch"]) == 0
    out, err = capsys.readouterr()
    assert err == ""
    return [json.loads(line) for line in out.splitlines()]


@pytest.mark.parametrize("bad", ["this is not json", "{\"gpu\": \"t4\",", "[1, 2, 3]", "\"t4\""])
def test_a_line_that_is_not_a_json_object_is_named_with_an_example(
        bad: str, monkeypatch: pytest.MonkeyPatch, capsys: pytest.CaptureFixture[str]) -> None:
    good = json.dumps({"gpu": "t4", "model": "qwen3-8b"})
    first, second, third = batch(f"{good}\n{bad}\n{good}\n", monkeypatch, capsys)
    assert "error" not in first and "error" not in third
    message = str(second["error"])
    assert message.startswith("line 2 is not a JSON object; give one query a line, e.g. {")
    assert "Expecting" not in message and "\n" not in message
    assert json.loads(message[message.index("{"):]) == {"gpu": "t4", "model": "qwen3-8b", "ctx": "16k"}


def test_a_value_of_the_wrong_type_is_one_line(monkeypatch: pytest.MonkeyPatch,
                                               capsys: pytest.CaptureFixture[str]) -> None:
    (answer,) = batch(json.dumps({"gpu": "t4", "model": "qwen3-8b", "ctx": [1]}) + "\n", monkeypatch, capsys)
    message = str(answer["error"])
    assert message.startswith("line 1: ctx") and "\n" not in message and "errors.pydantic.dev" not in message
