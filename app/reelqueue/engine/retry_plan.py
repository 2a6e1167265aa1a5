"""What a user's retry will do and cost, said before it is done (issue 10, "Retry asks
before it pays").

A job that has a provider job id is read again from the provider (no charge): finished ->
downloaded, running -> reattached; only a render the provider says is gone is created
again, as a deliberate re-render written in the ledger with its estimated price. A create
whose outcome stayed unknown is looked for in the provider's records first where the
account's adapter can look (issue 19: created again only when they show it never arrived;
where the records can find a render but never prove one absent, as fal's, it stays unknown
for the user when not found); where nothing can be looked for, a retry renders it again
only when the user agrees to pay, and says the first create may already be charged. How
each account is asked is the answer of the adapter the engine would build for it now
(engine/lost_creates.py, issue 32), never a table of providers. A job without either is
rendered again. Permanent failures (content policy, invalid input...) and unknown creates
that cannot be looked for are left out unless asked for: the same row would most likely
fail the same way, at a price.

A finished video is never rendered again (DESIGN.md). A retry of a completed job *with a
new seed* is a different video the user asked for: a new job (a *variant*) beside the
kept one, with its own key and file name (:func:`variant_spec`), priced here like any
other re-render.
"""

from __future__ import annotations

import re
from collections.abc import Iterable, Mapping
from dataclasses import dataclass

from reelqueue.domain.errors import ErrorClass, ErrorLabel, KnownError
from reelqueue.domain.models import Account, Job, JobSpec
from reelqueue.domain.states import JobState
from reelqueue.engine.lost_creates import account_lost_create_search
from reelqueue.intake.estimate import NO_ACCOUNTS, UNKNOWN, AccountPrices, money, quote_job
from reelqueue.providers.base import LostCreateSearch, ParamSpec
from reelqueue.providers.builtin import builtin_registry
from reelqueue.providers.registry import ProviderRegistry
from reelqueue.store.spend import price_of

RETRYABLE_STATES = frozenset({JobState.FAILED, JobState.CANCELLED, JobState.PARKED})

VARIANT_KEY = "~seed"
"""A variant's job key is its original's with ``~seed<N>``: never a sheet's key (those are
the row's key, ``#n`` for repeats), so a re-import neither duplicates nor swallows it."""

_SEED_SUFFIX = re.compile(r"-seed-?[0-9]+$")
_MAX_NAME_BYTES = 255


def takes_seed(providers: ProviderRegistry | None, provider: str) -> bool:
    """Whether ``provider`` takes a seed parameter (a new seed can be asked for)."""
    try:
        return bool((providers or builtin_registry()).get(provider).params.seed)
    except KnownError:
        return False


def seeded_path(stored: str, seed: int) -> str:
    """The journal path of a variant: the original's with ``-seed<N>`` before the suffix
    ("b/clip.mp4" -> "b/clip-seed42.mp4"; a variant's own suffix is replaced, not stacked),
    in the same folder, so it passes the same checks as the original's (engine/outputs.py
    ``output_refusal``) and never names the original's file."""
    cut = max(stored.rfind("/"), stored.rfind("\\"))
    folder, name = stored[:cut + 1], stored[cut + 1:]
    dot = name.rfind(".")
    stem, suffix = (name[:dot], name[dot:]) if dot > 0 else (name, "")
    stem = _SEED_SUFFIX.sub("", stem)
    tail = f"-seed{seed}{suffix}"
    while len((stem + tail).encode("utf-8", "surrogatepass")) > _MAX_NAME_BYTES and stem:
        stem = stem[:-1]
    return folder + stem + tail


def variant_spec(job: Job, seed: int) -> JobSpec:
    """The new job that renders ``job`` (completed) again with ``seed``: the same prompt,
    parameters, account pin, row and stored price; its own key and file; its metadata
    names its origin (``variant_of``) for the job detail."""
    key = job.job_key.split(VARIANT_KEY, 1)[0] + f"{VARIANT_KEY}{seed}"
    metadata = {**job.metadata, "variant_of": job.id, "variant_seed": seed}
    return JobSpec(job_key=key, prompt=job.prompt, provider=job.provider,
                   output_path=seeded_path(job.output_path, seed),
                   params={**job.params, "seed": seed}, pinned_account=job.pinned_account,
                   row_number=job.row_number, name=job.name, priority=job.priority,
                   metadata=metadata)


