"""The journal's policy, written once over thin SQL drivers (issue 20).

:class:`SqlJournal` holds what the SQLite journal (``sqlite.py``) and the team journal on
PostgreSQL (``postgres.py``) do alike: the fenced transitions and their ledger entries
(the spend of an intent, the cost correction of a completion, a render held by another
job), claims (an account's eligibility and room, the spend caps, a hostile row refused),
lease renewal, recovery applied, the user's commands (prioritise, pause, cancel,
requeue), accounts, listing, the ledger's reads and the doctor's queries. It has no
dialect branches: each store is a driver that implements the primitives and hooks of
``sql_driver.py``, and the SQL of a named query is its own dialect's (``sql/`` and
``sql_pg/``; a query of the same name in both files is what keeps this module
dialect-free). Where the two stores really behave differently, the difference is a
primitive or a hook there, and its docstring says why.

Parameters are passed by name, and a driver ignores the names its statement does not use,
so a query may take a value only one dialect needs (``lease_seconds`` beside
``lease_until``: PostgreSQL computes a lease on the server's clock, SQLite from ``now``).
"""

from __future__ import annotations

import functools
import json
import uuid
from collections.abc import Callable, Collection, Iterable, Sequence
from typing import Any

from reelqueue.domain.account_view import (
    MAX_PROBLEM_CHARS,
    AccountView,
    Balance,
    Charging,
    kept_view,
    limits_from_json,
    limits_to_json,
    plain,
    usable_amount,
)
from reelqueue.domain.errors import InputError, RenderAlreadyRecorded
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
from reelqueue.domain.row_limits import (
    MAX_REFUSED_PER_CLAIM,
    ROW_LIMITS,
    ROW_REFUSED,
    refusal_words,
)
from reelqueue.domain.states import AccountStatus, JobState
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
)
from reelqueue.store.provider_limits import gated_models, job_model
from reelqueue.store.queue_limit import check_queue_room
from reelqueue.store.recovery_plan import (
    RecoveryAction,
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
    refusal,
    withdrawn_spend,
    withdrawn_why,
)
from reelqueue.store.sql_driver import (
    CLAIM_IN_STEPS,
    FencedWrite,
    Row,
    RowReaders,
    SqlDriver,
    public_methods,
)


def render_recorded(provider_job_id: str, holder: int) -> RenderAlreadyRecorded:
    return RenderAlreadyRecorded(
        f"Render {provider_job_id} is already recorded for job {holder}; a render goes to "
        "at most one job.")


def _number(value: Any) -> float | None:
    """A JSON number read from a row (a price, a cap), or None (missing, text, a bool)."""
    if isinstance(value, int | float) and not isinstance(value, bool):
        return float(value)
    return None


def view_row(view: AccountView) -> dict[str, Any]:
    """The columns of an ``account_views`` row but its limits (each dialect binds JSON)."""
    return {"account": view.account, "organization_id": view.organization_id,
            "balance_amount": None if view.balance is None else view.balance.amount,
            "balance_unit": None if view.balance is None else view.balance.unit,
            "read_at": view.read_at, "read_by": view.read_by, "problem": view.problem}


def view_of(row: Row) -> AccountView:
    """An ``account_views`` row read back (the team database is untrusted: a figure that
    is not one is left out)."""
    amount, unit = usable_amount(row["balance_amount"]), row["balance_unit"]
    balance = (Balance(amount, plain(unit, 20)) if amount is not None and isinstance(unit, str)
               else None)
    org, problem = row["organization_id"], row["problem"]
    return AccountView(str(row["account"]), balance, limits_from_json(row["limits"]),
                       plain(org, 200) if isinstance(org, str) else None,
                       float(row["read_at"]), plain(str(row["read_by"] or ""), 200),
                       plain(problem, MAX_PROBLEM_CHARS) if isinstance(problem, str) else None)


def _params(value: Any) -> dict[str, Any]:
    return value if isinstance(value, dict) else {}


