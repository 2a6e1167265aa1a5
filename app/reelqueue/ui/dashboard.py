"""What the account cards and the status bar say, computed from the job mirror. No Qt.

All reads are O(accounts + live renders + completions in the last hour): nothing here
walks the whole job list, so it runs once a second on 100,000 jobs without a stall.
"""

from __future__ import annotations

from collections import Counter
from collections.abc import Mapping
from typing import Any

from reelqueue.application.account_figures import AccountFigures, card_figures
from reelqueue.application.builtin_mock import on_builtin_mock
from reelqueue.application.events import AccountEvent, EngineStateEvent, StallReason
from reelqueue.application.providers import builtin_registry
from reelqueue.application.status import Money
from reelqueue.application.trust import address_unreadable
from reelqueue.application.views import AccountSummary, JobRow
from reelqueue.application.words import (
    OUTCOME_UNKNOWN,
    Condition,
    condition_words,
    job_state_words,
)
from reelqueue.domain.states import JobState
from reelqueue.ui import format as fmt
from reelqueue.ui.accounts_view import (
    MAX_RENDERS_SHOWN,
    AccountCardData,
    RenderLine,
    per_minute,
)
from reelqueue.ui.jobs_data import FINAL_VALUES, IN_FLIGHT_VALUES, WAITING_VALUES, JobTable


def provider_title(kind: str) -> str:
    try:
        return builtin_registry().get(kind).title
    except Exception:  # an account of a provider this build does not know
        return kind


def compose_cards(table: JobTable, summaries: list[AccountSummary],
                  events: dict[str, AccountEvent], now: float, *, team: bool = False,
                  keys_not_here: frozenset[str] | set[str] = frozenset(),
                  to_confirm: Mapping[str, str] | None = None,
                  money: Money | None = None,
                  figures: Mapping[str, AccountFigures] | None = None
                  ) -> list[AccountCardData]:
    """The cards. On a team store (``team``) the live figure is the journal's count over
    every machine (the summaries' ``live``, refreshed on the tick), an account in
    ``keys_not_here`` says its key is not on this machine, and one in ``to_confirm`` that
    it waits for this machine's confirmation (its row changed on the team database).
    ``money``: the journal's spend (application.status.money), the one source of the
    cards' dollars once read; until then the table's own tally and the engine's last
    account event. ``figures``: each account's view, limit in force and balance gate
    (application.account_figures), as ``accounts list`` and the API give them."""
    stats = table.stats
    by_account_times: dict[str | None, list[float]] = {}
    for at, done_by in table.completions:
        by_account_times.setdefault(done_by, []).append(at)
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
        # Its "est. $X to go" is the journal's figure for the jobs pinned or bound to it
        # (only it renders them); a provider's other waiting jobs may go to any of its
        # accounts, so they are priced once, above the cards (issue 23: a capacity share
        # of them was a guess shown as a figure). Nothing until the journal is read.
        pinned = money.account_to_go(account.name) if money is not None else None
        cards.append(AccountCardData(
            name=account.name, provider_title=provider_title(account.provider),
            status=status, enabled=enabled, capacity=capacity,
            live=summary.live if team else len(live_rows),
            cooldown_until=cooldown, detail=detail,
            # Its own: waiting jobs bound to it (they hold its render or submission);
            # the shared queue is shown once, above the cards (shared_queue_text).
            queued=sum(stats.by_account.get((account.name, s), 0) for s in WAITING_VALUES),
            completed=stats.by_account.get((account.name, JobState.COMPLETED), 0),
            failed=stats.by_account.get((account.name, JobState.FAILED), 0),
            spend=(money.spent.get(account.name, 0.0) if money is not None
                   else stats.spend.get(account.name, 0.0)),
            estimate=pinned.usd if pinned is not None else None,
            estimate_unpriced=pinned.unpriced if pinned is not None else 0,
            **_today(account.name, account.settings.get("daily_cap"), event, money),
            per_minute=per_minute(by_account_times.get(account.name, []), now),
            # Only the lines a card shows are worded (issue 33 item 6: at 1,000 in
            # flight every tick worded a line for each render, and showed three).
            renders=tuple(_render_line(table, row, now)
                          for row in live_rows[:MAX_RENDERS_SHOWN]),
            more_renders=max(0, len(live_rows) - MAX_RENDERS_SHOWN),
            team=team, key_here=account.name not in keys_not_here,
            confirm=(to_confirm or {}).get(account.name, ""),
            unreadable=address_unreadable(account.base_url),
            practice=on_builtin_mock(account.provider, None),
            took_over=money.took_over_words(account.name) if money is not None else "",
            figures=card_figures((figures or {}).get(account.name)),
        ))
    return cards


