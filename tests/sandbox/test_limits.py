from __future__ import annotations

from bot.sandbox import limits


def test_a_valid_message_passes() -> None:
    embed = {
        "title": "t",
        "description": "d",
        "fields": [{"name": "n", "value": "v"}],
        "image": {"url": "attachment://c.png"},
    }
    assert limits.check_message({"content": "hi", "embeds": [embed]}, {"c.png"}) == {}


def test_each_embed_limit_reports_its_path() -> None:
    embed = {
        "title": "t" * 257,
        "description": "d" * 4097,
        "footer": {"text": "f" * 2049},
        "author": {"name": "a" * 257},
        "fields": [{"name": "n" * 257, "value": "v" * 1025}, {"name": "", "value": "x"}],
    }
    errors = limits.check_message({"embeds": [embed]}, set())
    e0 = errors["embeds"]["0"]
    assert set(e0) == {"title", "description", "footer", "author", "fields"}
    assert e0["fields"]["0"]["value"]["_errors"][0]["code"] == "BASE_TYPE_MAX_LENGTH"
    assert e0["fields"]["1"]["name"]["_errors"][0]["code"] == "BASE_TYPE_REQUIRED"


def test_totals_and_counts() -> None:
    many_fields = {"fields": [{"name": "n", "value": "v"}] * 26}
    assert "fields" in limits.check_message({"embeds": [many_fields]}, set())["embeds"]["0"]
    too_many = limits.check_message({"embeds": [{"title": "x"}] * 11}, set())
    assert too_many["embeds"]["_errors"][0]["code"] == "BASE_TYPE_MAX_LENGTH"
    big = [{"description": "d" * 4000}, {"description": "d" * 2001}]
    assert limits.check_message({"embeds": big}, set())["embeds"]["_errors"][0]["code"] == "MAX_EMBED_SIZE_EXCEEDED"
    assert "content" in limits.check_message({"content": "c" * 2001}, set())


def test_attachment_reference_needs_the_file() -> None:
    errors = limits.check_message({"embeds": [{"image": {"url": "attachment://chart.png"}}]}, {"other.png"})
    assert errors["embeds"]["0"]["image"]["url"]["_errors"][0]["code"] == "ATTACHMENT_NOT_FOUND"


def test_autocomplete_choices() -> None:
    assert limits.check_autocomplete({"choices": [{"name": "a", "value": "a"}] * 25}) == {}
    assert "_errors" in limits.check_autocomplete({"choices": [{"name": "a", "value": "a"}] * 26})["choices"]
    long_name = limits.check_autocomplete({"choices": [{"name": "n" * 101, "value": "a"}]})
    assert long_name["choices"]["0"]["name"]["_errors"][0]["code"] == "BASE_TYPE_BAD_LENGTH"


def test_command_sync_rules() -> None:
    good = {"name": "fit", "description": "Does it fit?", "options": [{"name": "gpu", "type": 3, "description": "GPU"}]}
    assert limits.check_command_list([good], is_global=True) == {}
    bad = {
        "name": "Fit",
        "description": "",
        "options": [
            {"name": "a", "type": 3, "description": "x"},
            {"name": "b", "type": 3, "description": "x", "required": True},
        ],
    }
    errors = limits.check_command_list([bad], is_global=True)
    assert set(errors["0"]) == {"name", "description", "options"}
