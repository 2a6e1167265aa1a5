"""Reading request bodies and query values without trusting them: whole numbers checked
against the journal's range, text that SQLite cannot store refused, JSON depth measured
before it is parsed, and a JSON batch read item by item from a spooled file (so a list of
millions of ``{}`` costs the memory of the rows kept, not of the bytes sent).

Everything here raises :class:`~reelqueue.api.problems.Refused` (a 4xx naming the field);
the parsing functions are plain and synchronous so the routes run them in a thread.
"""

from __future__ import annotations

import json
import re
from collections.abc import Iterator
from itertools import accumulate
from typing import IO, Any

from reelqueue.api.problems import Refused

JOURNAL_MAX_ID = 2**63 - 1
"""SQLite's INTEGER: ids, cursors and event sequence numbers are 1 .. 2^63-1."""
MAX_JSON_DEPTH = 32
"""Deeper than any job (an object with a params object) needs, far below the recursion
limit of the parsers and of our own checks."""
MAX_BATCH_ITEMS = 100_000
"""The import's row limit (its default queue limit): a longer list is refused as it is
read, before the rest is parsed."""
MAX_ITEM_BYTES = 1024 * 1024
"""One item of a JSON batch: the same bound as a single submit's body."""
READ_CHUNK = 1024 * 1024

_DIGITS = re.compile(r"[0-9]{1,25}")
_UNSTORABLE = re.compile("[\x00\ud800-\udfff]")
_NOT_BRACKETS = re.compile(rb'"(?:[^"\\]|\\.)*"|[^\[\]{}]+')
_DEPTH_STEP = bytes.maketrans(b"[{]}", b"\x02\x02\x00\x00")


def whole_number(text: str, name: str, *, minimum: int,
                 maximum: int = JOURNAL_MAX_ID, status: int = 422) -> int:
    """``text`` as an int in ``minimum..maximum``; ASCII digits only (``int()`` would also
    take ``1_000``, `` 7``, ``+7`` and other scripts' digits)."""
    if _DIGITS.fullmatch(text) is None or not minimum <= int(text) <= maximum:
        words = f"must be a whole number from {minimum} to {maximum}"
        raise Refused(status, f"{name} {words}.", fields={name: words})
    return int(text)


def storable_text(text: str, name: str) -> str:
    """``text``, refused (422) when the journal cannot store it (NUL, lone surrogates)."""
    if _UNSTORABLE.search(text):
        words = "contains a character that cannot be stored (NUL or a lone surrogate)"
        raise Refused(422, f"{name} {words}.", fields={name: words})
    return text


def unstorable_field(value: object, where: str = "body") -> str | None:
    """The path of the first string (key or value) in ``value`` that cannot be stored."""
    stack: list[tuple[str, object]] = [(where, value)]
    while stack:
        path, item = stack.pop()
        if isinstance(item, str):
            if _UNSTORABLE.search(item):
                return path
        elif isinstance(item, dict):
            for key, inner in item.items():
                if _UNSTORABLE.search(key):
                    return f"{path}.<key>"
                stack.append((key if path == "body" else f"{path}.{key}", inner))
        elif isinstance(item, list):
            stack.extend((f"{path}[{i}]", inner) for i, inner in enumerate(item))
    return None


def json_depth(raw: bytes) -> int:
    """How deeply ``raw``'s arrays and objects nest (brackets inside strings skipped)."""
    brackets = _NOT_BRACKETS.sub(b"", raw).translate(_DEPTH_STEP)
    return max(accumulate(step - 1 for step in brackets), default=0)


def load_json(raw: bytes, *, max_depth: int = MAX_JSON_DEPTH) -> object:
    """A request body's JSON; 400 when malformed, too deep, or not UTF-8."""
    if json_depth(raw) > max_depth:
        raise Refused(400, f"The JSON nests deeper than {max_depth} levels.")
    try:
        return json.loads(raw)
    except (ValueError, UnicodeDecodeError, RecursionError) as exc:
        raise Refused(400, f"Malformed JSON: {exc}") from None


def checked_job_body(raw: bytes) -> object:
    """A submit's body parsed; strings that cannot be stored are refused (422)."""
    body = load_json(raw)
    bad = unstorable_field(body)
    if bad is not None:
        words = "contains a character that cannot be stored (NUL or a lone surrogate)"
        raise Refused(422, f"{bad} {words}.", fields={bad: words})
    return body


_STRUCTURE = re.compile(rb'[\[\]{},"]')
_STRING = re.compile(rb'"(?:[^"\\]|\\.)*"')
_SPACE = b" \t\r\n"


