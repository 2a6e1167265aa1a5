"""What a batch should cost before it starts, from the adapters' price tables.

An estimate, never an invoice: prices come from :attr:`ParamSpec.price_per_second` (with
their source and date in :attr:`ParamSpec.price_source`), multiplied by each job's
duration. Jobs are grouped by provider and, when a row pins one, by account; jobs whose
model has no price are counted apart rather than priced at zero.
"""

from __future__ import annotations

from collections.abc import Callable, Iterable
from dataclasses import dataclass

from reelqueue.domain.models import JobSpec
from reelqueue.providers.base import ParamSpec


@dataclass(frozen=True)
class CostLine:
    """Attributes:
    provider: the provider kind.
    account: the pinned account, or None for jobs any account of the provider may take.
    jobs: how many jobs.
    seconds: their total video duration.
    usd: the estimated price of the priced ones, None when none is priced.
    unpriced_jobs: jobs whose model has no known price.
    """

    provider: str
    account: str | None
    jobs: int
    seconds: float
    usd: float | None
    unpriced_jobs: int = 0

    @property
    def label(self) -> str:
        return f"{self.provider} (account {self.account})" if self.account else self.provider


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


def estimate_cost(jobs: Iterable[JobSpec], params_for: Callable[[str], ParamSpec]) -> CostEstimate:
    groups: dict[tuple[str, str | None], list[float]] = {}
    usd: dict[tuple[str, str | None], float] = {}
    unpriced: dict[tuple[str, str | None], int] = {}
    sources: set[str] = set()
    specs: dict[str, ParamSpec] = {}
    for job in jobs:
        group = (job.provider, job.pinned_account)
        seconds = float(job.params.get("duration") or 0.0)
        groups.setdefault(group, []).append(seconds)
        spec = specs.get(job.provider) or specs.setdefault(job.provider, params_for(job.provider))
        price = spec.price_per_second.get(str(job.params.get("model") or ""))
        if price is None:
            unpriced[group] = unpriced.get(group, 0) + 1
            continue
        usd[group] = usd.get(group, 0.0) + price * seconds
        if spec.price_source:
            sources.add(spec.price_source)
    lines = tuple(
        CostLine(
            provider=provider,
            account=account,
            jobs=len(durations),
            seconds=sum(durations),
            usd=round(usd[(provider, account)], 4) if (provider, account) in usd else None,
            unpriced_jobs=unpriced.get((provider, account), 0),
        )
        for (provider, account), durations in sorted(
            groups.items(), key=lambda item: (item[0][0], item[0][1] or "")
        )
    )
    return CostEstimate(
        lines=lines,
        total_usd=round(sum(usd.values()), 4),
        unpriced_jobs=sum(unpriced.values()),
        sources=tuple(sorted(sources)),
    )


def job_price(job: JobSpec, spec: ParamSpec) -> float | None:
    """One render's price (USD): the model's price per second times the duration, as
    :func:`estimate_cost` counts it; None when the model has no price."""
    per_second = spec.price_per_second.get(str(job.params.get("model") or ""))
    if per_second is None:
        return None
    return round(per_second * float(job.params.get("duration") or 0.0), 6)


def stamp_prices(jobs: Iterable[JobSpec], params_for: Callable[[str], ParamSpec]) -> None:
    """Store each job's price in its metadata (``"price"``) for the spend caps
    (docs/design-notes.md); a job without one is "price unknown"."""
    specs: dict[str, ParamSpec] = {}
    for job in jobs:
        spec = specs.get(job.provider) or specs.setdefault(job.provider, params_for(job.provider))
        price = job_price(job, spec)
        if price is not None:
            job.metadata["price"] = price
