"""Planning an import: from a sheet to the jobs it will become, without writing anything.

:func:`plan_import` reads the sheet, maps its columns, validates every row against its
provider, gives every job a stable key and a safe output path, counts what is already in
the journal and estimates the cost. The result, an :class:`ImportPlan`, is what the user
previews; :func:`reelqueue.intake.apply.apply_import` writes it.

Job keys. A row with an ``id`` gets ``id:`` + a hash of (batch, id). Otherwise the key
hashes (batch, the row's normalised values, and which occurrence of those values it is in
the sheet). The *occurrence* stands in for the row number: two identical rows are still
two jobs, but inserting, deleting or sorting rows does not turn every row below into a
"new" job that would be rendered (and paid for) a second time. An edited row is a new
job. ``repeat: 3`` gives the keys K, K#2, K#3, so raising a repeat adds only the extra
copies.

Routed rows (issue 24: a provider cell naming several providers, or a blank one under a
batch route) are checked per candidate by :mod:`reelqueue.intake.routes`; their key
(``route:``) hashes the route as written and the row's cells as written instead of the
provider and params, so a change of prices (which may change the candidate ranked first)
adds nothing on a re-import. ``estimate`` counts each routed job on its best candidate,
``worst_case`` on its dearest.
"""

from __future__ import annotations

import gc
import math
import random
import threading
from collections.abc import Callable, Iterable, Iterator, Mapping
from contextlib import contextmanager
from dataclasses import dataclass, field, replace
from datetime import datetime
from pathlib import Path
from typing import Any

import platformdirs

from reelqueue.domain.errors import InputError
from reelqueue.domain.models import BatchSpec, JobSpec
from reelqueue.domain.routes import Route
from reelqueue.intake.catalog import ProviderCatalog, RegistryCatalog
from reelqueue.intake.estimate import (
    NO_ACCOUNTS,
    AccountPrices,
    CostEstimate,
    PriceQuote,
    Pricer,
    estimate_quoted,
    money,
    stamp_prices,
)
from reelqueue.intake.filenames import DEFAULT_TEMPLATE, CompiledTemplate, check_template
from reelqueue.intake.images import ImageChecker
from reelqueue.intake.jobs import JobBuilder
from reelqueue.intake.limits import (
    DEFAULT_MAX_CELL_CHARS,
    DEFAULT_MAX_CELLS,
    DEFAULT_MAX_TEXT_BYTES,
    SheetLimits,
)
from reelqueue.intake.mapping import (
    ColumnMapping,
    display_headers,
    resolve_column,
    suggest_mapping,
)
from reelqueue.intake.pins import PinnedElsewhere
from reelqueue.intake.reader import read_sheet
from reelqueue.intake.routes import (
    RouteSettings,
    RowRouter,
    route_settings,
    template_needs_provider,
)
from reelqueue.intake.rows import BatchDefaults, RowError, RowValidator, RowValues
from reelqueue.intake.sheet import DEFAULT_MAX_FILE_BYTES, TEXT_EXTENSIONS, Sheet
from reelqueue.providers.base import ParamSpec

DEFAULT_MAX_WAITING = 100_000
ANY_VALUE = ParamSpec(duration_range=(0.0, math.inf))
"""Checks a batch default's form only (a routed batch: each candidate checks its value)."""


def default_output_root() -> Path:
    return Path(platformdirs.user_videos_dir()) / "ReelQueue"


