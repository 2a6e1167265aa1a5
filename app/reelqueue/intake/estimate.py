"""What a render costs, and what a batch should cost before it starts.

An estimate, never an invoice. One function, :func:`quote_job`, decides the price of one
render, and everything that shows or charges a price asks it: the import's estimate and
the price stamped on each job for the spend caps (:func:`stamp_prices`), the retry plan
(``engine/retry_plan.py``) and the job rows (``engine/queries.py``).

Where a price comes from, first match wins (docs/providers.md, "Prices"):

1. **The account's own price** (``accounts set NAME --price-per-second USD``, kept in the
   account's settings as ``price_per_second``). A job pinned to an account takes that
   account's. A job any account of its provider may take takes the price every one of them
   would charge when they agree; when they differ, the highest (the estimate and the spend
   cap count the most the render may cost); when any of them has no price, the job's price
   is unknown (it may run there). An account without its own price charges the table's.
2. **The adapter's price table**: :attr:`ParamSpec.price_variants` (by resolution, audio,
   clip length; the most specific fitting one) else :attr:`ParamSpec.price_per_second`,
   times the job's duration, with the source and date in :attr:`ParamSpec.price_source`.

Anything else is "price unknown", never $0.00: the estimate counts such jobs apart and
says how to give them a price, and a spend cap does not start them.
"""

from __future__ import annotations

import math
from collections.abc import Callable, Iterable, Mapping
from dataclasses import dataclass, field
from typing import Any, NamedTuple, Protocol

from reelqueue.domain.models import JobSpec
from reelqueue.providers.base import ParamSpec, PriceVariant

PRICE_SETTING = "price_per_second"
"""The account setting that holds the account's own price (USD per second of video)."""

SET_PRICE = "reelqueue accounts set NAME --price-per-second USD"
UNKNOWN = f"price unknown — set it with `{SET_PRICE}`"
"""What a job without a price says, in every front end (followed by whose price is missing)."""


def account_price(settings: Mapping[str, Any]) -> float | None:
    """The account's own price per second from its settings; None when it has none."""
    value = settings.get(PRICE_SETTING)
    if isinstance(value, bool) or not isinstance(value, int | float):
        return None
    if not math.isfinite(value) or value <= 0:
        return None
    return float(value)


class _HasPrice(Protocol):
    @property
    def name(self) -> str: ...
    @property
    def provider(self) -> str: ...
    @property
    def settings(self) -> Mapping[str, Any]: ...


@dataclass(frozen=True)
class AccountPrices:
    """The accounts a job's price may come from.

    Attributes:
        accounts: account name -> (its provider, its own USD per second or None), in the
            pump's order.
    """

    accounts: Mapping[str, tuple[str, float | None]] = field(default_factory=dict)

    @classmethod
    def of(cls, accounts: Iterable[_HasPrice]) -> AccountPrices:
        return cls({a.name: (a.provider, account_price(a.settings)) for a in accounts})

    def of_provider(self, provider: str) -> list[tuple[str, float | None]]:
        """(account, own price) of every account of ``provider``, in order."""
        return [(name, own) for name, (kind, own) in self.accounts.items() if kind == provider]


NO_ACCOUNTS = AccountPrices()
"""No accounts known (a dry run without a journal, a test catalog): the tables only."""


class PriceQuote(NamedTuple):
    """One render's price.

    Attributes:
        usd: the price (None: unknown).
        source: where it comes from (a price table's source and date, or the account's
            own price); empty when unknown.
        unknown: when ``usd`` is None, the words to show: "price unknown — set it with
            `reelqueue accounts set NAME --price-per-second USD`" and whose price is
            missing; empty otherwise.
    """

    usd: float | None
    source: str = ""
    unknown: str = ""

    @property
    def text(self) -> str:
        """"$1.60 (source)" or the unknown words."""
        return f"{money(self.usd)} ({self.source})" if self.usd is not None else self.unknown


def money(usd: float) -> str:
    """12.5 -> "$12.50"; under a cent three decimals ("$0.004"), so no price reads $0.00.
    A sum of charges and their refunds is 0 give or take a float's last bits (0.06 + 0.07
    - 0.06 - 0.07 is 1.4e-17), which reads "$0.00", not "$0.000" or "$-0.00"."""
    usd = round(usd, 6) + 0.0  # + 0.0: no "-0.00"
    return f"${usd:,.3f}" if 0 < usd < 0.01 else f"${usd:,.2f}"


def _row_audio(params: Mapping[str, Any]) -> bool | None:
    """The row's ``audio``: True / False, None when it says nothing."""
    value = params.get("audio")
    if value is None or value == "":
        return None
    if isinstance(value, bool | int | float):
        return bool(value)
    return str(value).strip().lower() in ("1", "true", "yes", "y", "on")


def _fit(variant: PriceVariant, params: Mapping[str, Any]) -> int | None:
    """How many of the variant's conditions the row meets (None: one it does not)."""
    met = 0
    if variant.resolution is not None:
        if str(params.get("resolution") or "").casefold() != variant.resolution.casefold():
            return None
        met += 1
    if variant.audio is not None:
        if _row_audio(params) is not variant.audio:
            return None
        met += 1
    if variant.seconds is not None:
        if not math.isclose(_seconds(params), variant.seconds):
            return None
        met += 1
    return met


