"""What start-up recovery does with each leftover in-flight job (DESIGN.md invariant 7).

Pure decisions, shared by every store implementation so they cannot drift apart:

1. its finished file is already on disk        -> complete (no second render)
2. it has a provider job id                    -> reattach (poll and download, never submit)
3. it died inside the submit window and its
   provider can be asked by client token       -> reconcile
4. it died inside the submit window otherwise  -> requeue, ledger: possible duplicate charge
5. anything else                               -> requeue
A job whose claim used its last attempt fails instead of being requeued (so a job that
kills its worker every time cannot loop forever).
"""

from __future__ import annotations

from dataclasses import dataclass
from typing import Literal

from reelqueue.domain.models import FileCheck, Job
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


def plan_recovery(leftovers: list[Job], params: RecoverParams) -> list[RecoveryAction]:
    actions: list[RecoveryAction] = []
    for job in leftovers:
        check = params.check_output(job)
        if check.exists and check.size > 0 and check.sha256:
            actions.append(RecoveryAction(job, "complete", file=check))
        elif job.provider_job_id:
            actions.append(RecoveryAction(job, "reattach"))
        elif job.state == JobState.SUBMITTING and job.account in params.lookup_accounts:
            actions.append(RecoveryAction(job, "reconcile"))
        else:
            in_window = job.state == JobState.SUBMITTING
            if job.attempts >= job.max_attempts:
                actions.append(RecoveryAction(
                    job, "fail", possible_duplicate=in_window,
                    reason=f"the worker died during attempt {job.attempts} of "
                           f"{job.max_attempts}; no attempts left",
                ))
            else:
                actions.append(RecoveryAction(job, "requeue", possible_duplicate=in_window))
    return actions