@dataclass(frozen=True, kw_only=True)
class ImportOptions:
    """How to import a sheet: provider, defaults, mapping, limits.

    Attributes:
        provider: the default provider kind (a ``provider`` column overrides it per row).
        model, duration, aspect_ratio, resolution: batch defaults for empty cells
            (None: the provider's own default).
        output_root: each batch gets its own folder under it.
        batch_name: the batch's name (default: the file's name); re-importing into the
            same name reuses the batch.
        filename_template: see :mod:`reelqueue.intake.filenames`.
        mapping: the column mapping (default: suggested from the headers).
        column_overrides: (column, field) pairs applied on top, as from ``--map``; saved
            with the batch.
        saved_overrides: the overrides saved by an earlier import of the batch, applied
            before ``column_overrides`` and skipped where the column no longer exists.
        partial: True imports the valid rows and reports the others; False refuses the
            whole sheet if any row has an error.
        max_waiting: the most jobs allowed to wait in the queue.
        max_attempts: attempts per job before it fails.
        sheet, delimiter, encoding: how to read the file (None: detect).
        max_file_bytes: larger files are refused before being read.
        max_cells, max_cell_chars, max_text_bytes: the budget a sheet must fit before
            it is loaded (:mod:`reelqueue.intake.limits`); ``max_waiting`` is its row limit.
        allow_images_anywhere: let rows name reference images outside the sheet's folder
            (intake/images.py).
        route: the batch route (two or more providers) for rows whose provider cell is
            blank; a row naming several providers (``veo|runway``) routes by itself
            (intake/routes.py).
        route_policy: how routed rows' candidates are ranked (order, cheapest, fastest,
            spread).
        tolerance: how far a routed row's parameters may move to fit a candidate (exact,
            nearest-duration, nearest).
        route_on_policy: a routed job moves on after a content-policy refusal too.
        takes: how many takes (renders, each with its own seed) of every row whose
            ``repeat`` cell is empty: its repeat (1 to 100; issue 35 item 1). A row's
            takes are its keys K, K#2... (intake/jobs.py); a take without a seed of the
            row's gets one drawn, recorded in its params.
        saved_route: the route settings saved by an earlier import of the batch
            (``settings["intake"]``), used when the four above are all at their defaults:
            a routed row's key hashes its policy and tolerance, so a re-import without
            them must not make every routed row a new job.
    """

    provider: str = "mock"
    model: str | None = None
    duration: float | None = None
    aspect_ratio: str | None = None
    resolution: str | None = None
    output_root: Path = field(default_factory=default_output_root)
    batch_name: str | None = None
    filename_template: str = DEFAULT_TEMPLATE
    mapping: ColumnMapping | None = None
    column_overrides: tuple[tuple[str, str], ...] = ()
    saved_overrides: tuple[tuple[str, str], ...] = ()
    partial: bool = True
    max_waiting: int = DEFAULT_MAX_WAITING
    max_attempts: int = 3
    sheet: str | None = None
    delimiter: str | None = None
    encoding: str | None = None
    max_file_bytes: int = DEFAULT_MAX_FILE_BYTES
    max_cells: int = DEFAULT_MAX_CELLS
    max_cell_chars: int = DEFAULT_MAX_CELL_CHARS
    max_text_bytes: int = DEFAULT_MAX_TEXT_BYTES
    allow_images_anywhere: bool = False
    route: tuple[str, ...] = ()
    route_policy: str = "order"
    tolerance: str = "exact"
    route_on_policy: bool = False
    saved_route: Mapping[str, Any] | None = None
    takes: int = 1

    @property
    def route_given(self) -> bool:
        """Whether any route setting differs from its default."""
        return bool(self.route or self.route_policy != "order" or self.tolerance != "exact"
                    or self.route_on_policy)

    def route_settings(self, catalog: ProviderCatalog | None = None) -> RouteSettings:
        """The route settings in effect (the given ones, else the saved ones), checked;
        InputError naming what is wrong."""
        chosen: Mapping[str, Any] = {
            "route": self.route, "route_policy": self.route_policy,
            "tolerance": self.tolerance, "route_on_policy": self.route_on_policy}
        if not self.route_given and self.saved_route:
            chosen = self.saved_route
        route = chosen.get("route") or ()
        return route_settings(
            route if isinstance(route, str) else tuple(str(name) for name in route),
            str(chosen.get("route_policy") or "order"), str(chosen.get("tolerance") or "exact"),
            chosen.get("route_on_policy") is True, catalog)

    @property
    def limits(self) -> SheetLimits:
        """The budget the sheet must fit before it is loaded."""
        return SheetLimits(
            max_file_bytes=self.max_file_bytes, max_cells=self.max_cells,
            max_cell_chars=self.max_cell_chars, max_rows=self.max_waiting,
            max_text_bytes=self.max_text_bytes,
        )


