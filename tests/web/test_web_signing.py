from __future__ import annotations

import hashlib
import hmac

import pytest

from bot.web.signing import MAX_SKEW_S, SignatureError, signature, signed_headers, verify

NOW = 1_750_000_000.0
BODY = b'{"date": "2025-06-15"}'


def test_signature_is_hmac_sha256_of_timestamp_dot_body() -> None:
    expected = hmac.new(b"s3cret", b"1750000000." + BODY, hashlib.sha256).hexdigest()
    assert signature("s3cret", 1750000000, BODY) == "sha256=" + expected


def test_valid_signature_verifies() -> None:
    headers = signed_headers("s3cret", BODY, NOW)
    assert verify("s3cret", headers["X-Rigcheck-Timestamp"], headers["X-Rigcheck-Signature"], BODY, NOW + 10)


@pytest.mark.parametrize(
    ("secret", "body", "now", "reason"),
    [
        ("other", BODY, NOW, "does not match"),
        ("s3cret", BODY + b" ", NOW, "does not match"),
        ("s3cret", BODY, NOW + MAX_SKEW_S + 1, "minutes off"),
        ("s3cret", BODY, NOW - MAX_SKEW_S - 1, "minutes off"),
    ],
)
def test_wrong_or_stale_signature_is_refused(secret: str, body: bytes, now: float, reason: str) -> None:
    headers = signed_headers("s3cret", BODY, NOW)
    with pytest.raises(SignatureError, match=reason):
        verify(secret, headers["X-Rigcheck-Timestamp"], headers["X-Rigcheck-Signature"], body, now)


@pytest.mark.parametrize(
    ("timestamp", "given", "reason"),
    [
        (None, "sha256=00", "missing"),
        ("1750000000", None, "missing"),
        ("", "", "missing"),
        ("soon", "sha256=00", "unix seconds"),
        ("-1", "sha256=00", "unix seconds"),
        ("1750000000", "sha256=zz\u00e9", "does not match"),
    ],
)
def test_missing_or_malformed_headers_are_refused(timestamp: str | None, given: str | None, reason: str) -> None:
    with pytest.raises(SignatureError, match=reason):
        verify("s3cret", timestamp, given, BODY, NOW)


def test_signature_covers_the_timestamp() -> None:
    headers = signed_headers("s3cret", BODY, NOW)
    with pytest.raises(SignatureError):
        verify("s3cret", str(int(NOW) + 1), headers["X-Rigcheck-Signature"], BODY, NOW)