def _seconds(params: Mapping[str, Any]) -> float:
    value = params.get("duration")
    if isinstance(value, bool) or not isinstance(value, int | float | str):
        return 0.0
    try:
        return float(value)
    except ValueError:
        return 0.0


def table_price(spec: ParamSpec, params: Mapping[str, Any]) -> float | None:
    """USD per second for a row from the adapter's table: the fitting variant with the
    most conditions (the dearer one on a tie), else the model's price; None: unpriced."""
    model = str(params.get("model") or "")
    best: tuple[int, float] | None = None
    for variant in spec.price_variants.get(model, ()):
        met = _fit(variant, params)
        if met is not None and (best is None or (met, variant.usd_per_second) > best):
            best = (met, variant.usd_per_second)
    return best[1] if best is not None else spec.price_per_second.get(model)


def quote_job(provider: str, params: Mapping[str, Any], pinned_account: str | None,
              spec: ParamSpec, accounts: AccountPrices = NO_ACCOUNTS) -> PriceQuote:
    """The price of one render of ``params`` on ``provider`` (see the module docstring
    for the rule)."""
    seconds = _seconds(params)
    table = table_price(spec, params)
    source = spec.price_source if table is not None else ""

    def priced(per_second: float, where: str) -> PriceQuote:
        return PriceQuote(round(per_second * seconds, 6), where)

    if seconds <= 0:
        return PriceQuote(None, unknown=f"{UNKNOWN} (the row gives no duration)")
    if pinned_account is not None:
        kind, own = accounts.accounts.get(pinned_account, (provider, None))
        if own is not None and kind == provider:  # another provider's price is not this one
            return priced(own, f"account {pinned_account}: own price, ${own:g}/s")
        if table is not None:
            return priced(table, source)
        return PriceQuote(None, unknown=f"{UNKNOWN} for account {pinned_account}")
    candidates = accounts.of_provider(provider)
    if not candidates:
        if table is not None:
            return priced(table, source)
        return PriceQuote(None, unknown=(
            f"{UNKNOWN} once you add an account for {provider} "
            f"(reelqueue accounts add NAME --provider {provider})"))
    missing = [name for name, own in candidates if own is None and table is None]
    if missing:
        return PriceQuote(None, unknown=f"{UNKNOWN} for account{'s' if len(missing) > 1 else ''}"
                                        f" {', '.join(missing)}")
    charged = {name: own if own is not None else table for name, own in candidates}
    highest = max(value for value in charged.values() if value is not None)
    own_prices = [name for name, own in candidates if own is not None]
    if not own_prices:
        return priced(highest, source)
    if len(set(charged.values())) == 1:
        return priced(highest, f"account{'s' if len(own_prices) > 1 else ''} "
                               f"{', '.join(own_prices)}: own price, ${highest:g}/s")
    dearest = next(name for name, value in charged.items() if value == highest)
    where = (f"account {dearest}: own price, ${highest:g}/s" if dearest in own_prices
             else source)
    return priced(highest, f"the dearest of the {provider} accounts: {where}")


class Pricer:
    """Prices jobs against one catalog and one set of accounts. Rows of a sheet mostly
    repeat a few settings, so each distinct (provider, account, model, resolution, audio,
    duration) is quoted once.

    Attributes:
        params_for: provider kind -> its :class:`ParamSpec`.
        accounts: the accounts' own prices.
    """

    def __init__(self, params_for: Callable[[str], ParamSpec],
                 accounts: AccountPrices = NO_ACCOUNTS) -> None:
        self.params_for = params_for
        self.accounts = accounts
        self._specs: dict[str, ParamSpec] = {}
        self._quotes: dict[tuple[Any, ...], PriceQuote] = {}

    def quote(self, job: JobSpec) -> PriceQuote:
        params = job.params
        key = (job.provider, job.pinned_account, params.get("model"),
               params.get("resolution"), params.get("audio"), params.get("duration"))
        try:
            return self._quotes[key]
        except KeyError:
            pass
        except TypeError:  # a value that cannot be a key: quote it on its own
            return self._quote(job)
        quote = self._quotes[key] = self._quote(job)
        return quote

    def _quote(self, job: JobSpec) -> PriceQuote:
        spec = self._specs.get(job.provider)
        if spec is None:
            spec = self._specs[job.provider] = self.params_for(job.provider)
        return quote_job(job.provider, job.params, job.pinned_account, spec, self.accounts)


def job_price(job: JobSpec, spec: ParamSpec, accounts: AccountPrices = NO_ACCOUNTS
              ) -> float | None:
    """One render's price (USD), as :func:`estimate_cost` counts it; None: unknown."""
    return quote_job(job.provider, job.params, job.pinned_account, spec, accounts).usd