@dataclass(frozen=True)
class PreviewRow:
    """A job as it will be rendered, for the preview table.

    Attributes:
        price: what one render costs and where the price comes from, or the "price
            unknown — set it with ..." words (None: not priced by this preview).
        route: for a routed job, its candidates best first (each with its price and the
            parameters the tolerance moved) and the providers left out with why;
            ``provider``, ``params`` and ``price`` are then the best candidate's.
    """

    row_number: int | None
    name: str
    prompt: str
    provider: str
    params: dict[str, Any]
    file_name: str
    already_present: bool
    price: PriceQuote | None = None
    route: Route | None = None


@dataclass(frozen=True)
class WorstCase:
    """What the new jobs may cost at most: each routed job at its dearest usable
    candidate's price, every other job at its own.

    Attributes:
        usd: the sum (None: some job's price is unknown, so no bound can be given).
        routed_jobs: how many of the jobs are routed.
        unpriced_jobs: jobs (or routed jobs' candidates) without a price.
    """

    usd: float | None = 0.0
    routed_jobs: int = 0
    unpriced_jobs: int = 0

    def describe(self) -> str:
        """"$14.00" or "unknown (3 jobs may render where the price is unknown)"."""
        if self.usd is not None:
            return money(self.usd)
        return (f"unknown ({self.unpriced_jobs:,} job{'' if self.unpriced_jobs == 1 else 's'}"
                " may render where the price is unknown)")


def worst_case(jobs: Iterable[JobSpec], quote: Callable[[JobSpec], PriceQuote]) -> WorstCase:
    """The most ``jobs`` may cost (see :class:`WorstCase`)."""
    total = 0.0
    routed = unpriced = 0
    for job in jobs:
        if job.route is not None:
            routed += 1
            price = job.route.worst_price()
        else:
            price = quote(job).usd
        if price is None:
            unpriced += 1
        else:
            total += price
    return WorstCase(None if unpriced else round(total, 4), routed, unpriced)


