"""Writing a planned import: the batch, its jobs, its folder and its manifest.

:func:`apply_import` checks the queue limit before touching anything, so a refused import
leaves the journal as it was. It reuses the batch of the same name (re-importing a sheet
adds only new or edited rows), keeps new files from landing on the name of an existing
job or an existing file in the batch folder, and writes ``manifest.json`` (prompts and
parameters of every job of the batch) atomically beside the videos, unless the manifest
there already says exactly that (``run SHEET`` of an unchanged sheet writes nothing).
:func:`remove_stale_manifest_temps` clears what a killed import left at start-up.
"""

from __future__ import annotations

import itertools
import json
import os
import threading
from collections.abc import Iterable, Iterator, Sequence
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

MANIFEST_NAME = "manifest.json"
MANIFEST_TEMP_PREFIX = f".{MANIFEST_NAME}."


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
        output_dir: its folder.
        batch_created: False when an existing batch of the same name was reused.
        added: jobs added now.
        already_present: jobs that were already in the journal.
        errors: the rows that were not imported, and why.
        job_ids: the ids of the jobs added now.
        manifest_path: the manifest written beside the videos.
    """

    batch_id: int
    batch_name: str
    output_dir: str
    batch_created: bool
    added: int
    already_present: int
    errors: list[RowError] = field(default_factory=list)
    job_ids: tuple[int, ...] = ()
    manifest_path: str = ""


def find_batch(store: IntakeStore, scope: str) -> Batch | None:
    """The batch an earlier import of the same name created, if any."""
    return _batch_of(store.list_batches(), scope)


def refusal_message(plan: ImportPlan) -> str:
    rows = len({error.row_number for error in plan.errors})
    if not plan.jobs:
        return f"No row of {Path(plan.batch.source_path).name} is valid; nothing was imported."
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
        folder: the batch's folder (for a new batch, one no other batch renders into).
    """

    present: frozenset[str]
    batch: Batch | None
    earlier: list[Job]
    folder: Path


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
    folder = Path(batch.output_dir) if batch else _free_folder(batches,
                                                                Path(plan.batch.output_dir))
    earlier = store.list_jobs(batch_id=batch.id) if batch else []
    return JournalReading(present, batch, earlier, folder)


def place_jobs(plan: ImportPlan, reading: JournalReading) -> list[JobSpec]:
    """Step 2 (files): create the folder and name the new jobs' files so that none lands
    on an existing job's or file's name. Touches no journal."""
    folder = reading.folder
    _ensure_writable(folder)
    taken = {os.path.basename(job.output_path) for job in reading.earlier}
    taken |= {entry.name for entry in folder.iterdir() if entry.name.endswith(VIDEO_SUFFIX)}
    return _place(plan.jobs, reading.present, folder, taken, Path(plan.batch.output_dir))


def write_jobs(store: IntakeStore, plan: ImportPlan, reading: JournalReading,
               specs: list[JobSpec], now: float) -> tuple[Batch, AddJobsResult]:
    """Step 3 (journal): create the batch if it is new and add the jobs (the store checks
    the queue limit again in its write). ImportRaced when the journal changed since step 1."""
    batches = store.list_batches()
    batch = _batch_of(batches, plan.scope)
    if (batch.id if batch else None) != (reading.batch.id if reading.batch else None) or (
            batch is None and reading.folder in {Path(b.output_dir) for b in batches}):
        raise ImportRaced()
    if batch is None:
        batch = store.create_batch(replace(plan.batch, output_dir=str(reading.folder)), now)
    added = store.add_jobs(batch.id, specs, now, max_waiting=plan.options.max_waiting)
    return batch, added


def finish_import(plan: ImportPlan, reading: JournalReading, specs: list[JobSpec],
                  batch: Batch, added: AddJobsResult) -> ImportResult:
    """Step 4 (files): write the manifest beside the videos (unless it already says
    exactly this) and say what the import did."""
    folder, earlier = reading.folder, reading.earlier
    earlier_keys = {job.job_key for job in earlier}

    def entries() -> Iterator[dict[str, Any]]:
        return itertools.chain(
            map(_manifest_entry, earlier),
            (_manifest_entry(spec) for spec in specs if spec.job_key not in earlier_keys),
        )

    if manifest_matches(folder, batch, entries()):
        manifest = folder / MANIFEST_NAME  # e.g. ``run SHEET`` again: nothing to rewrite
    else:
        manifest = write_manifest(folder, batch, entries())
    return ImportResult(
        batch_id=batch.id, batch_name=batch.name, output_dir=str(folder),
        batch_created=reading.batch is None, added=added.added,
        already_present=added.already_present, errors=list(plan.errors),
        job_ids=tuple(added.job_ids), manifest_path=str(manifest),
    )


def _batch_of(batches: Iterable[Batch], scope: str) -> Batch | None:
    for batch in batches:
        intake = batch.settings.get("intake")
        if isinstance(intake, dict) and intake.get("scope") == scope:
            return batch
    return None


