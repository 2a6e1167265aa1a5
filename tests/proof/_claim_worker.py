"""One OS process hammering the store: claim greedily, finish one, claim again.

Usage: ``python tests/proof/_claim_worker.py JOURNAL INSTANCE_ID``

Two of these run at once on one SQLite file with different instance ids (the store-level
half of "two processes on one database never exceed an account's limit"). Each one alone
tries to hold as many claims as it can get, so if the free slots were not counted inside
the claim's own write transaction, the two together would go over an account's limit.
It prints one JSON line with its figures when no job is left.
"""

from __future__ import annotations

import json
import random
import sys
import time
import uuid

from reelqueue.domain.states import WAITING
from reelqueue.store.base import ClaimParams
from reelqueue.store.sqlite import SqliteStore


def main(journal: str, instance_id: str) -> int:
    store = SqliteStore.open(journal, now=time.time())
    rng = random.Random(instance_id)
    accounts = [a.name for a in store.list_accounts()]
    held = []
    claims = completed = refused = 0
    try:
        while True:
            for account in accounts:
                while True:
                    claim = store.claim_next_job(ClaimParams(account, instance_id,
                                                             time.time(), 60.0))
                    if claim is None:
                        break
                    held.append(claim)
                    claims += 1
            if held:
                time.sleep(rng.uniform(0.0, 0.004))  # hold the slots a moment
                claim = held.pop(rng.randrange(len(held)))
                token, now = claim.token, time.time()
                ok = (store.mark_submitting(token, uuid.uuid4().hex, now)
                      and store.record_submitted(token, f"p-{claim.job.id}", now)
                      and store.mark_downloading(token, now)
                      and store.mark_completed(token, size=1, sha256="0" * 64, cost=None,
                                               now=now))
                completed += ok
                refused += not ok
                continue
            waiting = sum(store.counts().by_state.get(s.value, 0) for s in WAITING)
            if not waiting:
                break
            time.sleep(0.001)
    finally:
        store.close()
    print(json.dumps({"instance": instance_id, "claims": claims, "completed": completed,
                      "refused": refused}), flush=True)
    return 0


if __name__ == "__main__":
    raise SystemExit(main(sys.argv[1], sys.argv[2]))