@dataclass(frozen=True)
class ImportPlan:
    """Everything an import would do, before it does it.

    Attributes:
        batch: the batch to create (or to reuse, when one has the same name).
        jobs: the valid jobs, already-present ones included (adding them is a no-op).
        errors: one per bad cell, in row order.
        already_present: how many of ``jobs`` the journal already has.
        estimate: the cost of the jobs not yet present.
        sheet: the sheet as read (rows dropped to save memory).
        mapping: the column mapping used.
        unmapped: columns kept as metadata only.
        present_keys: the keys of ``jobs`` already in the journal.
        options: the options planned with.
        keys_checked: True when ``present_keys`` came from the journal the plan will be
            written to (``existing_keys`` given), so writing it need not look them up again.
        quoter: prices one job as the estimate does (the catalog's tables and the
            accounts' own prices the plan was made with).
        worst_case: what the new jobs may cost at most (routed jobs at their dearest
            candidate); ``estimate`` counts each routed job at its best candidate's price.
        routing: the route settings planned with (the batch route, policy, tolerance).
        pinned_elsewhere: rows pinned to an account not configured here (imported all
            the same: they wait for it; intake/pins.py), filled in by the caller that
            knows the accounts.
    """

    batch: BatchSpec
    jobs: list[JobSpec]
    errors: list[RowError]
    already_present: int
    estimate: CostEstimate
    sheet: Sheet
    mapping: ColumnMapping
    unmapped: list[str]
    present_keys: frozenset[str]
    options: ImportOptions
    keys_checked: bool = False
    quoter: Callable[[JobSpec], PriceQuote] | None = field(default=None, repr=False,
                                                           compare=False)
    worst_case: WorstCase = field(default_factory=WorstCase)
    routing: RouteSettings = field(default_factory=RouteSettings)
    pinned_elsewhere: tuple[PinnedElsewhere, ...] = ()

    @property
    def routed_jobs(self) -> int:
        """How many of ``jobs`` are routed."""
        return sum(1 for job in self.jobs if job.route is not None)

    @property
    def refused(self) -> bool:
        """True when the import must not go ahead: all-or-nothing with errors, or nothing
        valid at all."""
        return bool(self.errors) and (not self.options.partial or not self.jobs)

    @property
    def new_jobs(self) -> list[JobSpec]:
        return [job for job in self.jobs if job.job_key not in self.present_keys]

    @property
    def scope(self) -> str:
        return str(self.batch.settings["intake"]["scope"])

    def first_rows(self, rows: int) -> ImportPlan:
        """The plan of a test run: only its first ``rows`` valid rows with all their takes
        (those already in the journal among them are skipped, as always), with their own
        count and estimate."""
        jobs = self.jobs[:self._jobs_of_rows(max(0, rows))]
        new_jobs = [job for job in jobs if job.job_key not in self.present_keys]
        return replace(self, jobs=jobs, estimate=estimate_quoted(new_jobs, self._quote),
                       already_present=len(jobs) - len(new_jobs),
                       worst_case=worst_case(new_jobs, self._quote))

    def _jobs_of_rows(self, rows: int) -> int:
        """How many of ``jobs`` (in row order, a row's takes together) the first ``rows``
        rows make."""
        seen = 0
        last: object = object()
        for index, job in enumerate(self.jobs):
            if job.row_number != last:
                if seen == rows:
                    return index
                seen += 1
                last = job.row_number
        return len(self.jobs)

    def _quote(self, job: JobSpec) -> PriceQuote:
        # A plan made without a quoter knows no price: unknown, never $0.00.
        return self.quoter(job) if self.quoter is not None else PriceQuote(
            None, unknown="price unknown")

    def price_of(self, job: JobSpec) -> PriceQuote | None:
        """One job's price as the estimate counts it (None: the plan has no quoter)."""
        return self.quoter(job) if self.quoter is not None else None

    @property
    def valid_rows(self) -> int:
        """The sheet rows the jobs come from (a row's takes are one row)."""
        return len({job.row_number for job in self.jobs})

    @property
    def most_takes(self) -> int:
        """The most takes any row has (its repeat)."""
        return max((int(job.metadata.get("repeat", 1)) for job in self.jobs), default=1)

    def takes_words(self) -> str | None:
        """Over :data:`TAKES_SAID_ABOVE` takes of a row, the price said before anything
        is imported (None: not that many)."""
        most = self.most_takes
        if most <= TAKES_SAID_ABOVE:
            return None
        return (f"Takes: up to {most} of a row, each a render of its own and paid for: "
                f"{self.estimate.jobs:,} new jobs, {self.estimate.describe_total()}.")

    def preview(self, n: int | None = 10) -> list[PreviewRow]:
        """The first ``n`` jobs (None: all) as they will be rendered, each with its price."""
        return [
            PreviewRow(
                row_number=job.row_number, name=job.name, prompt=job.prompt,
                provider=job.provider, params=dict(job.params),
                file_name=Path(job.output_path).name,
                already_present=job.job_key in self.present_keys,
                price=self.price_of(job), route=job.route,
            )
            for job in (self.jobs if n is None else self.jobs[:n])
        ]


