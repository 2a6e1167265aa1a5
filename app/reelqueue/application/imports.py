"""The user's commands on sheets: plan an import (read, map, validate, estimate: nothing
written), apply it (the batch, its jobs, its manifest, maybe a spend cap), export a batch's
results. The window, the command line and the HTTP API all call these.

The sheet is read on a worker thread; the journal is asked which jobs it already has from
that thread (on the journal's own thread), so the plan's cost estimate counts only the new
jobs and is computed once.
"""

from __future__ import annotations

import asyncio
from dataclasses import replace
from pathlib import Path
from typing import Literal

from reelqueue.application.session import Session
from reelqueue.domain.errors import InputError
from reelqueue.domain.models import Batch
from reelqueue.domain.routes import RoutePolicy, Tolerance, typical_speeds
from reelqueue.engine.import_commands import finish_plan, write_plan
from reelqueue.intake import (
    FIELDS,
    AccountPrices,
    ColumnMapping,
    ImportOptions,
    ImportPlan,
    ImportResult,
    IntakeStore,
    PreviewRow,
    RowError,
    export_results,
    parse_map_options,
)
from reelqueue.intake import plan_import as read_plan
from reelqueue.intake.apply import find_batch as find_batch_by_key
from reelqueue.intake.apply import refusal_message
from reelqueue.intake.catalog import RegistryCatalog
from reelqueue.intake.estimate import money
from reelqueue.intake.filenames import DEFAULT_TEMPLATE, TEMPLATE_FIELDS
from reelqueue.intake.limits import (
    DEFAULT_MAX_CELL_CHARS,
    DEFAULT_MAX_CELLS,
    DEFAULT_MAX_TEXT_BYTES,
)
from reelqueue.intake.mapping import display_headers
from reelqueue.intake.pins import pinned_elsewhere
from reelqueue.intake.planner import DEFAULT_MAX_WAITING, WorstCase, batch_name_for
from reelqueue.intake.routes import RouteSettings, route_settings
from reelqueue.intake.sheet import DEFAULT_MAX_FILE_BYTES, TEXT_EXTENSIONS, WORKBOOK_EXTENSIONS

__all__ = ["DEFAULT_MAX_CELLS", "DEFAULT_MAX_CELL_CHARS", "DEFAULT_MAX_FILE_BYTES",
           "DEFAULT_MAX_TEXT_BYTES", "DEFAULT_MAX_WAITING", "DEFAULT_TEMPLATE", "FIELDS",
           "ROUTE_POLICIES", "TEMPLATE_FIELDS", "TEXT_EXTENSIONS", "TOLERANCES",
           "WORKBOOK_EXTENSIONS", "ColumnMapping", "ImportOptions", "ImportPlan",
           "ImportResult", "PreviewRow", "RouteSettings", "RowError", "WorstCase",
           "account_prices", "apply_import", "display_headers", "export_batch", "find_batch",
           "money", "parse_map_options", "plan_import", "plan_without_journal",
           "refusal_message", "route_settings", "with_saved_route"]

ROUTE_POLICIES = tuple(policy.value for policy in RoutePolicy)
TOLERANCES = tuple(tolerance.value for tolerance in Tolerance)


def with_saved_overrides(store: IntakeStore, path: Path, options: ImportOptions) -> ImportOptions:
    """Without column overrides, a re-import reuses those given when the batch was created;
    without route settings, the route settings saved with it (a routed row's key hashes its
    policy and tolerance). Runs on the journal thread."""
    if options.column_overrides and options.route_given:
        return options
    batch = find_batch_by_key(store, batch_name_for(path, options).casefold().strip())
    intake = batch.settings.get("intake") if batch else None
    if not isinstance(intake, dict):
        return options
    saved = intake.get("column_overrides")
    if saved and not options.column_overrides:
        options = replace(options,
                          saved_overrides=tuple((str(c), str(f)) for c, f in saved))
    if not options.route_given:
        options = replace(options, saved_route=saved_route(intake))
    return options


def with_saved_route(store: IntakeStore, path: Path, options: ImportOptions) -> ImportOptions:
    """Without route settings, the ones saved with the batch (runs on the journal thread)."""
    if options.route_given:
        return options
    batch = find_batch_by_key(store, batch_name_for(path, options).casefold().strip())
    intake = batch.settings.get("intake") if batch else None
    if not isinstance(intake, dict):
        return options
    return replace(options, saved_route=saved_route(intake))


