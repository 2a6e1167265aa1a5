"""What start-up recovery does with each leftover in-flight job (DESIGN.md invariant 7).

Pure decisions, shared by every store implementation so they cannot drift apart:

1. its finished file is already on disk        -> complete (no second render)
2. it has a provider job id                    -> reattach (poll and download, never submit)
3. it died inside the submit window (or holds an
   unresolved submission) and its provider can
   be asked by client token                    -> reconcile
4. it died inside the submit window otherwise  -> requeue, ledger: possible duplicate charge
5. anything else                               -> requeue
A job whose claim used its last attempt fails instead of being requeued (so a job that
kills its worker every time cannot loop forever).
"""

from __future__ import annotations

from dataclasses import dataclass, field
from typing import Any, Literal

from reelqueue.domain.models import FileCheck, Job, RecoveryReport
from reelqueue.domain.states import JobState
from reelqueue.store.base import RecoverParams

ActionKind = Literal["complete", "reattach", "reconcile", "requeue", "fail"]


@dataclass(frozen=True)
class RecoveryAction:
    job: Job
    kind: ActionKind
    file: FileCheck | None = None
    possible_duplicate: bool = False
    reason: str = ""

    @property
    def resume_state(self) -> JobState:
        """The state a resumed job is put in: polling, or asking by client token."""
        return JobState.RENDERING if self.kind == "reattach" else JobState.SUBMITTING


@dataclass(frozen=True)
class RecoveryNote:
    """A ledger entry an applied action leaves (every store writes the same ones)."""

    event: str
    detail: dict[str, Any] = field(default_factory=dict)
    claim_token: str | None = None


def record_applied(action: RecoveryAction, report: RecoveryReport,
                   new_token: str | None = None) -> list[RecoveryNote]:
    """Once a store applied ``action``: count the job in ``report`` and return the ledger
    entries to append. ``new_token`` is the claim given to a resumed job."""
    job = action.job
    if action.kind == "complete":
        assert action.file is not None
        report.completed_from_disk.append(job.id)
        return [RecoveryNote("completed", {"source": "recovery", "size": action.file.size,
                                           "sha256": action.file.sha256})]
    if action.kind in ("reattach", "reconcile"):
        (report.reattached if action.kind == "reattach" else report.reconcile).append(job.id)
        return [RecoveryNote("reattached" if action.kind == "reattach" else "reconcile",
                             {"provider_job_id": job.provider_job_id,
                              "client_token": job.client_token, "from": str(job.state)},
                             new_token)]
    if action.kind == "fail":
        report.failed.append(job.id)
        flagged = ([RecoveryNote("possible_duplicate_charge", {"client_token": job.client_token})]
                   if action.possible_duplicate else [])
        return [*flagged, RecoveryNote("failed", {"source": "recovery", "reason": action.reason})]
    notes: list[RecoveryNote] = []
    if action.possible_duplicate:
        report.requeued_possible_duplicate.append(job.id)
        notes.append(RecoveryNote("possible_duplicate_charge", {
            "client_token": job.client_token,
            "why": "crashed inside the submit window; the provider cannot be asked"}))
    else:
        report.requeued.append(job.id)
    return [*notes, RecoveryNote("requeued", {"by": "recovery", "from": str(job.state)})]


def _in_submit_window(job: Job) -> bool:
    """Died inside the submit window: SUBMITTING, or claimed again while an earlier
    submission was still unresolved (its client token kept, no provider job id yet)."""
    return job.state == JobState.SUBMITTING or (
        job.client_token is not None and job.provider_job_id is None)


def plan_recovery(leftovers: list[Job], params: RecoverParams) -> list[RecoveryAction]:
    actions: list[RecoveryAction] = []
    for job in leftovers:
        check = params.check_output(job)
        if check.exists and check.size > 0 and check.sha256:
            actions.append(RecoveryAction(job, "complete", file=check))
        elif job.provider_job_id:
            actions.append(RecoveryAction(job, "reattach"))
        elif _in_submit_window(job) and job.account in params.lookup_accounts:
            actions.append(RecoveryAction(job, "reconcile"))
        else:
            in_window = _in_submit_window(job)
            if job.attempts >= job.max_attempts:
                actions.append(RecoveryAction(
                    job, "fail", possible_duplicate=in_window,
                    reason=f"the worker died during attempt {job.attempts} of "
                           f"{job.max_attempts}; no attempts left",
                ))
            else:
                actions.append(RecoveryAction(job, "requeue", possible_duplicate=in_window))
    return actions
