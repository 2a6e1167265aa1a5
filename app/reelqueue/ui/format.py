"""Small text helpers shared by the views (durations, money, clock times). No Qt here."""

from __future__ import annotations

import time


def duration(seconds: float | None) -> str:
    """65 -> "1:05"; 3725 -> "1:02:05"; None -> ""."""
    if seconds is None:
        return ""
    seconds = int(max(0, round(seconds)))
    hours, rest = divmod(seconds, 3600)
    minutes, secs = divmod(rest, 60)
    return f"{hours}:{minutes:02d}:{secs:02d}" if hours else f"{minutes}:{secs:02d}"


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
    if value is None:
        return "—"
    return f"${value:.3f}" if 0 < value < 0.01 else f"${value:,.2f}"


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
