"""Review and re-roll (issue 35 items 2-4): a batch's takes grouped by row, a reviewer's
decision on a take, and the re-roll of the rows whose takes were all rejected. The
window's gallery, ``reelqueue review`` and the HTTP API call these.

- :func:`batch_takes`: the takes of a batch and of its re-rolls, grouped by row (``K``,
  ``K#n``, ``K~seed...`` are row ``K``: domain/review.py ``take_group``), in sheet order,
  with the "12 of 15 reviewed" count.
- :func:`set_decision`: pick, reject or clear a take, and/or rate it, compare-and-set on
  the version the reviewer saw (the store refuses a change made meanwhile by someone else:
  ReviewConflict), one pick per row.
- :func:`reroll_plan` / :func:`reroll`: one new take (a new seed) per row to re-roll, or
  ``per_row``; priced first, and the confirmed amount is the re-roll's spend cap: the
  re-roll is a batch of its own whose ``max_spend`` is that amount (store/rerolls.py), so
  the claim checks it in its transaction like every batch cap and a crash and a restart
  cannot pass it. A provider that takes no seed would render the same request again: said,
  and done only when asked (``same_request``).
"""

from __future__ import annotations

import getpass
import random
from collections.abc import Callable, Iterable, Sequence
from dataclasses import dataclass, field
from typing import Any

from reelqueue.application.outputs import local_paths
from reelqueue.application.review_words import (
    ROW_OPEN,
    ROW_PICKED,
    ROW_REROLL,
    ROW_WAITING,
    decision_words,
    progress_words,
)
from reelqueue.application.session import Session
from reelqueue.domain.errors import InputError
from reelqueue.domain.models import Batch, BatchSpec, Job, JobSpec
from reelqueue.domain.review import (
    CLEAR_RATING,
    Decision,
    ReviewChange,
    ReviewWritten,
    reviewer_name,
    take_group,
)
from reelqueue.domain.states import FINAL, JobState
from reelqueue.engine.retry_plan import VARIANT_KEY, estimated_price, seeded_path, takes_seed
from reelqueue.intake.estimate import AccountPrices, money
from reelqueue.store.base import Store, this_host
from reelqueue.store.rerolls import REROLL_OF, reroll_root
from reelqueue.store.spend import SLACK

__all__ = ["MAX_PER_ROW", "REROLL_EVENT", "BatchTakes", "RerollDone", "RerollPlan",
           "RerollRow", "TakeGroup", "batch_takes", "decisions_of", "group_takes",
           "local_videos", "parse_decision", "rating_arg", "read_takes", "reroll",
           "reroll_plan", "reviewer", "set_decision", "take_dict"]

MAX_PER_ROW = 10
"""The most new takes one re-roll asks for per row."""

REROLL_EVENT = "reroll"


def reviewer() -> str:
    """This machine's user, the default reviewer of the window and the command line."""
    try:
        return reviewer_name(getpass.getuser())
    except (KeyError, OSError):  # no user name in the environment or the password file
        return "someone"


# -- takes by row ------------------------------------------------------------------------
@dataclass(frozen=True)
class TakeGroup:
    """A row's takes, oldest first.

    Attributes:
        key: the row's key (``take_group``). takes: its jobs.
    """

    key: str
    takes: tuple[Job, ...]

    @property
    def first(self) -> Job:
        return self.takes[0]

    @property
    def picked(self) -> Job | None:
        return next((t for t in self.takes if t.review.decision is Decision.PICK), None)

    @property
    def finished(self) -> tuple[Job, ...]:
        return tuple(t for t in self.takes if t.state == JobState.COMPLETED)

    @property
    def unreviewed(self) -> tuple[Job, ...]:
        """Finished takes without a decision."""
        return tuple(t for t in self.finished if t.review.decision is Decision.NONE)

    @property
    def rejected(self) -> tuple[Job, ...]:
        return tuple(t for t in self.takes if t.review.decision is Decision.REJECT)

    @property
    def waiting(self) -> tuple[Job, ...]:
        """Takes not finished yet (queued, rendering, waiting to retry, parked)."""
        return tuple(t for t in self.takes if t.state not in FINAL)

    @property
    def needs_reroll(self) -> bool:
        """No pick, at least one reject, no unreviewed finished take, and nothing still
        rendering (a re-roll under way is not asked for twice)."""
        return (self.picked is None and bool(self.rejected) and not self.unreviewed
                and not self.waiting)

    @property
    def state_words(self) -> str:
        if self.picked is not None:
            return ROW_PICKED
        if self.needs_reroll:
            return ROW_REROLL
        if self.waiting and not self.unreviewed:
            return ROW_WAITING
        return ROW_OPEN

    def as_dict(self) -> dict[str, Any]:
        picked = self.picked
        return {
            "row": self.key, "row_number": self.first.row_number, "name": self.first.name,
            "prompt": self.first.prompt, "state": self.state_words,
            "picked": None if picked is None else picked.id,
            "needs_reroll": self.needs_reroll,
            "takes": [take_dict(t) for t in self.takes],
        }


