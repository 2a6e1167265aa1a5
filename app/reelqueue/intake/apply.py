"""Writing a planned import: the batch, its jobs and its folder.

:func:`apply_import` checks the queue limit before touching anything, so a refused import
leaves the journal as it was. It reuses the batch of the same name (re-importing a sheet
adds only new or edited rows), and keeps new files from landing on the name of an existing
job or an existing file in the batch folder. The journal keeps the batch's folder as a
name relative to the videos folder, and each job's file as ``<batch folder>/<file>``: every
machine renders under its own videos folder (issues 21, 23). The batch's manifest is no
longer the import's: each machine's engine writes its own record of the batch
(``engine/manifest.py``, docs/manifest.md). :func:`remove_stale_manifest_temps` clears
what a killed manifest write of an earlier version left at start-up.
"""

from __future__ import annotations

import os
from collections.abc import Iterable, Sequence
from collections.abc import Set as AbstractSet
from dataclasses import dataclass, field, replace
from pathlib import Path
from typing import Any, Protocol

from reelqueue.domain.errors import InputError, OutputNotWritable
from reelqueue.domain.models import Batch, BatchSpec, Job, JobSpec
from reelqueue.domain.states import JobState
from reelqueue.intake.filenames import VIDEO_SUFFIX, NameAllocator
from reelqueue.intake.planner import ImportPlan, bulk_allocation
from reelqueue.intake.rows import RowError
from reelqueue.store.base import AddJobsResult
from reelqueue.store.queue_limit import check_queue_room


class IntakeStore(Protocol):
    """The part of :class:`reelqueue.store.base.Store` the intake uses."""

    def create_batch(self, spec: BatchSpec, now: float) -> Batch: ...
    def get_batch(self, batch_id: int) -> Batch | None: ...
    def list_batches(self) -> list[Batch]: ...
    def add_jobs(
        self, batch_id: int, specs: Sequence[Any], now: float, max_waiting: int | None = None
    ) -> AddJobsResult: ...
    def existing_job_keys(self, keys: Iterable[str]) -> set[str]: ...
    def list_jobs(
        self, batch_id: int | None = None, states: Iterable[JobState] | None = None,
        limit: int | None = None, offset: int = 0,
    ) -> list[Job]: ...
    def count_waiting(self) -> int: ...


@dataclass(frozen=True)
class ImportResult:
    """What an import did.

    Attributes:
        batch_id: the batch the jobs are in.
        batch_name: its name.
        output_dir: its folder on the importing machine (the journal keeps its name).
        batch_created: False when an existing batch of the same name was reused.
        added: jobs added now.
        already_present: jobs that were already in the journal.
        errors: the rows that were not imported, and why.
        job_ids: the ids of the jobs added now.
    """

    batch_id: int
    batch_name: str
    output_dir: str
    batch_created: bool
    added: int
    already_present: int
    errors: list[RowError] = field(default_factory=list)
    job_ids: tuple[int, ...] = ()


def find_batch(store: IntakeStore, scope: str) -> Batch | None:
    """The batch an earlier import of the same name created, if any."""
    return _batch_of(store.list_batches(), scope)


def refusal_message(plan: ImportPlan) -> str:
    rows = len({error.row_number for error in plan.errors})
    if not plan.jobs:
        # Said in full on its own line: ``run`` prints it on stderr, the row errors on stdout.
        return (f"No row of {Path(plan.batch.source_path).name} is valid ({rows} "
                f"row{'' if rows == 1 else 's'} refused); nothing was imported. Fix the "
                "rows the errors name and import the sheet again.")
    return (
        f"{rows} row(s) have errors and the import is all-or-nothing, so nothing was "
        "imported. Fix those rows, or import the valid ones without --all-or-nothing."
    )


def apply_import(store: IntakeStore, plan: ImportPlan, now: float) -> ImportResult:
    """Create (or reuse) the batch and add the plan's jobs; InputError when refused.

    The four steps in a row, for a caller that owns the journal (the CLI before its engine
    starts). A running engine runs the journal steps on its journal thread and the file
    steps off it (``engine/import_commands.py``), so renders never wait behind a folder
    or a 100,000-entry manifest."""
    with bulk_allocation():
        reading = read_journal(store, plan)
        specs = place_jobs(plan, reading)
        batch, added = write_jobs(store, plan, reading, specs, now)
        return finish_import(plan, reading, specs, batch, added)


class ImportRaced(Exception):
    """The journal changed between reading it and writing the jobs (another import made
    the batch or took the folder): read it again."""


@dataclass(frozen=True)
class JournalReading:
    """What an import needs from the journal before it touches a file.

    Attributes:
        present: the keys of the plan's jobs the journal already has.
        batch: the batch an earlier import of the same sheet made (None: a new one).
        earlier: that batch's jobs.
        folder: the batch's folder on this machine (for a new batch, one no other batch
            renders into).
        folder_name: the journal's name of it (relative to the videos folder).
    """

    present: frozenset[str]
    batch: Batch | None
    earlier: list[Job]
    folder: Path
    folder_name: str = ""


