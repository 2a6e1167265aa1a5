"""What the mock provider remembers: renders, request counters and fault budgets.

Everything here is guarded by one lock, because the HTTP server answers each connection
on its own thread. Render status is derived from ``time.monotonic()`` and the duration
drawn at creation, so a render "keeps going" whether or not anybody polls it.
"""

from __future__ import annotations

import hashlib
import hmac
import random
import secrets
import threading
import time
from collections import Counter
from dataclasses import dataclass, field
from typing import Any

from reelqueue.mockprovider.directives import Directive
from reelqueue.mockprovider.options import MockOptions

PRICE_PER_SECOND: dict[str, float] = {"mock-1": 0.01, "mock-2": 0.02}
"""USD per second of video by model, for the ``cost`` of a finished render."""

QUEUED_SHARE = 0.2
"""The first fifth of a render's time is reported as ``queued``, the rest as ``running``."""


@dataclass
class Render:
    """One render the mock provider accepted."""

    id: str
    job_key: str
    client_token: str
    prompt: str
    params: dict[str, Any]
    directives: dict[str, Directive]
    created: float
    duration: float
    fail_reason: str | None = None
    cancelled: bool = False
    key_id: str = ""


@dataclass
class _Counters:
    creates_total: int = 0
    creates_by_job_key: Counter[str] = field(default_factory=Counter)
    creates_by_client_token: Counter[str] = field(default_factory=Counter)
    polls_total: int = 0
    lookups_total: int = 0
    downloads_total: int = 0
    cancels_total: int = 0
    renders_total: int = 0
    peak_renders_by_key: Counter[str] = field(default_factory=Counter)


