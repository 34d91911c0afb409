"""`rigcheck …`: the same answers as the Discord bot, on a terminal, as tables or JSON.

Bad input prints one line on stderr and exits with status 2; nothing prints a traceback.
"""

from __future__ import annotations

import argparse
import contextlib
import os
import re
import sys
from collections.abc import Sequence
from typing import Any, NoReturn

from bot.cli import catalog as catalog_cli
from bot.cli import estimate, finetune, reports, run, state
from bot.cli.common import EXIT_BROKEN_PIPE, EXIT_USAGE
from bot.params import CatalogError
from bot.render.text import LOCALES, cli_help_texts, t
from bot.service import Service
from bot.web import trigger
from catalog.resolve import NotARelease, NotFound, UnknownGgufRepo

# In the order `rigcheck --help` lists them.
FAMILIES = (estimate, catalog_cli, run, finetune, trigger, state, reports)


class Parser(argparse.ArgumentParser):
    """argparse refusing a flag (`--limit 0`, a missing `--gpu`, an unknown command) as every other refusal
    here: one line on stderr and status 2, not the usage text (`--help` still prints that)."""

    def __init__(self, *args: Any, lang: str | None = None, **kwargs: Any) -> None:
        super().__init__(*args, **kwargs)
        self.lang = lang

    def error(self, message: str) -> NoReturn:
        print(f"rigcheck: {t(self.lang, 'cli.usage_error', error=message, prog=self.prog)}", file=sys.stderr)
        raise SystemExit(EXIT_USAGE)


def build_parser(lang: str | None = None) -> argparse.ArgumentParser:
    """Every command's flags; their help in `lang` where its catalog translates it."""
    parser = Parser(prog="rigcheck", description="Does this LLM run on that GPU, and how fast?", lang=lang)
    parser.add_argument("--lang", metavar="LANG", help=t(lang, "cli.lang_help", locales=", ".join(LOCALES)))
    sub = parser.add_subparsers(dest="command", required=True, parser_class=Parser)
    for family in FAMILIES:
        family.register(sub)
    speak(parser, lang)
    translate_help(parser, cli_help_texts(lang))
    return parser


def speak(parser: argparse.ArgumentParser, lang: str | None) -> None:
    """`lang` for the refusals of the parser and every subcommand's."""
    if isinstance(parser, Parser):
        parser.lang = lang
    for action in parser._actions:
        if isinstance(action, argparse._SubParsersAction):
            for subparser in action.choices.values():
                speak(subparser, lang)


def translate_help(parser: argparse.ArgumentParser, texts: dict[str, str]) -> None:
    """Descriptions, epilogs and help of the parser and every subcommand, as `texts` translates them (argparse's
    own words, such as the -h help, stay as argparse writes them)."""
    if not texts:
        return
    if parser.description:
        parser.description = texts.get(parser.description, parser.description)
    if parser.epilog:
        parser.epilog = texts.get(parser.epilog, parser.epilog)
    for action in parser._actions:
        if isinstance(action.help, str):
            action.help = texts.get(action.help, action.help)
        if isinstance(action, argparse._SubParsersAction):
            for choice in action._choices_actions:
                if isinstance(choice.help, str):
                    choice.help = texts.get(choice.help, choice.help)
            for subparser in action.choices.values():
                translate_help(subparser, texts)


def _lang_anywhere(argv: Sequence[str] | None) -> list[str]:
    """`--lang` before or after the command (`rigcheck fit … --lang zh-CN`): moved in front, where the
    top-level parser reads it."""
    pre = Parser(prog="rigcheck", add_help=False, allow_abbrev=False)
    pre.add_argument("--lang")
    known, rest = pre.parse_known_args(sys.argv[1:] if argv is None else list(argv))
    return ["--lang", known.lang, *rest] if known.lang else rest


def not_found_text(exc: NotFound, locale: str | None) -> str:
    """A name the catalog does not know (or knows several of), with what the person may have meant."""
    shown = repr(exc.query if len(exc.query) <= 60 else exc.query[:57] + "…")
    if isinstance(exc, NotARelease):
        return t(locale, "cli.not_a_release", name=repr(exc.name), reason=exc.reason)
    refusal = t(locale, f"cli.ambiguous.{exc.kind}" if exc.ambiguous else f"cli.unknown.{exc.kind}", query=shown)
    if isinstance(exc, UnknownGgufRepo):  # what to ask instead: the model, or its format
        refusal += t(locale, f"cli.gguf_{exc.reason}", tag=exc.tag)
    names = t(locale, "list_sep").join(s.label for s in exc.suggestions[:5])
    return t(locale, "cli.did_you_mean", refusal=refusal, names=names) if names else refusal


def spoken(lang: str) -> bool:
    """Whether `--lang` names a language the catalog has, by its language subtag: 'en-US' and 'zh_CN' do."""
    def language(tag: str) -> str:
        return re.split(r"[-_]", tag.strip().lower(), maxsplit=1)[0]

    return language(lang) in {language(locale) for locale in LOCALES}


def main(argv: Sequence[str] | None = None) -> int:
    given = _lang_anywhere(argv)
    lang = given[1] if given[:1] == ["--lang"] else None
    if lang is not None and not spoken(lang):
        # Said in English: the language asked for is the one thing not known.
        print(f"rigcheck: {t(None, 'cli.bad_lang', got=repr(lang), locales=', '.join(LOCALES))}", file=sys.stderr)
        return EXIT_USAGE
    parser = build_parser(lang)
    args = parser.parse_args(given)
    try:
        return int(args.func(Service(), args) or 0)
    except NotFound as exc:
        print(f"rigcheck: {not_found_text(exc, args.lang)}", file=sys.stderr)
    except CatalogError as exc:
        print(f"rigcheck: {exc.text(args.lang)}", file=sys.stderr)
    except KeyboardInterrupt:
        # `run` exits 0 on Ctrl-C at any moment, even while the catalog loads before it starts.
        return 0 if getattr(args, "command", None) == "run" else 130
    except BrokenPipeError:
        # `rigcheck catalog list | head`: the reader left, which is not an error worth a traceback. Point
        # stdout at /dev/null so the interpreter's final flush does not raise the same error again.
        with contextlib.suppress(OSError, ValueError):
            os.dup2(os.open(os.devnull, os.O_WRONLY), sys.stdout.fileno())
        return EXIT_BROKEN_PIPE
    return EXIT_USAGE