@dataclass(frozen=True)
class CostLine:
    """Attributes:
    provider: the provider kind.
    account: the pinned account, or None for jobs any account of the provider may take.
    jobs: how many jobs.
    seconds: their total video duration.
    usd: the estimated price of the priced ones, None when none is priced.
    unpriced_jobs: jobs whose price is unknown.
    unknown: for those, the "price unknown — set it with ..." words ("" when none).
    sources: where the priced ones' prices come from.
    """

    provider: str
    account: str | None
    jobs: int
    seconds: float
    usd: float | None
    unpriced_jobs: int = 0
    unknown: str = ""
    sources: tuple[str, ...] = ()

    @property
    def label(self) -> str:
        return f"{self.provider} (account {self.account})" if self.account else self.provider

    def describe(self, *, with_sources: bool = True) -> str:
        """"fal: 4 jobs, 24 s of video, $4.80 (source)"; unpriced jobs get the unknown
        words, never $0.00."""
        head = f"{self.label}: {_count(self.jobs, 'job')}, {self.seconds:,.0f} s of video, "
        priced = self.jobs - self.unpriced_jobs
        if self.usd is None:
            return head + self.unknown
        text = head + money(self.usd)
        if self.unpriced_jobs:
            text += (f" for {_count(priced, 'job')}; {_count(self.unpriced_jobs, 'job')} "
                     f"{self.unknown}")
        if with_sources and self.sources:
            text += f" (prices: {'; '.join(self.sources)})"
        return text


@dataclass(frozen=True)
class CostEstimate:
    """Attributes:
    lines: one per provider / pinned account, sorted.
    total_usd: the sum of the priced lines.
    unpriced_jobs: jobs left out of the total because their price is unknown.
    sources: where the prices come from.
    """

    lines: tuple[CostLine, ...] = ()
    total_usd: float = 0.0
    unpriced_jobs: int = 0
    sources: tuple[str, ...] = ()

    @property
    def jobs(self) -> int:
        return sum(line.jobs for line in self.lines)

    def describe_total(self) -> str:
        """"$12.40", "$12.40 for 8 jobs; 2 jobs price unknown (see above)" or "price unknown
        (3 jobs)": never $0.00 for jobs without a price."""
        priced = self.jobs - self.unpriced_jobs
        if not self.unpriced_jobs:
            return money(self.total_usd)
        if not priced:
            return f"price unknown ({_count(self.unpriced_jobs, 'job')}; see above)"
        return (f"{money(self.total_usd)} for {_count(priced, 'job')}; "
                f"{_count(self.unpriced_jobs, 'job')} price unknown (see above)")


def _count(n: int, word: str) -> str:
    return f"{n:,} {word}{'' if n == 1 else 's'}"


def estimate_cost(jobs: Iterable[JobSpec], params_for: Callable[[str], ParamSpec],
                  accounts: AccountPrices = NO_ACCOUNTS) -> CostEstimate:
    """The jobs' prices (:func:`quote_job`), grouped by provider and pinned account."""
    return estimate_quoted(jobs, Pricer(params_for, accounts).quote)


def estimate_quoted(jobs: Iterable[JobSpec],
                    quote: Callable[[JobSpec], PriceQuote]) -> CostEstimate:
    """The jobs' prices as ``quote`` gives them (a :class:`Pricer`'s), grouped by provider
    and pinned account."""
    groups: dict[tuple[str, str | None], list[float]] = {}
    usd: dict[tuple[str, str | None], float] = {}
    unpriced: dict[tuple[str, str | None], int] = {}
    unknown: dict[tuple[str, str | None], str] = {}
    sources: dict[tuple[str, str | None], set[str]] = {}
    for job in jobs:
        group = (job.provider, job.pinned_account)
        groups.setdefault(group, []).append(_seconds(job.params))
        price = quote(job)
        if price.usd is None:
            unpriced[group] = unpriced.get(group, 0) + 1
            unknown.setdefault(group, price.unknown)
            continue
        usd[group] = usd.get(group, 0.0) + price.usd
        sources.setdefault(group, set()).add(price.source)
    lines = tuple(
        CostLine(
            provider=provider,
            account=account,
            jobs=len(durations),
            seconds=sum(durations),
            usd=round(usd[(provider, account)], 4) if (provider, account) in usd else None,
            unpriced_jobs=unpriced.get((provider, account), 0),
            unknown=unknown.get((provider, account), ""),
            sources=tuple(sorted(sources.get((provider, account), ()))),
        )
        for (provider, account), durations in sorted(
            groups.items(), key=lambda item: (item[0][0], item[0][1] or "")
        )
    )
    return CostEstimate(
        lines=lines,
        total_usd=round(sum(usd.values()), 4),
        unpriced_jobs=sum(unpriced.values()),
        sources=tuple(sorted({s for line in lines for s in line.sources})),
    )


def stamp_prices(jobs: Iterable[JobSpec], params_for: Callable[[str], ParamSpec],
                 accounts: AccountPrices = NO_ACCOUNTS) -> None:
    """Store each job's price in its metadata (``"price"``) for the spend caps
    (docs/design-notes.md); a job without one is "price unknown" (not started under a
    cap)."""
    pricer = Pricer(params_for, accounts)
    for job in jobs:
        price = pricer.quote(job).usd
        if price is not None:
            job.metadata["price"] = price
