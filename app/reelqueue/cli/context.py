"""What every command gets: the application layer's context (folders, output stream,
clock, journal), under the name the commands use."""

from __future__ import annotations

from reelqueue.application.context import (
    APP_NAME,
    AppContext,
    default_data_dir,
    default_videos_dir,
)

CliContext = AppContext

__all__ = ["APP_NAME", "CliContext", "default_data_dir", "default_videos_dir"]