class SqlJournal(SqlDriver):
    """The policy of a journal kept in SQL, over a driver's primitives and hooks
    (:class:`~reelqueue.store.sql_driver.SqlDriver`)."""

    # -- batches and jobs --------------------------------------------------------------
    def create_batch(self, spec: BatchSpec, now: float) -> Batch:
        with self._write():
            batch_id = int(self._scalar(
                "insert_batch", name=spec.name, source_path=spec.source_path,
                output_dir=spec.output_dir, max_attempts=spec.max_attempts,
                settings=self._json(spec.settings), now=now))
            self._ledger("batch_created", now, detail={"batch_id": batch_id, "name": spec.name})
            batch = self.get_batch(batch_id)
        assert batch is not None
        return batch

    def add_jobs(
        self, batch_id: int, specs: Sequence[JobSpec], now: float,
        max_waiting: int | None = None,
    ) -> AddJobsResult:
        with self._write():
            batch = self.get_batch(batch_id)
            if batch is None:
                raise InputError(f"There is no batch {batch_id}.")
            present = self._present_job_keys([s.job_key for s in specs])
            # Repeated keys inside one import count once.
            unique: dict[str, JobSpec] = {}
            for spec in specs:
                if spec.job_key not in present:
                    unique.setdefault(spec.job_key, spec)
            if max_waiting is not None:
                self._lock_queue()
                check_queue_room(int(self._scalar("count_waiting")), len(unique),
                                 max_waiting)
            ids = self._insert_jobs(batch, list(unique.values()), now)
            added = len(ids)
            self._ledger("imported", now, detail={
                "batch_id": batch_id, "added": added, "already_present": len(specs) - added,
            })
        return AddJobsResult(added=added, already_present=len(specs) - added,
                             job_ids=tuple(ids))

    def get_batch(self, batch_id: int) -> Batch | None:
        row = self._one("get_batch", id=batch_id)
        return self.ROWS.batch(row) if row else None

    def list_batches(self) -> list[Batch]:
        return [self.ROWS.batch(r) for r in self._all("list_batches")]

    def newest_batch_id(self) -> int | None:
        row = self._one("newest_batch_id")
        return None if row is None or row["id"] is None else int(row["id"])

    def get_job(self, job_id: int) -> Job | None:
        row = self._one("get_job", id=job_id)
        return self.ROWS.job(row) if row else None

    def list_jobs(
        self, batch_id: int | None = None, states: Iterable[JobState] | None = None,
        limit: int | None = None, offset: int = 0,
    ) -> list[Job]:
        return [self.ROWS.job(r) for r in self._all(
            self._jobs_query(batch_id, states), batch_id=batch_id,
            states=None if states is None else self._list(str(s) for s in states),
            limit=self.NO_LIMIT if limit is None else limit,
            offset=offset if limit is not None else 0)]

    def job_ids_ordered(
        self, order: str, descending: bool = False, limit: int | None = None, offset: int = 0,
    ) -> list[int]:
        if order not in JOB_ORDERS:
            raise ValueError(f"unknown job order {order!r}; one of {', '.join(JOB_ORDERS)}")
        # The key is a named expression from queries.sql, picked from a fixed list.
        sql = self._q["job_ids_ordered"].format(
            key=self._q[f"job_order_{order}"], direction="DESC" if descending else "ASC",
            nulls="NULLS LAST" if descending else "NULLS FIRST")
        return self._ids_sql(sql, limit=self.NO_LIMIT if limit is None else limit,
                             offset=offset)

    def count_waiting(self) -> int:
        return int(self._scalar("count_waiting"))

    def takeovers(self) -> dict[str, dict[str, int]]:
        with self._reading():
            rows = self._all("takeovers")
        out: dict[str, dict[str, int]] = {}
        for r in rows:
            if isinstance(r["came_from"], str):
                out.setdefault(str(r["account"]), {})[r["came_from"]] = int(r["n"])
        return out

    def recent_render_times(self, limit: int = 2_000) -> list[tuple[str, float]]:
        with self._reading():
            rows = self._all("recent_render_times", limit=limit)
        return [(render_kind(str(r["provider"]), _params(self.ROWS.json(r["params"]))),
                 float(r["seconds"])) for r in rows if isinstance(r["seconds"], int | float)]

    def counts(self) -> Counts:
        with self._reading():
            by_state = {r["state"]: r["count"] for r in self._all("counts_by_state")}
            live = {r["account"]: r["count"] for r in self._all("live_by_account")}
        return Counts(by_state=by_state, live_by_account=live)

    def update_batch_settings(
        self, batch_id: int, patch: dict[str, Any], now: float,
    ) -> Batch | None:
        with self._write():
            if not self._exec("update_batch_settings", id=batch_id, patch=self._json(patch)):
                return None
            self._ledger("batch_changed", now, detail={"batch_id": batch_id, **patch})
            return self.get_batch(batch_id)

    # -- accounts ----------------------------------------------------------------------
    def add_account(self, spec: AccountSpec, now: float) -> Account:
        with self._write():
            if self._account_taken(spec.name) or not self._exec(
                    "insert_account", name=spec.name, provider=spec.provider,
                    capacity=spec.capacity, base_url=spec.base_url, key_ref=spec.key_ref,
                    settings=self._json(spec.settings), now=now):
                raise InputError(f"An account named {spec.name!r} already exists.")
            self._ledger("account_added", now, account=spec.name,
                         detail={"provider": spec.provider, "capacity": spec.capacity})
            account = self.get_account(spec.name)
        assert account is not None
        return account

    def remove_account(self, name: str, now: float) -> None:
        with self._write():
            if not self._lock_account(name):
                raise InputError(f"There is no account named {name!r}.")
            live = int(self._scalar("live_count", account=name))
            if live:
                raise InputError(
                    f"Account {name!r} has {live} renders in flight; wait for them or "
                    "disable the account first."
                )
            if not self._exec("delete_account", name=name):
                raise InputError(f"There is no account named {name!r}.")
            self._exec("delete_account_view", account=name)
            self._ledger("account_removed", now, account=name)

    def get_account(self, name: str) -> Account | None:
        row = self._one("get_account", name=name)
        return self.ROWS.account(row) if row else None

    def list_accounts(self) -> list[Account]:
        return [self.ROWS.account(r) for r in self._all("list_accounts")]

    def put_account_view(self, view: AccountView) -> bool:
        """Keep ``view`` as its account's row; False when a newer reading is kept."""
        view = kept_view(view)  # bounded and plain, as every store keeps it
        with self._write(durable=False):  # advice only: a view lost is read again
            return bool(self._exec("put_account_view", **view_row(view),
                                   limits=self._json(json.loads(limits_to_json(view.limits)))))

    def account_views(self) -> list[AccountView]:
        with self._reading():
            return [view_of(row) for row in self._all("list_account_views")]

    def update_account(
        self, name: str, now: float, *, capacity: int | None = None,
        enabled: bool | None = None, base_url: str | None = None,
        settings: dict[str, Any] | None = None,
    ) -> Account:
        if capacity is not None and capacity < 1:
            raise InputError("An account's limit must be at least 1.")
        with self._write():
            changed = self._exec("update_account", name=name, capacity=capacity,
                                 enabled=enabled, base_url=base_url,
                                 settings=None if settings is None else self._json(settings))
            if not changed:
                raise InputError(f"There is no account named {name!r}.")
            self._ledger("account_changed", now, account=name, detail={
                k: v for k, v in {"capacity": capacity, "enabled": enabled,
                                  "base_url": base_url, "settings": settings}.items()
                if v is not None})
            account = self.get_account(name)
        assert account is not None
        return account

    def set_account_status(
        self, name: str, status: AccountStatus, now: float, *,
        detail: str | None = None, cooldown_until: float | None = None,
    ) -> None:
        with self._write():
            self._exec("set_account_status", name=name, status=str(status), detail=detail,
                       cooldown_until=cooldown_until, now=now)
            self._ledger("account_status", now, account=name, detail={
                "status": str(status), "detail": detail, "cooldown_until": cooldown_until})

    def live_count(self, account: str) -> int:
        return int(self._scalar("live_count", account=account))

    # -- claims ------------------------------------------------------------------------
    def _account_with_room(self, params: ClaimParams) -> Account | None:
        """The claim's first step: the account, when it may take one more render now
        (usable, not cooling down, a free slot), held so that no other claim on it can
        count the same free slot (``claim_account``, :meth:`_claim_room`)."""
        row = self._one("claim_account", name=params.account, now=params.now)
        if row is None:
            return None
        account = self.ROWS.account(row)
        if not account_usable(account):
            return None
        room = self._claim_room(row, params)
        if room is None or room["cooling"] or int(room["live"]) >= account.capacity:
            return None
        return account

    def renew_leases(self, instance_id: str, now: float, lease_seconds: float,
                     tokens: Collection[str] | None = None,
                     clock_offset: float | None = None) -> int:
        # Not fsynced: a renewal lost in a power cut only shortens a lease. SQLite: the
        # caller's clock (one machine); PostgreSQL: the server's, with the instance's
        # heartbeat, lease length and clock offset in its registry, in the same statement.
        with self._write(durable=False):
            return len(self._all(
                "renew_leases", owner=instance_id, lease_until=now + lease_seconds,
                lease_seconds=lease_seconds, clock_offset=clock_offset,
                tokens=None if tokens is None else self._list(tokens)))

    def claim_next_job(self, params: ClaimParams) -> Claim | None:
        token = uuid.uuid4().hex
        for _ in range(MAX_REFUSED_PER_CLAIM):
            row = self._claim_at_once(params, token)
            if row is CLAIM_IN_STEPS:
                break
            if row is None or not row["room_ok"]:
                return None
            if row["refused_id"] is None:  # else a hostile row refused: the next one
                if row["id"] is not None:
                    return claim_of(self.ROWS.job(row), params.account, token)
                if row["candidate_id"] is None and not self._scalar("any_routed_waiting"):
                    return None
                break  # a spend cap has to look at the candidate, or a routed job may
                # move here (issue 24): claimed in steps
        else:
            return None
        return self._claim_in_steps(params, token)

    def _claim_steps(self, params: ClaimParams, token: str, tried: list[int]) -> Claim | None:
        """A claim inside the driver's claim transaction: the account with room, the next
        job no spend cap refuses, the job marked CLAIMED under ``token`` (its id appended
        to ``tried`` first, for a driver that reads back a lost commit) and the ledger
        entry."""
        account = self._account_with_room(params)
        if account is None:
            return None
        view_row = self._one("claim_view", account=account.name, now=params.now)
        gated = self._gated_models(account, params, view_row)
        left = self._balance_left(account, params, view_row)
        for _ in range(MAX_REFUSED_PER_CLAIM):
            candidate = self._spend_checked_candidate(account, params, gated, left)
            if candidate is None:
                candidate = self._routed_candidate(account, params, gated, left)
            if candidate is None:
                return None
            problem = self._one("row_problem", id=candidate, **ROW_LIMITS)
            if problem is None or problem["problem"] is None:
                break
            self._refuse_row(candidate, str(problem["problem"]), params)
        else:
            return None
        tried.append(candidate)
        claimed = self._one(
            "claim_job", id=candidate, account=account.name, token=token,
            owner=params.instance_id, lease_until=params.now + params.lease_seconds,
            lease_seconds=params.lease_seconds, now=params.now)
        if claimed is None:  # the claim's lock holds the row: cannot happen; a guard
            return None
        return self._claimed(claimed, account.name, token, params)

    def _gated_models(self, account: Account, params: ClaimParams,
                      row: Row | None) -> list[str]:
        """The models the account may start no new render of now, by its view's limits
        (``row``: claim_view; store/provider_limits.py), counted in the claim's
        transaction."""
        if row is None:
            return []
        common = {"account": account.name, "default_model": params.default_model}
        return gated_models(
            view_of(row), float(row["now"]),
            live_of=lambda model: int(self._scalar("live_of_model", model=model, **common)),
            created_since=lambda model, since: int(self._scalar(
                "creates_since", model=model, since=since, **common)))

    def _balance_left(self, account: Account, params: ClaimParams,
                      row: Row | None) -> BalanceLeft | None:
        """The account's published balance less what it cannot include yet (``row``:
        claim_view; store/balance.py), read in the claim's transaction."""
        if row is None:
            return None

        def pending_usd(since: float, every_live: bool) -> tuple[float, int]:
            found = self._one("pending_usd", account=account.name, since=since,
                              every_live=every_live)
            return (0.0, 0) if found is None else (float(found["usd"]),
                                                   int(found["unpriced"]))

        return balance_left(view_of(row), float(row["now"]),
                            params.charging.get(account.provider), pending_usd)

    def balance_left(self, account: str, now: float,
                     charging: Charging | None) -> BalanceLeft | None:
        with self._reading():
            found = self._one("get_account", name=account)
            if found is None or charging is None:
                return None
            row = self._one("claim_view", account=account, now=now)
            provider = str(found["provider"])
            return self._balance_left(self.ROWS.account(found), ClaimParams(
                account, "", now, 0.0, charging={provider: charging}), row)

    def _refuse_row(self, job_id: int, problem: str, params: ClaimParams) -> None:
        """Fail a job whose row is over a bound of domain/row_limits.py (it was not written
        by ReelQueue), in the claim's transaction: the transition ``row_refused``."""
        self._exec("refuse_row", id=job_id, now=params.now, message=refusal_words(problem),
                   **ROW_LIMITS)
        self._ledger(ROW_REFUSED, params.now, job_id=job_id,
                     detail={"problem": problem, "by": params.instance_id})

    def _claimed(self, row: Row, account: str, token: str, params: ClaimParams) -> Claim:
        """The claim just written (``row``: the job's row after it), with its ledger
        entry, in the claim's transaction."""
        job = self.ROWS.job(row)
        self._ledger("claimed", params.now, job_id=job.id, account=account,
                     claim_token=token, detail=claimed_detail(params.instance_id, job))
        return claim_of(job, account, token)

    # -- routing (issue 24) ------------------------------------------------------------
    def _routed_candidate(self, account: Account, params: ClaimParams,
                          gated: Collection[str] = (),
                          left: BalanceLeft | None = None) -> int | None:
        """A routed job this account takes over (store/routing.py), moved to its provider
        with the ``handed_over`` entry, in the claim's transaction; or None. A routed job
        whose route is over ``max_route_bytes`` is not fetched: its id is returned as it
        is, for the caller's ``row_problem`` to refuse."""
        if not self._scalar("any_routed_waiting"):
            return None  # no routed job at all (the partial index answers at once)
        free = free_accounts((self.ROWS.account(r), int(r["live"]), bool(r["cooling"]))
                             for r in self._all("accounts_room", now=params.now))
        # Each account's and batch's committed spend read once per claim, however many
        # candidates ask.
        spent: dict[str, float] = {}
        batch_spent: dict[int, float] = {}

        def committed(name: str) -> float:
            if name not in spent:
                spent[name] = self._account_committed(name, params.day_start)
            return spent[name]

        def batch_committed(batch_id: int) -> float:
            if batch_id not in batch_spent:
                batch_spent[batch_id] = self._batch_committed(batch_id)
            return batch_spent[batch_id]

        # Each other account's balance as its own claim would reckon it (store/balance.py),
        # read once per claim: a better-ranked account whose balance cannot pay for the
        # job does not hold it (issue 32 item 4: it moves here, a recorded hand-over).
        balances: dict[str, BalanceLeft | None] = {account.name: left}

        def balance_of(other: Account) -> BalanceLeft | None:
            if other.name not in balances:
                balances[other.name] = self._balance_left(other, params, self._one(
                    "claim_view", account=other.name, now=params.now))
            return balances[other.name]

        def capped(other: Account) -> bool:
            cap = cap_of(other.settings, "daily_cap")
            return (cap is not None and committed(other.name) >= cap - SLACK) or dry(
                balance_of(other))

        def may_create(other: Account | None, row: RoutedRow, candidate: Candidate) -> bool:
            if other is None and job_model(candidate.params.get("model"),
                                           params.default_model) in gated:
                return False  # its model is at the provider's limit here
            taker = account if other is None else other
            if balance_refusal(balance_of(taker), needs_create=True, price=candidate.price):
                return False  # the taker's balance cannot pay for it
            return refusal(
                needs_create=True, price=candidate.price, batch_cap=row.batch_cap,
                batch_committed=functools.partial(batch_committed, row.batch_id),
                account_cap=cap_of(taker.settings, "daily_cap"),
                account_committed=functools.partial(committed, taker.name),
            ) is None

        # First the jobs no surely-free provider outranks; then, for a batch cap that
        # refuses a better candidate's price, the first ones without that filter.
        pick = None
        for outranking in (surely_free(free, capped), []):
            found = self._all("routed_waiting", provider=account.provider,
                              needle=needle(account.provider), now=params.now,
                              free=self._list(outranking), limit=ROUTED_LOOK, **ROW_LIMITS)
            oversized = next((int(r["id"]) for r in found if r["oversized"]), None)
            if oversized is not None:
                return oversized  # not fetched: the claim refuses its row (row_problem)
            rows = [RoutedRow(int(r["id"]), int(r["batch_id"]), str(r["provider"]),
                              r["route"], _number(r["max_spend"]), r["seed"])
                    for r in found]
            pick = pick_routed(account.provider, rows, free, may_create) if rows else None
            if pick is not None or not outranking:
                break
        if pick is None:
            return None
        moved = self._one("route_take", id=pick.job_id, provider=account.provider,
                          params=self._json(dict(pick.params)),
                          price=pick.candidate.price, now=params.now)
        if moved is None:  # the row changed under the claim's lock: cannot happen; a guard
            return None
        self._ledger("handed_over", params.now, job_id=pick.job_id, account=account.name,
                     detail=pick.detail())
        return pick.job_id

    def hand_over(self, token: ClaimToken, error: JobError, now: float, *,
                  route: Route, to: Candidate, came_from: str) -> bool:
        return self._transition(
            "fenced_hand_over", "handed_over", token, now,
            error_detail(error, **{"at": "refusal", "from": came_from, "to": to.provider,
                                   "price": to.price,
                                   "params": dict(to.params)}),
            provider=to.provider, params=self._json(dict(to.params)), price=to.price,
            route=route.to_json(), route_order=route.order_key(),
            error_class=error.error_class, error_label=error.label,
            error_message=error.message,
        )

    # -- spend caps --------------------------------------------------------------------
    def _spend_checked_candidate(self, account: Account, params: ClaimParams,
                                 gated: Collection[str] = (),
                                 left: BalanceLeft | None = None) -> int | None:
        """The next claimable job that no spend cap refuses and whose model (``gated``:
        none of those) the provider allows one more render of (inside the claim's write
        transaction, so no other claim can pass a cap or a limit at the same time)."""
        account_cap = cap_of(account.settings, "daily_cap")
        skip_models = self._list(list(gated))

        def next_candidate(creates: bool, skip: list[int]) -> Row | None:
            return self._one("next_claimable", provider=account.provider, now=params.now,
                             account=account.name, creates=creates,
                             skip_batches=self._list(skip), skip_models=skip_models,
                             default_model=params.default_model)

        def refused_of(row: Row) -> Refusal | None:
            needs_create = row["provider_job_id"] is None and row["client_token"] is None
            return balance_refusal(left, needs_create=needs_create,
                                   price=_number(row["price"])) or refusal(
                needs_create=needs_create,
                price=_number(row["price"]),
                batch_cap=_number(row["max_spend"]),
                batch_committed=functools.partial(self._batch_committed, int(row["batch_id"])),
                account_cap=account_cap,
                account_committed=functools.partial(self._account_committed, account.name,
                                                    params.day_start),
            )

        row = first_unrefused(next_candidate, refused_of, lambda r: int(r["batch_id"]),
                              lambda: int(self._scalar("count_batches")))
        return None if row is None else int(row["id"])

    def _batch_committed(self, batch_id: int) -> float:
        self._lock_batch(batch_id)
        return (float(self._scalar("spend_of_batch", batch=batch_id))
                + float(self._scalar("reserved_of_batch", batch=batch_id)))

    def _account_committed(self, account: str, day_start: float) -> float:
        return (float(self._scalar("spend_of_account", account=account, day_start=day_start))
                + float(self._scalar("reserved_of_account", account=account)))

    def spend_summary(self, now: float, day_start: float) -> SpendSummary:
        with self._reading():
            batches: list[BatchSpend] = []
            for row in self._all("capped_batches"):
                if not isinstance(row["max_spend"], int | float):
                    continue
                cap = float(row["max_spend"])
                spent = float(self._scalar("spend_of_batch", batch=row["id"]))
                reserved = float(self._scalar("reserved_of_batch", batch=row["id"]))
                waiting = int(self._scalar("waiting_creates_of_batch", batch=row["id"],
                                           room=cap - spent - reserved + SLACK))
                batch = self.get_batch(int(row["id"]))
                batches.append(BatchSpend(int(row["id"]), batch.name if batch else "",
                                          spent, reserved, cap, waiting))
            accounts: list[AccountSpend] = []
            for account in self.list_accounts():
                acap = cap_of(account.settings, "daily_cap")
                spent = float(self._scalar("spend_of_account", account=account.name,
                                           day_start=day_start))
                reserved = float(self._scalar("reserved_of_account", account=account.name))
                waiting = 0 if acap is None else int(self._scalar(
                    "waiting_creates_of_account", account=account.name,
                    provider=account.provider, room=acap - spent - reserved + SLACK))
                accounts.append(AccountSpend(account.name, spent, reserved, acap, waiting))
            for row in self._all("removed_accounts_spend", day_start=day_start):
                accounts.append(AccountSpend(str(row["account"]), float(row["usd"]), 0.0,
                                             None, 0, removed=True))
        return SpendSummary(tuple(batches), tuple(accounts))

    def to_go(self) -> tuple[ToGo, ...]:
        with self._reading():
            rows = self._all("to_go_by_provider")
        groups = [ToGo(str(row["provider"]), row["account"],
                       round(float(row["usd"] or 0.0), 6), int(row["priced"]),
                       int(row["unpriced"]))
                  for row in rows]
        # Sorted here, not by the server's collation: every store lists them alike.
        return tuple(sorted(groups, key=lambda g: (g.provider, g.account or "")))

    # -- fenced transitions ------------------------------------------------------------
    def _transition(
        self, query: str, event: str, token: ClaimToken, now: float,
        detail: dict[str, Any] | None = None, *, durable: bool = True,
        written: dict[str, Any] | None = None, **params: Any,
    ) -> bool:
        """One fenced transition (:class:`FencedWrite`): whether it was written."""
        write = FencedWrite(query, event, token, now, detail, params, durable,
                            written=written)
        return self._fenced_write(write, functools.partial(self._fenced_steps, write)) \
            is not None

    def _fenced_steps(
        self, write: FencedWrite, *, guard: Callable[[], Row | None] | None = None,
        before: str | None = None,
        then: Callable[[Row | None, Row], dict[str, Any] | None] | None = None,
        why: Callable[[], dict[str, Any]] | None = None,
    ) -> Row | None:
        """A fenced write as steps, inside the driver's write transaction: the update,
        then its ledger entry, or the ``fenced_out`` entry when it changed nothing.

        ``guard``: a read that, when it answers a row, stops the write (that row is the
        answer; nothing is written). ``before``: a named read of the job's row before the
        update, handed to ``then``. ``then``: the detail of a ``spend`` entry written after
        the event (None: none). ``why``: what a refusal's ``fenced_out`` entry adds. Only a
        refusal reads the job again, for its account."""
        token, now = write.token, write.now
        if guard is not None and (held := guard()) is not None:
            return held
        seen = self._one(before, id=token.job_id) if before else None
        row = self._one(write.query, id=token.job_id, token=token.token, now=now,
                        **write.params)
        if row is None:
            account = self._scalar("job_account", id=token.job_id)
            self._ledger("fenced_out", now, job_id=token.job_id, account=account,
                         claim_token=token.token,
                         detail={"write": write.query.removeprefix("fenced_"),
                                 **(why() if why else {})})
            return None
        self._ledger(write.event, now, job_id=token.job_id, account=row["account"],
                     claim_token=token.token, detail=write.detail)
        spend = then(seen, row) if then else None
        if spend is not None:
            self._ledger(SPEND_EVENT, now, job_id=token.job_id, account=row["account"],
                         claim_token=token.token, detail=spend)
        return row

    def mark_submitting(self, token: ClaimToken, client_token: str, now: float, *,
                        min_lease_seconds: float | None = None) -> bool:
        # The intent and its spend are one transaction, durable: from here the render may
        # be billed. A refusal while the claim held says the lease was short.
        write = FencedWrite("fenced_mark_submitting", "submitting", token, now,
                            {"client_token": client_token},
                            {"client_token": client_token, "min_lease": min_lease_seconds},
                            statement="one_trip_submitting")
        return self._fenced_write(write, functools.partial(
            self._fenced_steps, write, before="intent_before",
            then=lambda seen, _row: intent_spend(
                self.ROWS.json(seen["metadata"]) if seen else {},
                seen["client_token"] if seen else None, client_token),
            why=lambda: short_lease(self._scalar("submit_refusal", id=token.job_id,
                                                 token=token.token, now=now),
                                    min_lease_seconds))) is not None

    def record_submitted(self, token: ClaimToken, provider_job_id: str, now: float) -> bool:
        # Refused, writing nothing, when another job of this job's provider holds the
        # render (render_holder; the unique index jobs_render_once is the last word,
        # between two machines too).
        write = FencedWrite("fenced_record_submitted", "submitted", token, now,
                            {"provider_job_id": provider_job_id},
                            {"provider_job_id": provider_job_id},
                            statement="one_trip_submitted")
        row = self._fenced_write(write, functools.partial(
            self._fenced_steps, write, guard=functools.partial(
                self._one, "render_holder", id=token.job_id,
                provider_job_id=provider_job_id)))
        if row is not None and row["holder"] is not None:
            raise render_recorded(provider_job_id, row["holder"])
        return row is not None

    def mark_completed(
        self, token: ClaimToken, *, size: int, sha256: str, cost: float | None, now: float
    ) -> bool:
        # With the provider's reported cost, a spend entry corrects the price its intent
        # wrote (in the same transaction).
        write = FencedWrite("fenced_mark_completed", "completed", token, now,
                            {"size": size, "sha256": sha256, "cost": cost},
                            {"size": size, "sha256": sha256,
                             "cost": None if cost is None else float(cost),
                             "host": self.host, "slack": SLACK},
                            statement="one_trip_completed")
        return self._fenced_write(write, functools.partial(
            self._fenced_steps, write,
            then=lambda _seen, row: cost_correction(self.ROWS.json(row["metadata"]),
                                                    cost))) is not None

    def _refuse_recorded_render(self, job_id: int, provider_job_id: str) -> None:
        """RenderAlreadyRecorded when another job of this job's provider holds the render
        (inside the caller's write transaction; the unique index jobs_render_once is the
        last word, between two machines too)."""
        row = self._one("render_holder", id=job_id, provider_job_id=provider_job_id)
        if row is not None:
            raise render_recorded(provider_job_id, row["holder"])

    def forget_submission(self, token: ClaimToken, now: float, detail: dict[str, Any],
                          event: str = "reconciled_absent") -> bool:
        # Nothing reached the provider: the intent's price is given back in the same
        # transaction (the create this claim sends writes its own).
        write = FencedWrite("fenced_forget_submission", event, token, now, detail,
                            {"why": withdrawn_why(event)}, statement="one_trip_forget")
        return self._fenced_write(write, functools.partial(
            self._fenced_steps, write, before="intent_before",
            then=lambda seen, _row: withdrawn_spend(
                self.ROWS.json(seen["metadata"]) if seen else {},
                seen["client_token"] if seen else None, event))) is not None

    def unresolved_submissions(self, account: str) -> list[tuple[Job, float | None]]:
        return [(self.ROWS.job(r), r["intent_at"])
                for r in self._all("unresolved_submissions", account=account)]

    def known_provider_job_ids(self, provider: str, account: str,
                               ids: Sequence[str]) -> set[str]:
        if not ids:
            return set()
        return {r["provider_job_id"] for r in self._all(
            "known_provider_job_ids", provider=provider, account=account,
            ids=self._list(ids))}

    def attach_render(self, job_id: int, provider_job_id: str, now: float) -> bool:
        with self._write():
            row = self._one("get_job_for_update", id=job_id)
            self._refuse_recorded_render(job_id, provider_job_id)
            if row is None or not self._exec("attach_render", id=job_id, now=now,
                                             provider_job_id=provider_job_id):
                return False
            self._ledger("resolved_by_user", now, job_id=job_id, account=row["account"],
                         detail={"provider_job_id": provider_job_id, "from": row["state"],
                                 "client_token": row["client_token"]})
            return True

    # "resumed" and "remote_status" may repeat for one claim token: whether they were
    # written is read from the row (``written``), not from the ledger.
    def mark_rendering(self, token: ClaimToken, now: float) -> bool:
        return self._transition("fenced_mark_rendering", "resumed", token, now,
                                written={"state": "RENDERING"})

    def record_progress(
        self, token: ClaimToken, sub_status: str, progress: float | None, now: float
    ) -> bool:
        return self._transition("fenced_record_progress", "remote_status", token, now,
                                {"sub_status": sub_status}, durable=False,
                                written={"state": "RENDERING", "sub_status": sub_status,
                                         "progress": progress},
                                sub_status=sub_status, progress=progress)

    def mark_downloading(self, token: ClaimToken, now: float, *,
                         output_path: str | None = None, part: str | None = None) -> bool:
        return self._transition("fenced_mark_downloading", "downloading", token, now,
                                downloading_detail(output_path, part), durable=False,
                                output_path=output_path, part=part)

    def record_download(self, token: ClaimToken, *, size: int, sha256: str,
                        now: float) -> bool:
        # Not fsynced (docs/design-notes.md, refinements 8 and 14): a process that dies
        # keeps it; only a power cut before the next durable commit loses it, and then the
        # render is read again beside the unrecorded file, never created again.
        return self._transition("fenced_record_download", "downloaded", token, now,
                                {"size": size, "sha256": sha256}, durable=False,
                                written={"state": "DOWNLOADING", "output_sha256": sha256},
                                size=size, sha256=sha256)

    def set_retry_wait(
        self, token: ClaimToken, error: JobError, run_after: float, now: float, *,
        keep_provider_job: bool,
    ) -> bool:
        return self._transition(
            "fenced_set_retry_wait", "retry_wait", token, now,
            error_detail(error, run_after=run_after, keeps_render=keep_provider_job),
            run_after=run_after, keep=bool(keep_provider_job), error_class=error.error_class,
            error_label=error.label, error_message=error.message,
        )

    def release_to_queue(
        self, token: ClaimToken, error: JobError, now: float, *,
        run_after: float | None = None, keep_submission: bool = False,
    ) -> bool:
        return self._transition(
            "fenced_release_to_queue", "released", token, now,
            error_detail(error, **({"keeps_submission": True} if keep_submission else {})),
            run_after=float(run_after or 0.0), error_class=error.error_class,
            error_label=error.label, error_message=error.message,
            keep_submission=bool(keep_submission),
        )

    def mark_failed(self, token: ClaimToken, error: JobError, now: float, *,
                    drop_render: bool = False) -> bool:
        return self._transition(
            "fenced_mark_failed", "failed", token, now,
            error_detail(error, **({"dropped_render": True} if drop_render else {})),
            error_class=error.error_class, error_label=error.label,
            error_message=error.message, drop_render=bool(drop_render),
        )

    def park_job(self, token: ClaimToken, error: JobError, now: float) -> bool:
        return self._transition(
            "fenced_park", "parked", token, now,
            error_detail(error),
            error_class=error.error_class, error_label=error.label,
            error_message=error.message,
        )

    def note(
        self, event: str, now: float, *, job_id: int | None = None,
        account: str | None = None, claim_token: str | None = None,
        detail: dict[str, Any] | None = None,
    ) -> None:
        with self._write():
            self._ledger(event, now, job_id=job_id, account=account,
                         claim_token=claim_token, detail=detail)

    # -- user commands -----------------------------------------------------------------
    def cancel_jobs(self, job_ids: Iterable[int], now: float) -> list[int]:
        done: list[int] = []
        with self._write():
            for job_id in job_ids:
                row = self._one("get_job_for_update", id=job_id)
                if row is None:
                    continue
                if self._exec("cancel_job", id=job_id, now=now):
                    done.append(job_id)
                    self._ledger("cancelled", now, job_id=job_id, account=row["account"],
                                 claim_token=row["claim_token"],
                                 detail={"from": row["state"],
                                         "provider_job_id": row["provider_job_id"]})
        return done

    def requeue_jobs(
        self, job_ids: Iterable[int], now: float, *, new_seed: int | None = None,
        reconcile: bool = True,
    ) -> list[int]:
        done: list[int] = []
        with self._write():
            for job_id in job_ids:
                row = self._one("get_job_for_update", id=job_id)
                keep = new_seed is None
                if row is not None and self._exec("requeue_job", id=job_id, now=now,
                                                  seed=new_seed, keep=keep,
                                                  reconcile=reconcile):
                    done.append(job_id)
                    self._ledger("requeued", now, job_id=job_id,
                                 detail=requeued_detail(row, keep=keep, new_seed=new_seed,
                                                        reconcile=reconcile))
        return done

    def _priority(self, priority: int | None) -> int:
        if priority is not None:
            return int(priority)
        return int(self._scalar("front_priority"))

    def prioritize_jobs(
        self, job_ids: Iterable[int], now: float, *, priority: int | None = None
    ) -> Prioritized:
        done: list[int] = []
        with self._write():
            value = self._priority(priority)
            for job_id in dict.fromkeys(job_ids):
                if self._exec("set_job_priority", id=job_id, priority=value, now=now):
                    done.append(job_id)
                    self._ledger("prioritized", now, job_id=job_id,
                                 detail={"priority": value, "front": priority is None})
        return Prioritized(value, len(done), tuple(done))

    def prioritize_batch(
        self, batch_id: int, now: float, *, priority: int | None = None
    ) -> Prioritized:
        with self._write():
            value = self._priority(priority)
            changed = self._exec("set_batch_priority", batch_id=batch_id, priority=value,
                                 now=now)
            self._ledger("batch_prioritized", now, detail={
                "batch_id": batch_id, "priority": value, "front": priority is None,
                "jobs": changed})
        return Prioritized(value, changed)

    def set_batch_paused(self, batch_id: int, paused: bool, now: float) -> Batch | None:
        with self._write():
            if not self._exec("set_batch_paused", id=batch_id, paused=bool(paused)):
                return None
            self._ledger("batch_paused" if paused else "batch_resumed", now,
                         detail={"batch_id": batch_id})
            return self.get_batch(batch_id)

    # -- review (issue 35 item 2) ------------------------------------------------------
    def set_review(self, change: ReviewChange) -> ReviewWritten:
        """Write a reviewer's change to a take (domain/review.py), compare-and-set on the
        version the reviewer saw, with its ``reviewed`` ledger entry; a pick takes the pick
        of the other takes of its group in the same transaction. ReviewRefused for a
        failed or cancelled take, ReviewConflict when another reviewer changed it
        meanwhile, InputError for a job that does not exist."""
        job = self.get_job(change.job_id)
        if job is None:
            raise InputError(f"There is no job {change.job_id}.")
        root = reroll_root(self.get_batch(job.batch_id), job.batch_id)
        with self._write():
            self._lock_batch(root)  # one reviewer of a batch at a time (its picks)
            before = self.get_job(change.job_id)
            assert before is not None  # jobs are never deleted
            if before.state in REFUSED_STATES:
                raise ReviewRefused()
            after = change.applied_to(before.review)
            row = self._one("set_review", id=change.job_id, seen=change.seen_version,
                            decision=str(after.decision), rating=after.rating,
                            now=change.now, by=after.decided_by)
            if row is None:
                raise ReviewConflict(change.job_id, before.review)
            written = self.ROWS.job(row).review
            self._ledger(REVIEWED_EVENT, change.now, job_id=change.job_id,
                         detail=review_detail(change, before.review, written))
            moved: list[int] = []
            if written.decision is Decision.PICK:
                group = take_group(before.job_key)
                for other in self._all("family_picks", id=change.job_id, root=root):
                    if take_group(str(other["job_key"])) != group:
                        continue
                    version = self._scalar("move_pick", id=other["id"], now=change.now,
                                           by=after.decided_by)
                    if version is None:
                        continue
                    moved.append(int(other["id"]))
                    old = Review(Decision.PICK, other["rating"], None, None,
                                 int(version) - 1)
                    new = Review(Decision.NONE, other["rating"], change.now,
                                 after.decided_by, int(version))
                    self._ledger(REVIEWED_EVENT, change.now, job_id=int(other["id"]),
                                 detail=review_detail(change, old, new,
                                                      moved_to=change.job_id))
        return ReviewWritten(change.job_id, written, before.review, tuple(moved))

    # -- recovery ----------------------------------------------------------------------
    def recover(self, params: RecoverParams) -> RecoveryReport:
        """Start-up recovery and takeover (DESIGN.md invariant 7), applied in one write
        transaction.

        Output files are looked at (and hashed) before the transaction, so the write lock
        is held only for the updates. Each update names the claim token it saw and, with
        ``only_expired``, the lease's expiry: a row that changed meanwhile (another
        machine renewed or took it over) is left alone.
        """
        query = "in_flight_expired" if params.only_expired else "in_flight_all"
        leftovers = [self.ROWS.job(r) for r in self._all(query, now=params.now)]
        crashes = {job.id: int(self._scalar("crash_requeues", id=job.id))
                   for job in leftovers}
        actions = plan_recovery(leftovers, params, crashes)
        completed = ([self.ROWS.job(r) for r in self._all("completed_jobs")]
                     if params.verify_completed else [])
        report = RecoveryReport()
        with self._write():
            for action in actions:
                self._apply_recovery(action, params, report)
            for job in completed:
                if not params.check_output(job).exists:
                    report.missing_outputs.append(job.id)
                    self._ledger("output_missing", params.now, job_id=job.id,
                                 detail={"path": job.output_path})
            if params.prune_before is not None:
                report.pruned_ledger_rows = self._exec(
                    "prune_ledger", before=params.prune_before, now=params.now)
            if report.touched or report.pruned_ledger_rows:
                self._ledger("recovery", params.now, detail={
                    "instance": params.instance_id, **report.as_dict()})
        return report

    def _apply_recovery(
        self, action: RecoveryAction, params: RecoverParams, report: RecoveryReport
    ) -> None:
        job, now = action.job, params.now
        # The update names what the plan read: the token, the state and (taking over
        # expired leases only) the expiry; a row that moved on since is left alone.
        common = {"id": job.id, "old_token": job.claim_token, "now": now,
                  "planned_state": str(job.state), "any_lease": not params.only_expired}
        token: str | None = None
        if action.kind == "complete":
            assert action.file is not None and action.file.sha256 is not None
            applied = self._exec("recover_complete", size=action.file.size,
                                 sha256=action.file.sha256, host=self.host, **common)
        elif action.kind in ("reattach", "reconcile"):
            token = uuid.uuid4().hex
            applied = self._exec("recover_reattach", state=str(action.resume_state),
                                 token=token, owner=params.instance_id,
                                 lease_until=now + params.lease_seconds,
                                 lease_seconds=params.lease_seconds, **common)
        elif action.kind in ("fail", "unknown"):
            error_class, label, message = failure_of(action)
            applied = self._exec("recover_park" if action.kind == "unknown" else "recover_fail",
                                 error_class=error_class, error_label=label,
                                 error_message=message, **common)
        else:  # requeue, or a render lost with the process
            applied = self._exec("recover_requeue", **common)
        if applied:  # a row that changed since it was read is left alone
            for note in record_applied(action, report, token):
                self._ledger(note.event, now, job_id=job.id, account=job.account,
                             claim_token=note.claim_token, detail=note.detail)

    # -- listing -----------------------------------------------------------------------
    def completed_outputs(self) -> list[tuple[int, str, int]]:
        return [(r["id"], r["output_path"], r["output_size"])
                for r in self._all("completed_outputs")]

    def next_wakeup(self, now: float) -> float | None:
        with self._reading():
            times = [self._scalar("next_retry_at", now=now),
                     self._scalar("next_cooldown_at", now=now)]
        due = [float(t) for t in times if t is not None]
        return min(due) if due else None

    def ledger_after(self, seq: int, limit: int) -> list[LedgerEntry]:
        return [self.ROWS.entry(r) for r in self._all("ledger_after", seq=seq, limit=limit)]

    # -- audit -------------------------------------------------------------------------
    def ledger(self, job_id: int | None = None, limit: int | None = None) -> list[LedgerEntry]:
        if limit:  # the last entries, oldest first: a long ledger is not read whole
            rows = self._all("ledger_tail", job_id=job_id, limit=limit)
        elif job_id is not None:
            rows = self._all("ledger_for_job", job_id=job_id)
        else:
            rows = self._all("ledger_all")
        return [self.ROWS.entry(r) for r in rows]

    def doctor_queries(self, instance_alive: bool) -> dict[str, list[Any]]:
        """The invariant queries: no job completed twice, no account over its limit, the
        driver's checks of live claims (:attr:`DOCTOR_CLAIM_CHECKS`), its integrity
        check (:attr:`INTEGRITY_CHECK`) and its JSON columns' (:attr:`JSON_CHECK`)."""
        with self._reading():
            results: dict[str, list[Any]] = {
                "completed_twice": [self.ROWS.values(r)
                                    for r in self._all("doctor_completed_twice")],
                "over_capacity": [self.ROWS.values(r)
                                  for r in self._all("doctor_over_capacity")],
            }
            for key, query, while_alive in self.DOCTOR_CLAIM_CHECKS:
                results[key] = ([] if instance_alive and not while_alive
                                else [self.ROWS.values(r) for r in self._all(query)])
            check = "ok" if self.INTEGRITY_CHECK is None else self._scalar(
                self.INTEGRITY_CHECK)
            damaged = [] if self.JSON_CHECK is None else [
                self.ROWS.values(r) for r in self._all(self.JSON_CHECK)]
        results["integrity"] = [] if check == "ok" else [check]
        results["json_values"] = damaged
        return results


__all__ = ["CLAIM_IN_STEPS", "FencedWrite", "Row", "RowReaders", "SqlJournal", "claim_of",
           "public_methods", "render_recorded"]
