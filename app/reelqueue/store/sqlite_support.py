"""What the SQLite journal (``sqlite.py``) needs beside its connection: its JSON encoding,
the sorting of SQLite's errors into ours (known: the environment's fault, said plainly;
bug: ours), the refusal of a file that is not an SQLite database, and the splitting of a
schema script into statements.
"""

from __future__ import annotations

import json
import sqlite3
from pathlib import Path
from typing import Any

from reelqueue.domain.errors import (
    JournalBug,
    JournalBusy,
    JournalCorrupt,
    JournalError,
    JournalFull,
    JournalReadOnly,
)
from reelqueue.store.rows import loads_or_unreadable

_SQLITE_MAGIC = b"SQLite format 3\x00"

_ENCODE = json.JSONEncoder(sort_keys=True, separators=(",", ":"), default=str).encode


def _dumps(value: Any) -> str:
    # One encoder for every call: json.dumps with options builds a new one each time.
    return _ENCODE(value)


def _loads(text: str | None) -> Any:
    return loads_or_unreadable(text) if text and text != "{}" else {}


# SQLite's primary result codes (https://sqlite.org/rescode.html), read from
# ``sqlite3.Error.sqlite_errorcode & 0xff``: the extended code's low byte.
_SQLITE_PERM, _SQLITE_BUSY, _SQLITE_LOCKED, _SQLITE_READONLY = 3, 5, 6, 8
_SQLITE_IOERR, _SQLITE_CORRUPT, _SQLITE_FULL, _SQLITE_CANTOPEN = 10, 11, 13, 14
_SQLITE_NOTADB = 26


def _known_error(exc: sqlite3.Error, path: Path | None = None) -> Exception:
    """Sort an SQLite error into the environment's fault (a :class:`JournalError` with a
    plain message) or ours (:class:`JournalBug`, reported as a bug with the log path).

    Sorted by the primary result code, not by the message's words; errors from before
    Python 3.11 (no code) fall back on the words.
    """
    where = f" ({path})" if path else ""
    code = getattr(exc, "sqlite_errorcode", None)
    primary = code & 0xFF if isinstance(code, int) else _code_from_words(str(exc))
    if primary == _SQLITE_FULL:
        return JournalFull(f"The disk that holds the journal{where} is full; the last "
                           "change was not written. Free some space, then run the command "
                           "again: nothing recorded before was lost.")
    if primary in (_SQLITE_READONLY, _SQLITE_PERM, _SQLITE_CANTOPEN):
        return JournalReadOnly(f"The journal{where} cannot be written: the file or its "
                               "folder is read-only. Check the permissions of the data "
                               "folder, or pass a different --data-dir.")
    if primary in (_SQLITE_BUSY, _SQLITE_LOCKED):
        return JournalBusy(f"The journal{where} is locked by another program. Close it (or "
                           "wait for it), then run the command again.")
    if primary in (_SQLITE_CORRUPT, _SQLITE_NOTADB):
        return JournalCorrupt(f"The journal{where} is damaged (SQLite: {exc}). It was left "
                              "as it is: restore it from a backup (a .bak-v* copy is kept "
                              "beside it before each upgrade), or move it away to start a "
                              "new one.")
    if primary == _SQLITE_IOERR:
        return JournalError(f"The disk did not read or write the journal{where} ({exc}). "
                            "Check the disk, then run the command again.")
    if any(words in str(exc).lower() for words in _JSON_DAMAGED):
        return JournalCorrupt(f"The journal{where} holds a value that is not JSON where "
                              f"JSON belongs (SQLite: {exc}): a row was changed outside "
                              "ReelQueue, or the file is damaged. 'reelqueue doctor' names "
                              "the rows. Restore the journal from a backup (a .bak-v* copy "
                              "is kept beside it before each upgrade), or move it away to "
                              "start a new one.")
    return JournalBug(f"The journal refused a request: {exc}. This is a bug in ReelQueue; "
                      "please report it with the log file.")


_JSON_DAMAGED = ("malformed json", "json cannot hold blob values")
"""SQLite's words when a JSON function meets a stored text that is not JSON (result code
SQLITE_ERROR, which our own bugs share): every JSON column is written by ReelQueue's own
encoder, so only a change from outside puts one there."""


def _code_from_words(text: str) -> int | None:
    text = text.lower()
    for words, code in (("full", _SQLITE_FULL), ("readonly", _SQLITE_READONLY),
                        ("read-only", _SQLITE_READONLY), ("unable to open", _SQLITE_CANTOPEN),
                        ("locked", _SQLITE_BUSY), ("busy", _SQLITE_BUSY),
                        ("malformed", _SQLITE_CORRUPT), ("not a database", _SQLITE_NOTADB),
                        ("disk i/o", _SQLITE_IOERR)):
        if words in text:
            return code
    return None


def _refuse_foreign_file(path: Path) -> None:
    if path.is_dir():
        raise JournalCorrupt(f"{path} is a folder, not a journal file.")
    if not path.exists() or path.stat().st_size == 0:
        return
    with path.open("rb") as handle:
        head = handle.read(len(_SQLITE_MAGIC))
    if head != _SQLITE_MAGIC:
        raise JournalCorrupt(
            f"{path} is not a ReelQueue journal (not an SQLite file). It was left "
            "untouched; move it away or choose another --data-dir."
        )


def _split_sql(script: str) -> list[str]:
    """Split a schema script into statements (trigger bodies kept whole)."""
    statements: list[str] = []
    buffer: list[str] = []
    for line in script.splitlines():
        stripped = line.strip()
        if stripped.startswith("--") or not stripped:
            continue
        buffer.append(line)
        candidate = "\n".join(buffer)
        if stripped.endswith(";") and sqlite3.complete_statement(candidate):
            statements.append(candidate)
            buffer = []
    if buffer and "".join(buffer).strip():
        statements.append("\n".join(buffer))
    return statements


__all__ = ["_ENCODE", "_dumps", "_known_error", "_loads", "_refuse_foreign_file",
           "_split_sql"]
