"""Job states and the transitions between them.

The state is stored as text in the journal. Every transition is caused by one named store
call; the table below is the written-down diagram (DESIGN.md, "Job states")::

    QUEUED      --claim_next_job-->        CLAIMED
    RETRY_WAIT  --claim_next_job-->        CLAIMED        (once run_after has passed)
    CLAIMED     --mark_submitting-->       SUBMITTING     (client token committed first)
    CLAIMED     --mark_rendering-->        RENDERING      (resume: provider job id known)
    SUBMITTING  --record_submitted-->      RENDERING      (provider job id committed)
    RENDERING   --mark_downloading-->      DOWNLOADING
    DOWNLOADING --mark_completed-->        COMPLETED      (file on disk, size + sha256)
    in flight   --set_retry_wait-->        RETRY_WAIT     (retryable error, attempts left)
    in flight   --release_to_queue-->      QUEUED         (account-level error, no attempt)
    in flight   --mark_failed-->           FAILED         (permanent, or attempts used up)
    in flight   --park_job-->              PARKED         (its resume keeps killing the
                                                           process; keeps its render)
    any open    --cancel_job-->            CANCELLED      (user)
    in flight   --recover-->               COMPLETED / CLAIMED(reattach) / QUEUED
    FAILED/CANCELLED/PARKED --requeue_jobs--> QUEUED      (user: retry; a job that has a
                                                           render keeps it: read it first)
"""

from __future__ import annotations

from enum import StrEnum


class JobState(StrEnum):
    QUEUED = "QUEUED"
    CLAIMED = "CLAIMED"
    SUBMITTING = "SUBMITTING"
    RENDERING = "RENDERING"
    DOWNLOADING = "DOWNLOADING"
    RETRY_WAIT = "RETRY_WAIT"
    COMPLETED = "COMPLETED"
    FAILED = "FAILED"
    CANCELLED = "CANCELLED"
    PARKED = "PARKED"


IN_FLIGHT: frozenset[JobState] = frozenset(
    {JobState.CLAIMED, JobState.SUBMITTING, JobState.RENDERING, JobState.DOWNLOADING}
)
"""States that occupy one of an account's slots and carry a claim token and a lease."""

WAITING: frozenset[JobState] = frozenset({JobState.QUEUED, JobState.RETRY_WAIT})
"""States a claim may take a job from."""

FINAL: frozenset[JobState] = frozenset(
    {JobState.COMPLETED, JobState.FAILED, JobState.CANCELLED}
)
"""States a job never leaves on its own (only a user's retry reopens FAILED/CANCELLED)."""

SETTLED: frozenset[JobState] = FINAL | {JobState.PARKED}
"""States the engine does not move a job out of: the final ones, and PARKED (a render
whose resume kept killing the process; it keeps its provider job id and waits for the
user's retry, which reads it again and never creates it anew). A run ends when every
job is settled; a parked job is not finished and is shown as needing attention."""


class RemotePhase(StrEnum):
    """A provider's render state, normalised (PROVIDERS.md section 6a)."""

    QUEUED = "queued"
    RUNNING = "running"
    SUCCEEDED = "succeeded"
    FAILED = "failed"
    CANCELLED = "cancelled"


class AccountStatus(StrEnum):
    """Why an account does or does not get work. Stored as text."""

    READY = "ready"
    KEY_REJECTED = "key_rejected"
    OUT_OF_CREDITS = "out_of_credits"
    RATE_LIMITED = "rate_limited"
    KEY_MISSING = "key_missing"
