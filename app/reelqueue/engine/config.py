"""Engine settings, with the defaults DESIGN.md gives."""

from __future__ import annotations

from dataclasses import dataclass, field, replace
from pathlib import Path

from reelqueue.domain.backoff import BackoffPolicy


@dataclass(frozen=True)
class EngineConfig:
    """Attributes:
    lease_seconds: how long a claim holds without a heartbeat.
    heartbeat_seconds: how often one statement renews all of this instance's leases.
    retry_backoff: waits between attempts of one job (full jitter, capped).
    poll_backoff: waits between polls when the provider gives no hint.
    poll_min_seconds: never poll faster than this.
    poll_error_limit: consecutive failed polls before the attempt is given up.
    rate_limit_default_seconds: account pause on a 429 without Retry-After.
    ledger_retention_days: ledger rows older than this are pruned at start-up.
    http_timeout_seconds: read timeout of provider calls.
    http_connect_timeout_seconds: connect timeout of provider calls.
    create_margin_seconds: what a claim's lease must hold beyond the create's timeout for
        a create to be sent on a shared store (:attr:`create_min_lease_seconds`).
    download_max_bytes: the most bytes one video may have (decoded); a larger one is
        refused (by Content-Length) or cut off, as a retryable download failure.
    download_deadline_seconds: the longest one video download may take.
    download_min_bytes_per_second: the download throughput floor (0: none), averaged
        over ``download_floor_window_seconds``; a slower download is cut off.
    shared_store: True when several machines share the store (take over expired leases
        only); False on one machine behind the data-folder lock.
    max_resumes: how many times in a row one render may be resumed after its process
        died (orderly stops do not count) before the job is parked (a resume spends no
        attempt; a parked job keeps its render for the user's retry).
    finished_without_file_polls: how many more times a render the provider reports
        finished without its file is read (with the poll back-off) before the job fails;
        it is never created again.
    reconcile_settle_seconds: None (always, outside tests): each provider's own settle
        time before its list of renders is read for a lost create (docs/providers.md).
        Tests whose fakes list a render at once set it lower.
    videos_dir: this machine's videos folder (``--videos-dir``, the window's setting):
        every job's output path is relative to it (``<batch folder>/<file>``), resolved
        by each machine under its own, never written outside it (issues 21, 23). None
        (tests and embedders placing absolute paths themselves): paths are used as they
        are, ``..`` still refused, and no manifest is written.
    manifest_seconds: the least time between two writes of one batch's manifest
        (``engine/manifest.py``); the last one is written at the engine's stop.
    overload_lag_seconds: the event loop's lateness above which the engine counts as
        overloaded (``engine/load.py``): new claims are then held back.
    overload_claims_per_pass: the claims a pump pass makes at most while overloaded.
    overload_retry_seconds: how soon the pump looks again after holding claims back.
    overload_downloads: this engine's finished renders waiting for their file
        (``engine/load.py``, ``DownloadBacklog``) above which new claims are held back
        as for the loop's lag. The default is far above what keeps up (about 3 at once at
        1,000 renders in flight on a loopback mock, docs/benchmarks.md): it is reached
        only when the downloads fall behind.
    figures_seconds: the least time between two journal reads of what the account cards
        show (renders live, spend today: ``engine/figures.py``); the claim's own checks
        are in SQL whatever this is.
    safety_net_seconds: the longest the pump sleeps without a wake-up (every real change
        wakes it directly: this only bounds what a missed wake-up could cost). Tests of
        the wake-ups raise it so that they cannot pass through it.
    journal_watch_seconds: how often the engine asks the store whether another
        connection committed (``Store.changed_elsewhere``: SQLite's ``data_version``, one
        cheap read; PostgreSQL answers False, its NOTIFY wakes the pump) and wakes the
        pump when one did: a command of another process is seen within about this long.
    first_poll_fraction: a render submitted on an account whose answers carry no
        progress is first polled at this fraction of its kind's typical time (the range's
        low end), never later than the account's poll hint (``engine/polling.py``).
    first_poll_max_seconds: the longest the first poll of a render waits.
    render_times_read: the most finished renders read from the journal at start for the
        typical times (once; the engine's own completions are added in memory).
    """

    lease_seconds: float = 60.0
    heartbeat_seconds: float = 20.0
    retry_backoff: BackoffPolicy = field(default_factory=lambda: BackoffPolicy(2.0, 300.0))
    poll_backoff: BackoffPolicy = field(default_factory=lambda: BackoffPolicy(1.0, 20.0, 1.5))
    poll_min_seconds: float = 0.05
    poll_error_limit: int = 5
    rate_limit_default_seconds: float = 30.0
    ledger_retention_days: float = 90.0
    http_timeout_seconds: float = 60.0
    http_connect_timeout_seconds: float = 10.0
    create_margin_seconds: float = 5.0
    download_max_bytes: int = 2 * 1024**3
    download_deadline_seconds: float = 30 * 60.0
    download_min_bytes_per_second: float = 8 * 1024.0
    download_floor_window_seconds: float = 60.0
    shared_store: bool = False
    max_resumes: int = 5
    finished_without_file_polls: int = 3
    reconcile_settle_seconds: float | None = None
    videos_dir: Path | None = None
    manifest_seconds: float = 3.0
    overload_lag_seconds: float = 0.5
    overload_claims_per_pass: int = 1
    overload_retry_seconds: float = 0.5
    overload_downloads: int = 64
    figures_seconds: float = 3.0
    safety_net_seconds: float = 30.0
    journal_watch_seconds: float = 1.0
    first_poll_fraction: float = 0.8
    first_poll_max_seconds: float = 300.0
    render_times_read: int = 2_000

    @property
    def create_timeout_seconds(self) -> float:
        """The longest a create can stay unanswered once its intent is written: the
        connect timeout, then the read timeout of the provider call."""
        return self.http_connect_timeout_seconds + self.http_timeout_seconds

    @property
    def create_min_lease_seconds(self) -> float | None:
        """What the claim's lease must still hold for a create to be sent
        (``Store.mark_submitting(min_lease_seconds=...)``): on a shared store the create's
        timeout plus the margin, so the create is answered or given up before another
        machine may take the job over (and ask the provider for it, or requeue it).
        None on one machine: nothing takes a lease over while this process lives."""
        if not self.shared_store:
            return None
        return self.create_timeout_seconds + self.create_margin_seconds

    def fitted_to_lease(self) -> EngineConfig:
        """This config with the provider timeouts shortened, where needed, so that a
        create fits in a fresh lease with room to spare: the create's timeout plus the
        margin at most three quarters of the lease (the last quarter is for the time
        between the claim and the create). With the defaults (60 s lease) the read
        timeout becomes 30 s; a lease of 4 s (the team tests) gives 1 s to connect,
        1.5 s to read and a 0.5 s margin. Longer leases keep the timeouts as they are."""
        budget = self.lease_seconds * 0.75
        margin = min(self.create_margin_seconds, self.lease_seconds / 8)
        connect = min(self.http_connect_timeout_seconds, self.lease_seconds / 4)
        read = min(self.http_timeout_seconds, budget - margin - connect)
        return replace(self, create_margin_seconds=margin,
                       http_connect_timeout_seconds=connect, http_timeout_seconds=read)