def read_json_items(source: IO[bytes], *, max_items: int = MAX_BATCH_ITEMS,
                    max_item_bytes: int = MAX_ITEM_BYTES,
                    max_depth: int = MAX_JSON_DEPTH) -> list[Any]:
    """The items of the JSON array in ``source``, each parsed on its own as it is reached:
    memory is the items kept plus one read chunk and one item. Refused (400) when the text
    is not one JSON array or nests too deeply, (422) past ``max_items`` items or an item
    over ``max_item_bytes``, or with text that cannot be stored."""
    items: list[Any] = []
    for raw in _item_texts(source, max_item_bytes, max_depth):
        if len(items) >= max_items:
            raise Refused(422, f"The JSON batch has more than {max_items:,} items (the "
                               "import's row limit): split it.")
        try:
            item = json.loads(raw)
        except (ValueError, UnicodeDecodeError, RecursionError) as exc:
            raise Refused(400, f"Malformed JSON in item {len(items) + 1}: {exc}") from None
        bad = unstorable_field(item, f"item {len(items) + 1}")
        if bad is not None:
            raise Refused(422, f"{bad} contains a character that cannot be stored (NUL or a "
                               "lone surrogate).")
        items.append(item)
    return items


def _item_texts(source: IO[bytes], max_item_bytes: int, max_depth: int) -> Iterator[bytes]:
    """The raw text of each item of the top-level array, split on the array's own commas
    (strings and nested brackets skipped by the scan)."""
    buffer = b""
    position = 0
    eof = False
    start = -1  # where the current item began; -1 between items

    def more() -> bool:
        nonlocal buffer, position, eof, start
        if eof:
            return False
        chunk = source.read(READ_CHUNK)
        if not chunk:
            eof = True
            return False
        keep = min(position, start if start >= 0 else position)
        buffer = buffer[keep:] + chunk
        position -= keep
        if start >= 0:
            start -= keep
        return True

    depth = 0
    opened = closed = after_comma = False
    while True:
        if not opened:
            while position < len(buffer) and buffer[position] in _SPACE:
                position += 1
            if position >= len(buffer):
                if more():
                    continue
                raise Refused(400, "Malformed JSON: the body is empty.")
            if buffer[position:position + 1] != b"[":
                raise Refused(422, "A JSON batch is a list of job objects ([{...}, ...]).")
            opened, depth, position = True, 1, position + 1
            continue
        if closed:
            while position < len(buffer) and buffer[position] in _SPACE:
                position += 1
            if position < len(buffer):
                raise Refused(400, "Malformed JSON: text after the list's end.")
            if more():
                continue
            return
        if start < 0:
            while position < len(buffer) and buffer[position] in _SPACE:
                position += 1
            if position >= len(buffer):
                if more():
                    continue
                raise Refused(400, "Malformed JSON: the list is not closed.")
            start = position
        found = _STRUCTURE.search(buffer, position)
        if found is None:
            if start >= 0 and len(buffer) - start > max_item_bytes:
                raise _too_big(max_item_bytes)
            position = len(buffer)
            if more():
                continue
            raise Refused(400, "Malformed JSON: the list is not closed.")
        at = found.start()
        mark = buffer[at:at + 1]
        if mark == b'"':
            string = _STRING.match(buffer, at)
            if string is None:
                if len(buffer) - start > max_item_bytes:
                    raise _too_big(max_item_bytes)
                position = at
                if more():
                    continue
                raise Refused(400, "Malformed JSON: a string is not closed.")
            position = string.end()
            continue
        position = at + 1
        if mark in (b"[", b"{"):
            depth += 1
            if depth > max_depth:
                raise Refused(400, f"The JSON nests deeper than {max_depth} levels.")
        elif mark in (b"]", b"}"):
            depth -= 1
            if depth == 0:
                text = buffer[start:at].strip(_SPACE)
                if text:
                    yield _bounded(text, max_item_bytes)
                elif after_comma:  # "[1, ]" is not JSON ("[ ]" is an empty list)
                    raise Refused(400, "Malformed JSON: a comma before the list's end.")
                start, closed = -1, True
            elif depth < 0:
                raise Refused(400, "Malformed JSON: unbalanced brackets.")
        elif mark == b"," and depth == 1:
            text = buffer[start:at].strip(_SPACE)
            if not text:
                raise Refused(400, "Malformed JSON: an empty item in the list.")
            yield _bounded(text, max_item_bytes)
            start, after_comma = -1, True


def _bounded(text: bytes, limit: int) -> bytes:
    if len(text) > limit:
        raise _too_big(limit)
    return text


def _too_big(limit: int) -> Refused:
    return Refused(422, f"An item of the JSON batch is larger than {limit // 1024} KiB.")


def checked_batch_items(items: list[Any]) -> list[Any]:
    """``items`` (a JSON batch) with no field null or true/false, which the document's
    ``BatchItem`` does not allow (the CSV the import reads would turn null into an empty
    cell, taking the default, and true into "True"): 422 naming the item and the field."""
    for number, item in enumerate(items, start=1):
        if not isinstance(item, dict):
            continue  # the import's own message: not a JSON object
        params = item.get("params")
        fields = [*item.items(), *(params.items() if isinstance(params, dict) else ())]
        for name, value in fields:
            if value is None or isinstance(value, bool):
                shown = str(name)[:100]
                words = "a string or a number (leave the field out for its default)"
                raise Refused(422, f"Item {number}: {shown} is {json.dumps(value)}: give "
                                   f"{words}.", fields={shown: words})
    return items