def _today(name: str, setting: object, event: AccountEvent | None,
           money: Money | None) -> dict[str, Any]:
    """A card's spend-today fields: the journal's (``money``) once read, else the engine's
    last account event, else the account's own cap setting."""
    today = money.account_today(name) if money is not None else None
    if today is not None:
        return {"spent_today": today.committed, "daily_cap": today.cap,
                "cap_waiting": today.waiting, "today_words": today.describe()}
    if event is not None:
        return {"spent_today": event.spent_today, "daily_cap": event.daily_cap,
                "cap_waiting": event.cap_waiting}
    cap = setting if isinstance(setting, int | float) else None
    return {"spent_today": 0.0, "daily_cap": cap, "cap_waiting": 0}


def shared_queue_text(table: JobTable, summaries: list[AccountSummary],
                      money: Money | None = None) -> str:
    """"Shared queue: 22 waiting for 3 accounts · Runway est. $3.00 to go" — once, above
    the cards. The estimate of each provider's unpinned waiting jobs is the journal's
    (``money``, the figure ``reelqueue status``/``spend`` and the API print)."""
    _rendering, waiting = open_counts(table)
    bound = sum(n for (account, state), n in table.stats.by_account.items()
                if account and state in WAITING_VALUES)
    shared = max(0, waiting - bound)
    if not summaries:
        return ""
    text = (f"Shared queue: {fmt.number(shared)} waiting for "
            f"{fmt.count(len(summaries), 'account')}")
    for group in money.to_go if money is not None else ():
        if group.account is None:
            text += f" · {provider_title(group.provider)} {group.describe()}"
    return text


def removed_accounts(table: JobTable, summaries: list[AccountSummary],
                     money: Money | None = None) -> list[str]:
    """Accounts no longer configured that jobs still name or whose spend still counts
    (issue 34: removing an account hid its parked, possibly billed job and took its spend
    out of the figures), by name."""
    here = {s.account.name for s in summaries}
    named = {account for account, _state in table.stats.by_account if account}
    if money is not None:
        named |= money.removed
    return sorted(named - here)


def removed_accounts_text(table: JobTable, summaries: list[AccountSummary],
                          money: Money | None = None) -> str:
    """"Removed: Studio A spent $0.80, 1 parked" — the figures of accounts that have no
    card any more, so that their spend and their unsettled jobs stay in sight."""
    parts = []
    for name in removed_accounts(table, summaries, money):
        words = []
        if money is not None and money.spent.get(name):
            words.append(f"spent {fmt.money(money.spent[name])}")
        if table.stats.by_account.get((name, JobState.PARKED), 0):
            # Its unsettled jobs, each by its one name (a crash-parked render is
            # "parked", a create of unknown outcome "outcome unknown": application.words).
            names = Counter(job_state_words(r.state, r.sub_status, r.error_label,
                                            r.provider_job_id).name
                            for r in table.rows
                            if r.account == name and r.state == JobState.PARKED)
            words += [f"{fmt.number(n)} {label}" for label, n in names.items()]
        if words:
            parts.append(f"{name} " + ", ".join(words))
    return ("Removed: " + "; ".join(parts)) if parts else ""


def _render_line(table: JobTable, row: object, now: float) -> RenderLine:
    # (No import here: each call went through PySide's import hook, 500 renders a tick.)
    assert isinstance(row, JobRow)
    title = fmt.job_title(row.name, row.row_number, row.id)  # "Row 3", never "job 2"
    fraction, words = table.progress_words(row, now)  # the job table's words, the same
    return RenderLine(title, fraction, words)


