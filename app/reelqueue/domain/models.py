"""Immutable values that cross layers: jobs, accounts, batches, claims, reports."""

from __future__ import annotations

from dataclasses import dataclass, field
from typing import Any

from reelqueue.domain.review import NO_REVIEW, Review
from reelqueue.domain.routes import Route
from reelqueue.domain.states import AccountStatus, JobState


@dataclass(frozen=True)
class JobSpec:
    """One row of a batch, as it is imported.

    Attributes:
        job_key: stable identity; importing the same key twice adds nothing.
        prompt: the text sent to the provider.
        provider: provider kind the job must render on ("mock", "runway", ...).
        params: provider parameters (model, duration, aspect_ratio, seed, ...).
        output_path: where the finished video goes (absolute).
        pinned_account: an account name the job must run on, or None.
        row_number: the row number the user sees in their spreadsheet.
        name: a short display name.
        priority: higher first.
        metadata: unmapped spreadsheet columns, kept for the export.
        route: where the job may render when its row named several providers (issue 24;
            ``provider`` and ``params`` are then its best-ranked candidate's).
    """

    job_key: str
    prompt: str
    provider: str
    output_path: str
    params: dict[str, Any] = field(default_factory=dict)
    pinned_account: str | None = None
    row_number: int | None = None
    name: str = ""
    priority: int = 0
    metadata: dict[str, Any] = field(default_factory=dict)
    route: Route | None = None


@dataclass(frozen=True)
class BatchSpec:
    name: str
    source_path: str
    output_dir: str
    max_attempts: int = 3
    settings: dict[str, Any] = field(default_factory=dict)


@dataclass(frozen=True)
class Batch:
    id: int
    name: str
    source_path: str
    output_dir: str
    max_attempts: int
    created_at: float
    settings: dict[str, Any]


@dataclass(frozen=True)
class Job:
    """A job as the journal has it."""

    id: int
    batch_id: int
    job_key: str
    row_number: int | None
    name: str
    prompt: str
    provider: str
    params: dict[str, Any]
    pinned_account: str | None
    priority: int
    output_path: str
    state: JobState
    attempts: int
    max_attempts: int
    account: str | None
    claim_token: str | None
    lease_owner: str | None
    lease_until: float | None
    client_token: str | None
    provider_job_id: str | None
    sub_status: str | None
    progress: float | None
    run_after: float
    output_size: int | None
    output_sha256: str | None
    cost: float | None
    error_class: str | None
    error_label: str | None
    error_message: str | None
    created_at: float
    updated_at: float
    started_at: float | None
    finished_at: float | None
    metadata: dict[str, Any]
    #: the machine (host name) that wrote the finished file: on a team store each instance
    #: writes under its own videos folder, so this says where the video is
    output_host: str | None = None
    #: the temporary file (a name beside ``output_path``) the last download was written to;
    #: its sha256, once recorded in ``output_sha256``, is the only file recovery completes
    #: the job from (issue 22)
    output_part: str | None = None
    #: where the job may render (issue 24), or None for a job bound to one provider kind;
    #: ``provider`` and ``params`` are those of the candidate it is with now
    route: Route | None = None
    #: the take's review decision (issue 35 item 2, domain/review.py)
    review: Review = NO_REVIEW


@dataclass(frozen=True)
class AccountSpec:
    """Attributes:
    name: unique, chosen by the user; also the key reference's name.
    provider: the provider kind.
    capacity: how many renders may run at once.
    base_url: the API's base URL (None for the provider's default).
    key_ref: the keyring entry's name, or None when the provider needs no key.
    settings: provider-specific options (model lists, lookup on/off, ...).
    """

    name: str
    provider: str
    capacity: int
    base_url: str | None = None
    key_ref: str | None = None
    settings: dict[str, Any] = field(default_factory=dict)


@dataclass(frozen=True)
class Account:
    name: str
    provider: str
    capacity: int
    position: int
    enabled: bool
    base_url: str | None
    key_ref: str | None
    status: AccountStatus
    status_detail: str | None
    cooldown_until: float | None
    settings: dict[str, Any]
    created_at: float


