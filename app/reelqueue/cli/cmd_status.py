"""``reelqueue status`` and ``reelqueue doctor``: what the journal says, and whether the
invariants of DESIGN.md hold over the whole history."""

from __future__ import annotations

import argparse
import json
import time
from pathlib import Path
from typing import Any

from reelqueue.cli.cmd_spend import describe as describe_spend
from reelqueue.cli.cmd_spend import summary as spend_summary
from reelqueue.cli.context import CliContext
from reelqueue.domain.errors import DataDirLocked
from reelqueue.domain.states import JobState
from reelqueue.engine.attention import needs_attention
from reelqueue.engine.outputs import check_output
from reelqueue.store.base import Store
from reelqueue.store.spend import local_day_start


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


def _open_read(ctx: CliContext) -> Any:
    """Reading needs no lock; a running ReelQueue may hold it while we look."""
    return ctx.open_store(lock=False)


def status_data(store: Store, batch: int | None = None) -> dict[str, Any]:
    counts = store.counts()
    accounts = [{
        "name": a.name, "provider": a.provider, "running": counts.live_by_account.get(a.name, 0),
        "limit": a.capacity, "enabled": a.enabled, "status": a.status.value,
        "cooldown_until": a.cooldown_until,
    } for a in store.list_accounts()]
    jobs = [{
        "id": j.id, "batch": j.batch_id, "row": j.row_number, "name": j.name,
        "state": j.state.value, "sub_status": j.sub_status, "attempts": j.attempts,
        "account": j.account, "provider_job_id": j.provider_job_id,
        "output_path": j.output_path if j.state == JobState.COMPLETED else None,
        "error_label": j.error_label, "last_error": j.error_message,
        "price": j.metadata.get("price"), "cost": j.cost,
    } for j in store.list_jobs(batch_id=batch)]
    # Parked renders (their resume kept killing the process) and creates of unknown
    # outcome wait for the user (engine/attention.py says what to do about each).
    now = time.time()  # spend caps: what each capped batch and account has spent
    spend = store.spend_summary(now, local_day_start(now))
    return {"by_state": counts.by_state, "accounts": accounts, "jobs": jobs,
            "needs_attention": needs_attention(store, batch).as_dict(),
            "spend": spend.as_dict()}


def handle_status(args: argparse.Namespace, ctx: CliContext) -> int:
    if not ctx.has_journal:
        ctx.print(f"No journal yet in {ctx.data_dir}.")
        return 0
    with _open_read(ctx) as store:
        data = status_data(store, args.batch)
        attention = needs_attention(store, args.batch)
        spend_lines = describe_spend(spend_summary(store, ctx))
    if args.json:
        ctx.print(json.dumps(data, indent=2))
        return 0
    total = sum(data["by_state"].values())
    ctx.print(f"{total} jobs: " + ", ".join(
        f"{n} {s.lower()}" for s, n in sorted(data["by_state"].items())) if total else "No jobs.")
    for line in attention.sentences():
        ctx.print(f"  needs attention: {line}")
    for line in spend_lines:
        ctx.print(f"  {line}")
    for a in data["accounts"]:
        state = a["status"] if a["enabled"] else "paused"  # the window's word too
        ctx.print(f"  account {a['name']} ({a['provider']}): {a['running']}/{a['limit']} "
                  f"running, {state}")
    for j in data["jobs"][: args.limit]:
        detail = j["output_path"] or j["last_error"] or j["sub_status"] or ""
        ctx.print(f"  #{j['id']:<5} row {j['row'] or '-':<5} {j['state']:<11} "
                  f"attempts {j['attempts']}  {detail}")
    if len(data["jobs"]) > args.limit:
        ctx.print(f"  ... {len(data['jobs']) - args.limit} more (use --json for all)")
    return 0


def doctor_checks(store: Store, instance_alive: bool) -> dict[str, list[Any]]:
    """The invariant queries, plus every completed job's file with its size and hash."""
    results = store.doctor_queries(instance_alive)
    bad_files: list[Any] = []
    for job in store.list_jobs(states=[JobState.COMPLETED]):
        check = check_output(job)
        if not check.exists:
            bad_files.append((job.id, job.output_path, "missing"))
        elif check.size != job.output_size or check.sha256 != job.output_sha256:
            bad_files.append((job.id, job.output_path, "size or sha256 differs"))
    results["completed_file_mismatch"] = bad_files
    outputs: dict[str, list[int]] = {}
    for job in store.list_jobs():
        outputs.setdefault(str(Path(job.output_path)), []).append(job.id)
    results["shared_output_paths"] = [(p, ids) for p, ids in outputs.items() if len(ids) > 1]
    return results


def handle_doctor(args: argparse.Namespace, ctx: CliContext) -> int:
    if not ctx.has_journal:
        ctx.print(f"No journal in {ctx.data_dir}; nothing to check.")
        return 0
    # If another ReelQueue holds the folder, its live claims are legitimate.
    from reelqueue.store.lockfile import DataDirLock

    lock = DataDirLock(ctx.data_dir)
    try:
        lock.acquire()
        # A team database: other machines' live claims are legitimate too.
        alive = ctx.store_url is not None
    except DataDirLocked:
        alive = True
    try:
        with ctx.open_store(lock=False) as store:
            results = doctor_checks(store, instance_alive=alive)
    finally:
        lock.release()
    failed = {name: rows for name, rows in results.items() if rows}
    if args.json:
        ctx.print(json.dumps({"ok": not failed, "checks": results}, indent=2, default=str))
    else:
        for name, rows in results.items():
            ctx.print(f"{'FAIL' if rows else 'ok  '} {name.replace('_', ' ')}"
                      + (f": {rows[:10]}" if rows else ""))
        if alive:
            ctx.print("note: another ReelQueue is running here; live claims were not checked.")
    return 1 if failed else 0