def take_dict(job: Job) -> dict[str, Any]:
    """A take as ``review --json`` and ``GET /v1/batches/{id}/takes`` give it."""
    return {"job_id": job.id, "job_key": job.job_key, "batch_id": job.batch_id,
            "state": str(job.state), "output_path": job.output_path,
            "seed": job.params.get("seed"), **job.review.as_dict(),
            "words": decision_words(job.review)}


def group_takes(jobs: Iterable[Job]) -> list[TakeGroup]:
    """Jobs grouped by row in sheet order (a row's first row number, then its first id);
    within a row, oldest first. (The lead merges this with application/take_groups.py.)"""
    rows: dict[str, list[Job]] = {}
    for job in sorted(jobs, key=lambda j: j.id):
        rows.setdefault(take_group(job.job_key), []).append(job)

    def order(group: TakeGroup) -> tuple[int, int]:
        first = group.first
        return (first.row_number if first.row_number is not None else 1 << 62, first.id)

    return sorted((TakeGroup(key, tuple(takes)) for key, takes in rows.items()), key=order)


@dataclass(frozen=True)
class BatchTakes:
    """A batch's rows and their takes (its re-rolls' too).

    Attributes:
        batch: the batch (the one re-rolled, when a re-roll's id was asked for).
        groups: its rows in sheet order. rerolls: the ids of its re-roll batches.
    """

    batch: Batch
    groups: tuple[TakeGroup, ...]
    rerolls: tuple[int, ...] = ()

    @property
    def total(self) -> int:
        """Finished takes (the ones there is something to review of)."""
        return sum(len(g.finished) for g in self.groups)

    @property
    def reviewed(self) -> int:
        return sum(len(g.finished) - len(g.unreviewed) for g in self.groups)

    @property
    def progress_words(self) -> str:
        return progress_words(self.reviewed, self.total)

    @property
    def to_reroll(self) -> tuple[TakeGroup, ...]:
        return tuple(g for g in self.groups if g.needs_reroll)

    def as_dict(self) -> dict[str, Any]:
        return {"batch_id": self.batch.id, "name": self.batch.name,
                "rerolls": list(self.rerolls), "reviewed": self.reviewed,
                "total": self.total, "progress": self.progress_words,
                "rows_to_reroll": len(self.to_reroll),
                "rows": [g.as_dict() for g in self.groups]}


def read_takes(store: Store, batch_id: int) -> BatchTakes:
    """:func:`batch_takes` on the journal's thread."""
    asked = store.get_batch(batch_id)
    if asked is None:
        raise InputError(f"There is no batch {batch_id}.")
    root_id = reroll_root(asked, batch_id)
    root = store.get_batch(root_id) or asked
    rerolls = tuple(b.id for b in store.list_batches()
                    if reroll_root(b, b.id) == root.id and b.id != root.id)
    jobs = [j for b in (root.id, *rerolls) for j in store.list_jobs(batch_id=b)]
    return BatchTakes(root, tuple(group_takes(jobs)), rerolls)


async def batch_takes(session: Session, batch_id: int) -> BatchTakes:
    """The takes of batch ``batch_id`` (and of its re-rolls) by row. InputError: no such
    batch."""
    journal = session.journal
    return await journal.call(read_takes, journal.sync, batch_id)


