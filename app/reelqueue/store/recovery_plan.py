"""What start-up recovery does with each leftover in-flight job (DESIGN.md invariant 7).

Pure decisions, shared by every store implementation so they cannot drift apart:

1. its finished file is already on disk (the
   file whose sha256 its download recorded)     -> complete (no second render)
2. it has a provider job id                    -> reattach (poll and download, never submit)
3. it died inside the submit window (or holds an
   unresolved submission) and its provider can
   be asked (by client token, or by a search of
   the account's renders)                      -> reconcile (marked only: the provider is
                                                  asked after the transaction, the job
                                                  keeps its slot)
4. it died inside the submit window otherwise  -> PARKED "submit outcome unknown", with
                                                  its client token (never created again by
                                                  itself, never counted as failed: the user
                                                  resolves it, invariant 13)
5. its render was lost with ReelQueue (the
   built-in mock's renders end with it)        -> requeue, render dropped
6. anything else                               -> requeue
A requeue gives the claim's attempt back (a crash is ReelQueue's fault, not the
provider's); a job whose claims ended in crashes more than ``max_crashes`` times in a row
fails instead (so a job that kills its worker every time cannot loop forever).
"""

from __future__ import annotations

from collections.abc import Mapping
from dataclasses import dataclass, field
from typing import Any, Literal

from reelqueue.domain.errors import ErrorClass, ErrorLabel, submit_unknown_message
from reelqueue.domain.models import FileCheck, Job, RecoveryReport
from reelqueue.domain.states import JobState
from reelqueue.store.base import RecoverParams
from reelqueue.store.spend import SPEND_EVENT, price_of, refund

ActionKind = Literal["complete", "reattach", "reconcile", "requeue", "fail", "unknown", "lost"]

UNKNOWN_WHY = ("the process died while it was submitting and this provider cannot be asked "
               "whether the create arrived (it keeps no list of renders to search)")
"""Why a job that died inside the submit window without lookup is parked, not requeued."""

LOST_WHY = ("its render was lost when ReelQueue itself stopped (the built-in mock provider "
            "runs inside ReelQueue and its renders end with it): rendered again, no attempt "
            "spent, nothing was charged")
"""Why a render of the built-in mock is created again after a crash (issue 19, 6)."""


@dataclass(frozen=True)
class RecoveryAction:
    job: Job
    kind: ActionKind
    file: FileCheck | None = None
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
        detail: dict[str, Any] = {"provider_job_id": job.provider_job_id,
                                  "client_token": job.client_token, "from": str(job.state)}
        if action.kind == "reattach" and job.output_sha256 is not None:
            # Its owner had written the video (a recorded download) and died before the
            # rename or the completion; the file is not here (another machine's folder,
            # or gone): the render is downloaded again, never created again (issue 21).
            detail["downloaded_again"] = {"size": job.output_size, "sha256": job.output_sha256,
                                          "by": job.lease_owner}
        return [RecoveryNote("reattached" if action.kind == "reattach" else "reconcile",
                             detail, new_token)]
    if action.kind == "lost":
        report.lost_renders.append(job.id)
        notes = [RecoveryNote("render_lost", {"provider_job_id": job.provider_job_id,
                                              "why": LOST_WHY})]
        price = price_of(job.metadata)
        if price:
            # The intent of the lost render charged its price; nothing was charged (the
            # mock is practice, and its render died with the process), so it is given
            # back, or the render that replaces it would count the price again.
            notes.append(RecoveryNote(SPEND_EVENT, refund(
                price, "the built-in mock's render was lost when ReelQueue stopped")))
        return [*notes, RecoveryNote("requeued", {"by": "recovery", "from": str(job.state),
                                                  "crash": True})]
    if action.kind == "fail":
        report.failed.append(job.id)
        return [RecoveryNote("failed", {"source": "recovery", "reason": action.reason})]
    if action.kind == "unknown":
        report.unknown_submissions.append(job.id)
        return [RecoveryNote("submit_outcome_unknown", {"client_token": job.client_token,
                                                        "source": "recovery",
                                                        "why": UNKNOWN_WHY}),
                RecoveryNote("parked", {"source": "recovery", "reason": action.reason,
                                        "label": ErrorLabel.SUBMIT_UNKNOWN.value})]
    report.requeued.append(job.id)
    return [RecoveryNote("requeued", {"by": "recovery", "from": str(job.state),
                                      "crash": True})]


