"""What the mock provider remembers: renders, request counters and fault budgets.

Everything here is guarded by one lock, because the HTTP server answers each connection
on its own thread. Render status is derived from ``time.monotonic()`` and the duration
drawn at creation, so a render "keeps going" whether or not anybody polls it.

The account's list (:meth:`MockState.listed`) goes by wall-clock time instead, from the
``clock`` the state is given (``time.time`` unless a test injects one): each render has a
``created_at`` (Unix seconds, what the list echoes) and a ``visible_at``, ``created_at``
plus a delay drawn from the options' ``list_delay_min``/``list_delay_max`` with the seeded
generator, before which the list does not show it. Renders are listed per API key (by the
key's hash); renders planted from the options (``foreign_renders``) belong to every key.
"""

from __future__ import annotations

import hashlib
import hmac
import random
import secrets
import threading
import time
from collections import Counter
from collections.abc import Callable, Mapping
from dataclasses import dataclass, field
from typing import Any

from reelqueue.mockprovider.clips import ClipCache
from reelqueue.mockprovider.directives import Directive, without_directives
from reelqueue.mockprovider.options import MockOptions

PRICE_PER_SECOND: dict[str, float] = {"mock-1": 0.01, "mock-2": 0.02}
"""USD per second of video by model, for the ``cost`` of a finished render."""

QUEUED_SHARE = 0.2
"""The first fifth of a render's time is reported as ``queued``, the rest as ``running``."""

ANY_KEY = "*"
"""The ``key_id`` of a render listed for every API key (the options' foreign renders)."""


def key_id_of(key: str | None) -> str:
    """An API key named by a short hash (counters may be printed; keys never are)."""
    key = (key or "").strip()
    return hashlib.sha256(key.encode()).hexdigest()[:12] if key else "no-key"


class UnknownCursor(LookupError):
    """A list page asked for renders ``before`` an id this key's list never held."""


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
    created_at: float = 0.0
    """Unix seconds (the state's clock): what the list echoes and pages by."""
    visible_at: float = 0.0
    """When the list starts to show it: ``created_at`` plus the drawn list delay."""
    seq: int = 0
    """Creation order, the tie-break of equal ``created_at`` in the list."""
    foreign: bool = False
    """Planted as another client's render (no counters, no peak)."""


@dataclass
class _Counters:
    creates_total: int = 0
    creates_by_job_key: Counter[str] = field(default_factory=Counter)
    creates_by_client_token: Counter[str] = field(default_factory=Counter)
    polls_total: int = 0
    lookups_total: int = 0
    lists_total: int = 0
    downloads_total: int = 0
    cancels_total: int = 0
    renders_total: int = 0
    peak_renders_by_key: Counter[str] = field(default_factory=Counter)


