"""``reelqueue import SHEET`` and ``reelqueue export BATCH PATH``.

``import`` prints what the sheet will become before adding anything: the column mapping,
a preview of the first rows as they will be rendered, every row error (row, column, what
is wrong, what would be accepted), how many rows were imported before, and the cost
estimate. ``--dry-run`` stops there and writes nothing. Exit 0 when the import went ahead
(rows with errors are reported and left out), 2 when it was refused: no row valid (the
last line says how many were refused), ``--all-or-nothing`` with a row error, the sheet
over a limit measured before it is loaded (``--max-cells``, ``--max-cell-kb``,
``--max-text-mb``, ``--max-file-mb``; rows past ``--max-waiting`` stop the reading).
"""

from __future__ import annotations

import argparse
from pathlib import Path
from typing import Any, Literal

from reelqueue.application import imports, jobs
from reelqueue.application.compose import journal_mode
from reelqueue.application.imports import (
    DEFAULT_MAX_CELL_CHARS,
    DEFAULT_MAX_CELLS,
    DEFAULT_MAX_FILE_BYTES,
    DEFAULT_MAX_TEXT_BYTES,
    DEFAULT_MAX_WAITING,
    DEFAULT_TEMPLATE,
    ROUTE_POLICIES,
    TEMPLATE_FIELDS,
    TOLERANCES,
    ImportOptions,
    ImportPlan,
    ImportResult,
    money,
    parse_map_options,
    refusal_message,
    route_settings,
)
from reelqueue.application.session import Session
from reelqueue.cli.context import CliContext
from reelqueue.cli.journal import run_on_journal
from reelqueue.domain.errors import InputError
from reelqueue.domain.models import Batch
from reelqueue.domain.routes import Route

EXIT_OK = 0
EXIT_REFUSED = 2
MAX_ERRORS_SHOWN = 50
PROMPT_PREVIEW_CHARS = 60


def register(subparsers: argparse._SubParsersAction) -> None:  # type: ignore[type-arg]
    sheet_help = "CSV, TSV, TXT (one prompt per line), XLSX, XLSM, XLS or ODS"
    importer = subparsers.add_parser(
        "import", help="check a sheet and add its rows to the queue",
        description="Map, validate and import a sheet of prompts. Re-importing the same "
                    "sheet adds only new or edited rows.",
    )
    importer.add_argument("path", type=Path, metavar="SHEET", help=sheet_help)
    add_import_arguments(importer)
    importer.add_argument("--dry-run", action="store_true",
                          help="show the preview, errors and estimate; write nothing")
    importer.add_argument("--preview-rows", type=int, default=5, metavar="N",
                          help="rows shown in the preview (default 5)")
    importer.add_argument("--max-spend", default=None, metavar="USD",
                          help="the batch starts no render past this spend ('none': no cap)")
    importer.set_defaults(handler=handle_import)

    exporter = subparsers.add_parser(
        "export", help="write a batch's rows and results to a CSV or XLSX file",
    )
    exporter.add_argument("batch", help="the batch's id or name")
    exporter.add_argument("--format", choices=("csv", "xlsx"), default=None,
                          help="default: from PATH's extension, else csv")
    exporter.add_argument("path", type=Path, help="the file to write")
    exporter.set_defaults(handler=handle_export)


