"""``reelqueue instances``: the machines sharing the queue (issue 21): host, version,
clock offset, last heartbeat, live renders, and which are gone. On a team database the
registry's silence is judged on the server's clock against each instance's lease, so a
SIGKILLed worker reads "gone" once its heartbeat is older than its lease; on the local
journal, this one machine."""

from __future__ import annotations

import argparse
import json
import socket
import time

from reelqueue.application import status, team
from reelqueue.application.compose import journal_mode
from reelqueue.application.session import Session
from reelqueue.application.team import RUNNING, SILENT, TeamMachine
from reelqueue.cli.context import CliContext
from reelqueue.cli.journal import run_on_journal


def register(sub: argparse._SubParsersAction) -> None:  # type: ignore[type-arg]
    cmd = sub.add_parser("instances", help="the machines sharing the queue: heartbeat, "
                                           "clock offset, live renders, which are gone")
    cmd.add_argument("--json", action="store_true", help="machine-readable output")
    cmd.set_defaults(handler=handle)


def _duration(seconds: float) -> str:
    seconds = max(0, int(seconds))
    if seconds < 60:
        return f"{seconds} s"
    if seconds < 3600:
        return f"{seconds // 60} min {seconds % 60:02d} s"
    return f"{seconds // 3600} h {seconds % 3600 // 60:02d} min"


def state_words(machine: TeamMachine, *, team_store: bool) -> str:
    """What one machine is doing, in the user's words."""
    if not team_store:
        return ("running (holds this data folder)" if machine.state == RUNNING
                else "not running")
    if machine.state == RUNNING:
        return f"running, heartbeat {_duration(machine.silent_for)} ago"
    if machine.state == SILENT:
        lease = f" (lease {machine.lease_seconds:g} s)" if machine.lease_seconds else ""
        return (f"GONE: not heard from for {_duration(machine.silent_for)}{lease}; its "
                "renders are taken over by the others")
    return "stopped (said goodbye)"


def _offset(machine: TeamMachine) -> str:
    if machine.clock_offset is None:
        return "clock offset unknown"
    return f"clock {machine.clock_offset:+.1f} s"


def handle(args: argparse.Namespace, ctx: CliContext) -> int:
    team_store = journal_mode(ctx).shared

    async def read(session: Session) -> tuple[list[TeamMachine], str, list[str]]:
        name = session.mode.where(session.journal.sync)
        machines = await team.instances(session, local_running=running)
        return machines, name, await team.unserved(session, machines)

    with status.other_instance_probe(ctx) as alive:
        running = alive and not team_store
        machines, name, unserved = run_on_journal(ctx, read, lock=False)
    if args.json:
        ctx.print(json.dumps([{
            "id": m.id, "host": m.host, "pid": m.pid or None, "version": m.version,
            "state": m.state, "gone": m.state == SILENT,
            "silent_for": round(m.silent_for, 3) if team_store else None,
            "heartbeat_at": m.heartbeat_at if team_store else None,
            "clock_offset": m.clock_offset, "lease_seconds": m.lease_seconds,
            "live_renders": m.live_renders, "this_machine": m.this_machine,
            "providers": list(m.providers) if m.providers is not None else "unknown",
        } for m in machines], indent=2))
        return 0
    if not team_store:
        ctx.print(f"One machine ({socket.gethostname()}) on the local journal; other "
                  "machines share a queue through a team database (--store).")
    else:
        live = sum(1 for m in machines if m.state == RUNNING)
        gone = sum(1 for m in machines if m.state == SILENT)
        ctx.print(f"{len(machines)} instance(s) registered on {name}: {live} running, "
                  f"{gone} gone (times on the database server's clock).")
    for m in machines:
        heard = ""
        if team_store and m.heartbeat_at:
            heard = ", last heartbeat " + time.strftime(
                "%H:%M:%S", time.localtime(m.heartbeat_at))
        renders = f"{m.live_renders} live render{'s' if m.live_renders != 1 else ''}"
        if m.state == SILENT:
            renders += " at its last heartbeat"
        ctx.print(f"  {m.host}" + (f" pid {m.pid}" if m.pid else "")
                  + f"  v{m.version}  {state_words(m, team_store=team_store)}{heard}; "
                  f"{_offset(m)}; {renders}; {team.providers_words(m)}")
    for line in unserved:
        ctx.print(line)
    return 0
