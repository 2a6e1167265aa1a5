"""The window's settings and the clean-exit marker, as JSON files in the data folder.

No Qt here: the session and tests read them too. Unknown keys are ignored and bad values
fall back to the defaults, so a hand-edited or older file never stops the app.
"""

from __future__ import annotations

import json
import logging
import os
import stat
from dataclasses import asdict, dataclass, fields, replace
from pathlib import Path
from typing import Any

from reelqueue.application.config import EngineConfig
from reelqueue.application.imports import DEFAULT_TEMPLATE
from reelqueue.application.serving import DEFAULT_LISTEN, ServeOptions, parse_listen
from reelqueue.domain.backoff import BackoffPolicy
from reelqueue.domain.errors import InputError

log = logging.getLogger(__name__)

SETTINGS_NAME = "settings.json"
SESSION_NAME = "session.json"
THEMES = ("system", "light", "dark")


@dataclass(frozen=True)
class Settings:
    """Attributes:
    output_dir: root of the batch folders ("" for the default Videos/ReelQueue).
    filename_template: how video files are named (see reelqueue.intake.filenames).
    max_attempts: attempts per job of a newly imported sheet.
    retry_base, retry_cap: the first retry wait ceiling and the longest wait, seconds.
    lease_seconds: how long a claim holds without a heartbeat.
    start_paused_after_crash: after an unclean exit, recover but hand out no new work
        until the user resumes.
    theme: "system" (follow the OS light/dark), "light" or "dark".
    max_video_mb: a video download larger than this (MiB) is refused or cut off.
    download_minutes: one video download is cut off after this long.
    serve_api: serve the HTTP API (``reelqueue serve``'s, on the window's own engine).
    api_listen: where it listens, HOST:PORT (``serve --listen``; always over TLS).
    api_max_waiting: submits get 429 while this many jobs wait (``--max-waiting``).
    team_store: the team queue's PostgreSQL address (issue 15), without a password; ""
        for this machine's own journal. Used from the next start; ``--store`` or
        REELQUEUE_STORE win over it.
    api_banner_seen: the HTTP API banner's text the user has seen go (closed, or faded):
        the next launch serving the same address and certificate shows it no more.
    """

    output_dir: str = ""
    filename_template: str = DEFAULT_TEMPLATE
    max_attempts: int = 3
    retry_base: float = 2.0
    retry_cap: float = 300.0
    lease_seconds: float = 60.0
    start_paused_after_crash: bool = True
    theme: str = "system"
    max_video_mb: float = 2048.0
    download_minutes: float = 30.0
    serve_api: bool = False
    api_listen: str = DEFAULT_LISTEN
    api_max_waiting: int = ServeOptions.max_waiting  # serve's --max-waiting default
    team_store: str = ""
    api_banner_seen: str = ""

    def engine_config(self) -> EngineConfig:
        return EngineConfig(
            lease_seconds=self.lease_seconds,
            heartbeat_seconds=max(0.5, self.lease_seconds / 3),
            retry_backoff=BackoffPolicy(self.retry_base, self.retry_cap),
            download_max_bytes=int(self.max_video_mb * 1024 * 1024),
            download_deadline_seconds=self.download_minutes * 60.0,
        )

    def checked(self) -> Settings:
        """The same settings with every out-of-range value replaced by its default."""
        default = Settings()
        fixes: dict[str, Any] = {}
        if self.max_attempts < 1 or self.max_attempts > 100:
            fixes["max_attempts"] = default.max_attempts
        if not 0 < self.retry_base <= self.retry_cap:
            fixes["retry_base"], fixes["retry_cap"] = default.retry_base, default.retry_cap
        if not 5 <= self.lease_seconds <= 3600:
            fixes["lease_seconds"] = default.lease_seconds
        if not 1 <= self.max_video_mb <= 1024 * 1024:
            fixes["max_video_mb"] = default.max_video_mb
        if not 1 <= self.download_minutes <= 24 * 60:
            fixes["download_minutes"] = default.download_minutes
        if self.theme not in THEMES:
            fixes["theme"] = default.theme
        if not 1 <= self.api_max_waiting <= 100_000_000:
            fixes["api_max_waiting"] = default.api_max_waiting
        try:
            parse_listen(self.api_listen)
        except InputError:
            fixes["api_listen"] = default.api_listen
        if self.team_store and team_store_problem(self.team_store):
            fixes["team_store"] = default.team_store
        if not self.filename_template.strip():
            fixes["filename_template"] = default.filename_template
        return replace(self, **fixes) if fixes else self