def add_import_arguments(parser: argparse.ArgumentParser) -> None:
    parser.add_argument("--provider", default="mock", help="provider of rows that name none")
    parser.add_argument("--model", help="model for rows that name none")
    parser.add_argument("--duration", type=float, metavar="SECONDS",
                        help="duration for rows that give none")
    parser.add_argument("--aspect-ratio", metavar="W:H", help="aspect ratio for rows without")
    parser.add_argument("--resolution", help="resolution for rows without (e.g. 720p)")
    parser.add_argument("--sheet", dest="sheet_name", metavar="NAME",
                        help="the workbook sheet (name or number)")
    parser.add_argument("--delimiter", metavar="D", help="CSV delimiter: , ; | or tab")
    parser.add_argument("--encoding", help="text encoding (default: detected)")
    parser.add_argument("--map", action="append", default=[], metavar="COLUMN=FIELD",
                        help="map a column (header, letter or number) to a field, or to "
                             "'ignore'; repeatable")
    parser.add_argument("--all-or-nothing", action="store_true",
                        help="refuse the whole sheet if any row has an error")
    parser.add_argument("--batch-name", metavar="NAME",
                        help="default: the file's name; the same name reuses the batch")
    parser.add_argument("--output-dir", type=Path, metavar="DIR",
                        help="root folder of the batch folders (default: --videos-dir)")
    parser.add_argument("--filename-template", default=DEFAULT_TEMPLATE, metavar="T",
                        help="fields: " + " ".join("{" + f + "}" for f in TEMPLATE_FIELDS)
                             + f" (default {DEFAULT_TEMPLATE})")
    parser.add_argument("--max-waiting", type=int, default=DEFAULT_MAX_WAITING, metavar="N",
                        help="refuse an import that would leave more jobs waiting")
    parser.add_argument("--max-attempts", type=int, default=3, metavar="N",
                        help="attempts per job (default 3)")
    parser.add_argument("--max-file-mb", type=float,
                        default=DEFAULT_MAX_FILE_BYTES / 1_048_576, metavar="MB",
                        help="refuse larger files (default 100)")
    parser.add_argument("--max-cells", type=int, default=DEFAULT_MAX_CELLS, metavar="N",
                        help="refuse a sheet spanning more cells, measured before it is "
                             f"loaded (default {DEFAULT_MAX_CELLS:,})")
    parser.add_argument("--max-cell-kb", type=float, default=DEFAULT_MAX_CELL_CHARS / 1024,
                        metavar="KB", help="refuse a cell (or CSV line) longer than this many "
                                           f"thousand characters (default "
                                           f"{DEFAULT_MAX_CELL_CHARS // 1024:,})")
    parser.add_argument("--max-text-mb", type=float,
                        default=DEFAULT_MAX_TEXT_BYTES / 1_048_576, metavar="MB",
                        help="refuse a sheet whose text, unpacked or decoded, is larger "
                             f"(default {DEFAULT_MAX_TEXT_BYTES // 1_048_576})")
    parser.add_argument("--allow-images-anywhere", action="store_true",
                        help="let rows name reference images outside the sheet's folder")
    add_takes_argument(parser)
    add_route_arguments(parser)


def add_takes_argument(parser: argparse.ArgumentParser) -> None:
    """``--takes N`` (issue 35 item 1), for ``import`` and ``run``."""
    parser.add_argument("--takes", type=int, default=1, metavar="N",
                        help="renders of every row whose repeat cell is empty (1-100, "
                             "default 1); each take has its own seed (given + n, or drawn); "
                             "the price is said above 10")


def add_route_arguments(parser: argparse.ArgumentParser) -> None:
    """``--route``, ``--route-policy``, ``--tolerance``, ``--route-on-policy`` (issue 24)."""
    parser.add_argument("--route", metavar="P1,P2,...",
                        help="providers a row without one may render on, e.g. "
                             "veo,runway,luma (a provider cell such as veo|runway routes "
                             "its own row)")
    parser.add_argument("--route-policy", metavar="POLICY",
                        help="how a routed row's providers are ranked: "
                             + ", ".join(ROUTE_POLICIES) + " (default order)")
    parser.add_argument("--tolerance", metavar="T",
                        help="how far a routed row's settings may move to fit a provider: "
                             + ", ".join(TOLERANCES) + " (default exact: a provider that "
                             "refuses the row as written is left out)")
    parser.add_argument("--route-on-policy", action="store_true",
                        help="a routed job moves on after a content-policy refusal too")


def route_options(args: argparse.Namespace) -> dict[str, Any]:
    """The route settings of ``args`` as ImportOptions fields, checked (InputError with
    what is accepted); none given: none set, so a re-import reuses the batch's own."""
    route = getattr(args, "route", None)
    policy = (getattr(args, "route_policy", None) or "order").strip().lower()
    tolerance = (getattr(args, "tolerance", None) or "exact").strip().lower()
    on_policy = bool(getattr(args, "route_on_policy", False))
    if policy not in ROUTE_POLICIES:
        raise InputError(f"--route-policy {policy!r}: use one of {', '.join(ROUTE_POLICIES)}.")
    if tolerance not in TOLERANCES:
        raise InputError(f"--tolerance {tolerance!r}: use one of {', '.join(TOLERANCES)}.")
    try:
        checked = route_settings(route or (), policy, tolerance, on_policy)
    except InputError as exc:
        raise InputError(f"--route: {exc}") from None
    return {"route": checked.providers, "route_policy": checked.policy.value,
            "tolerance": checked.tolerance.value, "route_on_policy": checked.on_policy}