def plan_import(
    path: Path,
    options: ImportOptions,
    *,
    existing_keys: Callable[[Iterable[str]], set[str]] | None = None,
    catalog: ProviderCatalog | None = None,
    now: float | None = None,
    accounts: AccountPrices = NO_ACCOUNTS,
    speeds: Mapping[str, float] | None = None,
    rng: random.Random | None = None,
) -> ImportPlan:
    """Read, map and validate ``path``; raise InputError when the file itself is unusable.
    ``accounts``: the accounts whose own prices apply (intake/estimate.py). ``speeds``:
    provider -> its typical render time in seconds, for the ``fastest`` policy (None:
    the given order). ``rng`` draws the seeds of takes without one (a test's own)."""
    with bulk_allocation():
        return _plan_import(path, options, existing_keys=existing_keys, catalog=catalog,
                            now=now, accounts=accounts, speeds=speeds, rng=rng)


def _plan_import(
    path: Path,
    options: ImportOptions,
    *,
    existing_keys: Callable[[Iterable[str]], set[str]] | None,
    catalog: ProviderCatalog | None,
    now: float | None,
    accounts: AccountPrices,
    speeds: Mapping[str, float] | None = None,
    rng: random.Random | None = None,
) -> ImportPlan:
    catalog = catalog or RegistryCatalog()
    check_template(options.filename_template)
    routing = options.route_settings(catalog)
    template_fields = CompiledTemplate(options.filename_template).fields
    if routing.providers and template_needs_provider(template_fields):
        shown = " and ".join("{" + name + "}" for name in
                             template_needs_provider(template_fields))
        raise InputError(
            f"The file name template {options.filename_template!r} uses {shown}, but this "
            f"batch routes ({'|'.join(routing.providers)}): a job's provider is known only "
            "when an account takes it. Leave them out of the template, or import without "
            "a route.")
    defaults = _checked_defaults(options, catalog, routed=bool(routing.providers))
    path = Path(path)
    sheet = read_sheet(
        path, sheet=options.sheet, delimiter=options.delimiter, encoding=options.encoding,
        limits=options.limits,
    )
    headers = display_headers(sheet.headers)
    mapping = _mapping_for(path, sheet, headers, options)
    if not sheet.rows:
        raise InputError(
            f"{path.name} has a header (row {sheet.header_row_number}) but no rows below it: "
            "there is nothing to import."
        )
    columns = {name: (headers.index(header), header) for name, header in mapping.by_field.items()}
    images = ImageChecker(path.resolve().parent, anywhere=options.allow_images_anywhere,
                          opened_as=path.absolute().parent)
    validator = RowValidator(columns, defaults, catalog, images)
    quoter = _quoter(catalog, accounts)
    router = RowRouter(
        validator, routing, catalog, quoter, template_fields=template_fields, speeds=speeds,
        written_defaults={"model": options.model, "duration": options.duration,
                          "aspect_ratio": options.aspect_ratio,
                          "resolution": options.resolution})

    batch_name = batch_name_for(path, options)
    scope = batch_name.casefold().strip()
    ignored = set(mapping.ignored)
    kept_columns = [header for header in headers if header not in ignored]
    builder = JobBuilder(
        scope=scope, batch_name=batch_name, output_root=options.output_root,
        template=options.filename_template, headers=headers, kept_columns=kept_columns,
        date=datetime.fromtimestamp(now if now is not None else datetime.now().timestamp()),
        typed_cells=sheet.format not in TEXT_EXTENSIONS.values(),
        image_pins=images.pin,
        draw_seed=_seed_drawer(catalog, rng or random.Random()),
    )
    errors: list[RowError] = []

    def valid_rows() -> Iterator[RowValues]:
        # Only a sheet that may route pays for the router's look at each row.
        may_route = bool(routing.providers) or "provider" in columns
        validate = router.validate if may_route else validator.validate
        for row in sheet.rows:
            outcome = validate(row)
            if type(outcome) is list:
                errors.extend(outcome)
            else:
                yield outcome  # type: ignore[misc]

    # One pass from cells to jobs: no list of validated rows in between.
    jobs, duplicate_errors = builder.build(valid_rows(), id_header=mapping.header_for("id") or "id")
    sheet.rows.clear()  # the jobs hold what they need of the cells
    stamp_prices(jobs, catalog.params, accounts)  # each job's own metadata dict (jobs.py)
    errors.extend(duplicate_errors)
    errors.sort(key=lambda error: (error.row_number or 0, error.column))

    present = existing_keys([job.job_key for job in jobs]) if existing_keys and jobs else set()
    mapped_headers = set(mapping.by_field.values())
    unmapped = [header for header in kept_columns if header not in mapped_headers]
    batch = BatchSpec(
        name=batch_name,
        source_path=sheet.source_path,
        output_dir=builder.folder_name,
        max_attempts=options.max_attempts,
        settings={"intake": {
            "scope": scope, "identity": sheet.identity, "format": sheet.format,
            "sheet": sheet.sheet_name, "mapping": mapping.as_dict(),
            "ignored": sorted(ignored), "columns": kept_columns, "unmapped": unmapped,
            "filename_template": options.filename_template,
            "column_overrides": [
                list(pair) for pair in options.column_overrides or options.saved_overrides
            ],
            **routing.as_dict(),
            "defaults": {"provider": defaults.provider, "model": defaults.model,
                         "duration": defaults.duration, "aspect_ratio": defaults.aspect_ratio,
                         "resolution": defaults.resolution},
        }},
    )
    new_jobs = [job for job in jobs if job.job_key not in present]
    return ImportPlan(
        batch=batch, jobs=jobs, errors=errors, already_present=len(present),
        estimate=estimate_quoted(new_jobs, quoter),
        sheet=Sheet(headers=sheet.headers, rows=[], format=sheet.format,
                    sheet_name=sheet.sheet_name, identity=sheet.identity,
                    header_row_number=sheet.header_row_number,
                    source_path=sheet.source_path, details=sheet.details),
        mapping=mapping, unmapped=unmapped, present_keys=frozenset(present), options=options,
        keys_checked=existing_keys is not None,
        quoter=quoter, worst_case=worst_case(new_jobs, quoter), routing=routing,
    )


