"""What the window's results gallery reads and does (issue 23): one batch's jobs as tiles
(state, file, which machine holds it, whether a retry can ask for a new seed), and the
export of a selection (its rows through the batch export, its files copied).

Read-only except :func:`export_selection`, which writes only into the folder it is given.
"""

from __future__ import annotations

import asyncio
import shutil
from collections.abc import Callable, Iterable
from dataclasses import dataclass
from pathlib import Path
from typing import Any, Literal, cast

from reelqueue.application.outputs import local_paths
from reelqueue.application.session import Session
from reelqueue.application.words import StateWords, job_state_words
from reelqueue.domain.errors import InputError, KnownError
from reelqueue.domain.models import Job
from reelqueue.domain.states import JobState
from reelqueue.intake.export import export_results
from reelqueue.providers.registry import ProviderRegistry
from reelqueue.store.base import this_host

__all__ = ["GalleryItem", "SelectionExport", "export_selection", "gallery_items",
           "local_host", "seed_reason"]


def local_host() -> str:
    """This machine's name as the journal records it with the files it writes."""
    return this_host()


def seed_reason(providers: ProviderRegistry, provider: str) -> str | None:
    """Why a retry of a job of ``provider`` cannot ask for a new seed (None: it can)."""
    try:
        info = providers.get(provider)
    except KnownError:
        return f"Provider {provider!r} is not known here; its parameters cannot be checked."
    if info.params.seed:
        return None
    return (f"{info.title} takes no seed parameter: a new seed cannot be asked for "
            "(Retry renders the same prompt again).")


@dataclass(frozen=True)
class GalleryItem:
    """One tile of the gallery.

    Attributes:
        job_id, batch_id, row_number, name, prompt, provider, account: the job's.
        state: a :class:`JobState` value.
        output_path: where the video is (once completed) or goes.
        output_size, output_sha256: the finished file's, when recorded.
        held_by: the machine holding the finished file when it is not this one (a team
            database: each machine downloads into its own folder); None: here.
        seed: the seed the job renders with, if any.
        seed_blocked: why "Retry with a new seed" is not offered (None: it is).
        error: the last error, in the user's words.
        here: False when the journal's path would leave this machine's videos folder
            (refused: never opened, shown or copied).
        variant_of: the finished job this one renders again with a new seed (None: a
            row of the sheet).
        sub_status, error_label, provider_job_id: the job's, for :attr:`words`.
    """

    job_id: int
    batch_id: int
    row_number: int | None
    name: str
    prompt: str
    provider: str
    account: str | None
    state: str
    output_path: str
    output_size: int | None
    output_sha256: str | None
    held_by: str | None
    seed: Any
    seed_blocked: str | None
    error: str | None
    here: bool = True
    variant_of: int | None = None
    sub_status: str | None = None
    error_label: str | None = None
    provider_job_id: str | None = None

    @property
    def words(self) -> StateWords:
        """Its state's one name and hint (application.words): the tile's badge."""
        return job_state_words(self.state, self.sub_status, self.error_label,
                               self.provider_job_id)

    @property
    def title(self) -> str:
        """The tile's words: the job's name; a new seed of a finished job says its seed
        ("fox · seed 42"), so it is told apart from the kept video beside it."""
        return f"{self.name} · seed {self.seed}" if self.variant_of is not None else self.name

    @property
    def completed(self) -> bool:
        return self.state == JobState.COMPLETED.value

    @property
    def local(self) -> bool:
        """A finished video this machine holds, at ``output_path``."""
        return self.completed and self.held_by is None and self.here


def _item(job: Job, host: str, providers: ProviderRegistry,
          reasons: dict[str, str | None], here: Callable[[str], Path | None]) -> GalleryItem:
    if job.provider not in reasons:
        reasons[job.provider] = seed_reason(providers, job.provider)
    held = (job.output_host if job.state == JobState.COMPLETED and job.output_host
            and job.output_host != host else None)
    error = (f"{job.error_label}: {job.error_message}" if job.error_label and job.error_message
             else job.error_label or job.error_message)
    # The journal keeps the path relative to the videos folder (issue 21): the tile, its
    # picture, Open, Show in folder and Export need it on this machine. A path that
    # would leave the folder is shown as stored and never used (``here`` False).
    local = here(job.output_path)
    return GalleryItem(job.id, job.batch_id, job.row_number, job.name, job.prompt,
                       job.provider, job.account, job.state.value,
                       str(local) if local is not None else job.output_path,
                       job.output_size, job.output_sha256, held, job.params.get("seed"),
                       reasons[job.provider], error, here=local is not None,
                       variant_of=_variant_of(job), sub_status=job.sub_status,
                       error_label=job.error_label, provider_job_id=job.provider_job_id)