def options_from_args(args: argparse.Namespace, ctx: CliContext) -> ImportOptions:
    if args.max_attempts < 1:
        raise InputError("--max-attempts must be at least 1.")
    if args.max_waiting < 1:
        raise InputError("--max-waiting must be at least 1.")
    if args.max_cells < 1 or args.max_cell_kb <= 0 or args.max_text_mb <= 0:
        raise InputError("--max-cells, --max-cell-kb and --max-text-mb must be positive.")
    return ImportOptions(
        provider=args.provider, model=args.model, duration=args.duration,
        aspect_ratio=args.aspect_ratio, resolution=args.resolution,
        output_root=args.output_dir or ctx.videos_dir, batch_name=args.batch_name,
        filename_template=args.filename_template,
        column_overrides=tuple(parse_map_options(args.map).items()),
        partial=not args.all_or_nothing, max_waiting=args.max_waiting,
        max_attempts=args.max_attempts, sheet=args.sheet_name, delimiter=args.delimiter,
        encoding=args.encoding, max_file_bytes=int(args.max_file_mb * 1_048_576),
        max_cells=args.max_cells, max_cell_chars=max(1, int(args.max_cell_kb * 1024)),
        max_text_bytes=int(args.max_text_mb * 1_048_576),
        allow_images_anywhere=args.allow_images_anywhere, takes=args.takes,
        **route_options(args),
    )


def handle_import(args: argparse.Namespace, ctx: CliContext) -> int:
    from reelqueue.cli.cmd_spend import parse_usd

    options = options_from_args(args, ctx)
    max_spend = None if args.max_spend is None else parse_usd(args.max_spend)
    if args.dry_run:
        plan = _plan_without_writing(ctx, args.path, options)
        print_plan(ctx, plan, args.preview_rows)
        if plan.refused:
            ctx.print(refusal_message(plan))
            return EXIT_REFUSED
        ctx.print("Dry run: nothing was written.")
        return EXIT_OK

    async def run(session: Session) -> ImportResult | None:
        plan = await imports.plan_import(session, args.path, options)
        print_plan(ctx, plan, args.preview_rows)
        if plan.refused:
            ctx.print(refusal_message(plan))
            return None
        return await imports.apply_import(session, plan, max_spend=max_spend,
                                          set_max_spend=args.max_spend is not None)

    result = run_on_journal(ctx, run)
    if result is None:
        return EXIT_REFUSED
    print_result(ctx, result)
    if args.max_spend is not None:
        ctx.print(f"Spend cap of batch {result.batch_id}: "
                  + ("none." if max_spend is None else f"${max_spend:.2f}."))
    return EXIT_OK


def _plan_without_writing(ctx: CliContext, path: Path, options: ImportOptions) -> ImportPlan:
    """A plan that knows what the journal holds, if there is a journal; creates none."""
    if not ctx.has_journal:
        return imports.plan_without_journal(path, options, ctx.clock.now())
    return run_on_journal(ctx, lambda session: imports.plan_import(session, path, options),
                          lock=False)


async def import_for_run(ctx: CliContext, session: Session, path: Path, options: ImportOptions,
                         *, max_spend: float | None = None,
                         set_max_spend: bool = False) -> ImportResult:
    """Import ``path`` for ``reelqueue run`` on its session: print the summary, raise
    InputError if refused."""
    plan = await imports.plan_import(session, path, options)
    print_plan(ctx, plan, preview_rows=0)
    if plan.refused:
        raise InputError(refusal_message(plan))
    result = await imports.apply_import(session, plan, max_spend=max_spend,
                                        set_max_spend=set_max_spend)
    print_result(ctx, result)
    return result


def print_plan(ctx: CliContext, plan: ImportPlan, preview_rows: int) -> None:
    sheet = plan.sheet
    how = ", ".join(part for part in (sheet.format, sheet.details) if part)
    ctx.print(f"Sheet: {Path(sheet.source_path).name} ({how}); "
              f"header on row {sheet.header_row_number}.")
    mapped = ", ".join(f"{field} <- {header!r}" for field, header in plan.mapping.by_field.items())
    ctx.print(f"Columns: {mapped}.")
    if plan.unmapped:
        ctx.print("Kept for the export only: " + ", ".join(repr(h) for h in plan.unmapped) + ".")
    if preview_rows > 0 and plan.jobs:
        ctx.print(f"Preview (first {min(preview_rows, len(plan.jobs))} of {len(plan.jobs)} jobs, "
                  "as they will be rendered):")
        for row in plan.preview(preview_rows):
            params = " ".join(f"{key}={value}" for key, value in row.params.items()
                              if key in ("model", "duration", "aspect_ratio", "resolution",
                                         "seed"))
            prompt = " ".join(row.prompt.split())
            if len(prompt) > PROMPT_PREVIEW_CHARS:
                prompt = prompt[: PROMPT_PREVIEW_CHARS - 1] + "…"
            done = " (already imported)" if row.already_present else ""
            ctx.print(f"  row {row.row_number}: {row.file_name} [{row.provider} {params}]{done}")
            ctx.print(f"      {prompt}")
            if row.price is not None:
                ctx.print(f"      {row.price.text}")
            if row.route is not None:
                print_route(ctx, row.route)
    print_errors(ctx, plan)
    for pinned in plan.pinned_elsewhere:  # imported all the same: they wait for it
        ctx.print(f"Warning: {pinned.describe()}")
    if plan.already_present:
        ctx.print(f"Already imported: {plan.already_present} jobs (nothing to do for them).")
    takes = plan.takes_words()
    if takes is not None:
        ctx.print(takes)
    print_estimate(ctx, plan)