def local_videos(session: Session, takes: BatchTakes) -> dict[int, str]:
    """The finished takes whose video is on this machine, by job id: the file to picture
    and play (a team's takes rendered elsewhere are on their machine; a path that would
    leave the videos folder is never used)."""
    here = local_paths(session.ctx.videos_dir)
    host = this_host()
    found: dict[int, str] = {}
    for group in takes.groups:
        for take in group.finished:
            if take.output_host not in (None, host):
                continue
            path = here(take.output_path)
            if path is not None:
                found[take.id] = str(path)
    return found


# -- decisions ---------------------------------------------------------------------------
async def set_decision(
    session: Session, job_id: int, decision: Decision | None, *, rating: int | None = None,
    seen_version: int | None = None, by: str | None = None,
) -> ReviewWritten:
    """Pick, reject or clear (``Decision.NONE``) a take, and/or rate it (1-5;
    ``CLEAR_RATING`` removes the rating; None keeps it). ``seen_version``: the version the
    reviewer looked at (None: the one read now, for a command given without having looked).
    ReviewConflict when someone changed it since; ReviewRefused for a failed or cancelled
    take."""
    if decision is None and rating is None:
        raise InputError("Say pick, reject or clear, or give a rating.")
    journal = session.journal
    if seen_version is None:
        job = await journal.get_job(job_id)
        if job is None:
            raise InputError(f"There is no job {job_id}.")
        seen_version = job.review.version
    written = await journal.set_review(ReviewChange(
        job_id, decision, rating, seen_version, by or reviewer(), session.clock.now()))
    await session.changed(jobs=[job_id, *written.moved_from])
    return written


def parse_decision(word: str) -> Decision:
    """"pick", "reject", "clear" (or "none") as the command line and the API say them."""
    value = {"pick": Decision.PICK, "reject": Decision.REJECT, "clear": Decision.NONE,
             "none": Decision.NONE}.get(word.strip().lower())
    if value is None:
        raise InputError(f"{word!r} is not a decision: say pick, reject or clear.")
    return value


# -- re-roll -----------------------------------------------------------------------------
@dataclass(frozen=True)
class RerollRow:
    """A row the re-roll renders again.

    Attributes:
        key: the row. template: the take it copies (prompt, parameters, pin).
        takes: how many new takes. price: one take's estimated price (None: unknown).
        seedless: its provider takes no seed: a new take is the same request again.
    """

    key: str
    template: Job
    takes: int
    price: float | None
    seedless: bool


@dataclass(frozen=True)
class RerollPlan:
    """What a re-roll of a batch would add and cost, said before it is done.

    Attributes:
        batch: the batch re-rolled. per_row: new takes per row.
        rows: the rows it renders (priced, and seedless ones only with ``same_request``).
        seedless: rows whose provider takes no seed (left out unless ``same_request``).
        unpriced: rows with no known price (left out: a re-roll's cap cannot admit them).
        specs: the new jobs. usd: their estimated price, the amount to confirm.
        same_request: the seedless rows are rendered again as they are.
    """

    batch: Batch
    per_row: int
    rows: tuple[RerollRow, ...]
    seedless: tuple[str, ...]
    unpriced: tuple[str, ...]
    specs: tuple[JobSpec, ...]
    usd: float
    same_request: bool = False

    @property
    def jobs(self) -> int:
        return len(self.specs)

    @property
    def words(self) -> str:
        """What the re-roll does and costs, in one paragraph (CLI, window, API)."""
        if not self.specs:
            text = f"Batch {self.batch.id}: no row to re-roll"
        else:
            rows = len(self.rows)
            text = (f"Batch {self.batch.id}: re-roll {rows} row{'s' if rows != 1 else ''}, "
                    f"{self.jobs} new take{'s' if self.jobs != 1 else ''}, est. "
                    f"{money(self.usd)}; that amount is the re-roll's spend cap")
        if self.seedless and not self.same_request:
            text += (f". {len(self.seedless)} row(s) use a provider that takes no seed: a "
                     "new take would render the same request again; left out (say "
                     "--same-request to render them again anyway)")
        elif self.seedless:
            text += (f". {len(self.seedless)} row(s) use a provider that takes no seed: "
                     "they render the same request again")
        if self.unpriced:
            text += (f". {len(self.unpriced)} row(s) have no known price and are left out "
                     "(set their price first)")
        return text + "."

    def as_dict(self) -> dict[str, Any]:
        return {"batch_id": self.batch.id, "per_row": self.per_row, "jobs": self.jobs,
                "estimated_usd": round(self.usd, 6),
                "rows": [{"row": r.key, "takes": r.takes, "price": r.price,
                          "seedless": r.seedless} for r in self.rows],
                "seedless_rows": list(self.seedless), "unpriced_rows": list(self.unpriced),
                "same_request": self.same_request, "words": self.words}