def _quoter(catalog: ProviderCatalog, accounts: AccountPrices) -> Callable[[JobSpec], PriceQuote]:
    return Pricer(catalog.params, accounts).quote


@contextmanager
def bulk_allocation() -> Iterator[None]:
    """Pause Python's cyclic garbage collector while a sheet becomes jobs, on the main
    thread only.

    A 100,000-row sheet allocates about a million containers (cells, params, metadata,
    jobs) and none of them are garbage; the collector would still walk all of them again
    and again as they pile up (about a sixth of the import's time). Nothing here makes
    reference cycles, so pausing it frees nothing late. It is switched back on afterwards
    only if it was on, so a pause inside another leaves it off.

    The switch is process-wide, so it is flipped only by a caller on the main thread (the
    CLI, which runs nothing else meanwhile). On a worker thread (the window plans and
    writes imports off its GUI thread while the GUI and the engine go on) it does nothing:
    one thread must not switch the collector off under the others (issue 12 item 7).
    """
    if threading.current_thread() is not threading.main_thread() or not gc.isenabled():
        yield
        return
    gc.disable()
    try:
        yield
    finally:
        gc.enable()


#: more takes of a row than this, and the import says their price first (issue 35 item 1)
TAKES_SAID_ABOVE = 10
#: a drawn seed is below this: every provider that takes a seed takes a 31-bit one
DRAWN_SEED_LIMIT = 2**31


