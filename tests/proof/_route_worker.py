"""One OS process rendering routed jobs against the store, to be SIGKILLed (issue 24).

Usage: ``python tests/proof/_route_worker.py JOURNAL INSTANCE_ID CREATES_DIR SEED TROUBLE LEASE``

(LEASE: the seconds each claim's lease holds; never renewed: nobody takes a lease over
while its process lives, the test recovers only a killed one's.)

It claims greedily on every account (``claim_next_job``: the claim moves a routed job to
the claiming account's provider in its own transaction), then plays each claim it holds
against a simulated provider:

- the provider refuses the job's parameters (decided by :func:`refuses`, fixed per job and
  provider, as a real provider's rules are): the intent is written (``mark_submitting``),
  the create is refused (nothing made), and the job is handed to its route's next usable
  candidate (``Store.hand_over``), or fails when none is left;
- else with probability TROUBLE the account is in trouble (out of credits, key rejected,
  rate limited): the account pauses and the job goes back to the queue, so that another
  provider may take it over;
- else the full life: intent, create, render id recorded, download, completion.

The "provider" is the creates file of this process (``CREATES_DIR/creates-<instance>.jsonl``):
a create is one JSON line appended and fsynced *before* the journal records the render, so
a kill between the two leaves a create the journal does not know yet, exactly as a lost
answer does. Reconciliation (a job recovery handed to this instance in SUBMITTING) looks
its client token up in every process's creates file: found, the render is recorded
(never created again); absent, the submission is forgotten and the claim goes on.

At start it first finishes what recovery handed to it (jobs in flight leased to
INSTANCE_ID). It prints one JSON line with its figures when no job is left.
"""

from __future__ import annotations

import hashlib
import json
import os
import random
import sys
import time
import uuid
from pathlib import Path
from typing import Any

from reelqueue.domain.models import Claim, ClaimToken, Job
from reelqueue.domain.states import IN_FLIGHT, WAITING, AccountStatus, JobState
from reelqueue.store.base import ClaimParams, JobError, claim_of
from reelqueue.store.routing import hand_over_target
from reelqueue.store.sqlite import SqliteStore

REFUSE_PERCENT = 30
TROUBLES = (AccountStatus.OUT_OF_CREDITS, AccountStatus.KEY_REJECTED,
            AccountStatus.RATE_LIMITED)
LABELS = {AccountStatus.OUT_OF_CREDITS: "out of credits",
          AccountStatus.KEY_REJECTED: "key rejected",
          AccountStatus.RATE_LIMITED: "rate limited"}


def refuses(job_key: str, provider: str) -> bool:
    """Whether ``provider`` refuses this job's parameters (fixed: a provider's rules)."""
    digest = hashlib.sha256(f"{job_key}@{provider}".encode()).digest()
    return digest[0] * 100 // 256 < REFUSE_PERCENT


def read_creates(folder: Path) -> list[dict[str, Any]]:
    """Every create any process made (whole lines only: each is one ``write``)."""
    out: list[dict[str, Any]] = []
    for path in sorted(folder.glob("creates-*.jsonl")):
        for line in path.read_text(encoding="utf-8").splitlines(keepends=True):
            if line.endswith("\n"):
                out.append(json.loads(line))
    return out