def failure_of(action: RecoveryAction) -> tuple[str, str, str]:
    """(error class, label, message) a failing action writes on its job."""
    if action.kind == "unknown":
        return (ErrorClass.UNKNOWN.value, ErrorLabel.SUBMIT_UNKNOWN.value, action.reason)
    return (ErrorClass.RETRYABLE.value, ErrorLabel.INTERNAL.value, action.reason)


def requeued_detail(row: Mapping[str, Any], *, keep: bool, new_seed: int | None,
                    reconcile: bool) -> dict[str, Any]:
    """The ledger detail of a user's retry of ``row`` (a jobs row before the requeue).

    ``unresolved_client_token`` names a create whose outcome stayed unknown: with
    ``reconcile`` the job keeps that token and its account, and the next claim looks for it
    in the provider's records first; without (the user's explicit "create again"), or on a
    provider that cannot be asked, the next create is written as a deliberate re-render."""
    return {"by": "user", "new_seed": new_seed, "from": row["state"],
            "rereads": row["provider_job_id"] if keep else None,
            "reconcile": bool(reconcile and keep),
            "unresolved_client_token": unresolved_token(
                row["client_token"], row["provider_job_id"], row["error_label"])}


def unresolved_token(client_token: str | None, provider_job_id: str | None,
                     error_label: str | None) -> str | None:
    """The client token of a create whose outcome stayed unknown (it may exist at the
    provider), written in the user's ``requeued`` entry so the engine records the new
    create as a deliberate re-render; None for any other job."""
    if (client_token and not provider_job_id
            and error_label == ErrorLabel.SUBMIT_UNKNOWN.value):
        return client_token
    return None


def _in_submit_window(job: Job) -> bool:
    """Died inside the submit window: SUBMITTING, or claimed again while an earlier
    submission was still unresolved (its client token kept, no provider job id yet)."""
    return job.state == JobState.SUBMITTING or (
        job.client_token is not None and job.provider_job_id is None)


def plan_recovery(leftovers: list[Job], params: RecoverParams,
                  crashes: Mapping[int, int] | None = None) -> list[RecoveryAction]:
    """``crashes``: job id -> how many times in a row recovery already requeued it (its
    claims ended in crashes: ReelQueue's fault, not the provider's, so the attempt is
    given back; past ``params.max_crashes`` it is failed instead, so a job that kills its
    worker every time cannot loop forever)."""
    actions: list[RecoveryAction] = []
    for job in leftovers:
        check = params.check_output(job)
        if (check.exists and check.size > 0 and job.output_sha256 is not None
                and check.sha256 == job.output_sha256):
            # Only the file this job's download recorded (issue 22): any other file at its
            # output path may be the user's, and is never taken for the video.
            actions.append(RecoveryAction(job, "complete", file=check))
        elif job.provider_job_id and job.account in params.lost_render_accounts:
            actions.append(RecoveryAction(job, "lost", reason=LOST_WHY))
        elif job.provider_job_id:
            actions.append(RecoveryAction(job, "reattach"))
        elif _in_submit_window(job) and job.account in params.lookup_accounts:
            actions.append(RecoveryAction(job, "reconcile"))
        elif _in_submit_window(job):
            # Invariant 11 amends invariant 4's "otherwise resubmitted": the create may
            # have reached the provider, which cannot be asked, so it is never sent again
            # by itself; the user resolves it (invariant 13).
            actions.append(RecoveryAction(job, "unknown", reason=submit_unknown_message(
                UNKNOWN_WHY, client_token=job.client_token, account=job.account,
                token_sent=job.account in params.token_accounts, around=job.updated_at)))
        elif (n := (crashes or {}).get(job.id, 0) + 1) > params.max_crashes:
            actions.append(RecoveryAction(
                job, "fail", reason=f"the process died {n} times in a row while this job "
                                    "was claimed (ReelQueue's crash, not the provider's); it "
                                    "is not started again by itself: retry it"))
        else:
            actions.append(RecoveryAction(job, "requeue"))
    return actions
