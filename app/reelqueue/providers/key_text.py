"""Which API keys can be sent at all (issue 22).

Every adapter sends the account's key in an HTTP header (``Authorization: Bearer KEY``,
``x-goog-api-key``, a JWT signed with it...). A header value is Latin-1 text without
control characters (RFC 9110 5.5), and servers refuse header lines past a few kilobytes,
so a key outside that cannot reach any provider: it is refused when the account is added,
with the reason in plain words, never stored to fail later with a traceback. Any other
text is stored as it is and sent byte for byte in Latin-1 (httpx would send only ASCII).

Nothing here ever quotes the key: messages name the kind of character and its position.
"""

from __future__ import annotations

import unicodedata
from collections.abc import Mapping

MAX_KEY_CHARS = 4096
"""Longer keys are refused: common servers cap a header line at 8 KB (nginx, Apache) and
no provider issues keys anywhere near this long."""


def key_text_problem(key: str) -> str | None:
    """Why ``key`` cannot be sent in an HTTP header, in words that quote none of it; None
    when it can."""
    if len(key) > MAX_KEY_CHARS:
        return (f"it is {len(key):,} characters long, more than an HTTP header carries "
                f"(at most {MAX_KEY_CHARS:,} are accepted); check that you pasted only the key")
    for position, char in enumerate(key, start=1):
        if unicodedata.category(char) == "Cc":
            kind = {"\x00": "a NUL character", "\n": "a line break", "\r": "a line break",
                    "\t": "a tab"}.get(char, "a control character")
            return (f"character {position} is {kind}, which an HTTP header cannot carry; "
                    "check that you pasted only the key")
        if ord(char) > 0xFF:
            return (f"character {position} is outside Latin-1 (letters of other alphabets, "
                    "such as Cyrillic, and emoji cannot be sent in an HTTP header, where "
                    "every provider expects the key); provider keys are plain ASCII, check "
                    "that you pasted the key itself")
    return None


def header_bytes(headers: Mapping[str, str]) -> dict[bytes, bytes]:
    """Headers as the bytes sent: names in ASCII, values in Latin-1 (RFC 9110's obs-text),
    not ASCII only."""
    return {name.encode("ascii"): value.encode("latin-1") for name, value in headers.items()}