def estimated_price(
    jobs: Iterable[Job], providers: ProviderRegistry | None = None,
    accounts: AccountPrices | None = None,
) -> tuple[float, int]:
    """(estimated USD of the priced jobs, how many have no known price), at the prices of
    ``providers`` (default: the built-in ones) and the accounts' own prices.

    ``accounts`` None (a caller that does not read the accounts, such as the engine's
    ledger note of a deliberate re-render): each job's price stamped at its import, the
    one its spend entry charges, else the price table's."""
    registry = providers or builtin_registry()
    specs: dict[str, ParamSpec] = {}

    def params_for(provider: str) -> ParamSpec:
        if provider not in specs:
            try:
                specs[provider] = registry.get(provider).params
            except KnownError:
                specs[provider] = ParamSpec()
        return specs[provider]

    usd, unpriced = 0.0, 0
    for job in jobs:
        price = price_of(job.metadata) if accounts is None else None
        if price is None:
            price = quote_job(job.provider, job.params, job.pinned_account,
                              params_for(job.provider), accounts or NO_ACCOUNTS).usd
        if price is None:
            unpriced += 1
        else:
            usd += price
    return round(usd, 4), unpriced


@dataclass(frozen=True)
class RetryPlan:
    """Attributes:
    reread: jobs whose render is read again first (no charge unless it is gone).
    reconcile: creates whose outcome stayed unknown, looked for in the provider's records
        first (no charge; created again only when the records show it never arrived).
    look_only: creates whose outcome stayed unknown on an account whose records can find
        a render but never prove one absent (fal): looked for (no charge); not found, they
        stay unknown for the user's word, never created again by the retry.
    rerender: jobs that will be rendered (and paid for) again.
    maybe_charged: those of ``rerender`` whose first create may already be charged (an
        unknown outcome: nothing can be looked for on its account, or the user's "create
        it again"); the retry creates them again only with the user's agreement to pay.
    maybe_charged_usd, maybe_charged_unpriced: the part of the price for
        ``maybe_charged`` (of the priced ones), and how many have no price.
    skipped_permanent: permanent failures, and unknown creates that cannot be looked for,
        left out (``include_permanent`` not given).
    not_retryable: jobs that are not failed, cancelled or parked (left alone), and finished
        ones when no new seed is asked for (or their provider takes none).
    variants: finished jobs kept as they are, each rendered again as a new job with the
        new seed (:func:`variant_spec`): a different video, paid.
    rerender_usd: the estimated price of ``rerender`` and ``variants``; ``unpriced``: those
        without a price.
    unknown: for those, the "price unknown — set it with ..." words (whose price is missing).
    variant_usd, variant_unpriced: the part of those two for ``variants``.
    """

    reread: tuple[Job, ...]
    rerender: tuple[Job, ...]
    skipped_permanent: tuple[Job, ...]
    not_retryable: tuple[int, ...]
    rerender_usd: float
    unpriced: int
    unknown: str = ""
    reconcile: tuple[Job, ...] = ()
    maybe_charged: tuple[Job, ...] = ()
    variants: tuple[Job, ...] = ()
    variant_usd: float = 0.0
    variant_unpriced: int = 0
    look_only: tuple[Job, ...] = ()
    maybe_charged_usd: float = 0.0
    maybe_charged_unpriced: int = 0

    @property
    def price_text(self) -> str:
        """"est. $1.20", "est. $1.20 + 2 jobs price unknown — set it with ..." or "price
        unknown — set it with ...": never $0.00 for a job without a price."""
        return self.price_for(self.rerender_usd, self.unpriced,
                           len(self.rerender) + len(self.variants))

    def price_for(self, usd: float, unpriced: int, jobs: int) -> str:
        """``jobs`` jobs at ``usd`` of which ``unpriced`` have no price, in the plan's
        words (:attr:`price_text`)."""
        if not unpriced:
            return f"est. {money(usd)}"
        unknown = self.unknown or UNKNOWN
        if jobs == unpriced:
            return unknown
        return f"est. {money(usd)} + {unpriced} job{'s' if unpriced != 1 else ''} {unknown}"

    @property
    def pays(self) -> bool:
        """Something will be rendered (and paid for): a re-render or a variant."""
        return bool(self.rerender or self.variants)

    @property
    def create_again(self) -> list[int]:
        """The unknown creates this retry renders again (``maybe_charged``): the front end
        passes them to :func:`~reelqueue.application.jobs.retry` only once the user agreed
        to pay; any other unknown create a retry queues is looked for, never created."""
        return [j.id for j in self.maybe_charged]

    @property
    def left_out_unknown(self) -> tuple[Job, ...]:
        """Of ``skipped_permanent``: the creates whose outcome stayed unknown where nothing
        can be looked for (a retry renders them again: the first may already be
        charged)."""
        return tuple(j for j in self.skipped_permanent if _unknown(j))

    @property
    def left_out_permanent(self) -> tuple[Job, ...]:
        """Of ``skipped_permanent``: the permanent failures (content policy, invalid
        input...)."""
        return tuple(j for j in self.skipped_permanent if not _unknown(j))

    @property
    def job_ids(self) -> list[int]:
        """The jobs the retry acts on (a variant's original among them: the retry adds its
        new job)."""
        return [j.id for j in (*self.reread, *self.reconcile, *self.look_only,
                               *self.rerender, *self.variants)]