REASON_ADVICE = {
    "out_of_credits": "top up its credits, then press Mark ready on its card",
    "key_rejected": "put a valid key in (connect the account again), then Mark ready",
    "key_missing": "connect the account again with its key",
    "no_key": "connect the account again with its key",
    "disabled": "press Resume on its card",
    "rate_limited": "it resumes by itself",
    "no_account": "connect an account for this provider",
    "batch_paused": "resume the batch from the table's menu",
    "unusable": "check the account's settings (see the log)",
    "spend_cap": "raise the cap (an account's: Cap… on its card; a batch's: Raise batch "
                 "cap… on the Stalled banner) or, for a daily cap, wait for tomorrow",
    "not_configured": "add the account, or render them on a machine that has it",
}


def reason_text(reason: StallReason, *, advice: bool = False) -> str:
    """"studio-a: out of credits" / "provider Runway: no account" (+ what to do)."""
    words = condition_words(reason.code, reason.until or None).name
    subject = (f"provider {provider_title(reason.subject)}" if reason.code == "no_account"
               else f"batch “{reason.subject}”" if reason.code == "batch_paused"
               else reason.subject)
    text = f"{subject}: {words}"
    if reason.code == "not_configured" and reason.detail:
        text = reason.detail  # "2 jobs pinned to account X, which is not configured here"
    hint = REASON_ADVICE.get(reason.code) if advice else None
    return f"{text} ({hint})" if hint else text


def _name(code: str) -> str:
    return condition_words(code).name


def _short_reasons(state: EngineStateEvent) -> str:
    """The reasons' names, each once: "out of credits, key rejected"."""
    return ", ".join(dict.fromkeys(_name(r.code) for r in state.reasons)) or "no usable account"


def open_counts(table: JobTable) -> tuple[int, int]:
    """(rendering, waiting) in the mirror."""
    by_state = table.stats.by_state
    return (sum(by_state.get(s, 0) for s in IN_FLIGHT_VALUES),
            sum(by_state.get(s, 0) for s in WAITING_VALUES))


def engine_words(state: EngineStateEvent | None, table: JobTable) -> tuple[str, str]:
    """The status bar's engine part, and its tooltip. Derived from what is true: the
    engine's last word, checked against the mirror (renders in flight mean "Running",
    whatever the last event said; nothing open means "All done")."""
    rendering, waiting = open_counts(table)
    name = state.state if state is not None else "running"
    if name in ("stopping", "stopped", "starting"):
        return {"stopping": "Stopping…", "stopped": "Stopped",
                "starting": "Starting…"}[name], ""
    if name == "paused":
        finishing = f" · {fmt.count(rendering, 'render')} finishing" if rendering else ""
        return (_name(Condition.PAUSED).capitalize() + finishing,
                "Start hands waiting jobs out again")
    if rendering:
        return f"Running · {fmt.number(rendering)} rendering", ""
    if not waiting and state is not None and state.running:
        # The engine's last word still has a render in flight (its last bytes, its file
        # being written): "All done" waits for the engine's "done".
        return f"Running · finishing {fmt.count(state.running, 'render')}", ""
    if not waiting:
        return ("All done · " + ", ".join(settled_counts(table)) if len(table)
                else "Nothing to do"), ""
    if state is not None and name == "waiting" and state.next_due:
        return (f"Waiting for a retry · next at {fmt.clock(state.next_due)}",
                "; ".join(reason_text(r) for r in state.reasons))
    if state is not None and name == "stalled":
        return (f"{_name(Condition.STALLED).capitalize()} · {_short_reasons(state)}",
                "; ".join(reason_text(r, advice=True) for r in state.reasons))
    return "Running", ""


def settled_counts(table: JobTable) -> list[str]:
    """"5 completed", "1 failed", "0 cancelled", then "2 parked" and "1 outcome unknown"
    when there are any: each state by its one name (application.words), a create of
    unknown outcome apart from the parked and failed ones."""
    by_state, unknown = table.stats.by_state, table.stats.unknown
    parts = [f"{fmt.number(by_state.get(s, 0) - unknown.get(s, 0))} {job_state_words(s).name}"
             for s in (JobState.COMPLETED, JobState.FAILED, JobState.CANCELLED)]
    parked = by_state.get(JobState.PARKED, 0) - unknown.get(JobState.PARKED, 0)
    if parked:
        parts.append(f"{fmt.number(parked)} {job_state_words(JobState.PARKED).name}")
    if unknown.total():
        parts.append(f"{fmt.number(unknown.total())} {job_state_words(OUTCOME_UNKNOWN).name}")
    return parts