def _variant_of(job: Job) -> int | None:
    origin = job.metadata.get("variant_of")
    return origin if isinstance(origin, int) and not isinstance(origin, bool) else None


async def gallery_items(session: Session, batch_id: int) -> list[GalleryItem]:
    """The batch's jobs as tiles, in id order (read on the journal's thread)."""
    journal = session.journal
    jobs = await journal.list_jobs(batch_id=batch_id)
    host = local_host()
    reasons: dict[str, str | None] = {}
    here = local_paths(session.ctx.videos_dir)

    def items() -> list[GalleryItem]:
        return [_item(job, host, session.providers, reasons, here) for job in jobs]

    # Off the caller's thread (the window's GUI thread): a batch of 100,000 jobs is that
    # many tiles, each with its path placed under the videos folder.
    return await asyncio.to_thread(items)


class _Selected:
    """A store seen through a selection: the batch export writes only these jobs."""

    def __init__(self, store: Any, job_ids: set[int]) -> None:
        self._store = store
        self._ids = job_ids

    def get_batch(self, batch_id: int) -> Any:
        return self._store.get_batch(batch_id)

    def list_jobs(self, batch_id: int | None = None, states: Iterable[JobState] | None = None,
                  limit: int | None = None, offset: int = 0) -> list[Job]:
        jobs = self._store.list_jobs(batch_id=batch_id, states=states, limit=limit,
                                     offset=offset)
        return [job for job in jobs if job.id in self._ids]


@dataclass(frozen=True)
class SelectionExport:
    """What :func:`export_selection` wrote.

    Attributes:
        sheet: the sheet of the selected rows and results. rows: rows in it.
        copied: videos copied into the folder. missing: completed jobs whose file is not
            on this machine (held by another, or gone). unfinished: jobs without a video.
    """

    sheet: Path
    rows: int
    copied: int
    missing: int
    unfinished: int

    def summary(self) -> str:
        parts = [f"{self.rows} row{'s' if self.rows != 1 else ''} to {self.sheet.name}",
                 f"{self.copied} video{'s' if self.copied != 1 else ''} copied"]
        if self.missing:
            parts.append(f"{self.missing} not on this machine")
        if self.unfinished:
            parts.append(f"{self.unfinished} without a video yet")
        return ", ".join(parts)


def _copy_files(items: list[GalleryItem], folder: Path) -> tuple[int, int, int]:
    copied = missing = unfinished = 0
    for item in items:
        if not item.completed:
            unfinished += 1
            continue
        source = Path(item.output_path)
        if not item.local or not source.is_file():
            missing += 1
            continue
        target = folder / source.name
        if target.exists() and target.stat().st_size == source.stat().st_size:
            copied += 1  # already there (an export done twice)
            continue
        stem, counter = target.stem, 2
        while target.exists():
            target = folder / f"{stem} ({counter}){source.suffix}"
            counter += 1
        shutil.copy2(source, target)
        copied += 1
    return copied, missing, unfinished


async def export_selection(session: Session, batch_id: int, job_ids: list[int],
                           folder: Path, fmt: Literal["csv", "xlsx"] = "csv"
                           ) -> SelectionExport:
    """Write the selected jobs' rows and results (the batch export's columns) as
    ``selection.csv`` (or .xlsx) in ``folder``, and copy their videos beside it."""
    wanted = set(job_ids)
    if not wanted:
        raise InputError("Select the videos to export first.")
    folder = Path(folder)
    await asyncio.to_thread(folder.mkdir, parents=True, exist_ok=True)
    sheet = folder / f"selection.{fmt}"
    journal = session.journal

    def write(store: Any) -> int:
        return export_results(cast(Any, _Selected(store, wanted)), batch_id, sheet, fmt)

    rows = await journal.call(write, journal.sync)
    items = [item for item in await gallery_items(session, batch_id) if item.job_id in wanted]
    try:
        copied, missing, unfinished = await asyncio.to_thread(_copy_files, items, folder)
    except OSError as exc:
        raise InputError(f"The videos could not be copied to {folder} ({exc}).") from exc
    return SelectionExport(sheet, rows, copied, missing, unfinished)