@dataclass(frozen=True)
class RerollDone:
    """A re-roll written.

    Attributes:
        plan: what was asked. batch_id: the re-roll's own batch (its cap: ``cap``).
        job_ids: its new jobs.
    """

    plan: RerollPlan
    batch_id: int | None
    cap: float
    job_ids: tuple[int, ...] = field(default_factory=tuple)

    def as_dict(self) -> dict[str, Any]:
        return {**self.plan.as_dict(), "reroll_batch_id": self.batch_id, "cap": self.cap,
                "job_ids": list(self.job_ids)}


def _again_path(stored: str, n: int) -> str:
    """A seedless re-take's file: the original's with ``-again<N>`` (as ``seeded_path``
    writes ``-seed<N>``: same folder, same checks)."""
    return seeded_path(stored, n).replace(f"-seed{n}", f"-again{n}")


def plan_reroll(store: Store, batch_id: int, per_row: int, *, same_request: bool,
                prices: AccountPrices, seed_of: Callable[[], int],
                takes_seed_of: Callable[[str], bool],
                price_of: Callable[[Job], tuple[float, int]]) -> RerollPlan:
    """:func:`reroll_plan` on the journal's thread."""
    if not 1 <= per_row <= MAX_PER_ROW:
        raise InputError(f"--per-row is 1 to {MAX_PER_ROW}.")
    takes = read_takes(store, batch_id)
    rows: list[RerollRow] = []
    seedless: list[str] = []
    unpriced: list[str] = []
    specs: list[JobSpec] = []
    keys: set[str] = set()
    for group in takes.to_reroll:
        template = group.first
        usd, missing = price_of(template)
        takes_a_seed = takes_seed_of(template.provider)
        if missing:
            unpriced.append(group.key)
            continue
        if not takes_a_seed:
            seedless.append(group.key)
            if not same_request:
                continue
        rows.append(RerollRow(group.key, template, per_row, usd, not takes_a_seed))
        for _ in range(per_row):
            specs.append(_new_take(store, group, template, usd, takes_a_seed, seed_of, keys))
    return RerollPlan(takes.batch, per_row, tuple(rows), tuple(seedless), tuple(unpriced),
                      tuple(specs), round(sum(float(s.metadata["price"]) for s in specs), 6),
                      same_request)


def _new_take(store: Store, group: TakeGroup, template: Job, usd: float, seeded: bool,
              seed_of: Callable[[], int], keys: set[str]) -> JobSpec:
    """One new take of ``group``: a new seed (or, seedless, the same request again), its
    own key (``K~seed<N>``) and file, priced at ``usd``."""
    taken = {t.job_key for t in group.takes} | keys
    for n in range(1, 10_000):
        tag = seed_of() if seeded else n
        key = f"{group.key}{VARIANT_KEY}{tag}" if seeded else f"{group.key}{VARIANT_KEY}-again{n}"
        if key in taken or store.existing_job_keys([key]):
            continue
        keys.add(key)
        params = {**template.params, "seed": tag} if seeded else dict(template.params)
        path = (seeded_path(template.output_path, tag) if seeded
                else _again_path(template.output_path, n))
        metadata = {k: v for k, v in template.metadata.items()
                    if k not in ("variant_of", "variant_seed", "repeat")}
        metadata.update(price=usd, reroll_of_row=group.key, reroll_take_of=template.id)
        return JobSpec(job_key=key, prompt=template.prompt, provider=template.provider,
                       output_path=path, params=params, pinned_account=template.pinned_account,
                       row_number=template.row_number, name=template.name,
                       priority=template.priority, metadata=metadata)
    raise InputError(f"Row {group.key} has no free key for a new take.")