def _free_folder(batches: Iterable[Batch], folder: Path) -> Path:
    """``folder``, or ``folder_2``... when another batch already renders into it."""
    used = {Path(batch.output_dir) for batch in batches}
    candidate, counter = folder, 1
    while candidate in used:
        counter += 1
        candidate = folder.with_name(f"{folder.name}_{counter}")
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
    jobs: Sequence[JobSpec], present: AbstractSet[str], folder: Path, taken: set[str],
    planned_folder: Path,
) -> list[JobSpec]:
    """The new jobs moved into ``folder``, renamed where a job or file already has the name."""
    if not taken and folder == planned_folder:
        # A new, empty folder where the plan put the jobs: nothing to move or rename (the
        # plan's names are already unique within the batch).
        return list(jobs)
    prefix = os.path.join(str(folder), "")
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


def _file_name(path: str) -> str:
    """``os.path.basename`` for the paths the intake makes (folder + os.sep + name),
    without its per-call overhead; the full version where "/" also separates."""
    return path.rpartition(os.sep)[2] if os.altsep is None else os.path.basename(path)


def _manifest_entry(job: Job | JobSpec) -> dict[str, Any]:
    # Parameters in key order: a job read back from the journal (whose JSON is stored
    # with sorted keys) then gives the same line as the spec it was made from, so an
    # unchanged batch compares equal and its manifest is not rewritten.
    return {
        "key": job.job_key, "row": job.row_number, "name": job.name, "prompt": job.prompt,
        "provider": job.provider, "params": dict(sorted(job.params.items())),
        "account": job.pinned_account,
        "priority": job.priority, "file": _file_name(job.output_path),
    }


MANIFEST_CHUNK = 2_000
"""Manifest entries encoded and written at a time: the whole manifest of a 100,000-job
batch is never in memory at once."""
_ENTRY_ENCODER = json.JSONEncoder(ensure_ascii=False)


def _manifest_pieces(batch: Batch, entries: Iterable[dict[str, Any]]) -> Iterator[str]:
    """The manifest's text, a chunk of entries at a time: one job per line, readable,
    diffable, and written by json's fast C encoder (``entries`` may be a generator)."""
    head = json.dumps({
        "format": "reelqueue-manifest", "version": 1,
        "batch": {"id": batch.id, "name": batch.name, "source": batch.source_path,
                  "created_at": batch.created_at},
    }, ensure_ascii=False)
    yield head[:-1] + ',\n "jobs": [\n'
    encoded = map(_ENTRY_ENCODER.encode, entries)
    separator = ""
    while chunk := list(itertools.islice(encoded, MANIFEST_CHUNK)):
        yield separator + ",\n".join(chunk)
        separator = ",\n"
    yield "\n]}\n"


_MANIFEST_WRITES = threading.RLock()
"""One manifest write at a time in a process: they share the temporary file's name (an
import and a download's new name may write the same batch's at once)."""


def rewrite_manifest(folder: Path, batch: Batch, jobs: Iterable[Job]) -> bool:
    """Write the batch's manifest from its jobs as the journal has them now (e.g. a video
    given a suffixed name because the user's file held the planned one, issue 22), unless
    it already says exactly that. True when it was written."""
    listed = list(jobs)
    with _MANIFEST_WRITES:
        if manifest_matches(folder, batch, map(_manifest_entry, listed)):
            return False
        write_manifest(folder, batch, map(_manifest_entry, listed))
        return True


def write_manifest(folder: Path, batch: Batch, entries: Iterable[dict[str, Any]]) -> Path:
    """Write ``manifest.json`` atomically: a temporary file, fsync, then rename over."""
    with _MANIFEST_WRITES:
        return _write_manifest(folder, batch, entries)


def _write_manifest(folder: Path, batch: Batch, entries: Iterable[dict[str, Any]]) -> Path:
    target = folder / MANIFEST_NAME
    temporary = folder / f"{MANIFEST_TEMP_PREFIX}{os.getpid()}.tmp"
    try:
        with temporary.open("w", encoding="utf-8") as stream:
            for piece in _manifest_pieces(batch, entries):
                stream.write(piece)
            stream.flush()
            os.fsync(stream.fileno())
        os.replace(temporary, target)
    except OSError as exc:
        temporary.unlink(missing_ok=True)
        raise OutputNotWritable(
            f"The manifest could not be written to {folder} ({exc.strerror})."
        ) from exc
    return target


def manifest_matches(folder: Path, batch: Batch, entries: Iterable[dict[str, Any]]) -> bool:
    """True when ``manifest.json`` already holds exactly what :func:`write_manifest` would
    write: compared piece by piece as it is encoded, never the whole text in memory."""
    target = folder / MANIFEST_NAME
    try:
        stream = target.open("rb")
    except OSError:
        return False
    with stream:
        for piece in _manifest_pieces(batch, entries):
            expected = piece.encode("utf-8")
            if stream.read(len(expected)) != expected:
                return False
        return stream.read(1) == b""


def remove_stale_manifest_temps(folders: Iterable[Path]) -> int:
    """Delete the ``.manifest.json.<pid>.tmp`` files an import killed mid-write left in
    the batch folders. Called at start-up, behind the data-folder lock, before this
    process imports anything; no other process writes manifests then."""
    removed = 0
    for folder in folders:
        try:
            stale = [entry for entry in folder.glob(f"{MANIFEST_TEMP_PREFIX}*.tmp")
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