def team_store_problem(url: str) -> str | None:
    """Why ``url`` cannot be the team queue's address (None: it can; "" is no team)."""
    from reelqueue.application.team import check_team_url
    from reelqueue.domain.errors import InputError

    if not url:
        return None
    try:
        check_team_url(url)
    except InputError as exc:
        return str(exc).replace("--store takes", "The team queue takes")
    return None


MAX_FILE_BYTES = 1 << 20
"""The most of settings.json or session.json read (ours are a few hundred bytes): a
larger file is not read, so a hostile or damaged one cannot fill the memory."""


def _read_json(path: Path) -> dict[str, Any]:
    """The object in ``path``; {} (the defaults, said in the log) for a file that is
    missing, not a regular file (a FIFO would block the start), over
    :data:`MAX_FILE_BYTES`, not UTF-8 JSON, nested deeper than the parser goes, or not an
    object."""
    try:
        if not stat.S_ISREG(path.stat().st_mode):
            log.warning("%s is not a regular file; using defaults", path.name)
            return {}
        with path.open("rb") as handle:
            raw = handle.read(MAX_FILE_BYTES + 1)
    except FileNotFoundError:
        return {}
    except OSError as exc:
        log.warning("%s is unreadable (%s); using defaults", path.name, exc)
        return {}
    if len(raw) > MAX_FILE_BYTES:
        log.warning("%s is larger than %d bytes; using defaults", path.name, MAX_FILE_BYTES)
        return {}
    try:
        value = json.loads(raw.decode("utf-8"))
    except (ValueError, RecursionError) as exc:  # UnicodeDecodeError is a ValueError
        log.warning("%s is unreadable (%s); using defaults", path.name,
                    type(exc).__name__ if isinstance(exc, RecursionError) else exc)
        return {}
    return value if isinstance(value, dict) else {}


def _write_json(path: Path, value: dict[str, Any]) -> None:
    """Write beside the target, then rename over it: never half a file."""
    path.parent.mkdir(parents=True, exist_ok=True)
    temporary = path.with_name(f".{path.name}.tmp")
    temporary.write_text(json.dumps(value, indent=2, sort_keys=True), "utf-8")
    os.replace(temporary, path)


def load_settings(data_dir: Path) -> Settings:
    raw = _read_json(data_dir / SETTINGS_NAME)
    known: dict[str, Any] = {}
    for item in fields(Settings):
        if item.name not in raw:
            continue
        value = raw[item.name]
        wanted = type(getattr(Settings(), item.name))
        if wanted is float and isinstance(value, int) and not isinstance(value, bool):
            value = float(value)
        if isinstance(value, wanted) and not (wanted is int and isinstance(value, bool)):
            known[item.name] = value
    return Settings(**known).checked()


def save_settings(data_dir: Path, settings: Settings) -> None:
    _write_json(data_dir / SETTINGS_NAME, asdict(settings.checked()))


@dataclass(frozen=True)
class SessionMarker:
    """How the last window session ended.

    Attributes:
        running: True while a window session runs; still True at the next start means
            the last one did not end cleanly (crash, kill, power cut).
        kept_renders: renders the user chose to keep running at the last clean close.
    """

    running: bool = False
    kept_renders: int = 0


def read_marker(data_dir: Path) -> SessionMarker:
    raw = _read_json(data_dir / SESSION_NAME)
    kept = raw.get("kept_renders", 0)
    return SessionMarker(running=raw.get("running") is True,
                         kept_renders=kept if isinstance(kept, int) else 0)


def write_marker(data_dir: Path, marker: SessionMarker) -> None:
    _write_json(data_dir / SESSION_NAME, asdict(marker))