def _seeds(rng: random.Random | None) -> Callable[[], int]:
    source = rng or random.SystemRandom()
    return lambda: source.randrange(1, 2**31)


async def reroll_plan(session: Session, batch_id: int, *, per_row: int = 1,
                      same_request: bool = False,
                      rng: random.Random | None = None) -> RerollPlan:
    """What :func:`reroll` of batch ``batch_id`` would add and cost. Writes nothing."""
    journal = session.journal
    accounts = AccountPrices.of(await journal.list_accounts())
    providers = session.providers

    def price(job: Job) -> tuple[float, int]:
        # Today's price (the accounts' own prices, the price table), else the one stamped
        # at its import (what its spend entry charged).
        usd, unpriced = estimated_price([job], providers, accounts)
        return (usd, unpriced) if not unpriced else estimated_price([job], providers)

    return await journal.call(
        plan_reroll, journal.sync, batch_id, per_row, same_request=same_request,
        prices=accounts, seed_of=_seeds(rng),
        takes_seed_of=lambda provider: takes_seed(providers, provider), price_of=price)


def write_reroll(store: Store, plan: RerollPlan, confirmed_usd: float, now: float,
                 by: str) -> RerollDone:
    """The re-roll's batch (``max_spend``: the confirmed amount) and its jobs, with the
    ``reroll`` ledger entry naming the price confirmed."""
    root = plan.batch
    count = sum(1 for b in store.list_batches() if reroll_root(b, b.id) == root.id) - 1
    batch = store.create_batch(BatchSpec(
        f"{root.name} (re-roll {count + 1})", root.source_path, root.output_dir,
        root.max_attempts, {REROLL_OF: root.id, "max_spend": confirmed_usd}), now)
    added = store.add_jobs(batch.id, list(plan.specs), now)
    store.note(REROLL_EVENT, now, detail={
        "batch_id": root.id, "reroll_batch_id": batch.id, "jobs": added.added,
        "rows": [r.key for r in plan.rows], "per_row": plan.per_row,
        "estimated_usd": plan.usd, "confirmed_usd": confirmed_usd, "by": by,
        "same_request": [r.key for r in plan.rows if r.seedless]})
    return RerollDone(plan, batch.id, confirmed_usd, added.job_ids)


async def reroll(session: Session, batch_id: int, *, confirmed_usd: float,
                 per_row: int = 1, same_request: bool = False,
                 rng: random.Random | None = None, by: str | None = None) -> RerollDone:
    """Re-roll batch ``batch_id``: the plan is made again now and written only if its
    price is within ``confirmed_usd`` (the amount the user agreed to, which becomes the
    re-roll's spend cap); InputError otherwise (ask again). Nothing to re-roll: nothing
    written."""
    if not confirmed_usd >= 0:
        raise InputError("The confirmed amount is a number of dollars, 0 or more.")
    plan = await reroll_plan(session, batch_id, per_row=per_row, same_request=same_request,
                             rng=rng)
    if not plan.specs:
        return RerollDone(plan, None, 0.0)
    if plan.usd > confirmed_usd + SLACK:
        raise InputError(
            f"The re-roll now costs est. {money(plan.usd)}, more than the "
            f"{money(confirmed_usd)} confirmed (the rows changed meanwhile); look at it "
            "again, then confirm.")
    journal = session.journal
    done: RerollDone = await journal.call(write_reroll, journal.sync, plan, confirmed_usd,
                                          session.clock.now(), by or reviewer())
    await session.changed(jobs=done.job_ids)
    return done


def rating_arg(value: int | None) -> int | None:
    """A rating from a front end: 1-5, 0 clears it (``CLEAR_RATING``), None keeps it."""
    if value is None:
        return None
    if value == CLEAR_RATING or 1 <= value <= 5:
        return value
    raise InputError("A rating is 1 to 5 (or 0 to clear it).")


def decisions_of(groups: Sequence[TakeGroup]) -> dict[int, str]:
    """Each take's decision by id (tests and front ends compare a pass with it)."""
    return {t.id: str(t.review.decision) for g in groups for t in g.takes}
