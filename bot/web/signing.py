"""HMAC signatures for the daily hook, shared by the server and the `trigger-daily` command.

A request carries `X-Rigcheck-Timestamp: <unix seconds>` and
`X-Rigcheck-Signature: sha256=<hex HMAC-SHA256(secret, "<timestamp>." + raw body)>`. Signing the
timestamp with the body means a captured request cannot be replayed later with a fresh timestamp.
A GET (a run's progress at /runs/{id}) has no body; it is signed over its path instead, so a signature
for one run does not read another.
"""

from __future__ import annotations

import hashlib
import hmac
import re

TIMESTAMP_HEADER = "X-Rigcheck-Timestamp"
SIGNATURE_HEADER = "X-Rigcheck-Signature"
PREFIX = "sha256="
MAX_SKEW_S = 300

# [0-9], not \d: `\d` matches any Unicode digit, and int() would read "١٧٠٠…" as a time.
_TIMESTAMP = re.compile(r"[0-9]{1,12}")


class SignatureError(Exception):
    """The request is not provably from someone holding the secret; the message says why."""


def signature(secret: str | bytes, timestamp: int | str, body: bytes) -> str:
    key = secret.encode() if isinstance(secret, str) else secret
    mac = hmac.new(key, f"{timestamp}.".encode() + body, hashlib.sha256)
    return PREFIX + mac.hexdigest()


def signed_headers(secret: str | bytes, body: bytes, now: float) -> dict[str, str]:
    timestamp = str(int(now))
    return {TIMESTAMP_HEADER: timestamp, SIGNATURE_HEADER: signature(secret, timestamp, body),
            "Content-Type": "application/json"}


def verify(secret: str | bytes, timestamp: str | None, given: str | None, body: bytes, now: float) -> str:
    """Check a request's headers against its body; returns the signature (the replay key)."""
    if not timestamp or not given:
        raise SignatureError(f"missing {TIMESTAMP_HEADER} or {SIGNATURE_HEADER} header")
    if not _TIMESTAMP.fullmatch(timestamp.strip()):
        raise SignatureError(f"{TIMESTAMP_HEADER} must be unix seconds")
    if abs(now - int(timestamp)) > MAX_SKEW_S:
        raise SignatureError(f"timestamp is more than {MAX_SKEW_S // 60} minutes off the server's clock")
    expected = signature(secret, timestamp.strip(), body)
    # Compared as bytes so a non-ASCII header cannot make compare_digest raise instead of refusing.
    if not hmac.compare_digest(expected.encode(), given.strip().lower().encode(errors="replace")):
        raise SignatureError("signature does not match")
    return expected