class Worker:
    def __init__(self, journal: str, instance_id: str, creates_dir: Path, seed: int,
                 trouble: float, lease: float) -> None:
        self.lease = lease
        self.store = SqliteStore.open(journal, now=time.time())
        self.instance_id = instance_id
        self.creates_dir = creates_dir
        self.rng = random.Random(seed)
        self.trouble = trouble
        self.kinds = {a.name: a.provider for a in self.store.list_accounts()}
        self.fd = os.open(creates_dir / f"creates-{instance_id}.jsonl",
                          os.O_WRONLY | os.O_CREAT | os.O_APPEND, 0o644)
        self.figures = {"claims": 0, "completed": 0, "refusals": 0, "failed": 0,
                        "troubles": 0, "fenced": 0, "adopted": 0, "found": 0, "absent": 0}

    def jitter(self) -> None:
        time.sleep(self.rng.uniform(0.0, 0.002))

    def fenced(self, ok: bool) -> bool:
        self.figures["fenced"] += not ok
        return ok

    # -- the simulated provider ----------------------------------------------------------
    def create(self, claim: Claim, client_token: str) -> str:
        """The provider makes the render: on record (fsynced) before any answer."""
        kind = self.kinds[claim.account]
        render = f"{kind}-{claim.job.id}-{uuid.uuid4().hex[:12]}"
        line = json.dumps({"job": claim.job.id, "client_token": client_token,
                           "render": render, "kind": kind, "account": claim.account,
                           "claim": claim.token.token, "instance": self.instance_id}) + "\n"
        os.write(self.fd, line.encode())
        os.fsync(self.fd)
        return render

    # -- one claim ---------------------------------------------------------------------
    def play(self, claim: Claim) -> None:
        token, job, account = claim.token, claim.job, claim.account
        kind = self.kinds[account]
        assert job.provider == kind, f"job {job.id} on {job.provider} claimed by {account}"
        if refuses(job.job_key, kind):
            self.refuse(claim, uuid.uuid4().hex)
            return
        if self.rng.random() < self.trouble:
            status = self.rng.choice(TROUBLES)
            now = time.time()
            cooldown = now + 0.2 if status == AccountStatus.RATE_LIMITED else None
            self.store.set_account_status(account, status, now, detail="proof",
                                          cooldown_until=cooldown)
            self.jitter()
            self.figures["troubles"] += 1
            self.fenced(self.store.release_to_queue(
                token, JobError("account", LABELS[status], "proof: account trouble"),
                time.time(), run_after=None))
            return
        client_token = uuid.uuid4().hex
        if not self.fenced(self.store.mark_submitting(token, client_token, time.time())):
            return
        self.jitter()
        render = self.create(claim, client_token)
        self.jitter()
        self.finish(claim, render)

    def refuse(self, claim: Claim, client_token: str | None) -> None:
        """The provider refused the parameters: nothing was made; move on or fail."""
        token, job = claim.token, claim.job
        kind = self.kinds[claim.account]
        if client_token is not None and not self.fenced(
                self.store.mark_submitting(token, client_token, time.time())):
            return
        self.jitter()
        self.figures["refusals"] += 1
        why = f"{kind} refused the parameters (proof)"
        error = JobError("permanent", "invalid input", why)
        target = None if job.route is None else hand_over_target(job.route, kind, why)
        if target is None or target[1] is None:
            self.figures["failed"] += 1
            self.fenced(self.store.mark_failed(token, error, time.time()))
            return
        route, to = target
        assert to is not None
        self.fenced(self.store.hand_over(token, error, time.time(), route=route, to=to,
                                         came_from=kind))

    def finish(self, claim: Claim, render: str) -> None:
        token = claim.token
        if not self.fenced(self.store.record_submitted(token, render, time.time())):
            return
        self.resume(claim)

    def resume(self, claim: Claim) -> None:
        token = claim.token
        self.jitter()
        if not self.fenced(self.store.mark_downloading(token, time.time())):
            return
        self.jitter()
        price = claim.job.metadata.get("price")
        ok = self.store.mark_completed(token, size=1, sha256="0" * 64,
                                       cost=price if isinstance(price, float) else None,
                                       now=time.time())
        self.figures["completed"] += self.fenced(ok)

    # -- what recovery handed to this instance -------------------------------------------
    def adopt(self) -> None:
        mine = [j for j in self.store.list_jobs(states=IN_FLIGHT)
                if j.lease_owner == self.instance_id and j.claim_token]
        creates = {c["client_token"]: c for c in read_creates(self.creates_dir)}
        for job in mine:
            self.figures["adopted"] += 1
            assert job.account is not None and job.claim_token is not None
            claim = claim_of(job, job.account, job.claim_token)
            if job.state == JobState.SUBMITTING:
                self.reconcile(claim, job, creates)
            elif job.state == JobState.RENDERING and job.provider_job_id:
                self.resume(claim)
            else:
                raise AssertionError(f"recovery handed over {job}")

    def reconcile(self, claim: Claim, job: Job, creates: dict[str, dict[str, Any]]) -> None:
        found = creates.get(job.client_token or "")
        if found is not None:
            assert found["job"] == job.id and found["account"] == job.account, (found, job)
            self.figures["found"] += 1
            self.finish(claim, str(found["render"]))
            return
        self.figures["absent"] += 1
        if not self.fenced(self.store.forget_submission(
                ClaimToken(job.id, claim.token.token), time.time(),
                {"looked_in": "the creates files", "client_token": job.client_token})):
            return
        fresh = self.store.get_job(job.id)
        assert fresh is not None
        self.play(claim_of(fresh, claim.account, claim.token.token))

    # -- the loop ------------------------------------------------------------------------
    def run(self) -> None:
        self.adopt()
        held: list[Claim] = []
        accounts = list(self.kinds)
        while True:
            for account in accounts:
                while True:
                    claim = self.store.claim_next_job(ClaimParams(
                        account, self.instance_id, time.time(), self.lease))
                    if claim is None:
                        break
                    held.append(claim)
                    self.figures["claims"] += 1
            if held:
                self.jitter()
                self.play(held.pop(self.rng.randrange(len(held))))
                continue
            by_state = self.store.counts().by_state
            if not any(by_state.get(s.value, 0) for s in WAITING | IN_FLIGHT):
                break
            time.sleep(0.002)

    def close(self) -> None:
        os.close(self.fd)
        self.store.close()


def main(journal: str, instance_id: str, creates_dir: str, seed: str, trouble: str,
         lease: str) -> int:
    worker = Worker(journal, instance_id, Path(creates_dir), int(seed), float(trouble),
                    float(lease))
    try:
        worker.run()
    finally:
        worker.close()
    print(json.dumps({"instance": instance_id, **worker.figures}), flush=True)
    return 0


if __name__ == "__main__":
    raise SystemExit(main(*sys.argv[1:7]))
