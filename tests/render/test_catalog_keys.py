"""The message catalogs agree with each other and with the code: every key in every locale, every key the
code asks for present, none that nothing asks for, and no language chosen anywhere but the loader."""

from __future__ import annotations

import ast
import re
import string
from collections.abc import Iterator
from pathlib import Path

import discord
from discord import app_commands

from bot.client import EXTENSIONS, RigBot
from bot.render.text import DEFAULT_LOCALE, LOCALES, catalog, command_texts
from bot.settings import Settings

ROOT = Path(__file__).resolve().parents[2]
# The sandbox stands in for Discord and shares nothing with the bot, the catalog included.
CODE = [p for p in sorted((ROOT / "bot").rglob("*.py")) if "sandbox" not in p.parts]
LOADER = ROOT / "bot" / "render" / "text.py"
# Where catalog/ says why a Hugging Face config cannot be used: a reason code the bot words as `hf.<code>`.
HF_REASONS = sorted((ROOT / "catalog" / "huggingface").glob("*.py"))

# Calls whose argument at this position (or keyword) is a catalog key; `SomeError.of(key, …)` builds any
# catalog-worded error (bot.params.CatalogError).
KEY_ARGS = {"t": 1, "say": 0, "st.text": 0, "Message": 0}
KEY_KEYWORDS = {"refusal"}
KEY_HEAD = re.compile(r"[a-z_]+\.[a-z_.]*")


def _fields(text: str) -> set[str]:
    return {name for _, name, _, _ in string.Formatter().parse(text) if name}


def _key_expressions(node: ast.AST) -> Iterator[ast.expr]:
    for call in (n for n in ast.walk(node) if isinstance(n, ast.Call)):
        catalog_error = isinstance(call.func, ast.Attribute) and call.func.attr == "of"
        position = 0 if catalog_error else KEY_ARGS.get(ast.unparse(call.func))
        if position is not None and len(call.args) > position:
            yield call.args[position]
        yield from (k.value for k in call.keywords if k.arg in KEY_KEYWORDS)


def _alternatives(expr: ast.expr) -> Iterator[ast.expr]:
    """`"a" if x else "b"` names two keys."""
    if isinstance(expr, ast.IfExp):
        yield from _alternatives(expr.body)
        yield from _alternatives(expr.orelse)
    else:
        yield expr


def _asked_for() -> tuple[set[str], set[str]]:
    """Keys the code names outright, and the heads of keys it builds (`f"verdict.{v}"` → "verdict.")."""
    literal: set[str] = set()
    heads: set[str] = set()
    for path in CODE:
        for expr in _key_expressions(ast.parse(path.read_text(encoding="utf-8"))):
            for alt in _alternatives(expr):
                if isinstance(alt, ast.Constant) and isinstance(alt.value, str):
                    literal.add(alt.value)
                elif isinstance(alt, ast.JoinedStr) and alt.values and isinstance(alt.values[0], ast.Constant):
                    heads.add(str(alt.values[0].value))
    return literal, heads


def _named_anywhere() -> tuple[set[str], set[str]]:
    """Every string constant in the code, and the heads of key-like f-strings (a key may be built into a
    variable first: `key = f"report.moderated_{action}"`)."""
    constants: set[str] = set()
    heads: set[str] = set()
    for path in CODE:
        for n in ast.walk(ast.parse(path.read_text(encoding="utf-8"))):
            if isinstance(n, ast.Constant) and isinstance(n.value, str):
                constants.add(n.value)
            elif isinstance(n, ast.JoinedStr) and n.values and isinstance(n.values[0], ast.Constant):
                head = str(n.values[0].value)
                if KEY_HEAD.fullmatch(head):
                    heads.add(head)
    return constants, heads


