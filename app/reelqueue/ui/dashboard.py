"""What the account cards and the status bar say, computed from the job mirror. No Qt.

All reads are O(accounts + live renders + completions in the last hour): nothing here
walks the whole job list, so it runs once a second on 100,000 jobs without a stall.
"""

from __future__ import annotations

from reelqueue.engine.events import AccountEvent
from reelqueue.engine.queries import AccountSummary
from reelqueue.providers import registry
from reelqueue.ui import format as fmt
from reelqueue.ui.accounts_view import AccountCardData, RenderLine, per_minute
from reelqueue.ui.jobs_data import FINAL_VALUES, IN_FLIGHT_VALUES, WAITING_VALUES, JobTable


def provider_title(kind: str) -> str:
    try:
        return registry.get(kind).title
    except Exception:  # an account of a provider this build does not know
        return kind


def compose_cards(table: JobTable, summaries: list[AccountSummary],
                  events: dict[str, AccountEvent], now: float) -> list[AccountCardData]:
    stats = table.stats
    by_account_times: dict[str | None, list[float]] = {}
    for at, account in table.completions:
        by_account_times.setdefault(account, []).append(at)
    capacity_by_provider: dict[str, int] = {}
    for summary in summaries:
        account = summary.account
        if account.enabled:
            capacity_by_provider[account.provider] = (
                capacity_by_provider.get(account.provider, 0) + account.capacity)
    cards = []
    for summary in summaries:
        account = summary.account
        event = events.get(account.name)
        enabled = account.enabled if event is None else event.status != "disabled"
        status = account.status.value if event is None or event.status == "disabled" \
            else event.status
        capacity = account.capacity if event is None else event.capacity
        cooldown = account.cooldown_until if event is None else event.cooldown_until
        detail = account.status_detail if event is None else event.detail
        live_rows = table.live_rows(account.name)
        share = (capacity / capacity_by_provider[account.provider]
                 if enabled and capacity_by_provider.get(account.provider) else 0.0)
        estimate = stats.waiting_estimate.get(account.provider, 0.0) * share
        cards.append(AccountCardData(
            name=account.name, provider_title=provider_title(account.provider),
            status=status, enabled=enabled, capacity=capacity, live=len(live_rows),
            cooldown_until=cooldown, detail=detail,
            queued=stats.waiting_by_provider.get(account.provider, 0) if enabled else 0,
            completed=stats.by_account.get((account.name, "COMPLETED"), 0),
            failed=stats.by_account.get((account.name, "FAILED"), 0),
            spend=stats.spend.get(account.name, 0.0),
            estimate=round(estimate, 4) if estimate > 0 else None,
            per_minute=per_minute(by_account_times.get(account.name, []), now),
            renders=tuple(_render_line(table, row, now) for row in live_rows),
        ))
    return cards


def _render_line(table: JobTable, row: object, now: float) -> RenderLine:
    from reelqueue.engine.queries import JobRow

    assert isinstance(row, JobRow)
    eta = table.eta_seconds(row, now)
    elapsed = now - row.attempt_started if row.attempt_started else None
    title = fmt.job_title(row.name, row.row_number, row.id)  # "Row 3", never "job 2"
    if row.progress is not None:
        return RenderLine(title, row.progress,
                          f"{round(row.progress * 100)}%")
    if eta is not None and elapsed is not None:
        return RenderLine(title, elapsed / max(1.0, elapsed + eta),
                          f"~{fmt.rough_duration(eta)}" if eta >= 1 else "finishing")
    return RenderLine(title, None, fmt.duration(elapsed))


def totals_text(table: JobTable, now: float) -> tuple[str, str]:
    """The status bar: counts, and throughput with an ETA for what is left."""
    by_state = table.stats.by_state
    total = len(table)
    done = by_state.get("COMPLETED", 0)
    failed = by_state.get("FAILED", 0)
    running = sum(by_state.get(s, 0) for s in IN_FLIGHT_VALUES)
    waiting = sum(by_state.get(s, 0) for s in WAITING_VALUES)
    open_jobs = total - sum(by_state.get(s, 0) for s in FINAL_VALUES)
    n = fmt.number
    text = (f"{fmt.count(total, 'job')} · {n(done)} done · {n(failed)} failed · "
            f"{n(running)} rendering · {n(waiting)} waiting")
    rate = table.throughput_per_minute(now)
    if rate <= 0:
        return text, "—/min"
    eta = f" · ETA {fmt.rough_duration(open_jobs / rate * 60)}" if open_jobs else ""
    return text, f"{rate:.1f}/min{eta}"
