"""An in-memory store with the same contract as the SQLite journal.

Most engine tests run against it; ``tests/store/test_contract.py`` runs the same suite on
both implementations so they cannot drift. Nothing here survives the process, by design.
"""

from __future__ import annotations

import functools
import threading
import uuid
from collections.abc import Callable, Collection, Iterable, Sequence
from dataclasses import replace
from typing import Any

from reelqueue.domain.account_view import AccountView, Charging, kept_view
from reelqueue.domain.errors import ErrorLabel, InputError, RenderAlreadyRecorded
from reelqueue.domain.models import (
    Account,
    AccountSpec,
    Batch,
    BatchSpec,
    Claim,
    ClaimToken,
    Job,
    JobSpec,
    LedgerEntry,
    RecoveryReport,
)
from reelqueue.domain.render_times import render_kind
from reelqueue.domain.review import (
    REFUSED_STATES,
    REVIEWED_EVENT,
    Decision,
    Review,
    ReviewChange,
    ReviewConflict,
    ReviewRefused,
    ReviewWritten,
    review_detail,
    take_group,
)
from reelqueue.domain.routes import Candidate, Route
from reelqueue.domain.states import FINAL, IN_FLIGHT, WAITING, AccountStatus, JobState
from reelqueue.store.balance import BalanceLeft, balance_left, balance_refusal, dry
from reelqueue.store.base import (
    JOB_ORDERS,
    AddJobsResult,
    ClaimParams,
    Counts,
    JobError,
    Prioritized,
    RecoverParams,
    account_usable,
    claim_of,
    claimed_detail,
    downloading_detail,
    error_detail,
    short_lease,
    this_host,
)
from reelqueue.store.listing import listed_batch, listed_entry, listed_job
from reelqueue.store.provider_limits import gated_models, job_model
from reelqueue.store.queue_limit import check_queue_room
from reelqueue.store.recovery_plan import (
    failure_of,
    plan_recovery,
    record_applied,
    requeued_detail,
)
from reelqueue.store.rerolls import reroll_root
from reelqueue.store.routing import (
    ROUTED_LOOK,
    RoutedRow,
    free_accounts,
    needle,
    outranked,
    pick_routed,
    surely_free,
)
from reelqueue.store.spend import (
    SLACK,
    SPEND_EVENT,
    AccountSpend,
    BatchSpend,
    Refusal,
    SpendSummary,
    ToGo,
    cap_of,
    cost_correction,
    first_unrefused,
    intent_spend,
    price_of,
    refusal,
    withdrawn_spend,
)
from reelqueue.store.transitions import TRANSITIONS, apply_transition

# The same orders as queries.sql's job_order_* expressions (SQLite: NULL sorts first;
# NOCASE folds ASCII letters only, then compares code points as UTF-8 bytes do).
_NOCASE = str.maketrans("ABCDEFGHIJKLMNOPQRSTUVWXYZ", "abcdefghijklmnopqrstuvwxyz")
_STATE_RANK = {state: rank for rank, state in enumerate(
    ("QUEUED", "RETRY_WAIT", "CLAIMED", "SUBMITTING", "RENDERING", "DOWNLOADING",
     "COMPLETED", "PARKED", "FAILED", "CANCELLED"))}


def _nocase(text: str | None) -> tuple[bool, str]:
    return (text is not None, (text or "").translate(_NOCASE))


def _number(value: float | None) -> tuple[bool, float]:
    return (value is not None, value or 0.0)


_ORDER_KEYS: dict[str, Callable[[Job], Any]] = {
    "row": lambda j: _number(j.row_number),
    "name": lambda j: _nocase(j.name),
    "prompt": lambda j: _nocase(j.prompt),
    "account": lambda j: _nocase(j.account if j.account is not None
                                 else f"{j.provider} · any"),
    "state": lambda j: _STATE_RANK.get(str(j.state), len(_STATE_RANK)),
    "progress": lambda j: _number(j.progress),
    "attempts": lambda j: j.attempts,
    "output": lambda j: _nocase(j.output_path),
    "error": lambda j: _nocase(j.error_label),
}