def read_journal(store: IntakeStore, plan: ImportPlan) -> JournalReading:
    """Step 1 (journal): refuse a refused plan or one over the queue limit, else find the
    batch and its jobs. Reads only."""
    if plan.refused:
        raise InputError(refusal_message(plan))
    # One key lookup: a plan made against this journal already knows which it has
    # (between the plan and now only imports add jobs, and add_jobs checks again).
    present = (plan.present_keys if plan.keys_checked
               else frozenset(store.existing_job_keys([job.job_key for job in plan.jobs])))
    new_count = sum(1 for job in plan.jobs if job.job_key not in present)
    check_queue_room(store.count_waiting(), new_count, plan.options.max_waiting)
    batches = store.list_batches()
    batch = _batch_of(batches, plan.scope)
    name = batch.output_dir if batch else _free_folder(batches, plan.batch.output_dir)
    earlier = store.list_jobs(batch_id=batch.id) if batch else []
    root = plan.options.output_root.expanduser().resolve()
    return JournalReading(present, batch, earlier, root / name, name)


def place_jobs(plan: ImportPlan, reading: JournalReading) -> list[JobSpec]:
    """Step 2 (files): create the folder and name the new jobs' files so that none lands
    on an existing job's or file's name. Touches no journal."""
    folder = reading.folder
    _ensure_writable(folder)
    taken = {os.path.basename(job.output_path) for job in reading.earlier}
    taken |= {entry.name for entry in folder.iterdir() if entry.name.endswith(VIDEO_SUFFIX)}
    return _place(plan.jobs, reading.present, reading.folder_name, taken,
                  plan.batch.output_dir)


def write_jobs(store: IntakeStore, plan: ImportPlan, reading: JournalReading,
               specs: list[JobSpec], now: float) -> tuple[Batch, AddJobsResult]:
    """Step 3 (journal): create the batch if it is new and add the jobs (the store checks
    the queue limit again in its write). ImportRaced when the journal changed since step 1."""
    batches = store.list_batches()
    batch = _batch_of(batches, plan.scope)
    if (batch.id if batch else None) != (reading.batch.id if reading.batch else None) or (
            batch is None and reading.folder_name in {b.output_dir for b in batches}):
        raise ImportRaced()
    if batch is None:
        batch = store.create_batch(replace(plan.batch, output_dir=reading.folder_name), now)
    added = store.add_jobs(batch.id, specs, now, max_waiting=plan.options.max_waiting)
    return batch, added


def finish_import(plan: ImportPlan, reading: JournalReading, specs: list[JobSpec],
                  batch: Batch, added: AddJobsResult) -> ImportResult:
    """Step 4: say what the import did (the manifest is the engine's record now)."""
    return ImportResult(
        batch_id=batch.id, batch_name=batch.name, output_dir=str(reading.folder),
        batch_created=reading.batch is None, added=added.added,
        already_present=added.already_present, errors=list(plan.errors),
        job_ids=tuple(added.job_ids),
    )


def _batch_of(batches: Iterable[Batch], scope: str) -> Batch | None:
    for batch in batches:
        intake = batch.settings.get("intake")
        if isinstance(intake, dict) and intake.get("scope") == scope:
            return batch
    return None


def _free_folder(batches: Iterable[Batch], folder: str) -> str:
    """``folder`` (a name under the videos folder), or ``folder_2``... when another batch
    already renders into it."""
    used = {batch.output_dir for batch in batches}
    candidate, counter = folder, 1
    while candidate in used:
        counter += 1
        candidate = f"{folder}_{counter}"
    return candidate


def _ensure_writable(folder: Path) -> None:
    try:
        folder.mkdir(parents=True, exist_ok=True)
    except OSError as exc:
        raise OutputNotWritable(
            f"The output folder {folder} cannot be created ({exc.strerror}). Choose another "
            "with --output-dir; nothing was imported."
        ) from exc
    if not os.access(folder, os.W_OK | os.X_OK):
        raise OutputNotWritable(
            f"The output folder {folder} is not writable. Choose another with --output-dir; "
            "nothing was imported."
        )


def _place(
    jobs: Sequence[JobSpec], present: AbstractSet[str], folder: str, taken: set[str],
    planned_folder: str,
) -> list[JobSpec]:
    """The new jobs moved into ``folder``, renamed where a job or file already has the name."""
    if not taken and folder == planned_folder:
        # A new, empty folder where the plan put the jobs: nothing to move or rename (the
        # plan's names are already unique within the batch).
        return list(jobs)
    prefix = folder + "/"
    new_names = {os.path.basename(job.output_path) for job in jobs if job.job_key not in present}
    allocator = NameAllocator(taken | new_names)
    taken_folded = {name.casefold() for name in taken}
    placed: list[JobSpec] = []
    for job in jobs:
        name = os.path.basename(job.output_path)
        if taken_folded and job.job_key not in present and name.casefold() in taken_folded:
            name = allocator.take(name.removesuffix(VIDEO_SUFFIX))
        path = prefix + name
        placed.append(job if path == job.output_path else replace(job, output_path=path))
    return placed


def remove_stale_manifest_temps(folders: Iterable[Path]) -> int:
    """Delete the ``.manifest.json.<pid>.tmp`` (an import of an earlier version) and
    ``.manifest-<host>.json.<pid>.tmp`` (an engine's manifest) files a killed write left in
    the batch folders. Called at start-up, behind the data-folder lock, before this
    process imports anything; no other process writes manifests then."""
    removed = 0
    for folder in folders:
        try:
            stale = [entry for entry in folder.glob(".manifest*.json.*.tmp")
                     if entry.is_file() and not entry.is_symlink()]
        except OSError:
            continue
        for entry in stale:
            try:
                entry.unlink()
            except OSError:  # gone already, or not ours to delete: leave it
                continue
            removed += 1
    return removed