def test_every_locale_has_every_key_with_the_same_fields() -> None:
    keys = {loc: set(catalog(loc)) for loc in LOCALES}
    every = set().union(*keys.values())
    assert {loc: every - have for loc, have in keys.items()} == {loc: set() for loc in LOCALES}
    english = catalog(DEFAULT_LOCALE)
    for loc in LOCALES:
        differ = {k for k, v in catalog(loc).items() if _fields(v) != _fields(english[k])}
        assert differ == set(), loc


def test_every_key_the_code_asks_for_exists() -> None:
    literal, heads = _asked_for()
    assert literal, "the scan found no keys: KEY_ARGS no longer matches how the code asks"
    assert literal - set(catalog(DEFAULT_LOCALE)) == set()
    assert {h for h in heads if not any(k.startswith(h) for k in catalog(DEFAULT_LOCALE))} == set()


def test_no_key_is_left_unused() -> None:
    named, heads = _named_anywhere()
    unused = {k for k in catalog(DEFAULT_LOCALE) if k not in named and not any(k.startswith(h) for h in heads)}
    assert unused == set()


def _hf_reasons() -> dict[str, set[str]]:
    """Each reason code `UnsupportedConfig(code, **facts)` is raised with, and the names of its facts."""
    found: dict[str, set[str]] = {}
    for path in HF_REASONS:
        for call in ast.walk(ast.parse(path.read_text(encoding="utf-8"))):
            if isinstance(call, ast.Call) and ast.unparse(call.func) == "UnsupportedConfig":
                code = call.args[0]
                assert isinstance(code, ast.Constant) and isinstance(code.value, str), ast.unparse(call)
                found.setdefault(code.value, set()).update(str(k.arg) for k in call.keywords)
    return found


def test_every_hugging_face_reason_is_worded_with_exactly_its_facts() -> None:
    reasons = _hf_reasons()
    assert len(reasons) >= 20, "the scan found too few reasons: UnsupportedConfig is raised some other way"
    for loc in LOCALES:
        worded = {k.removeprefix("hf."): _fields(v) for k, v in catalog(loc).items() if k.startswith("hf.")}
        assert worded == reasons, loc


def test_only_the_loader_knows_which_languages_there_are() -> None:
    named_here = {str(p.relative_to(ROOT)) for p in CODE if p != LOADER
                  for n in ast.walk(ast.parse(p.read_text(encoding="utf-8")))
                  if isinstance(n, ast.Constant) and isinstance(n.value, str) and n.value.lower().startswith("zh")}
    assert named_here == set()


_NAMES = (app_commands.TranslationContextLocation.command_name,
          app_commands.TranslationContextLocation.group_name,
          app_commands.TranslationContextLocation.parameter_name)


class _Recorder(app_commands.Translator):
    """Every string the command tree offers for translation, as the real translator would be asked:
    descriptions, and choice names (most are identifiers such as `q8_0`, which stay as they are)."""

    def __init__(self) -> None:
        self.descriptions: set[str] = set()
        self.choices: set[str] = set()

    async def translate(self, string: app_commands.locale_str, locale: discord.Locale,
                        context: app_commands.TranslationContextTypes) -> str | None:
        if context.location == app_commands.TranslationContextLocation.choice_name:
            self.choices.add(string.message)
        elif context.location not in _NAMES:
            self.descriptions.add(string.message)
        return None


async def test_every_description_is_translated_and_every_translation_is_used(tmp_path: Path) -> None:
    recorder = _Recorder()
    settings = Settings(rigcheck_data_dir=str(tmp_path), rigcheck_render_workers=0, discord_token=None)
    async with RigBot(settings) as bot:
        for ext in EXTENSIONS:
            await bot.load_extension(ext)
        for command in bot.tree.get_commands():
            await command.get_translated_payload(bot.tree, recorder)
    assert len(recorder.descriptions) > 50 and recorder.choices
    for loc in LOCALES:
        if loc == DEFAULT_LOCALE:
            assert command_texts(loc) == {}  # English is the commands' own text
            continue
        table = command_texts(loc)
        assert recorder.descriptions - set(table) == set(), loc
        assert set(table) - recorder.descriptions - recorder.choices == set(), loc