class MockState:
    """The mock provider's memory, shared by all request threads."""

    def __init__(self, options: MockOptions, video: bytes,
                 clock: Callable[[], float] = time.time) -> None:
        """``clock``: Unix seconds for ``created_at`` and the list's visibility (a test
        injects its own to see the list delay pass without sleeping)."""
        self.options = options
        self.video = video
        #: each render's clip of its prompt (None: every render gets ``video``)
        self.clips: ClipCache | None = None
        if options.clips_wanted and ClipCache.available():
            self.clips = ClipCache(options.clip_dir)
        self.stopping = threading.Event()
        self._clock = clock
        self._lock = threading.Lock()
        self._rng = random.Random(options.seed)
        self._secret = secrets.token_bytes(16)
        self._renders: dict[str, Render] = {}
        self._seq = 0
        self._counters = _Counters()
        self._used: Counter[tuple[str, str]] = Counter()
        started = clock()
        for planted in options.foreign_renders:
            when = planted.created_at if planted.created_at is not None else (
                started - planted.ago)
            self.plant_foreign(planted.prompt, planted.params, when, ANY_KEY)

    def now(self) -> float:
        """The state's wall clock (Unix seconds)."""
        return self._clock()

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
            now = time.monotonic()
            return {
                "running_now": sum(1 for r in self._renders.values()
                                   if not r.cancelled and not r.foreign
                                   and r.created <= now < r.created + r.duration),
                "creates_total": c.creates_total,
                "creates_by_job_key": dict(c.creates_by_job_key),
                "creates_by_client_token": dict(c.creates_by_client_token),
                "polls_total": c.polls_total,
                "lookups_total": c.lookups_total,
                "lists_total": c.lists_total,
                "downloads_total": c.downloads_total,
                "cancels_total": c.cancels_total,
                "renders_total": c.renders_total,
                "peak_renders_by_key": dict(c.peak_renders_by_key),
            }

    def timeline(self) -> list[dict[str, Any]]:
        """Each of our renders (not the planted ones): its job key, when it was created
        and when it ends (Unix seconds, the state's clock), and whether it was cancelled.
        A benchmark replays these durations back to back as its ideal, and measures from
        each end to the file on disk."""
        with self._lock:
            return [{"job_key": r.job_key, "created_at": r.created_at,
                     "ends_at": r.created_at + r.duration, "cancelled": r.cancelled}
                    for r in self._renders.values() if not r.foreign]

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
            created_at = self._clock()
            self._seq += 1
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
                created_at=created_at,
                visible_at=created_at + self._list_delay(),
                seq=self._seq,
            )
            self._renders[render.id] = render
            self._counters.renders_total += 1
            # Running renders only end, so the peak is reached at some create: count here.
            now = render.created
            running = sum(1 for r in self._renders.values()
                          if r is render or (r.key_id == key_id and not r.cancelled
                                             and not r.foreign
                                             and r.created <= now < r.created + r.duration))
            peaks = self._counters.peak_renders_by_key
            peaks[key_id] = max(peaks[key_id], running)
            return render

    def _list_delay(self) -> float:
        """A seeded list delay (call with the lock held); no draw when the range is 0."""
        low, high = self.options.list_delay_min, self.options.list_delay_max
        return self._rng.uniform(low, high) if high > 0 else 0.0

    def plant_foreign(self, prompt: str, params: Mapping[str, Any], created_at: float,
                      key_id: str = ANY_KEY) -> Render:
        """A render of "another client on the same key" (``key_id``; :data:`ANY_KEY`: on
        every key), created at ``created_at`` (Unix seconds, may be ahead of now) with
        this prompt and params; it is listed after a drawn list delay like any render,
        counts in no counter, and runs ``render_seconds_max`` from ``created_at``."""
        with self._lock:
            self._seq += 1
            behind = self._clock() - created_at
            render = Render(
                id=f"mr_{secrets.token_hex(8)}",
                job_key=f"foreign-{self._seq}",
                client_token=f"foreign-{secrets.token_hex(6)}",
                prompt=prompt,
                params=dict(params),
                directives={},
                created=time.monotonic() - behind,
                duration=self.options.render_seconds_max,
                key_id=key_id,
                created_at=created_at,
                visible_at=created_at + self._list_delay(),
                seq=self._seq,
                foreign=True,
            )
            self._renders[render.id] = render
            return render

    def listed(
        self, key_id: str, *, created_after: float | None = None, before: str | None = None,
        limit: int | None = None,
    ) -> tuple[list[Render], bool]:
        """One page of the renders listed for ``key_id``, newest first, and whether more
        follow. Only renders whose list delay has passed are shown; ``created_after``
        keeps those created at or after it; ``before`` (a render id from an earlier page)
        starts after that render. Raises :class:`UnknownCursor` for an id this key's list
        never held."""
        size = self.options.list_page_size if limit is None else limit
        now = self._clock()
        with self._lock:
            mine = [r for r in self._renders.values() if r.key_id in (key_id, ANY_KEY)]
            anchor = self._renders.get(before) if before is not None else None
        if before is not None and (anchor is None or anchor.key_id not in (key_id, ANY_KEY)):
            raise UnknownCursor(before)
        shown = [r for r in mine if r.visible_at <= now
                 and (created_after is None or r.created_at >= created_after)]
        shown.sort(key=lambda r: (r.created_at, r.seq), reverse=True)
        if anchor is not None:
            shown = [r for r in shown if (r.created_at, r.seq) < (anchor.created_at, anchor.seq)]
        return shown[:size], len(shown) > size

    def list_record(self, render: Render, base_url: str | None = None) -> dict[str, Any]:
        """A render as the list shows it: what the create sent (prompt, params) and when;
        the client token only while the lookup by it is on. With ``base_url`` (a list
        asked ``with=status``), also what its poll answers (progress, video_url, cost,
        error: :meth:`view`), as Replicate's and OpenAI's lists carry each render's state
        and output."""
        record: dict[str, Any] = {
            "id": render.id,
            "created_at": render.created_at,
            "status": self.phase(render),
            "prompt": render.prompt,
            "params": render.params,
        }
        if base_url is not None:
            view = self.view(render, base_url)
            record.update({k: view[k] for k in ("status", "progress", "video_url", "cost",
                                                "error") if k in view})
        if self.options.lookup_enabled:
            record["client_token"] = render.client_token
        return record

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
        if status == "running" and self.options.send_progress:
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

    def video_of(self, render: Render) -> bytes:
        """The video ``render`` produced: its clip of its prompt and seed, else the
        sample."""
        if self.clips is None:
            return self.video
        # The directives that steer the mock (``[[mock:...]]``) are not drawn.
        clip = self.clips.clip(without_directives(render.prompt),
                               render.params.get("seed"))
        return self.video if clip is None else clip

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