def _seed_drawer(catalog: ProviderCatalog,
                 rng: random.Random) -> Callable[[str], int | None]:
    """Draws a take's seed for a provider that takes one (None: it takes none)."""
    takes_seed: dict[str, bool] = {}

    def draw(provider: str) -> int | None:
        if provider not in takes_seed:
            try:
                takes_seed[provider] = bool(catalog.params(provider).seed)
            except InputError:
                takes_seed[provider] = False
        return rng.randrange(DRAWN_SEED_LIMIT) if takes_seed[provider] else None

    return draw


def _checked_defaults(options: ImportOptions, catalog: ProviderCatalog, *,
                      routed: bool = False) -> BatchDefaults:
    """The batch defaults, refused up front when the default provider cannot take them.
    With a batch route (``routed``) only their form is checked here: each candidate of a
    row checks them by its own rules (intake/routes.py)."""
    from reelqueue.intake.fields import (
        FieldProblem,
        parse_aspect_ratio,
        parse_duration,
        parse_model,
        parse_repeat,
        parse_resolution,
    )

    kind = options.provider.strip().lower()
    spec = ANY_VALUE if routed else catalog.params(kind)
    checks: list[tuple[str, object, Callable[..., Any]]] = [
        ("model", options.model, parse_model), ("duration", options.duration, parse_duration),
        ("aspect ratio", options.aspect_ratio, parse_aspect_ratio),
        ("resolution", options.resolution, parse_resolution),
    ]
    normalised: dict[str, Any] = {}
    for label, value, parse in checks:
        if value is None:
            normalised[label] = None
            continue
        try:
            normalised[label] = (str(value).strip() if routed and label == "resolution"
                                 else parse(value, spec))
        except FieldProblem as problem:
            raise InputError(
                f"The default {label} for {'the route' if routed else kind}: "
                f"{problem.message} "
                f"(accepted: {problem.accepted})."
            ) from None
    try:
        takes = parse_repeat(options.takes)
    except FieldProblem as problem:
        raise InputError(f"Takes per row (--takes): {options.takes!r} is not "
                         f"{problem.accepted}.") from None
    return BatchDefaults(
        provider=kind, model=normalised["model"], duration=normalised["duration"],
        aspect_ratio=normalised["aspect ratio"], resolution=normalised["resolution"],
        repeat=takes,
    )


def _mapping_for(
    path: Path, sheet: Sheet, headers: list[str], options: ImportOptions
) -> ColumnMapping:
    mapping = options.mapping or suggest_mapping(headers)
    still_there: dict[str, str] = {}
    for column, wanted in options.saved_overrides:
        try:
            still_there[resolve_column(headers, column)] = wanted
        except InputError:
            continue  # the column is gone from the edited sheet
    if still_there:
        mapping = mapping.with_overrides(headers, still_there)
    if options.column_overrides:
        mapping = mapping.with_overrides(headers, dict(options.column_overrides))
    missing = [header for header in mapping.by_field.values() if header not in headers]
    if missing:
        raise InputError(
            f"The column mapping names {', '.join(map(repr, missing))}, which "
            f"{path.name} does not have. Its columns are: {', '.join(map(repr, headers))}."
        )
    if "prompt" in mapping.by_field:
        return mapping
    first_row = sheet.header_row_number
    shown = ", ".join(repr(header) for header in headers[:8])
    if not mapping.by_field:
        raise InputError(
            f"{path.name} has no header row that ReelQueue recognises: row {first_row} "
            f"({shown}) should name the columns, e.g. prompt, duration, aspect ratio, seed. "
            "Add a header row, or say which column holds the prompt with --map A=prompt."
        )
    raise InputError(
        f"{path.name} has no prompt column. Its columns are: {shown}. Name one of them "
        "'prompt' (or text, description), or map it with --map COLUMN=prompt."
    )


def batch_name_for(path: Path, options: ImportOptions) -> str:
    """The batch's name: as given, else the file's name (and the sheet's, if chosen)."""
    if options.batch_name and options.batch_name.strip():
        return options.batch_name.strip()
    return f"{path.stem} - {options.sheet}" if options.sheet else path.stem
