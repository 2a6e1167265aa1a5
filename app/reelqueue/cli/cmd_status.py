"""``reelqueue status`` and ``reelqueue doctor``: what the journal says, and whether the
invariants of DESIGN.md hold over the whole history."""

from __future__ import annotations

import argparse
import json
from typing import Any

from reelqueue.application import status
from reelqueue.application.compose import journal_mode
from reelqueue.application.providers import plugin_report
from reelqueue.application.session import Session
from reelqueue.application.words import job_state_words
from reelqueue.cli.cmd_spend import describe as describe_spend
from reelqueue.cli.context import CliContext
from reelqueue.cli.journal import run_on_journal


def register(sub: argparse._SubParsersAction) -> None:  # type: ignore[type-arg]
    status = sub.add_parser("status", help="counts by state, per account and per job")
    status.add_argument("--json", action="store_true", help="machine-readable output")
    status.add_argument("--batch", type=int, default=None, help="only this batch's jobs")
    status.add_argument("--limit", type=int, default=50,
                        help="jobs listed in the text output (default 50; JSON lists all)")
    status.set_defaults(handler=handle_status)
    doctor = sub.add_parser("doctor", help="check the journal's invariants; non-zero if any fails")
    doctor.add_argument("--json", action="store_true")
    doctor.set_defaults(handler=handle_doctor)


def handle_status(args: argparse.Namespace, ctx: CliContext) -> int:
    plugins = plugin_report()
    if not ctx.has_journal:
        ctx.print(f"No journal yet in {ctx.data_dir}.")
        for line in plugins.lines():
            ctx.print(line)
        return 0
    # Reading needs no lock; a running ReelQueue may hold it while we look.
    report = run_on_journal(ctx, lambda session: status.status(session, args.batch),
                            lock=False)
    data, attention = report.data, report.attention
    spend_lines = describe_spend(report.spend)
    if args.json:
        ctx.print(json.dumps({**data, "plugins": plugins.as_dict()}, indent=2))
        return 0
    for line in plugins.lines():
        ctx.print(line)
    connection = data.get("team_connection")
    if connection is not None:
        said = {True: "encrypted", False: "NOT encrypted"}.get(connection["encrypted"],
                                                               "encryption unknown")
        ctx.print(f"team database connection: {said}")
        for line in connection["warnings"]:
            ctx.print(f"  {line}")
    total = sum(data["by_state"].values())
    # each state by its one name (application.words), as the window and the API say it
    ctx.print(f"{total} jobs: " + ", ".join(
        f"{n} {job_state_words(s).name}" for s, n in sorted(data["by_state"].items()))
        if total else "No jobs.")
    for line in status.attention_sentences(attention):
        ctx.print(f"  needs attention: {line}")
    for line in attention.waiting_sentences():
        ctx.print(f"  waiting: {line}")
    for line in spend_lines:
        ctx.print(f"  {line}")
    for line in report.money.to_go_lines() if report.money is not None else ():
        ctx.print(f"  {line}")  # the window's "est. $X to go", from the same read
    for a in data["accounts"]:
        state = a["state_words"]["name"]  # the window's card chip says the same
        mine = a.get("this_machine") or ""
        if mine.startswith(state):  # "address unreadable: ...": the name, then why
            state = mine
        elif mine:
            state += f"; on this machine: {mine}"
        took = report.money.took_over_words(a["name"]) if report.money is not None else ""
        ctx.print(f"  account {a['name']} ({a['provider']}): {a['running']}/{a['limit']} "
                  f"running, {state}" + (f"; {took}" if took else ""))
        for line in (a.get("view") or {}).get("words", ()):
            ctx.print(f"      {line}")
    for j in data["jobs"][: args.limit]:
        detail = j["output_path"] or j["last_error"] or ""  # the name says the sub-status
        if j["output_path"] and j["output_host"]:
            detail += f" (on {j['output_host']})"
        ctx.print(f"  #{j['id']:<5} row {j['row'] or '-':<5} {j['state_words']['name']:<16} "
                  f"attempts {j['attempts']}  {detail}")
        if j.get("create_evidence"):  # an unknown create's last reading (issue 32 item 6)
            ctx.print(f"         {j['create_evidence']['words']}")
    if len(data["jobs"]) > args.limit:
        ctx.print(f"  ... {len(data['jobs']) - args.limit} more (use --json for all)")
    return 0


def handle_doctor(args: argparse.Namespace, ctx: CliContext) -> int:
    plugins = plugin_report()
    if not ctx.has_journal:
        ctx.print(f"No journal in {ctx.data_dir}; nothing to check.")
        for line in plugins.lines():
            ctx.print(line)
        return 0
    # If another ReelQueue holds the folder, its live claims are legitimate.
    warnings: list[str] = []

    async def check(session: Session) -> dict[str, list[Any]]:
        warnings.extend(session.mode.connection_warnings(session.journal.sync))
        return await status.doctor(session, alive)

    with status.other_instance_probe(ctx) as alive:
        results = run_on_journal(ctx, check, lock=False)
    failed = {name: rows for name, rows in results.items() if rows}
    if args.json:
        ctx.print(json.dumps({"ok": not failed, "checks": results,
                              "plugins": plugins.as_dict()}, indent=2, default=str))
    else:
        for name, rows in results.items():
            ctx.print(f"{'FAIL' if rows else 'ok  '} {name.replace('_', ' ')}"
                      + (f": {rows[:10]}" if rows else ""))
        if journal_mode(ctx).shared:
            ctx.print("note: a team database: live claims were checked against the server's "
                      "clock (their leases) and their instances' heartbeats.")
        elif alive:
            ctx.print("note: another ReelQueue is running here; live claims were not checked.")
        for line in warnings:
            ctx.print(line)
        for line in plugins.lines():  # a skipped plug-in is said, not a failed check
            ctx.print(line)
    return 1 if failed else 0