def saved_route(intake: dict[str, object]) -> dict[str, object] | None:
    """The route settings a batch was imported with (None: none saved, or all defaults)."""
    route = intake.get("route")
    chosen = {"route": list(route) if isinstance(route, list) else [],
              "route_policy": intake.get("route_policy") or "order",
              "tolerance": intake.get("tolerance") or "exact",
              "route_on_policy": intake.get("route_on_policy") is True}
    defaults = {"route": [], "route_policy": "order", "tolerance": "exact",
                "route_on_policy": False}
    return None if chosen == defaults else chosen


async def plan_import(session: Session, path: Path, options: ImportOptions) -> ImportPlan:
    """Read, map and validate the sheet; say which of its jobs the journal already has and
    what the new ones will cost. Writes nothing; InputError when the file is unusable."""
    journal = session.journal
    options = await journal.call(with_saved_overrides, journal.sync, Path(path), options)
    accounts = await session.journal.list_accounts()
    prices = AccountPrices.of(accounts)
    loop = asyncio.get_running_loop()

    def existing_keys(keys: object) -> set[str]:
        # Called by the planner on its worker thread: the journal answers on its own.
        future = asyncio.run_coroutine_threadsafe(
            journal.existing_job_keys(list(keys)), loop)  # type: ignore[call-overload]
        return set(future.result())

    plan = await asyncio.to_thread(read_plan, Path(path), options,
                                   existing_keys=existing_keys,
                                   catalog=RegistryCatalog(session.providers),
                                   now=session.clock.now(), accounts=prices,
                                   speeds=await render_speeds(session))
    # Rows pinned to an account not configured here are imported all the same (on a team
    # database another machine may have it; it may be added later): said, never refused.
    configured = {account.name for account in accounts}
    return replace(plan, pinned_elsewhere=pinned_elsewhere(
        plan.jobs, configured, team=session.mode.shared))


async def render_speeds(session: Session) -> dict[str, float]:
    """Routing's "fastest" (docs/routing.md): each render kind's typical time from the
    journal's newest finished renders, only for kinds with enough of them — the figures
    the window's ETAs come from (domain/render_times.py)."""
    return typical_speeds(await session.journal.recent_render_times())


async def account_prices(session: Session) -> AccountPrices:
    """The accounts' own prices (``accounts set NAME --price-per-second``) for estimates."""
    return AccountPrices.of(await session.journal.list_accounts())


def plan_without_journal(path: Path, options: ImportOptions, now: float) -> ImportPlan:
    """A plan for a sheet when there is no journal yet (blocking: a worker thread): no
    account exists, so prices come from the providers' tables only."""
    plan = read_plan(Path(path), options, now=now)
    return replace(plan, pinned_elsewhere=pinned_elsewhere(plan.jobs, ()))


async def apply_import(session: Session, plan: ImportPlan, first_rows: int | None = None, *,
                       max_spend: float | None = None,
                       set_max_spend: bool = False) -> ImportResult:
    """Write the plan (or only its first ``first_rows`` jobs: a test run); with
    ``max_spend`` (or ``set_max_spend``, where None means no cap) the batch's spend cap is
    set in the same journal call, so no claim can take a job of it before the cap is in
    place. InputError when the plan was refused."""
    if plan.refused:
        raise InputError(refusal_message(plan))
    if first_rows is not None:
        plan = plan.first_rows(first_rows)
    written = await write_plan(session.journal, plan, session.clock.now(),
                               max_spend=max_spend, cap=set_max_spend)
    await session.changed()  # the jobs can be claimed now; the manifest does not hold them up
    return await finish_plan(plan, written)


def find_batch(batches: list[Batch], ref: str) -> Batch:
    """A batch by its number, else by its name (case-insensitive, must be unique)."""
    if ref.strip().isdigit():
        for batch in batches:
            if batch.id == int(ref):
                return batch
    named = [b for b in batches if b.name.casefold() == ref.strip().casefold()]
    if len(named) == 1:
        return named[0]
    if named:
        raise InputError(f"{len(named)} batches are named {ref!r} (numbers "
                         f"{', '.join(str(b.id) for b in named)}): give the number.")
    raise InputError(f"There is no batch {ref!r}; 'reelqueue batch list' shows them.")


async def export_batch(session: Session, batch_id: int, path: Path,
                       fmt: Literal["csv", "xlsx"]) -> int:
    """Write the batch's original columns and results to ``path``; return the rows
    written."""
    journal = session.journal
    return await journal.call(export_results, journal.sync, batch_id, Path(path), fmt)
