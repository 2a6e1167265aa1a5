"""The knobs of the mock provider: render times, random faults, auth, link expiry, and the
list of the account's renders (page size, the delay before a new render is listed, renders
planted for "another client on the same key").

The list (``GET /v1/renders`` without ``client_token``; see :mod:`.handler`) is what an
adapter in ``reconcile: search`` mode reads to find a create whose answer was lost. It
works whether or not the lookup by client token is on; with the lookup off its records
carry no client token, so a match really goes by prompt, params and creation time.
"""

from __future__ import annotations

from collections.abc import Mapping
from dataclasses import dataclass, field
from pathlib import Path
from typing import Any

from reelqueue.resources import resource

MAX_PAGE_SIZE = 100
"""The largest ``limit`` a list page accepts (and the largest ``list_page_size``)."""


def _default_video() -> Path:
    return resource("sample.mp4")


DEFAULT_ACCOUNT_VIEW: Mapping[str, Any] = {
    "organization_id": None,
    "balance": {"amount": 100.0, "unit": "credits"},
    "models": {},
}
"""The mock account's figures unless ``--account-view`` gives others: 100 credits (the
mock's prices have no unit, so they are shown and gate nothing) and no per-model limit.
Limits published by default would bind every mock run: the claim obeys them (issue 32
item 3), and an account of capacity 6 would start 4. Tests and demos that want limits
give them with ``--account-view``."""


@dataclass(frozen=True)
class ForeignRender:
    """A render planted in the account's list as if another client on the same key had
    created it (for tests: the same prompt and params as ours, at another time).

    Attributes:
        prompt: its prompt, as a create would have sent it.
        params: its params, echoed as given.
        created_at: its creation time, Unix seconds (the server's clock); None: ``ago``
            seconds before the server started.
        ago: with ``created_at`` None, how long before the server's start it was created
            (negative: after the start; it is listed once that time has come).
    """

    prompt: str
    params: Mapping[str, Any] = field(default_factory=dict)
    created_at: float | None = None
    ago: float = 0.0


@dataclass(frozen=True)
class MockOptions:
    """How the mock provider behaves.

    Attributes:
        render_seconds_min: shortest render, drawn per job from ``random.Random(seed)``.
        render_seconds_max: longest render.
        seed: seeds every random draw (render times, the probabilistic faults and the
            list delays).
        fail_rate: probability that a render ends ``failed`` (code ``render_failed``).
        rate_limit_rate: probability that a create answers 429 with ``Retry-After``.
        server_error_rate: probability that a create answers 500.
        retry_after: seconds sent in ``Retry-After`` on a 429.
        lookup_enabled: whether ``GET /v1/renders?client_token=`` works (else 404); also
            whether list records show the client token.
        accept_keys: None accepts any key (or none); otherwise only these keys, and any
            other key, or no key, gets 401.
        download_delay_per_chunk: seconds slept between 1 KiB download chunks.
        link_ttl_seconds: None for links that never expire; else video URLs carry a
            signed expiry this many seconds after the poll that produced them.
        video_path: the MP4 a render produces when it gets no clip of its own (every
            render, with ``prompt_clips`` off or a video of the caller's).
        prompt_clips: each render's video is a short clip of its prompt and seed
            (mockprovider/clips.py, issue 35 item 6), made once with PyAV and kept in
            ``clip_dir``; False (``--plain-video``), a ``video_path`` of the caller's, or
            no PyAV: the sample at ``video_path`` for every render, as before.
        clip_dir: the mock's folder of clips (None: the user's cache folder).
        hang_seconds: how long a hanging fault (create_timeout, poll_timeout) holds the
            connection before closing it without an answer (stop() ends it sooner).
        list_enabled: whether the list of the account's renders (``GET /v1/renders``
            without ``client_token``) works (else 404 ``list_disabled``).
        list_page_size: records per list page when the request gives no ``limit``.
        list_delay_min: a new render appears in the list only after a delay drawn per
            render from ``[list_delay_min, list_delay_max]`` seconds (seeded; no draw at
            all when both are 0), as a real provider's list lags its creates.
        list_delay_max: the longest such delay.
        foreign_renders: renders planted at start, as if created by another client on the
            same key (listed for every key).
        hold_create_answer_seconds: hold every create's answer this long after the render
            was created, then send it (0: answer at once). The create is counted and the
            render exists (and is listed after its delay) while the answer is held.
        account_view: the body ``GET /v1/account/view`` answers (the account's balance,
            per-model limits and organization; issue 32 item 2), sent as given so tests
            can plant bad figures; None: :data:`DEFAULT_ACCOUNT_VIEW` (a balance, no
            limit).
        poll_after_seconds: the ``X-Poll-After`` hint sent with every poll answer (real
            providers ask for about 5 s; the default keeps tests quick).
        send_hint: False: poll answers carry no hint at all (as Replicate's).
        send_progress: False: a running render's answer carries no progress (as
            Replicate's predictions), so its end can only be guessed.
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
    list_enabled: bool = True
    list_page_size: int = 20
    list_delay_min: float = 0.0
    list_delay_max: float = 0.0
    foreign_renders: tuple[ForeignRender, ...] = ()
    hold_create_answer_seconds: float = 0.0
    account_view: Mapping[str, Any] | None = None
    prompt_clips: bool = True
    clip_dir: Path | None = None
    poll_after_seconds: float = 0.2
    send_hint: bool = True
    send_progress: bool = True

    @property
    def clips_wanted(self) -> bool:
        """Renders get clips of their prompt: asked for, and the video is the sample."""
        return self.prompt_clips and Path(self.video_path) == _default_video()

    def __post_init__(self) -> None:
        if self.render_seconds_min < 0 or self.render_seconds_max < self.render_seconds_min:
            raise ValueError("render_seconds_min must be >= 0 and <= render_seconds_max")
        for name in ("fail_rate", "rate_limit_rate", "server_error_rate"):
            value = getattr(self, name)
            if not 0.0 <= value <= 1.0:
                raise ValueError(f"{name} must be between 0 and 1")
        # Callers (tests, the CLI) may pass any iterable: kept as the types say.
        keys: object = self.accept_keys
        if keys is not None and not isinstance(keys, frozenset):
            object.__setattr__(self, "accept_keys", frozenset(self.accept_keys or ()))
        if self.list_delay_min < 0 or self.list_delay_max < self.list_delay_min:
            raise ValueError("list_delay_min must be >= 0 and <= list_delay_max")
        if not 1 <= self.list_page_size <= MAX_PAGE_SIZE:
            raise ValueError(f"list_page_size must be between 1 and {MAX_PAGE_SIZE}")
        if self.hold_create_answer_seconds < 0:
            raise ValueError("hold_create_answer_seconds must be >= 0")
        if not 0 < self.poll_after_seconds <= 3600:
            raise ValueError("poll_after_seconds must be > 0 and <= 3600")
        renders: object = self.foreign_renders
        if not isinstance(renders, tuple):
            object.__setattr__(self, "foreign_renders", tuple(self.foreign_renders))