def _unknown(job: Job) -> bool:
    """A create whose outcome stayed unknown (it may exist at the provider)."""
    return (job.error_label == ErrorLabel.SUBMIT_UNKNOWN.value and job.client_token is not None
            and job.provider_job_id is None)


def plan_retry(job_ids: Iterable[int], jobs: dict[int, Job], *,
               include_permanent: bool = True, new_seed: int | None = None,
               providers: ProviderRegistry | None = None,
               accounts: AccountPrices | None = None,
               account_rows: Mapping[str, Account] | None = None,
               create_again: bool = False) -> RetryPlan:
    """Sort the jobs a retry names. ``new_seed`` asks for a different video: every job is
    rendered again, and a completed one (of a provider that takes a seed) becomes a
    variant: kept, a new job renders the new seed. ``accounts``: the accounts' own prices
    (see :func:`estimated_price`).
    ``account_rows``: the accounts as the journal holds them now: an unknown create is
    looked for as the adapter built from its account says (:mod:`engine.lost_creates`);
    an account not given cannot be asked. ``create_again``: the user's explicit "render
    it again" of unknown creates (never looked for first)."""
    registry = providers or builtin_registry()
    rows = account_rows or {}
    searches: dict[str, LostCreateSearch] = {}

    def search_of(job: Job) -> LostCreateSearch:
        name = job.account or ""
        if name not in searches:
            searches[name] = account_lost_create_search(rows.get(name), registry)
        return searches[name]

    reread: list[Job] = []
    reconcile: list[Job] = []
    look_only: list[Job] = []
    rerender: list[Job] = []
    maybe_charged: list[Job] = []
    skipped: list[Job] = []
    variants: list[Job] = []
    other: list[int] = []
    for job_id in dict.fromkeys(job_ids):
        job = jobs.get(job_id)
        if (job is not None and job.state == JobState.COMPLETED and new_seed is not None
                and takes_seed(registry, job.provider)):
            variants.append(job)  # kept; a new job renders the new seed
        elif job is None or job.state not in RETRYABLE_STATES:
            other.append(job_id)
        elif _unknown(job) and new_seed is None and not create_again and search_of(job).looks:
            (reconcile if search_of(job).proves_absence else look_only).append(job)
        elif not include_permanent and (_unknown(job) or (
                job.state == JobState.FAILED and not job.provider_job_id
                and job.error_class == ErrorClass.PERMANENT.value)):
            skipped.append(job)
        elif job.provider_job_id and new_seed is None:
            reread.append(job)
        else:
            rerender.append(job)
            if _unknown(job):
                maybe_charged.append(job)
    usd, unpriced = estimated_price(rerender, providers, accounts)
    variant_usd, variant_unpriced = estimated_price(variants, providers, accounts)
    maybe_usd, maybe_unpriced = estimated_price(maybe_charged, providers, accounts)
    paid = [*rerender, *variants]
    return RetryPlan(tuple(reread), tuple(rerender), tuple(skipped), tuple(other),
                     round(usd + variant_usd, 4), unpriced + variant_unpriced,
                     _unknown_words(paid, providers, accounts)
                     if unpriced + variant_unpriced else "",
                     tuple(reconcile), tuple(maybe_charged), tuple(variants), variant_usd,
                     variant_unpriced, tuple(look_only), maybe_usd, maybe_unpriced)


def _unknown_words(jobs: Iterable[Job], providers: ProviderRegistry | None,
                   accounts: AccountPrices | None) -> str:
    """The "price unknown — set it with ..." words of the first unpriced job."""
    registry = providers or builtin_registry()
    for job in jobs:
        if accounts is None and price_of(job.metadata) is not None:
            continue
        try:
            spec = registry.get(job.provider).params
        except KnownError:
            spec = ParamSpec()
        quote = quote_job(job.provider, job.params, job.pinned_account, spec,
                          accounts or NO_ACCOUNTS)
        if quote.usd is None:
            return quote.unknown
    return UNKNOWN
