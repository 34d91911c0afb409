"""The rules community reports live by, each stated once: text limits, the outlier rule, the summary."""

from __future__ import annotations

import hashlib
import hmac
import re
import statistics
from dataclasses import dataclass

from bot.params import BadValue

NOTES_MAX_CHARS = 200
BUILD_MAX_CHARS = 64
# A report outside [low / OUTLIER_FACTOR, high × OUTLIER_FACTOR] of the estimate's 80 % range is held for an
# owner to review instead of shown: far enough out that it is more likely a mistake than a surprise.
OUTLIER_FACTOR = 2.0
# Discord turns these into pings or links to people, roles and channels.
_MENTION = re.compile(r"<[@#][!&]?\d+>|@(everyone|here)\b|<@|discord\.gg/", re.IGNORECASE)
_PRINTABLE = re.compile(r"^[^\x00-\x1f\x7f]*$")


def clean_text(value: str | None, name: str, limit: int) -> str | None:
    """A free-text field as stored: one line, at most `limit` characters, nothing that could ping."""
    if value is None or not value.strip():
        return None
    if len(value) > limit:
        raise BadValue.of("report.text_too_long", name=name, limit=limit)
    if not _PRINTABLE.match(value):
        raise BadValue.of("report.text_control", name=name)
    if _MENTION.search(value):
        raise BadValue.of("report.text_mention", name=name)
    return " ".join(value.split())


def is_outlier(decode_tps: float, low_tps: float, high_tps: float) -> bool:
    """Held for review when far outside the estimate's range (see OUTLIER_FACTOR)."""
    if low_tps <= 0 or high_tps <= 0:
        return False  # no range to judge by
    return decode_tps < low_tps / OUTLIER_FACTOR or decode_tps > high_tps * OUTLIER_FACTOR


def reporter_hash(salt: str, user_id: int) -> str:
    """Who reported, as a keyed hash: stable for one bot (to list and delete one's own), not reversible
    to a Discord id without the salt."""
    return hmac.new(salt.encode(), str(user_id).encode(), hashlib.sha256).hexdigest()


@dataclass(frozen=True)
class Community:
    """Accepted reports for one GPU setup, model, format and engine: median, count and spread."""

    median_tps: float
    count: int
    low_tps: float
    high_tps: float


def summarize(values: list[float]) -> Community | None:
    if not values:
        return None
    return Community(median_tps=statistics.median(values), count=len(values), low_tps=min(values),
                     high_tps=max(values))
