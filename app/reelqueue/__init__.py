"""ReelQueue: a crash-safe batch renderer for AI video providers."""

from __future__ import annotations

__version__ = "0.1.0"
