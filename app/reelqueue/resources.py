"""Where the bundled resources (sample sheets, the mock's sample video, icons) are.

Looked up, in order: ``$REELQUEUE_RESOURCES``; ``resources/`` beside ``app/`` (a source
checkout or an editable install); ``resources/`` inside a PyInstaller bundle.
"""

from __future__ import annotations

import os
import sys
from pathlib import Path


def resources_dir() -> Path:
    override = os.environ.get("REELQUEUE_RESOURCES")
    if override:
        return Path(override)
    candidates = [Path(__file__).resolve().parents[2] / "resources"]
    bundle = getattr(sys, "_MEIPASS", None)
    if bundle:
        candidates.insert(0, Path(bundle) / "resources")
    for candidate in candidates:
        if candidate.is_dir():
            return candidate
    raise FileNotFoundError(
        "ReelQueue's resources folder was not found; reinstall, or set REELQUEUE_RESOURCES."
    )


def resource(name: str) -> Path:
    return resources_dir() / name
