"""Slash-command descriptions in the asker's language, served to Discord through a Translator.

Discord shows each user the description in their client language when the synced command carries a
`description_localizations` entry for it; command and option *names* stay English so that the same
`/fit gpu:… model:…` works everywhere (and in the docs). The translations live in each locale's
message catalog (`[commands]` in `templates/<locale>/messages.toml`).
"""

from __future__ import annotations

import discord
from discord import app_commands

from bot.render.text import command_texts


def interaction_locale(interaction: discord.Interaction) -> str:
    """The asker's Discord language, as the templates and charts are keyed."""
    return str(interaction.locale.value if interaction.locale else "en-US")


class RigTranslator(app_commands.Translator):
    async def translate(
        self, string: app_commands.locale_str, locale: discord.Locale, context: app_commands.TranslationContextTypes
    ) -> str | None:
        if context.location in (
            app_commands.TranslationContextLocation.command_name,
            app_commands.TranslationContextLocation.group_name,
            app_commands.TranslationContextLocation.parameter_name,
        ):
            return None  # names stay English: '/fit gpu:… model:…' is the same command for everyone
        return command_texts(str(locale.value)).get(string.message)
