"""Keeping API keys out of every text a provider sends back: :func:`redact` scrubs each
spelling of a secret (raw, url-quoted, JSON-escaped, base64, the whole header value) and
any run of 8+ of its characters, in any case; :func:`shorten_text` cuts only after that.
"""

from __future__ import annotations

import base64
import json
import re
from collections.abc import Iterable
from urllib.parse import quote

REDACTED = "[redacted]"
MAX_MESSAGE_CHARS = 300
# A run of this many characters of a secret is scrubbed wherever it appears (a prefix, a
# suffix, the key one character short...); shorter fragments carry too little to matter.
SECRET_FRAGMENT_CHARS = 8


def shorten_text(text: str) -> str:
    text = " ".join(text.split())
    if len(text) > MAX_MESSAGE_CHARS:
        return text[: MAX_MESSAGE_CHARS - 1] + "…"
    return text


def redact(text: str, secrets: Iterable[str]) -> str:
    """``text`` with every secret, and every run of 8+ consecutive characters of one,
    replaced by ``[redacted]``; letter case is ignored.

    The one scrub every adapter (``ApiClient.scrub``) and the mock adapter use. It covers a
    provider quoting our header back cut short, upper-cased, or one character short. Run it
    over the whole text, then cut: a cut first can leave a fragment it no longer knows.
    """
    grams: dict[int, set[str]] = {}
    for secret in secrets:
        lowered = secret.lower()
        if 0 < len(lowered) < SECRET_FRAGMENT_CHARS and not lowered.isspace():
            grams.setdefault(len(lowered), set()).add(lowered)  # a tiny key: whole only
        # A header value ("Bearer <key>") is cut at its spaces, so "bearer" alone is kept.
        for piece in lowered.split():
            size = SECRET_FRAGMENT_CHARS
            grams.setdefault(size, set()).update(
                piece[i: i + size] for i in range(len(piece) - size + 1))
    grams = {size: wanted for size, wanted in grams.items() if wanted}
    if not grams or not text:
        return text
    lowered = text.lower()
    if len(lowered) != len(text):  # a rare case mapping changes length (e.g. 'İ')
        lowered = "".join(c if len(c.lower()) != 1 else c.lower() for c in text)
    hidden = bytearray(len(text))
    for size, wanted in grams.items():
        alphabet = "".join(sorted({c for gram in wanted for c in gram}))
        # Only runs made of the secrets' characters can hold a fragment: find them at C
        # speed, then look inside the few that can.
        runs = re.compile(f"[{re.escape(alphabet)}]{{{size},}}")
        for run in runs.finditer(lowered):
            for i in range(run.start(), run.end() - size + 1):
                if lowered[i: i + size] in wanted:
                    hidden[i: i + size] = b"\x01" * size
    out: list[str] = []
    kept = 0
    for span in re.finditer(rb"\x01+", hidden):
        out.append(text[kept: span.start()])
        out.append(REDACTED)
        kept = span.end()
    out.append(text[kept:])
    return "".join(out)


def secret_variants(
    key: str, header_values: Iterable[str], existing: tuple[str, ...] = ()
) -> tuple[str, ...]:
    """Every spelling of a secret a provider might echo: raw, url-quoted, JSON-escaped,
    base64 (Basic auth), and the full header values. Longest first, so a header value is
    replaced whole before the key inside it."""
    variants = set(existing)
    variants.add(key)
    variants.add(quote(key, safe=""))
    variants.add(json.dumps(key)[1:-1])
    variants.add(base64.b64encode(key.encode()).decode())
    variants.update(v for v in header_values if v)
    return tuple(sorted((v for v in variants if v), key=len, reverse=True))