def print_route(ctx: CliContext, route: Route) -> None:
    """A routed row's candidates, best first, each with its price and the settings the
    tolerance moved; then each provider left out, with why."""
    ctx.print(f"      route ({route.policy.value}, tolerance {route.tolerance.value}"
              f"{', moves on after a content-policy refusal' if route.on_policy else ''}):")
    for rank, candidate in enumerate(route.candidates, start=1):
        price = money(candidate.price) if candidate.price is not None else "price unknown"
        moved = ", ".join(f"{field.replace('_', ' ')} {written} -> {sent}"
                          for field, (written, sent) in candidate.changed.items())
        ctx.print(f"        {rank}. {candidate.provider}: {price}"
                  + (f" ({moved})" if moved else ""))
    for provider, why in route.left_out:
        ctx.print(f"        left out: {provider}: {why}")


def print_errors(ctx: CliContext, plan: ImportPlan) -> None:
    if not plan.errors:
        return
    rows = len({error.row_number for error in plan.errors})
    ctx.print(f"Errors: {len(plan.errors)} in {rows} row(s); these rows are not imported:")
    for error in plan.errors[:MAX_ERRORS_SHOWN]:
        ctx.print(f"  {error.describe()}")
    if len(plan.errors) > MAX_ERRORS_SHOWN:
        ctx.print(f"  ... and {len(plan.errors) - MAX_ERRORS_SHOWN} more.")


def print_estimate(ctx: CliContext, plan: ImportPlan) -> None:
    """One line per provider (and pinned account): its price with the price's source and
    date, or "price unknown — set it with ..." for the jobs that have none (never $0.00)."""
    estimate = plan.estimate
    if not estimate.lines:
        return
    ctx.print(f"Estimate for {estimate.jobs} new jobs (an estimate, not an invoice):")
    for line in estimate.lines:
        ctx.print(f"  {line.describe()}")
    ctx.print(f"  total: {estimate.describe_total()}")
    if plan.worst_case.routed_jobs:
        routed = plan.worst_case.routed_jobs
        ctx.print(f"  worst case: {plan.worst_case.describe()} ({routed:,} routed "
                  f"job{'' if routed == 1 else 's'} on the dearest provider of each route; "
                  "the total above counts each on its first)")


def print_result(ctx: CliContext, result: ImportResult) -> None:
    verb = "Created" if result.batch_created else "Added to"
    ctx.print(f"{verb} batch {result.batch_id} {result.batch_name!r}: {result.added} new jobs, "
              f"{result.already_present} already there, {len(result.errors)} row errors. "
              f"Videos go to {result.output_dir}.")
    if journal_mode(ctx).shared:
        folder = Path(result.output_dir).name
        ctx.print(f"On a team database each machine renders into {folder!r} under its own "
                  "videos folder (--videos-dir); 'reelqueue status' says which machine "
                  "holds each video.")


def handle_export(args: argparse.Namespace, ctx: CliContext) -> int:
    fmt = args.format or ("xlsx" if args.path.suffix.lower() == ".xlsx" else "csv")
    chosen: Literal["csv", "xlsx"] = "xlsx" if fmt == "xlsx" else "csv"

    async def export(session: Session) -> tuple[int, int]:
        batch_id = resolve_batch(await jobs.batches(session), args.batch)
        return batch_id, await imports.export_batch(session, batch_id, args.path, chosen)

    batch_id, written = run_on_journal(ctx, export, lock=False)
    ctx.print(f"Wrote {written} rows of batch {batch_id} to {args.path} ({chosen}).")
    return EXIT_OK


def resolve_batch(batches: list[Batch], wanted: str) -> int:
    if wanted.strip().isdigit():
        return int(wanted)
    matches = [batch for batch in batches if batch.name.casefold() == wanted.strip().casefold()]
    if len(matches) == 1:
        return matches[0].id
    listed = ", ".join(f"{batch.id} {batch.name!r}" for batch in batches) or "none"
    if matches:
        raise InputError(f"Several batches are named {wanted!r}; give the id. Batches: {listed}.")
    raise InputError(f"No batch named {wanted!r}. Batches: {listed}.")