class MockState:
    """The mock provider's memory, shared by all request threads."""

    def __init__(self, options: MockOptions, video: bytes) -> None:
        self.options = options
        self.video = video
        self.stopping = threading.Event()
        self._lock = threading.Lock()
        self._rng = random.Random(options.seed)
        self._secret = secrets.token_bytes(16)
        self._renders: dict[str, Render] = {}
        self._counters = _Counters()
        self._used: Counter[tuple[str, str]] = Counter()

    # -- counters -------------------------------------------------------------------

    def count_create(self, job_key: str | None, client_token: str | None) -> None:
        with self._lock:
            self._counters.creates_total += 1
            if job_key is not None:
                self._counters.creates_by_job_key[job_key] += 1
            if client_token is not None:
                self._counters.creates_by_client_token[client_token] += 1

    def count(self, name: str) -> None:
        """Add one to ``polls_total``, ``lookups_total``, ``downloads_total``..."""
        with self._lock:
            setattr(self._counters, name, getattr(self._counters, name) + 1)

    def counters(self) -> dict[str, Any]:
        with self._lock:
            c = self._counters
            return {
                "creates_total": c.creates_total,
                "creates_by_job_key": dict(c.creates_by_job_key),
                "creates_by_client_token": dict(c.creates_by_client_token),
                "polls_total": c.polls_total,
                "lookups_total": c.lookups_total,
                "downloads_total": c.downloads_total,
                "cancels_total": c.cancels_total,
                "renders_total": c.renders_total,
                "peak_renders_by_key": dict(c.peak_renders_by_key),
            }

    def reset_counters(self) -> None:
        with self._lock:
            self._counters = _Counters()

    # -- faults ---------------------------------------------------------------------

    def take_fault(self, scope: str, directive: Directive | None) -> bool:
        """Whether ``directive`` fires now for ``scope``; uses up one of its N times."""
        if directive is None:
            return False
        with self._lock:
            key = (scope, directive.name)
            if directive.times is not None and self._used[key] >= directive.times:
                return False
            self._used[key] += 1
            return True

    def chance(self, probability: float) -> bool:
        """A seeded draw; no draw at all when the probability is 0 (keeps runs stable)."""
        if probability <= 0.0:
            return False
        with self._lock:
            return self._rng.random() < probability

    # -- renders --------------------------------------------------------------------

    def create_render(
        self,
        *,
        job_key: str,
        client_token: str,
        prompt: str,
        params: dict[str, Any],
        directives: dict[str, Directive],
        render_seconds: tuple[float, float] | None = None,
        key_id: str = "",
    ) -> Render:
        """``render_seconds``: the account's own pace (a range), over the server's.
        ``key_id`` names the API key (a hash, never the key): the peak number of renders
        running at once per key is counted (``peak_renders_by_key``), the figure a real
        provider's concurrency limit is about."""
        fail_reason: str | None = None
        if self.take_fault(job_key, directives.get("render_fail")):
            fail_reason = "injected"
        elif self.chance(self.options.fail_rate):
            fail_reason = "random"
        with self._lock:
            low, high = render_seconds or (
                self.options.render_seconds_min, self.options.render_seconds_max)
            duration = self._rng.uniform(low, high)
            setting = directives.get("render_seconds")
            if setting is not None and setting.value is not None:
                duration = setting.value
            render = Render(
                id=f"mr_{secrets.token_hex(8)}",
                job_key=job_key,
                client_token=client_token,
                prompt=prompt,
                params=params,
                directives=directives,
                created=time.monotonic(),
                duration=duration,
                fail_reason=fail_reason,
                key_id=key_id,
            )
            self._renders[render.id] = render
            self._counters.renders_total += 1
            # Running renders only end, so the peak is reached at some create: count here.
            now = render.created
            running = sum(1 for r in self._renders.values()
                          if r is render or (r.key_id == key_id and not r.cancelled
                                             and r.created <= now < r.created + r.duration))
            peaks = self._counters.peak_renders_by_key
            peaks[key_id] = max(peaks[key_id], running)
            return render

    def get(self, render_id: str) -> Render | None:
        with self._lock:
            return self._renders.get(render_id)

    def by_client_token(self, client_token: str) -> list[Render]:
        with self._lock:
            return [r for r in self._renders.values() if r.client_token == client_token]

    def cancel(self, render: Render) -> bool:
        """Cancel a render that has not finished; False if it already had."""
        if self.phase(render) in ("succeeded", "failed", "cancelled"):
            return False
        with self._lock:
            render.cancelled = True
        return True

    def phase(self, render: Render, now: float | None = None) -> str:
        if render.cancelled:
            return "cancelled"
        elapsed = (time.monotonic() if now is None else now) - render.created
        if elapsed < render.duration * QUEUED_SHARE:
            return "queued"
        if elapsed < render.duration:
            return "running"
        return "failed" if render.fail_reason else "succeeded"

    def view(self, render: Render, base_url: str) -> dict[str, Any]:
        """The JSON object a poll answers for ``render``."""
        now = time.monotonic()
        status = self.phase(render, now)
        out: dict[str, Any] = {
            "id": render.id,
            "status": status,
            "client_token": render.client_token,
            "job_key": render.job_key,
        }
        if status == "running":
            start = render.duration * QUEUED_SHARE
            span = max(render.duration - start, 1e-9)
            out["progress"] = round(min(100.0, 100.0 * (now - render.created - start) / span), 1)
        elif status == "succeeded":
            out["video_url"] = self.video_url(render, base_url)
            out["cost"] = self.cost(render)
        elif status == "failed":
            out["error"] = {
                "code": "render_failed",
                "message": f"The mock render failed ({render.fail_reason}).",
            }
        return out

    @staticmethod
    def cost(render: Render) -> float:
        model = str(render.params.get("model") or "mock-1")
        try:
            seconds = float(render.params.get("duration") or 5)
        except (TypeError, ValueError):
            seconds = 5.0
        return round(PRICE_PER_SECOND.get(model, 0.01) * seconds, 4)

    # -- links ----------------------------------------------------------------------

    def video_url(self, render: Render, base_url: str) -> str:
        url = f"{base_url}/v1/files/{render.id}.mp4"
        ttl = self.options.link_ttl_seconds
        if ttl is None:
            return url
        exp = f"{time.time() + ttl:.3f}"
        return f"{url}?exp={exp}&sig={self._sign(render.id, exp)}"

    def check_link(self, render_id: str, exp: str | None, sig: str | None) -> str | None:
        """None when the link is good, else the error code (link_expired, bad_signature)."""
        if self.options.link_ttl_seconds is None:
            return None
        if exp is None or sig is None or not hmac.compare_digest(
            sig, self._sign(render_id, exp)
        ):
            return "bad_signature"
        try:
            expires = float(exp)
        except ValueError:
            return "bad_signature"
        return "link_expired" if time.time() > expires else None

    def _sign(self, render_id: str, exp: str) -> str:
        message = f"{render_id}:{exp}".encode()
        return hmac.new(self._secret, message, hashlib.sha256).hexdigest()[:32]
