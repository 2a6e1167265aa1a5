"""Money from the command line: ``reelqueue spend`` prints the journal's money figures
(application.status.money: the window's cards and the API's ``GET /v1/spend`` read the
same), and spend caps (docs/design-notes.md "Spend caps"):
``reelqueue batch cap BATCH USD|none``; ``run``/``import --max-spend`` and
``accounts set --daily-cap`` use :func:`parse_usd`; the cap itself is
``application.jobs.set_batch_cap``.

A cap is one write in the journal, so it is made without the data-folder lock: while
``reelqueue run`` runs in another process, that engine reads the new cap on its next pass
(its timer, at most 30 s; the claim reads caps from the journal every time).
"""

from __future__ import annotations

import argparse
import json

from reelqueue.application import jobs, spend_reconcile, status
from reelqueue.application.session import Session
from reelqueue.application.status import Money, SpendSummary
from reelqueue.cli.cmd_jobs import batch_commands, find_batch
from reelqueue.cli.context import CliContext
from reelqueue.cli.journal import PICKED_UP, run_on_journal
from reelqueue.domain.errors import InputError
from reelqueue.domain.models import Batch


def parse_usd(text: str) -> float | None:
    """A cap in USD ('50', '12.5', '$20'), or None for 'none' / 'off' (no cap)."""
    cleaned = text.strip().lstrip("$").strip()
    if cleaned.casefold() in ("none", "off", "no"):
        return None
    try:
        value = float(cleaned)
    except ValueError:
        raise InputError(f"A spend cap is an amount in USD (like 50 or 12.5) or 'none'; "
                         f"{text!r} is neither.") from None
    if not value >= 0 or value == float("inf"):
        raise InputError(f"A spend cap cannot be {text!r}: give 0 or more, or 'none'.")
    return value


def _batch_actions(sub: argparse._SubParsersAction) -> argparse._SubParsersAction:  # type: ignore[type-arg]
    """The ``batch ACTION`` parsers cmd_jobs made (made here first if it has not run)."""
    parser = sub.choices.get("batch")
    if parser is None:
        return batch_commands(sub)
    for action in parser._actions:
        if isinstance(action, argparse._SubParsersAction):
            return action
    return batch_commands(sub)


def register(sub: argparse._SubParsersAction) -> None:  # type: ignore[type-arg]
    spend = sub.add_parser("spend", help="what each account has spent (all days and today) "
                           "and what the waiting jobs will cost")
    spend.add_argument("--json", action="store_true", help="machine-readable output")
    spend.add_argument(
        "--reconcile", action="store_true",
        help="line up, per account, model and UTC day, what the journal started and priced "
        "against what the provider reports it used (read now from the provider, where it "
        "publishes usage and this machine holds the key), and name each difference: "
        "renders the journal does not know, price drift (with the price that would "
        "match), refunds. Reads only; creates nothing")
    spend.add_argument("--days", type=int, default=spend_reconcile.DEFAULT_DAYS,
                       help="with --reconcile: how many UTC days back, today included "
                       f"(default {spend_reconcile.DEFAULT_DAYS}, at most 90)")
    spend.add_argument("--account", action="append", default=None, metavar="NAME",
                       help="with --reconcile: only this account (repeatable)")
    spend.set_defaults(handler=handle_spend)
    actions = _batch_actions(sub)
    cap = actions.add_parser(
        "cap", help="stop starting renders once the batch has spent USD ('none': no cap)")
    cap.add_argument("batch", help="the batch's number or name ('batch list')")
    cap.add_argument("usd", type=str, metavar="USD|none")
    cap.set_defaults(handler=handle_batch_cap)


def handle_batch_cap(args: argparse.Namespace, ctx: CliContext) -> int:
    usd = parse_usd(args.usd)

    async def cap(session: Session) -> tuple[Batch, SpendSummary]:
        batch = find_batch(await jobs.batches(session), args.batch)
        await jobs.set_batch_cap(session, batch.id, usd)
        return batch, await status.spend(session)

    batch, spent_so_far = run_on_journal(ctx, cap, lock=False)
    mine = [b for b in spent_so_far.batches if b.batch_id == batch.id]
    if usd is None:
        ctx.print(f"Batch {batch.id} ({batch.name}): no spend cap.")
    else:
        spent = mine[0].spent if mine else 0.0
        ctx.print(f"Batch {batch.id} ({batch.name}): spend cap ${usd:.2f}, spent ${spent:.2f}"
                  + (f"; {mine[0].waiting} jobs wait for the cap" if mine and mine[0].waiting
                     else "") + ".")
    ctx.print(PICKED_UP)
    return 0


def describe(spend: SpendSummary) -> list[str]:
    """Lines for ``status``: every capped batch, every account's spend today."""
    lines = []
    for b in spend.batches:
        held = f", cap reached: {b.waiting} waiting" if b.waiting else ""
        lines.append(f"Batch {b.batch_id} ({b.name}): spent {b.describe()}{held}")
    for a in spend.accounts:
        if a.cap is None and not a.committed:
            continue
        held = f", cap reached: {a.waiting} waiting" if a.waiting else ""
        gone = " (removed)" if a.removed else ""
        lines.append(f"Account {a.account}{gone}: spent today {a.describe()}{held}")
    return lines


def handle_spend(args: argparse.Namespace, ctx: CliContext) -> int:
    if not ctx.has_journal:
        ctx.print(f"No journal yet in {ctx.data_dir}.")
        return 0
    if args.reconcile:
        report = run_on_journal(
            ctx, lambda session: spend_reconcile.reconcile_spend(
                session, args.days, args.account), lock=False)
        if args.json:
            ctx.print(json.dumps(report.as_dict(), indent=2))
        else:
            for line in report.lines():
                ctx.print(line)
        return 0
    figures = run_on_journal(ctx, status.money, lock=False)
    if args.json:
        ctx.print(json.dumps(figures.as_dict(), indent=2))
        return 0
    for line in money_lines(figures):
        ctx.print(line)
    return 0


def money_lines(figures: Money) -> list[str]:
    """``spend``'s lines: each account's spend (all days, then today's in the window's
    words), each capped batch, and what the waiting jobs will cost."""
    lines = []
    for a in figures.today.accounts:
        lines.append(f"Account {a.account}{' (removed)' if a.removed else ''}: spent "
                     f"${figures.spent.get(a.account, 0.0):.2f}, today {a.describe()}"
                     + (f", cap reached: {a.waiting} waiting" if a.reached else ""))
    today = {a.account for a in figures.today.accounts}
    for name in figures.removed_accounts():  # paid on an earlier day: still counted
        if name not in today:
            lines.append(f"Account {name} (removed): spent ${figures.spent[name]:.2f}, "
                         "today $0.00")
    for b in figures.today.batches:
        held = f", cap reached: {b.waiting} waiting" if b.waiting else ""
        lines.append(f"Batch {b.batch_id} ({b.name}): spent {b.describe()}{held}")
    lines += figures.to_go_lines() or ["Waiting jobs: none (nothing to go)."]
    return lines