class MemoryStore:
    def __init__(self) -> None:
        self._lock = threading.RLock()
        self._batches: dict[int, Batch] = {}
        self._jobs: dict[int, Job] = {}
        self._keys: dict[str, int] = {}
        self._accounts: dict[str, Account] = {}
        self._views: dict[str, AccountView] = {}  # account -> its view (issue 32 item 2)
        self._ledger: list[LedgerEntry] = []
        self._next_job = 1
        self._next_seq = 1
        #: written as ``output_host`` with every file this instance completes
        self.host = this_host()

    def close(self) -> None:
        pass

    # -- helpers -----------------------------------------------------------------------
    def _note(
        self, event: str, now: float, *, job_id: int | None = None, account: str | None = None,
        claim_token: str | None = None, detail: dict[str, Any] | None = None,
    ) -> None:
        self._ledger.append(LedgerEntry(self._next_seq, now, event, job_id, account,
                                        claim_token, dict(detail or {})))
        self._next_seq += 1

    def _fenced(
        self, token: ClaimToken, transition: str, event: str | None, now: float,
        write: str, detail: dict[str, Any] | None = None, *, to: JobState | None = None,
        drop: Iterable[str] = (), **values: Any,
    ) -> bool:
        """Apply the fenced transition (store/transitions.py) if the job still holds the
        claim and is in one of its states; else log ``fenced_out``."""
        with self._lock:
            job = self._jobs.get(token.job_id)
            if (job is None or job.claim_token != token.token
                    or not TRANSITIONS[transition].allows(job)):
                self._note("fenced_out", now, job_id=token.job_id,
                           account=job.account if job else None, claim_token=token.token,
                           detail={"write": write})
                return False
            self._jobs[job.id] = apply_transition(job, transition, now, to=to, drop=drop,
                                                  **values)
            if event:
                self._note(event, now, job_id=job.id, account=job.account,
                           claim_token=token.token, detail=detail)
            return True

    # -- batches and jobs --------------------------------------------------------------
    def create_batch(self, spec: BatchSpec, now: float) -> Batch:
        with self._lock:
            batch = Batch(len(self._batches) + 1, spec.name, spec.source_path, spec.output_dir,
                          spec.max_attempts, now, dict(spec.settings))
            self._batches[batch.id] = batch
            self._note("batch_created", now, detail={"batch_id": batch.id, "name": spec.name})
            return batch

    def get_batch(self, batch_id: int) -> Batch | None:
        return self._batches.get(batch_id)

    def list_batches(self) -> list[Batch]:
        return [listed_batch(self._batches[k]) for k in sorted(self._batches)]

    def add_jobs(
        self, batch_id: int, specs: Sequence[JobSpec], now: float,
        max_waiting: int | None = None,
    ) -> AddJobsResult:
        with self._lock:
            batch = self._batches.get(batch_id)
            if batch is None:
                raise InputError(f"There is no batch {batch_id}.")
            unique: dict[str, JobSpec] = {}
            for spec in specs:
                if spec.job_key not in self._keys:
                    unique.setdefault(spec.job_key, spec)
            if max_waiting is not None:
                check_queue_room(self.count_waiting(), len(unique), max_waiting)
            ids = []
            for spec in unique.values():
                job = Job(
                    id=self._next_job, batch_id=batch_id, job_key=spec.job_key,
                    row_number=spec.row_number, name=spec.name, prompt=spec.prompt,
                    provider=spec.provider, params=dict(spec.params),
                    pinned_account=spec.pinned_account, priority=spec.priority,
                    output_path=spec.output_path, state=JobState.QUEUED, attempts=0,
                    max_attempts=batch.max_attempts, account=None, claim_token=None,
                    lease_owner=None, lease_until=None, client_token=None,
                    provider_job_id=None, sub_status=None, progress=None, run_after=0.0,
                    output_size=None, output_sha256=None, cost=None, error_class=None,
                    error_label=None, error_message=None, created_at=now, updated_at=now,
                    started_at=None, finished_at=None, metadata=dict(spec.metadata),
                    route=spec.route,
                )
                self._jobs[job.id] = job
                self._keys[job.job_key] = job.id
                ids.append(job.id)
                self._next_job += 1
            self._note("imported", now, detail={"batch_id": batch_id, "added": len(unique),
                                                "already_present": len(specs) - len(unique)})
            return AddJobsResult(len(unique), len(specs) - len(unique), tuple(ids))

    def existing_job_keys(self, keys: Iterable[str]) -> set[str]:
        with self._lock:
            return {k for k in keys if k in self._keys}

    def get_job(self, job_id: int) -> Job | None:
        return self._jobs.get(job_id)

    def list_jobs(
        self, batch_id: int | None = None, states: Iterable[JobState] | None = None,
        limit: int | None = None, offset: int = 0,
    ) -> list[Job]:
        wanted = None if states is None else {JobState(s) for s in states}
        with self._lock:
            jobs = [j for _, j in sorted(self._jobs.items())
                    if (batch_id is None or j.batch_id == batch_id)
                    and (wanted is None or j.state in wanted)]
        jobs = jobs[offset:offset + limit] if limit is not None else jobs[offset:]
        return [listed_job(job) for job in jobs]

    def job_ids_ordered(
        self, order: str, descending: bool = False, limit: int | None = None, offset: int = 0,
    ) -> list[int]:
        if order not in JOB_ORDERS:
            raise ValueError(f"unknown job order {order!r}; one of {', '.join(JOB_ORDERS)}")
        key = _ORDER_KEYS[order]
        with self._lock:
            ids = [job.id for job in sorted(self._jobs.values(),
                                            key=lambda j: (key(j), j.id), reverse=descending)]
        return ids[offset:offset + limit] if limit is not None else ids[offset:]

    def takeovers(self) -> dict[str, dict[str, int]]:
        with self._lock:
            out: dict[str, dict[str, int]] = {}
            for e in self._ledger:
                came = e.detail.get("from")
                if (e.event == "handed_over" and e.account and isinstance(came, str)
                        and e.detail.get("at") == "claim"):
                    mine = out.setdefault(e.account, {})
                    mine[came] = mine.get(came, 0) + 1
            return out

    def recent_render_times(self, limit: int = 2_000) -> list[tuple[str, float]]:
        with self._lock:
            done = sorted((j for j in self._jobs.values()
                           if j.state is JobState.COMPLETED and j.started_at is not None
                           and j.finished_at is not None),
                          key=lambda j: -(j.finished_at or 0.0))[:limit]
            return [(render_kind(j.provider, j.params),
                     (j.finished_at or 0.0) - (j.started_at or 0.0)) for j in done]

    def count_waiting(self) -> int:
        with self._lock:
            return sum(1 for j in self._jobs.values() if j.state in WAITING)

    def counts(self) -> Counts:
        with self._lock:
            by_state: dict[str, int] = {}
            live: dict[str, int] = {}
            for job in self._jobs.values():
                by_state[str(job.state)] = by_state.get(str(job.state), 0) + 1
                if job.state in IN_FLIGHT and job.account:
                    live[job.account] = live.get(job.account, 0) + 1
            return Counts(by_state, live)

    # -- accounts ----------------------------------------------------------------------
    def add_account(self, spec: AccountSpec, now: float) -> Account:
        with self._lock:
            if spec.name in self._accounts:
                raise InputError(f"An account named {spec.name!r} already exists.")
            position = max((a.position for a in self._accounts.values()), default=0) + 1
            account = Account(spec.name, spec.provider, spec.capacity, position, True,
                              spec.base_url, spec.key_ref, AccountStatus.READY, None, None,
                              dict(spec.settings), now)
            self._accounts[spec.name] = account
            self._note("account_added", now, account=spec.name,
                       detail={"provider": spec.provider, "capacity": spec.capacity})
            return account

    def get_account(self, name: str) -> Account | None:
        return self._accounts.get(name)

    def list_accounts(self) -> list[Account]:
        return sorted(self._accounts.values(), key=lambda a: (a.position, a.name))

    def remove_account(self, name: str, now: float) -> None:
        with self._lock:
            live = self.live_count(name)
            if live:
                raise InputError(
                    f"Account {name!r} has {live} renders in flight; wait for them or "
                    "disable the account first."
                )
            if self._accounts.pop(name, None) is None:
                raise InputError(f"There is no account named {name!r}.")
            self._views.pop(name, None)
            self._note("account_removed", now, account=name)

    def put_account_view(self, view: AccountView) -> bool:
        with self._lock:
            kept = self._views.get(view.account)
            if kept is not None and kept.read_at > view.read_at:
                return False
            # Bounded and plain as the SQL journals give it back.
            self._views[view.account] = kept_view(view)
            return True

    def account_views(self) -> list[AccountView]:
        with self._lock:
            return [self._views[name] for name in sorted(self._views)]

    def update_account(
        self, name: str, now: float, *, capacity: int | None = None,
        enabled: bool | None = None, base_url: str | None = None,
        settings: dict[str, Any] | None = None,
    ) -> Account:
        if capacity is not None and capacity < 1:
            raise InputError("An account's limit must be at least 1.")
        with self._lock:
            account = self._accounts.get(name)
            if account is None:
                raise InputError(f"There is no account named {name!r}.")
            account = replace(
                account,
                capacity=account.capacity if capacity is None else capacity,
                enabled=account.enabled if enabled is None else enabled,
                base_url=account.base_url if base_url is None else base_url,
                settings=account.settings if settings is None
                else _merged(account.settings, settings),
            )
            self._accounts[name] = account
            self._note("account_changed", now, account=name, detail={
                k: v for k, v in {"capacity": capacity, "enabled": enabled,
                                  "base_url": base_url, "settings": settings}.items()
                if v is not None})
            return account

    def set_account_status(
        self, name: str, status: AccountStatus, now: float, *,
        detail: str | None = None, cooldown_until: float | None = None,
    ) -> None:
        with self._lock:
            account = self._accounts.get(name)
            if account is None:
                return
            self._accounts[name] = replace(account, status=status, status_detail=detail,
                                           cooldown_until=cooldown_until)
            self._note("account_status", now, account=name, detail={
                "status": str(status), "detail": detail, "cooldown_until": cooldown_until})

    def live_count(self, account: str) -> int:
        with self._lock:
            return sum(1 for j in self._jobs.values()
                       if j.account == account and j.state in IN_FLIGHT)

    # -- claims ------------------------------------------------------------------------
    def claim_next_job(self, params: ClaimParams) -> Claim | None:
        with self._lock:
            account = self._accounts.get(params.account)
            if account is None or not account_usable(account):
                return None
            if account.cooldown_until is not None and account.cooldown_until > params.now:
                return None
            if self.live_count(account.name) >= account.capacity:
                return None
            gated = self._gated_models(account, params)
            left = self._balance_left(account, params.now,
                                      params.charging.get(account.provider))
            candidates = [
                j for j in self._jobs.values()
                if j.state in WAITING and j.provider == account.provider
                and j.run_after <= params.now
                and j.pinned_account in (None, account.name)
                and j.account in (None, account.name)
                # a paused batch's jobs wait, except a render in flight (queries.sql)
                and (j.provider_job_id is not None
                     or not self._batches[j.batch_id].settings.get("paused"))
                # a model at the provider's limit here waits, except a render in flight
                and (j.provider_job_id is not None
                     or job_model(j.params.get("model"), params.default_model) not in gated)
            ]
            picked = self._spend_checked(account, params, candidates, left)
            if picked is None:
                picked = self._routed(account, params, gated, left)
            if picked is None:
                return None
            job = picked
            token = uuid.uuid4().hex
            job = apply_transition(
                job, "claim_job", params.now, account=account.name, claim_token=token,
                lease_owner=params.instance_id, lease_until=params.now + params.lease_seconds,
                attempts=job.attempts + 1,
                started_at=job.started_at if job.started_at is not None else params.now,
            )
            self._jobs[job.id] = job
            self._note("claimed", params.now, job_id=job.id, account=account.name,
                       claim_token=token, detail=claimed_detail(params.instance_id, job))
            return claim_of(job, account.name, token)

    def _gated_models(self, account: Account, params: ClaimParams) -> list[str]:
        """The models the account may start no new render of now, by its view's limits
        (store/provider_limits.py; the SQL journals' live_of_model and creates_since)."""
        name = account.name

        def model_of(job: Job) -> str:
            return job_model(job.params.get("model"), params.default_model)

        def live_of(model: str) -> int:
            return sum(1 for j in self._jobs.values() if j.account == name
                       and j.state in IN_FLIGHT and model_of(j) == model)

        def created_since(model: str, since: float) -> int:
            sent = sum(1 for e in self._ledger
                       if e.event == "submitting" and e.account == name and e.at >= since
                       and e.job_id in self._jobs and model_of(self._jobs[e.job_id]) == model)
            return sent + sum(1 for j in self._jobs.values()
                              if j.account == name and j.state == JobState.CLAIMED
                              and j.client_token is None and model_of(j) == model)

        return gated_models(self._views.get(name), params.now, live_of=live_of,
                            created_since=created_since)

    def balance_left(self, account: str, now: float,
                     charging: Charging | None) -> BalanceLeft | None:
        with self._lock:
            return self._balance_left(self._accounts[account], now, charging) \
                if account in self._accounts else None

    def _balance_left(self, account: Account, now: float,
                      charging: Charging | None) -> BalanceLeft | None:
        """The account's balance less what it cannot include yet (store/balance.py; the
        SQL journals' pending_usd)."""
        name = account.name

        def pending_usd(since: float, every_live: bool) -> tuple[float, int]:
            prices: list[float | None] = []
            created: set[int] = set()
            for e in self._ledger:
                if (e.event == "submitting" and e.account == name and e.at >= since
                        and e.job_id in self._jobs):
                    created.add(e.job_id)
                    prices.append(price_of(self._jobs[e.job_id].metadata))
            for j in self._jobs.values():
                if j.account != name or j.state not in IN_FLIGHT:
                    continue
                if ((j.state == JobState.CLAIMED and j.client_token is None)
                        or (every_live and j.id not in created)):
                    prices.append(price_of(j.metadata))
            known = [p for p in prices if p is not None]
            return sum(known), len(prices) - len(known)

        return balance_left(self._views.get(name), now, charging, pending_usd)

    def _spend_checked(
        self, account: Account, params: ClaimParams, candidates: list[Job],
        left: BalanceLeft | None = None,
    ) -> Job | None:
        """The best candidate no spend cap refuses (the walk of spend.first_unrefused, as
        the SQL journals' claim)."""
        account_cap = cap_of(account.settings, "daily_cap")

        def next_candidate(creates: bool, skip: list[int]) -> Job | None:
            left = [j for j in candidates if j.provider_job_id is not None
                    or (creates and j.batch_id not in skip)]
            return min(left, key=lambda j: (-j.priority, j.id)) if left else None

        def refused_of(job: Job) -> Refusal | None:
            needs_create = job.provider_job_id is None and job.client_token is None
            return balance_refusal(left, needs_create=needs_create,
                                   price=price_of(job.metadata)) or refusal(
                needs_create=needs_create,
                price=price_of(job.metadata),
                batch_cap=cap_of(self._batches[job.batch_id].settings, "max_spend"),
                batch_committed=functools.partial(self._batch_committed, job.batch_id),
                account_cap=account_cap,
                account_committed=functools.partial(self._account_committed, account.name,
                                                    params.day_start),
            )

        return first_unrefused(next_candidate, refused_of, lambda j: j.batch_id,
                               lambda: len(self._batches))

    def _routed(self, account: Account, params: ClaimParams,
                gated: Collection[str] = (), left: BalanceLeft | None = None) -> Job | None:
        """A routed job this account takes over (store/routing.py, as the SQL journals'
        ``_routed_candidate`` with their ``routed_waiting`` filter), moved to its provider
        with the ``handed_over`` entry."""
        free = free_accounts(
            (a, self.live_count(a.name),
             a.cooldown_until is not None and a.cooldown_until > params.now)
            for a in self._accounts.values())

        balances: dict[str, BalanceLeft | None] = {account.name: left}

        def balance_of(other: Account) -> BalanceLeft | None:
            if other.name not in balances:
                balances[other.name] = self._balance_left(
                    other, params.now, params.charging.get(other.provider))
            return balances[other.name]

        def capped(other: Account) -> bool:
            cap = cap_of(other.settings, "daily_cap")
            return (cap is not None and (
                self._account_committed(other.name, params.day_start) >= cap - SLACK)
            ) or dry(balance_of(other))

        def may_create(other: Account | None, row: RoutedRow, candidate: Candidate) -> bool:
            if other is None and job_model(candidate.params.get("model"),
                                           params.default_model) in gated:
                return False  # its model is at the provider's limit here
            taker = account if other is None else other
            if balance_refusal(balance_of(taker), needs_create=True, price=candidate.price):
                return False  # the taker's balance cannot pay for it
            return refusal(
                needs_create=True, price=candidate.price, batch_cap=row.batch_cap,
                batch_committed=functools.partial(self._batch_committed, row.batch_id),
                account_cap=cap_of(taker.settings, "daily_cap"),
                account_committed=functools.partial(self._account_committed, taker.name,
                                                    params.day_start),
            ) is None

        pick = None
        for outranking in (surely_free(free, capped), []):
            waiting = sorted(
                (j for j in self._jobs.values()
                 if j.route is not None and j.state in WAITING and j.provider_job_id is None
                 and j.client_token is None and j.account is None
                 and j.pinned_account is None and j.run_after <= params.now
                 and j.provider != account.provider
                 and needle(account.provider) in j.route.order_key()
                 and not outranked(j.route.order_key(), account.provider, outranking)
                 and not self._batches[j.batch_id].settings.get("paused")),
                key=lambda j: (-j.priority, j.id))[:ROUTED_LOOK]
            rows = [RoutedRow(j.id, j.batch_id, j.provider, j.route,
                              cap_of(self._batches[j.batch_id].settings, "max_spend"),
                              j.params.get("seed"))
                    for j in waiting]
            pick = pick_routed(account.provider, rows, free, may_create) if rows else None
            if pick is not None or not outranking:
                break
        if pick is None:
            return None
        job = self._jobs[pick.job_id]
        job = apply_transition(job, "route_take", params.now, provider=account.provider,
                               params=dict(pick.params),
                               metadata=_priced(job.metadata, pick.candidate.price))
        self._jobs[job.id] = job
        self._note("handed_over", params.now, job_id=job.id, account=account.name,
                   detail=pick.detail())
        return job

    def hand_over(self, token: ClaimToken, error: JobError, now: float, *,
                  route: Route, to: Candidate, came_from: str) -> bool:
        job = self._jobs.get(token.job_id)
        return self._fenced(
            token, "fenced_hand_over", "handed_over", now, "hand_over",
            error_detail(error, **{"at": "refusal", "from": came_from, "to": to.provider,
                                   "price": to.price,
                                   "params": dict(to.params)}),
            run_after=0.0,
            attempts=max((job.attempts if job else 1) - 1, 0), provider=to.provider,
            params=dict(to.params), route=route,
            metadata=_priced(job.metadata if job else {}, to.price),
            error_class=error.error_class, error_label=error.label,
            error_message=error.message)

    def _reserved(self, keep: Callable[[Job], bool]) -> float:
        """The price of claimed jobs that will create (no render, no unresolved intent)."""
        return sum(price_of(j.metadata) or 0.0 for j in self._jobs.values()
                   if j.state is JobState.CLAIMED and j.provider_job_id is None
                   and j.client_token is None and keep(j))

    def _batch_spent(self, batch_id: int) -> float:
        return sum(float(e.detail.get("usd") or 0.0) for e in self._ledger
                   if e.event == SPEND_EVENT and e.job_id in self._jobs
                   and self._jobs[e.job_id].batch_id == batch_id)

    def _account_spent(self, account: str, day_start: float) -> float:
        return sum(float(e.detail.get("usd") or 0.0) for e in self._ledger
                   if e.event == SPEND_EVENT and e.account == account and e.at >= day_start)

    def _batch_committed(self, batch_id: int) -> float:
        return self._batch_spent(batch_id) + self._reserved(lambda j: j.batch_id == batch_id)

    def _account_committed(self, account: str, day_start: float) -> float:
        return (self._account_spent(account, day_start)
                + self._reserved(lambda j: j.account == account))

    def spend_summary(self, now: float, day_start: float) -> SpendSummary:
        with self._lock:
            waiting = [j for j in self._jobs.values() if j.state in WAITING
                       and j.provider_job_id is None and j.client_token is None]

            def held(jobs: Iterable[Job], room: float) -> int:
                return sum(1 for j in jobs
                           if (price := price_of(j.metadata)) is None or price > room)

            batches: list[BatchSpend] = []
            for batch in sorted(self._batches.values(), key=lambda b: b.id):
                cap = cap_of(batch.settings, "max_spend")
                if cap is None:
                    continue
                bid = batch.id
                spent = self._batch_spent(bid)
                reserved = self._reserved(lambda j, b=bid: j.batch_id == b)  # type: ignore[misc]
                batches.append(BatchSpend(
                    bid, batch.name, spent, reserved, cap,
                    held([j for j in waiting if j.batch_id == bid],
                         cap - spent - reserved + SLACK)))
            accounts: list[AccountSpend] = []
            for account in sorted(self._accounts.values(), key=lambda a: a.position):
                acap = cap_of(account.settings, "daily_cap")
                name = account.name
                spent = self._account_spent(name, day_start)
                reserved = self._reserved(lambda j, a=name: j.account == a)  # type: ignore[misc]
                count = 0 if acap is None else held(
                    [j for j in waiting if j.provider == account.provider
                     and j.pinned_account in (None, name) and j.account in (None, name)],
                    acap - spent - reserved + SLACK)
                accounts.append(AccountSpend(name, spent, reserved, acap, count))
            gone = sorted({e.account for e in self._ledger if e.event == SPEND_EVENT
                           and e.at >= day_start and e.account is not None
                           and e.account not in self._accounts})
            accounts += [AccountSpend(name, self._account_spent(name, day_start), 0.0, None,
                                      0, removed=True) for name in gone]
            return SpendSummary(tuple(batches), tuple(accounts))

    def to_go(self) -> tuple[ToGo, ...]:
        with self._lock:
            groups: dict[tuple[str, str | None], tuple[float, int, int]] = {}
            for job in self._jobs.values():
                if (job.state not in WAITING or job.provider_job_id is not None
                        or job.client_token is not None):
                    continue
                key = (job.provider, job.pinned_account or job.account)
                usd, priced, unpriced = groups.get(key, (0.0, 0, 0))
                price = price_of(job.metadata)
                groups[key] = ((usd, priced, unpriced + 1) if price is None
                               else (usd + price, priced + 1, unpriced))
        return tuple(ToGo(provider, only, round(usd, 6), priced, unpriced)
                     for (provider, only), (usd, priced, unpriced)
                     in sorted(groups.items(), key=lambda g: (g[0][0], g[0][1] or "")))

    def update_batch_settings(
        self, batch_id: int, patch: dict[str, Any], now: float,
    ) -> Batch | None:
        with self._lock:
            batch = self._batches.get(batch_id)
            if batch is None:
                return None
            batch = replace(batch, settings=_merged(batch.settings, patch))
            self._batches[batch_id] = batch
            self._note("batch_changed", now, detail={"batch_id": batch_id, **patch})
            return batch

    def renew_leases(self, instance_id: str, now: float, lease_seconds: float,
                     tokens: Collection[str] | None = None,
                     clock_offset: float | None = None) -> int:
        wanted = None if tokens is None else set(tokens)
        with self._lock:
            renewed = 0
            for job in list(self._jobs.values()):
                if (job.lease_owner == instance_id and job.state in IN_FLIGHT
                        and (wanted is None or job.claim_token in wanted)):
                    self._jobs[job.id] = replace(job, lease_until=now + lease_seconds)
                    renewed += 1
            return renewed

    def server_time(self) -> float | None:
        return None  # one process: the caller's clock decides

    # -- fenced transitions ------------------------------------------------------------
    def mark_submitting(self, token: ClaimToken, client_token: str, now: float, *,
                        min_lease_seconds: float | None = None) -> bool:
        with self._lock:  # the intent and its spend together (sqlite.py)
            job = self._jobs.get(token.job_id)
            if (min_lease_seconds is not None and job is not None
                    and job.claim_token == token.token
                    and TRANSITIONS["fenced_mark_submitting"].allows(job)
                    and (job.lease_until or 0.0) - now < min_lease_seconds):
                self._note("fenced_out", now, job_id=job.id, account=job.account,
                           claim_token=token.token,
                           detail={"write": "mark_submitting", **short_lease(
                               (job.lease_until or 0.0) - now, min_lease_seconds)})
                return False
            if not self._fenced(token, "fenced_mark_submitting", "submitting", now,
                                "mark_submitting", {"client_token": client_token},
                                client_token=client_token):
                return False
            assert job is not None
            spend = intent_spend(job.metadata, job.client_token, client_token)
            if spend is not None:
                self._note(SPEND_EVENT, now, job_id=job.id, account=job.account,
                           claim_token=token.token, detail=spend)
            return True

    def record_submitted(self, token: ClaimToken, provider_job_id: str, now: float) -> bool:
        with self._lock:
            self._refuse_recorded_render(token.job_id, provider_job_id)
            return self._fenced(token, "fenced_record_submitted", "submitted", now,
                                "record_submitted", {"provider_job_id": provider_job_id},
                                provider_job_id=provider_job_id, sub_status="submitted")

    def _refuse_recorded_render(self, job_id: int, provider_job_id: str) -> None:
        job = self._jobs.get(job_id)
        if job is None:
            return
        for other in self._jobs.values():
            if (other.id != job_id and other.provider == job.provider
                    and other.account == job.account
                    and other.provider_job_id == provider_job_id):
                raise RenderAlreadyRecorded(
                    f"Render {provider_job_id} is already recorded for job {other.id}; a "
                    "render goes to at most one job.")

    def forget_submission(self, token: ClaimToken, now: float, detail: dict[str, Any],
                          event: str = "reconciled_absent") -> bool:
        with self._lock:  # the forgetting and its give-back together (sql_journal.py)
            job = self._jobs.get(token.job_id)
            held = job.client_token if job is not None else None
            if not self._fenced(token, "fenced_forget_submission", event, now,
                                "forget_submission", detail):
                return False
            assert job is not None
            spend = withdrawn_spend(job.metadata, held, event)
            if spend is not None:
                self._note(SPEND_EVENT, now, job_id=job.id, account=job.account,
                           claim_token=token.token, detail=spend)
            return True

    def unresolved_submissions(self, account: str) -> list[tuple[Job, float | None]]:
        with self._lock:
            found = []
            for job in self._jobs.values():
                if (job.account != account or job.client_token is None
                        or job.provider_job_id is not None
                        or job.state in (JobState.COMPLETED, JobState.CANCELLED)):
                    continue
                intents = [e.at for e in self._ledger if e.job_id == job.id
                           and e.event == "submitting"
                           and e.detail.get("client_token") == job.client_token]
                found.append((job, min(intents) if intents else None))
            return found

    def known_provider_job_ids(self, provider: str, account: str,
                               ids: Sequence[str]) -> set[str]:
        wanted = set(ids)
        with self._lock:
            return {j.provider_job_id for j in self._jobs.values()
                    if j.provider == provider and j.account == account
                    and j.provider_job_id in wanted
                    and j.provider_job_id is not None}

    def attach_render(self, job_id: int, provider_job_id: str, now: float) -> bool:
        with self._lock:
            job = self._jobs.get(job_id)
            if (job is None or not TRANSITIONS["attach_render"].allows(job)
                    or job.client_token is None or job.account is None):
                return False
            self._refuse_recorded_render(job_id, provider_job_id)
            self._jobs[job_id] = apply_transition(
                job, "attach_render", now, provider_job_id=provider_job_id, attempts=0,
                run_after=0.0)
            self._note("resolved_by_user", now, job_id=job_id, account=job.account,
                       detail={"provider_job_id": provider_job_id, "from": str(job.state),
                               "client_token": job.client_token})
            return True

    def mark_rendering(self, token: ClaimToken, now: float) -> bool:
        return self._fenced(token, "fenced_mark_rendering", "resumed", now, "mark_rendering")

    def record_progress(
        self, token: ClaimToken, sub_status: str, progress: float | None, now: float
    ) -> bool:
        return self._fenced(token, "fenced_record_progress", "remote_status", now,
                            "record_progress", {"sub_status": sub_status},
                            sub_status=sub_status, progress=progress)

    def mark_downloading(self, token: ClaimToken, now: float, *,
                         output_path: str | None = None, part: str | None = None) -> bool:
        with self._lock:
            job = self._jobs.get(token.job_id)
            return self._fenced(
                token, "fenced_mark_downloading", "downloading", now, "mark_downloading",
                downloading_detail(output_path, part),
                output_path=output_path or (job.output_path if job else ""),
                output_part=part)

    def record_download(self, token: ClaimToken, *, size: int, sha256: str,
                        now: float) -> bool:
        return self._fenced(token, "fenced_record_download", "downloaded", now,
                            "record_download", {"size": size, "sha256": sha256},
                            output_size=size, output_sha256=sha256)

    def mark_completed(
        self, token: ClaimToken, *, size: int, sha256: str, cost: float | None, now: float
    ) -> bool:
        with self._lock:
            job = self._jobs.get(token.job_id)
            if not self._fenced(
                token, "fenced_mark_completed", "completed", now, "mark_completed",
                {"size": size, "sha256": sha256, "cost": cost},
                output_size=size, output_sha256=sha256, output_host=self.host,
                cost=cost if cost is not None else (job.cost if job else None), progress=1.0,
                finished_at=now):
                return False
            assert job is not None
            spend = cost_correction(job.metadata, cost)
            if spend is not None:
                self._note(SPEND_EVENT, now, job_id=job.id, account=job.account,
                           claim_token=token.token, detail=spend)
            return True

    def set_retry_wait(
        self, token: ClaimToken, error: JobError, run_after: float, now: float, *,
        keep_provider_job: bool,
    ) -> bool:
        return self._fenced(
            token, "fenced_set_retry_wait", "retry_wait", now, "set_retry_wait",
            error_detail(error, run_after=run_after, keeps_render=keep_provider_job),
            drop=() if keep_provider_job else ("account", "provider_job_id", "client_token"),
            run_after=run_after, error_class=error.error_class, error_label=error.label,
            error_message=error.message)

    def release_to_queue(
        self, token: ClaimToken, error: JobError, now: float, *,
        run_after: float | None = None, keep_submission: bool = False,
    ) -> bool:
        job = self._jobs.get(token.job_id)
        keeps = job is not None and (job.provider_job_id is not None or keep_submission)
        return self._fenced(
            token, "fenced_release_to_queue", "released", now, "release_to_queue",
            error_detail(error, **({"keeps_submission": True} if keep_submission else {})),
            to=JobState.RETRY_WAIT if run_after else JobState.QUEUED,
            drop=() if keeps else ("account", "client_token"),
            run_after=run_after or 0.0, attempts=max((job.attempts if job else 1) - 1, 0),
            error_class=error.error_class, error_label=error.label,
            error_message=error.message)

    def mark_failed(self, token: ClaimToken, error: JobError, now: float, *,
                    drop_render: bool = False) -> bool:
        return self._fenced(
            token, "fenced_mark_failed", "failed", now, "mark_failed",
            error_detail(error, **({"dropped_render": True} if drop_render else {})),
            drop=("provider_job_id",) if drop_render else (), finished_at=now,
            error_class=error.error_class, error_label=error.label,
            error_message=error.message)

    def park_job(self, token: ClaimToken, error: JobError, now: float) -> bool:
        with self._lock:
            job = self._jobs.get(token.job_id)
            if job is not None and job.client_token is None:  # nothing to keep (queries.sql)
                self._note("fenced_out", now, job_id=job.id, account=job.account,
                           claim_token=token.token, detail={"write": "park"})
                return False
        return self._fenced(
            token, "fenced_park", "parked", now, "park",
            error_detail(error),
            error_class=error.error_class, error_label=error.label,
            error_message=error.message)

    def note(
        self, event: str, now: float, *, job_id: int | None = None,
        account: str | None = None, claim_token: str | None = None,
        detail: dict[str, Any] | None = None,
    ) -> None:
        with self._lock:
            self._note(event, now, job_id=job_id, account=account, claim_token=claim_token,
                       detail=detail)

    # -- user commands -----------------------------------------------------------------
    def cancel_jobs(self, job_ids: Iterable[int], now: float) -> list[int]:
        done = []
        with self._lock:
            for job_id in job_ids:
                job = self._jobs.get(job_id)
                if job is None or not TRANSITIONS["cancel_job"].allows(job):
                    continue
                self._jobs[job_id] = apply_transition(job, "cancel_job", now, finished_at=now)
                done.append(job_id)
                self._note("cancelled", now, job_id=job_id, account=job.account,
                           claim_token=job.claim_token,
                           detail={"from": str(job.state),
                                   "provider_job_id": job.provider_job_id})
        return done

    def requeue_jobs(
        self, job_ids: Iterable[int], now: float, *, new_seed: int | None = None,
        reconcile: bool = True,
    ) -> list[int]:
        done = []
        with self._lock:
            for job_id in job_ids:
                job = self._jobs.get(job_id)
                if job is None or not TRANSITIONS["requeue_job"].allows(job):
                    continue
                params = dict(job.params)
                if new_seed is not None:
                    params["seed"] = new_seed
                # A job that has a render keeps it unless a new seed was asked for: the
                # next claim reads it first (queries.sql, requeue_job).
                keep = new_seed is None and job.provider_job_id is not None
                # A create whose outcome stayed unknown keeps its token and account, to be
                # looked for in the provider's records first (queries.sql, requeue_job).
                unresolved = (new_seed is None and reconcile and job.client_token is not None
                              and job.provider_job_id is None
                              and job.error_label == ErrorLabel.SUBMIT_UNKNOWN.value)
                drop: tuple[str, ...] = (
                    () if keep else ("provider_job_id",) if unresolved
                    else ("account", "client_token", "provider_job_id"))
                if unresolved and job.account is None:
                    drop = ("account", "provider_job_id")
                self._jobs[job_id] = apply_transition(
                    job, "requeue_job", now, attempts=0, run_after=0.0, params=params,
                    drop=drop)
                done.append(job_id)
                self._note("requeued", now, job_id=job_id, detail=requeued_detail(
                    {"state": str(job.state), "provider_job_id": job.provider_job_id,
                     "client_token": job.client_token, "error_label": job.error_label},
                    keep=new_seed is None, new_seed=new_seed, reconcile=reconcile))
        return done

    def _priority(self, priority: int | None) -> int:
        if priority is not None:
            return int(priority)
        waiting = [j.priority for j in self._jobs.values() if j.state in WAITING]
        return max(waiting, default=0) + 1

    def prioritize_jobs(
        self, job_ids: Iterable[int], now: float, *, priority: int | None = None
    ) -> Prioritized:
        done: list[int] = []
        with self._lock:
            value = self._priority(priority)
            for job_id in dict.fromkeys(job_ids):
                job = self._jobs.get(job_id)
                if job is None or job.state in FINAL:
                    continue
                self._jobs[job_id] = replace(job, priority=value, updated_at=now)
                done.append(job_id)
                self._note("prioritized", now, job_id=job_id,
                           detail={"priority": value, "front": priority is None})
        return Prioritized(value, len(done), tuple(done))

    def prioritize_batch(
        self, batch_id: int, now: float, *, priority: int | None = None
    ) -> Prioritized:
        with self._lock:
            value = self._priority(priority)
            changed = 0
            for job in list(self._jobs.values()):
                if job.batch_id == batch_id and job.state not in FINAL:
                    self._jobs[job.id] = replace(job, priority=value, updated_at=now)
                    changed += 1
            self._note("batch_prioritized", now, detail={
                "batch_id": batch_id, "priority": value, "front": priority is None,
                "jobs": changed})
        return Prioritized(value, changed)

    def set_batch_paused(self, batch_id: int, paused: bool, now: float) -> Batch | None:
        with self._lock:
            batch = self._batches.get(batch_id)
            if batch is None:
                return None
            settings = {k: v for k, v in batch.settings.items() if k != "paused"}
            if paused:
                settings["paused"] = True
            batch = replace(batch, settings=settings)
            self._batches[batch_id] = batch
            self._note("batch_paused" if paused else "batch_resumed", now,
                       detail={"batch_id": batch_id})
            return batch

    # -- review (issue 35 item 2) ------------------------------------------------------
    def set_review(self, change: ReviewChange) -> ReviewWritten:
        with self._lock:
            before = self._jobs.get(change.job_id)
            if before is None:
                raise InputError(f"There is no job {change.job_id}.")
            if before.state in REFUSED_STATES:
                raise ReviewRefused()
            if before.review.version != change.seen_version:
                raise ReviewConflict(change.job_id, before.review)
            written = change.applied_to(before.review)
            self._jobs[before.id] = replace(before, review=written)
            self._note(REVIEWED_EVENT, change.now, job_id=before.id,
                       detail=review_detail(change, before.review, written))
            moved: list[int] = []
            if written.decision is Decision.PICK:
                root = reroll_root(self._batches.get(before.batch_id), before.batch_id)
                group = take_group(before.job_key)
                for other in list(self._jobs.values()):
                    if (other.id == before.id or other.review.decision is not Decision.PICK
                            or take_group(other.job_key) != group
                            or reroll_root(self._batches.get(other.batch_id),
                                           other.batch_id) != root):
                        continue
                    new = Review(Decision.NONE, other.review.rating, change.now,
                                 written.decided_by, other.review.version + 1)
                    self._jobs[other.id] = replace(other, review=new)
                    moved.append(other.id)
                    self._note(REVIEWED_EVENT, change.now, job_id=other.id,
                               detail=review_detail(change, other.review, new,
                                                    moved_to=before.id))
        return ReviewWritten(before.id, written, before.review, tuple(moved))

    # -- recovery and audit ------------------------------------------------------------
    def _crash_requeues(self, job_id: int) -> int:
        """Recovery's requeues of the job since its last retry wait, release or user's
        retry (queries.sql, crash_requeues)."""
        n = 0
        for entry in reversed(self._ledger):
            if entry.job_id != job_id:
                continue
            by = entry.detail.get("by")
            if entry.event in ("retry_wait", "released") or (
                    entry.event == "requeued" and by == "user"):
                break
            n += entry.event == "requeued" and by == "recovery"
        return n

    def recover(self, params: RecoverParams) -> RecoveryReport:
        with self._lock:
            leftovers = [
                j for _, j in sorted(self._jobs.items()) if j.state in IN_FLIGHT
                and (not params.only_expired or (j.lease_until or 0) < params.now)
            ]
            report = RecoveryReport()
            now = params.now
            crashes = {job.id: self._crash_requeues(job.id) for job in leftovers}
            for action in plan_recovery(leftovers, params, crashes):
                # What the plan read must still hold (the SQL stores' WHERE): the token,
                # the state and (taking over expired leases only) the expiry. The plan's
                # output checks may call back into this store (the lock is reentrant).
                current = self._jobs.get(action.job.id)
                if (current is None or current.claim_token != action.job.claim_token
                        or current.state != action.job.state
                        or (params.only_expired and not (current.lease_until or 0) < now)):
                    continue
                job = current
                token: str | None = None
                if action.kind == "complete":
                    assert action.file is not None and action.file.sha256 is not None
                    changed = apply_transition(
                        job, "recover_complete", now, output_size=action.file.size,
                        output_sha256=action.file.sha256, output_host=self.host,
                        progress=1.0, finished_at=now)
                elif action.kind in ("reattach", "reconcile"):
                    token = uuid.uuid4().hex
                    changed = apply_transition(
                        job, "recover_reattach", now, to=action.resume_state,
                        claim_token=token, lease_owner=params.instance_id,
                        lease_until=now + params.lease_seconds)
                elif action.kind == "unknown":
                    error_class, label, message = failure_of(action)
                    changed = apply_transition(
                        job, "recover_park", now, error_class=error_class,
                        error_label=label, error_message=message)
                elif action.kind == "fail":
                    error_class, label, message = failure_of(action)
                    changed = apply_transition(
                        job, "recover_fail", now, finished_at=now, error_class=error_class,
                        error_label=label, error_message=message)
                else:
                    changed = apply_transition(job, "recover_requeue", now, run_after=0.0,
                                               attempts=max(job.attempts - 1, 0))
                self._jobs[job.id] = changed
                for note in record_applied(action, report, token):
                    self._note(note.event, now, job_id=job.id, account=job.account,
                               claim_token=note.claim_token, detail=note.detail)
            if params.verify_completed:
                for job in list(self._jobs.values()):
                    if job.state == JobState.COMPLETED and not params.check_output(job).exists:
                        report.missing_outputs.append(job.id)
                        self._note("output_missing", now, job_id=job.id,
                                   detail={"path": job.output_path})
            if params.prune_before is not None:
                before = len(self._ledger)
                newest = self._ledger[-1] if self._ledger else None
                self._ledger = [e for e in self._ledger  # as queries.sql's prune_ledger
                                if e.at >= params.prune_before or e.event == SPEND_EVENT
                                or e is newest]
                report.pruned_ledger_rows = before - len(self._ledger)
            if report.touched or report.pruned_ledger_rows:
                self._note("recovery", now, detail={"instance": params.instance_id,
                                                    **report.as_dict()})
            return report

    def completed_outputs(self) -> list[tuple[int, str, int]]:
        with self._lock:
            return [(j.id, j.output_path, j.output_size or 0)
                    for _, j in sorted(self._jobs.items()) if j.state == JobState.COMPLETED]

    def next_wakeup(self, now: float) -> float | None:
        with self._lock:
            due = [j.run_after for j in self._jobs.values()
                   if j.state == JobState.RETRY_WAIT and j.run_after > now]
            due += [a.cooldown_until for a in self._accounts.values()
                    if a.cooldown_until is not None and a.cooldown_until > now]
            return min(due) if due else None

    def ledger(self, job_id: int | None = None, limit: int | None = None) -> list[LedgerEntry]:
        with self._lock:
            entries = [e for e in self._ledger if job_id is None or e.job_id == job_id]
        return entries[-limit:] if limit else entries

    def ledger_after(self, seq: int, limit: int) -> list[LedgerEntry]:
        with self._lock:
            entries = [e for e in self._ledger if e.seq > seq][:limit]
        return [listed_entry(e) for e in entries]

    def doctor_queries(self, instance_alive: bool) -> dict[str, list[Any]]:
        with self._lock:
            completions: dict[int, int] = {}
            for entry in self._ledger:
                if entry.event == "completed" and entry.job_id is not None:
                    completions[entry.job_id] = completions.get(entry.job_id, 0) + 1
            counts = self.counts()
            over = [(a.name, a.capacity, counts.live_by_account.get(a.name, 0))
                    for a in self._accounts.values()
                    if counts.live_by_account.get(a.name, 0) > a.capacity]
            live = [] if instance_alive else [
                (j.id, str(j.state), j.lease_owner) for j in self._jobs.values()
                if j.state in IN_FLIGHT]
            return {
                "completed_twice": [(k, v) for k, v in completions.items() if v > 1],
                "over_capacity": over,
                "live_claims_after_exit": live,
                "integrity": [],
            }


def _merged(settings: dict[str, Any], patch: dict[str, Any]) -> dict[str, Any]:
    """A JSON merge patch one level deep (SQLite's json_patch): None removes the key."""
    merged = dict(settings)
    for key, value in patch.items():
        if value is None:
            merged.pop(key, None)
        else:
            merged[key] = value
    return merged


def _priced(metadata: dict[str, Any], price: float | None) -> dict[str, Any]:
    """``metadata`` with its ``price`` set (or removed: unknown), as ``route_take`` does."""
    out = {k: v for k, v in metadata.items() if k != "price"}
    if price is not None:
        out["price"] = price
    return out
