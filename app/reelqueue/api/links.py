"""Short-lived links for one file (issue 37): ``<video>`` and ``<img>`` cannot send a
bearer header, so the dashboard asks (with its token) for a link to one job's video or
thumbnail and puts that in ``src``.

A link is 32 random bytes (``secrets``), bound to one job and one kind of file, valid for
:data:`LINK_SECONDS`, answered on ``GET``/``HEAD`` (with Range) under ``/links/`` only:
it is no token, so every ``/v1`` route refuses it (401) like any wrong guess. The table
lives in the server's memory (a restart forgets every link: the page asks again) and is
bounded: past :data:`MAX_LINKS` the oldest go first.
"""

from __future__ import annotations

import secrets
import time
from collections import OrderedDict
from collections.abc import Callable
from dataclasses import dataclass

__all__ = ["KINDS", "LINK_SECONDS", "FileLink", "FileLinks"]

LINK_SECONDS = 10 * 60.0
MAX_LINKS = 10_000
KINDS = ("video", "thumbnail")
LINK_PREFIX = "/links/"


@dataclass(frozen=True)
class FileLink:
    """Attributes: token (the random part of the URL), job_id, kind (video or
    thumbnail), expires_at (epoch seconds)."""

    token: str
    job_id: int
    kind: str
    expires_at: float

    @property
    def path(self) -> str:
        return f"{LINK_PREFIX}{self.token}"


class FileLinks:
    """The links handed out and not yet expired (oldest first)."""

    def __init__(self, *, clock: Callable[[], float] = time.time,
                 seconds: float = LINK_SECONDS, max_links: int = MAX_LINKS) -> None:
        self._clock = clock
        self._seconds = seconds
        self._max = max_links
        self._links: OrderedDict[str, FileLink] = OrderedDict()

    def __len__(self) -> int:
        return len(self._links)

    def issue(self, job_id: int, kind: str) -> FileLink:
        if kind not in KINDS:
            raise ValueError(kind)
        self._forget_expired()
        link = FileLink(secrets.token_urlsafe(32), job_id, kind,
                        self._clock() + self._seconds)
        self._links[link.token] = link
        while len(self._links) > self._max:
            self._links.popitem(last=False)
        return link

    def find(self, token: str) -> FileLink | None:
        """The link while it is valid; None for an unknown or expired one."""
        link = self._links.get(token)
        if link is None:
            return None
        if link.expires_at <= self._clock():
            del self._links[token]
            return None
        return link

    def _forget_expired(self) -> None:
        now = self._clock()
        while self._links:
            oldest = next(iter(self._links.values()))
            if oldest.expires_at > now:
                break
            self._links.popitem(last=False)
