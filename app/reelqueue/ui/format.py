"""Small text helpers shared by the views: the ONE place for plurals, numbers, money,
durations and clock times, so "1 render" / "5,000 renders" read the same everywhere.

No Qt here (the dashboard and tests use it without a QApplication). Number grouping
follows the user's locale: the theme hands Qt's ``QLocale`` separators to
:func:`use_locale` at start-up; until then (and under a C locale) it is "1,234.5".
"""

from __future__ import annotations

import time
from collections.abc import Mapping

from reelqueue.application.history_words import handover_words as _handover_words
from reelqueue.application.history_words import history_detail as _history_detail
from reelqueue.domain.states import JobState

_GROUP = ","
_DECIMAL = "."

# Nouns whose plural is not "+s". Keep it to the words the views use.
_IRREGULAR = {"batch": "batches", "entry": "entries", "is": "are", "was": "were",
              "has": "have", "this": "these"}


def use_locale(group: str, decimal: str) -> None:
    """Group thousands with ``group`` and mark decimals with ``decimal`` from now on."""
    global _GROUP, _DECIMAL
    if decimal and group != decimal:
        _GROUP, _DECIMAL = group, decimal


def _localise(text: str) -> str:
    """"12,345.67" (Python's grouping) -> the locale's separators."""
    if (_GROUP, _DECIMAL) == (",", "."):
        return text
    return text.replace(",", "\0").replace(".", _DECIMAL).replace("\0", _GROUP)


def number(value: float, decimals: int = 0) -> str:
    """5000 -> "5,000"; number(1234.5, 1) -> "1,234.5" (the locale's separators)."""
    return _localise(f"{value:,.{decimals}f}")


def plural(n: float, word: str, many: str | None = None) -> str:
    """The word that goes with ``n``: plural(1, "render") -> "render", 2 -> "renders"."""
    if n == 1:
        return word
    return many or _IRREGULAR.get(word) or f"{word}s"


def count(n: int, word: str, many: str | None = None) -> str:
    """count(1, "render") -> "1 render"; count(5000, "render") -> "5,000 renders";
    count(2, "row refused", "rows refused") -> "2 rows refused"."""
    return f"{number(n)} {plural(n, word, many)}"


def duration(seconds: float | None) -> str:
    """65 -> "1:05"; 3725 -> "1:02:05"; None -> ""."""
    if seconds is None:
        return ""
    seconds = int(max(0, round(seconds)))
    hours, rest = divmod(seconds, 3600)
    minutes, secs = divmod(rest, 60)
    return f"{hours}:{minutes:02d}:{secs:02d}" if hours else f"{minutes}:{secs:02d}"


def duration_span(low: float, high: float) -> str:
    """A range of rough durations: "20–40 s", "1–3 min", "45 s–2 min"; one figure when
    both ends read the same."""
    a, b = rough_duration(low), rough_duration(high)
    if a == b:
        return a
    number_a, _, unit_a = a.partition(" ")
    if unit_a == b.partition(" ")[2] and number_a.isdigit():
        return f"{number_a}–{b}"
    return f"{a}–{b}"


def rough_duration(seconds: float | None) -> str:
    """A human ETA: "45 s", "3 min", "1 h 20 min"."""
    if seconds is None:
        return "—"
    seconds = max(0, int(seconds))
    if seconds < 1:
        return "< 1 s"
    if seconds < 60:
        return f"{seconds} s"
    if seconds < 3600:
        return f"{round(seconds / 60)} min"
    hours, rest = divmod(seconds, 3600)
    return f"{hours} h {rest // 60:02d} min"


def money(value: float | None) -> str:
    """12345.678 -> "$12,345.68"; below a cent three decimals ("$0.004"); None -> "—"."""
    if value is None:
        return "—"
    return "$" + (number(value, 3) if 0 < value < 0.01 else number(value, 2))


def clock(at: float | None) -> str:
    """Epoch seconds -> "14:32" (local time)."""
    if at is None:
        return ""
    return time.strftime("%H:%M", time.localtime(at))


def stamp(at: float | None) -> str:
    """Epoch seconds -> "2026-11-04 14:32:07" (local time)."""
    if at is None:
        return ""
    return time.strftime("%Y-%m-%d %H:%M:%S", time.localtime(at))


# -- jobs --------------------------------------------------------------------------------
LONG_TOKEN = 32
"""A run of characters without a space longer than this cannot wrap: it is elided."""


def elide_long(text: str, keep: int = 14) -> str:
    """``text`` with each unbroken run longer than :data:`LONG_TOKEN` (a sha256, a
    provider job id, a path) cut in its middle: "9f2c4e1ab8d03f…d2e4f6a8c0b2d4" (N7: the
    job detail scrolled sideways for a 64-character sha256)."""
    return " ".join(word if len(word) <= LONG_TOKEN else f"{word[:keep]}…{word[-keep:]}"
                    for word in text.split(" "))


def job_title(name: str | None, row_number: int | None, job_id: int) -> str:
    """What to call a job: its name, else its row in the sheet (what the user sees in the
    spreadsheet), and only without either the journal's id."""
    if name:
        return name
    return f"Row {row_number}" if row_number is not None else f"Job {job_id}"


def attempts(state: str, used: int, ceiling: int) -> str:
    """"attempt 2 of 3" while a job may still be tried again; "" once it completed or was
    cancelled (the ceiling no longer means anything), "3 attempts" once it failed."""
    if state in (JobState.COMPLETED, JobState.CANCELLED):
        return ""
    if state == JobState.FAILED:
        return count(used, "attempt")
    return f"attempt {used} of {ceiling}"


def history_detail(event: str, detail: Mapping[str, object]) -> str:
    """A ledger entry's details in plain words (application.history_words, the one
    wording the web dashboard shares), with this locale's numbers and money."""
    return _history_detail(event, detail, number=number, money=money)


def handover_words(detail: Mapping[str, object]) -> str:
    """A routed job's move (issue 24) in words (application.history_words)."""
    return _handover_words(detail, money=money)
