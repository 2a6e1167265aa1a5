"""The knobs of the mock provider: render times, random faults, auth, link expiry."""

from __future__ import annotations

from dataclasses import dataclass, field
from pathlib import Path

from reelqueue.resources import resource


def _default_video() -> Path:
    return resource("sample.mp4")


@dataclass(frozen=True)
class MockOptions:
    """How the mock provider behaves.

    Attributes:
        render_seconds_min: shortest render, drawn per job from ``random.Random(seed)``.
        render_seconds_max: longest render.
        seed: seeds every random draw (render times and the probabilistic faults).
        fail_rate: probability that a render ends ``failed`` (code ``render_failed``).
        rate_limit_rate: probability that a create answers 429 with ``Retry-After``.
        server_error_rate: probability that a create answers 500.
        retry_after: seconds sent in ``Retry-After`` on a 429.
        lookup_enabled: whether ``GET /v1/renders?client_token=`` works (else 404).
        accept_keys: None accepts any key (or none); otherwise only these keys, and any
            other key, or no key, gets 401.
        download_delay_per_chunk: seconds slept between 1 KiB download chunks.
        link_ttl_seconds: None for links that never expire; else video URLs carry a
            signed expiry this many seconds after the poll that produced them.
        video_path: the MP4 every render produces.
        hang_seconds: how long a hanging fault (create_timeout, poll_timeout) holds the
            connection before closing it without an answer (stop() ends it sooner).
    """

    render_seconds_min: float = 0.2
    render_seconds_max: float = 2.0
    seed: int | None = None
    fail_rate: float = 0.0
    rate_limit_rate: float = 0.0
    server_error_rate: float = 0.0
    retry_after: float = 1.0
    lookup_enabled: bool = True
    accept_keys: frozenset[str] | None = None
    download_delay_per_chunk: float = 0.0
    link_ttl_seconds: float | None = None
    video_path: Path = field(default_factory=_default_video)
    hang_seconds: float = 30.0

    def __post_init__(self) -> None:
        if self.render_seconds_min < 0 or self.render_seconds_max < self.render_seconds_min:
            raise ValueError("render_seconds_min must be >= 0 and <= render_seconds_max")
        for name in ("fail_rate", "rate_limit_rate", "server_error_rate"):
            value = getattr(self, name)
            if not 0.0 <= value <= 1.0:
                raise ValueError(f"{name} must be between 0 and 1")
        if self.accept_keys is not None and not isinstance(self.accept_keys, frozenset):
            object.__setattr__(self, "accept_keys", frozenset(self.accept_keys))