def grouped_reasons(reasons: tuple[StallReason, ...]) -> str:
    """Reasons that share a code and carry no detail of their own are said once, with
    their advice once: "mock-small, mock-medium, mock-large: out of credits (top up…)"."""
    groups: dict[tuple[str, float | None], list[StallReason]] = {}
    for reason in reasons:
        groups.setdefault((reason.code, reason.until), []).append(reason)
    texts: list[str] = []
    for group in groups.values():
        first = group[0]
        if len(group) == 1 or first.code in ("no_account", "batch_paused", "spend_cap",
                                             "not_configured"):
            texts.extend(reason_text(r, advice=True) for r in group)
            continue
        text = reason_text(first, advice=True)
        subjects = ", ".join(r.subject for r in group)
        texts.append(subjects + text[len(first.subject):])
    return "; ".join(texts)


def stall_banner(state: EngineStateEvent) -> str:
    """The stalled banner: how many wait, why (per account) and what the user can do."""
    reasons = grouped_reasons(state.reasons)
    return (f"{_name(Condition.STALLED).capitalize()}: {fmt.count(state.waiting, 'job')} "
            f"{fmt.plural(state.waiting, 'waits', 'wait')} and no account can take "
            f"{fmt.plural(state.waiting, 'it', 'them')} now"
            + (f" — {reasons}." if reasons else "."))


def totals_text(table: JobTable, now: float, state: EngineStateEvent | None = None,
                money: Money | None = None) -> tuple[str, str]:
    """The status bar: counts (cancelled and parked too), and throughput with an ETA for
    what is left, only while something renders and the rest can go on: while the queue
    is paused, stalled or held by a spend cap the reason stands in the ETA's place (N4:
    "ETA 4 min" while paused; "16 min" for a batch a cap stopped 2.5 min later). A cap
    that applies to the open work, not reached yet, is named beside the ETA."""
    by_state = table.stats.by_state
    total = len(table)
    running, waiting = open_counts(table)
    open_jobs = (total - sum(by_state.get(s, 0) for s in FINAL_VALUES)
                 - by_state.get(JobState.PARKED, 0))
    n = fmt.number
    text = " · ".join([fmt.count(total, "job"), *settled_counts(table),
                       f"{n(running)} rendering", f"{n(waiting)} waiting"])
    rate = table.throughput_per_minute(now)
    if not running:
        return text, ""
    speed = f"{rate:.1f}/min" if rate > 0 else "—/min"
    why = no_eta_reason(state, money, waiting)
    if why:
        return text, f"{speed} · no ETA: {why}"
    if rate <= 0:
        return text, speed
    eta = f" · ETA {fmt.rough_duration(open_jobs / rate * 60)}" if open_jobs else ""
    if eta and money is not None and (money.today.batches
                                      or any(a.cap is not None for a in money.today.accounts)):
        eta += " unless a spend cap stops it first"
    return text, f"{speed}{eta}"


def no_eta_reason(state: EngineStateEvent | None, money: Money | None, waiting: int) -> str:
    """Why no time can be promised for what is left ("" when one can)."""
    if state is not None and state.state == "paused":
        return _name(Condition.PAUSED)
    held = 0
    if money is not None:
        held = (sum(b.waiting for b in money.today.batches)
                + sum(a.waiting for a in money.today.accounts if a.reached))
    capped = state is not None and any(r.code == "spend_cap" for r in state.reasons)
    if waiting and (held or capped):
        return (f"{fmt.count(held, 'job')} held by a spend cap" if held
                else "a spend cap holds the waiting jobs")
    if state is not None and state.state == "stalled" and waiting:
        return f"{_name(Condition.STALLED)} ({_short_reasons(state)})"
    return ""