@dataclass(frozen=True)
class ClaimToken:
    """What every fenced write names: the job and the claim that owns it."""

    job_id: int
    token: str


@dataclass(frozen=True)
class Claim:
    """A job handed to a worker on an account."""

    job: Job
    account: str
    token: ClaimToken
    resumed: bool = False


@dataclass(frozen=True)
class LedgerEntry:
    seq: int
    at: float
    event: str
    job_id: int | None
    account: str | None
    claim_token: str | None
    detail: dict[str, Any]


@dataclass(frozen=True)
class FileCheck:
    """The state of a job's output on disk, as start-up recovery saw it."""

    exists: bool
    size: int = 0
    sha256: str | None = None


@dataclass
class RecoveryReport:
    """What start-up recovery did, with the ids of the jobs it touched."""

    completed_from_disk: list[int] = field(default_factory=list)
    reattached: list[int] = field(default_factory=list)
    reconcile: list[int] = field(default_factory=list)
    #: died inside the submit window on a provider that cannot be asked: PARKED as
    #: "submit outcome unknown" for the user (issue 19), never failed
    unknown_submissions: list[int] = field(default_factory=list)
    requeued: list[int] = field(default_factory=list)
    failed: list[int] = field(default_factory=list)
    missing_outputs: list[int] = field(default_factory=list)
    #: renders that ended with the process that died (the built-in mock): rendered again
    lost_renders: list[int] = field(default_factory=list)
    pruned_ledger_rows: int = 0

    @property
    def touched(self) -> int:
        return (
            len(self.completed_from_disk)
            + len(self.reattached)
            + len(self.reconcile)
            + len(self.unknown_submissions)
            + len(self.requeued)
            + len(self.lost_renders)
            + len(self.failed)
            + len(self.missing_outputs)
        )

    def as_dict(self) -> dict[str, Any]:
        return {
            "completed_from_disk": self.completed_from_disk,
            "reattached": self.reattached,
            "reconcile": self.reconcile,
            "unknown_submissions": self.unknown_submissions,
            "requeued": self.requeued,
            "lost_renders": self.lost_renders,
            "failed": self.failed,
            "missing_outputs": self.missing_outputs,
            "pruned_ledger_rows": self.pruned_ledger_rows,
        }

    def summary(self) -> str:
        def n(items: list[int], one: str, many: str) -> str:
            return f"{len(items)} {one if len(items) == 1 else many}"

        if not self.touched:
            return "Recovery: nothing to do (clean start)."
        parts = []
        if self.completed_from_disk:
            parts.append(n(self.completed_from_disk, "finished video", "finished videos")
                         + " found on disk")
        if self.reattached:
            parts.append(n(self.reattached, "render", "renders") + " reattached")
        if self.reconcile:
            parts.append(n(self.reconcile, "submission", "submissions")
                         + " to reconcile with the provider")
        if self.unknown_submissions:
            parts.append(
                n(self.unknown_submissions, "job", "jobs") + " kept as 'submit outcome "
                "unknown' (the process died while submitting and the provider cannot be "
                "asked; not sent again and not counted as failed: 'reelqueue resolve' "
                "or 'reelqueue retry --parked')"
            )
        if self.requeued:
            parts.append(n(self.requeued, "job", "jobs") + " requeued (no attempt spent)")
        if self.lost_renders:
            parts.append(n(self.lost_renders, "render", "renders") + " of the built-in mock "
                         "lost when ReelQueue stopped: rendered again (no charge, no attempt "
                         "spent)")
        if self.failed:
            parts.append(n(self.failed, "job", "jobs") + " failed (the process died each "
                         "time they were claimed)")
        if self.missing_outputs:
            parts.append(
                n(self.missing_outputs, "completed job whose video is", "completed jobs whose "
                  "video is") + " missing (not rendered again; see 'reelqueue doctor')"
            )
        return "Recovery: " + ", ".join(parts) + "."
