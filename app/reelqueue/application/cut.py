"""The cut (issue 35 item 5): a batch's picked takes, in sheet order, as one video and a
timeline an editor opens.

:func:`picks_from_journal` says which take of each row is picked: the review's decisions
in the journal, or the takes named (``--pick``, the gallery's selection);
:func:`plan_cut` checks every pick's file (on this machine, unchanged since it was
rendered: its sha256 against the journal's) and measures it; :func:`write_cut` writes
``<batch folder>/cut/<batch>-cut-<n>.mp4`` (a stream copy when every pick is alike, else a
re-encode the plan says before it starts), the ``.otio`` timeline (media paths relative to
it, each clip's ``source_range`` and ``target_url``), and FCP XML (``.xml``) and CMX 3600
EDL (``.edl``) through OpenTimelineIO's adapters (the ``cut`` extra; FCP XML names the files
by ``file://`` URL, as its importers expect). Each file is written
to a temporary name and renamed; every cut gets a new ``n``.

A row without a pick is a gap of its length (black in the MP4), or left out with
``skip_gaps``. A picked file whose sha256 differs from the journal's is named and left out
(a gap) unless ``use_changed``. A take held by another machine of a team is named and
refused, unless ``fetch`` brings it (``--from-api URL``).

Blocking (reads and writes files): front ends call it off their event loop / GUI thread.
Pure of Qt and of the CLI.
"""

from __future__ import annotations

import hashlib
import os
import re
from collections.abc import Callable, Sequence
from dataclasses import dataclass, field
from fractions import Fraction
from pathlib import Path
from typing import Any

from reelqueue.application.cut_media import (
    DEFAULT_FRAME_RATE,
    MAX_FRAME_RATE,
    MediaInfo,
    Segment,
    copy_blockers,
    have_pyav,
    probe,
    write_mp4,
)
from reelqueue.application.imports import find_batch
from reelqueue.application.outputs import local_path
from reelqueue.application.review import batch_takes
from reelqueue.application.session import Session
from reelqueue.application.take_groups import TakeGroup, take_groups
from reelqueue.domain.errors import InputError, OutputNotWritable
from reelqueue.domain.models import Batch, Job
from reelqueue.domain.review import Decision
from reelqueue.domain.states import JobState
from reelqueue.store.base import this_host

__all__ = ["INSTALL_HINT", "CutOptions", "CutPlan", "CutResult", "CutRow", "Fetcher",
           "batch_rows", "have_timeline", "picks_from_journal", "plan_cut", "write_cut"]

#: a row without a pick and without anything saying its length is a gap this long
DEFAULT_GAP_SECONDS = 5.0
#: a gap longer than this is held to it (a row's duration cell is the user's text)
MAX_GAP_SECONDS = 600.0
_HASH_CHUNK = 1 << 20
_CUT_NAME = re.compile(r"-cut-([0-9]+)\.")
#: the timeline files beside the MP4, by suffix: OpenTimelineIO adapter of each
TIMELINE_FORMATS = {".otio": "otio_json", ".xml": "fcp_xml", ".edl": "cmx_3600"}
INSTALL_HINT = "pip install 'reelqueue[cut]' (opentimelineio and its FCP XML and EDL adapters)"

Fetcher = Callable[[Job, Path], None]
"""Brings a take held by another machine to a path here (``--from-api URL``), or raises
InputError."""


@dataclass(frozen=True)
class CutRow:
    """One row of the sheet: its takes, and the one picked (None: no pick yet)."""

    group: TakeGroup
    pick: Job | None


def picks_from_journal(jobs: Sequence[Job], picked: Sequence[str] = ()) -> list[CutRow]:
    """The batch's rows in sheet order, each with its pick.

    The picks are the review's decisions in the journal (a take marked "pick": the
    gallery's review, ``reelqueue review set JOB pick``, ``POST /v1/jobs/{id}/review``),
    unless ``picked`` names them (job ids or job keys, ``reelqueue cut --pick``; the
    gallery's Cut with takes selected), which then replace the decisions for the whole cut.
    InputError when nothing is picked, a name is not a take of the batch, or a row is
    picked twice."""
    groups = take_groups(jobs)
    if not picked:
        decided = [job for job in jobs if job.review.decision is Decision.PICK]
        if not decided:
            raise InputError("No take of this batch is picked yet: pick one take per row in "
                             "the gallery's review (P), or with 'reelqueue review set JOB "
                             "pick', or name the takes to cut with --pick JOB (a job id or "
                             "key; once per row), e.g. 'reelqueue cut BATCH --pick 12 "
                             "--pick 15'.")
        picked = [str(job.id) for job in decided]
    by_id = {str(job.id): job for job in jobs}
    by_key = {job.job_key: job for job in jobs}
    chosen: dict[str, Job] = {}
    for name in picked:
        job = by_id.get(str(name).strip()) or by_key.get(str(name).strip())
        if job is None:
            raise InputError(f"{name!r} is not a job of this batch (give a job id from "
                             "'reelqueue status' or a job key).")
        group = next(g for g in groups if g.take(job.id) is not None)
        earlier = chosen.get(group.key)
        if earlier is not None and earlier.id != job.id:
            raise InputError(f"Row {group.row_number} ({group.name}) is picked twice: jobs "
                             f"{earlier.id} and {job.id}; pick one take per row.")
        chosen[group.key] = job
    return [CutRow(group, chosen.get(group.key)) for group in groups]


async def batch_rows(session: Session, batch_ref: str, picked: Sequence[str] = ()) -> tuple[
        Batch, list[CutRow]]:
    """The batch (its number or name) and its rows with their picks, its re-rolls' takes
    among its rows (application/review.py), read from the journal (read only: no lock
    needed)."""
    journal = session.journal
    batch = find_batch(await journal.list_batches(), batch_ref)
    takes = await batch_takes(session, batch.id)
    jobs = [job for group in takes.groups for job in group.takes]
    return takes.batch, picks_from_journal(jobs, picked)


@dataclass(frozen=True)
class CutOptions:
    """Attributes:
        skip_gaps: rows without a pick (or whose pick is left out) are left out of the
            cut instead of black gaps.
        use_changed: a picked file whose sha256 differs from the journal's is used anyway.
        fetch: brings takes another machine holds (None: they are refused).
    """

    skip_gaps: bool = False
    use_changed: bool = False
    fetch: Fetcher | None = None


@dataclass(frozen=True)
class CutEntry:
    """One piece of the cut: a row's pick (``path`` set) or its gap."""

    row: CutRow
    duration: float
    path: Path | None = None
    info: MediaInfo | None = None
    why_gap: str | None = None


@dataclass(frozen=True)
class CutPlan:
    """What :func:`write_cut` will write, checked.

    Attributes:
        batch: the batch. folder: its folder on this machine; the cut goes in
            ``folder/cut``.
        entries: the pieces in sheet order.
        copy: True when the MP4 is a stream copy; ``reencode_reasons`` say why not.
        left_out: one line per picked file left out (changed since it was rendered).
        notes: other lines for the user (a take fetched from another machine...).
    """

    batch: Batch
    folder: Path
    entries: tuple[CutEntry, ...]
    copy: bool
    reencode_reasons: tuple[str, ...]
    left_out: tuple[str, ...] = ()
    notes: tuple[str, ...] = ()

    @property
    def duration(self) -> float:
        return sum(entry.duration for entry in self.entries)

    @property
    def picks(self) -> int:
        return sum(1 for entry in self.entries if entry.path is not None)

    @property
    def gaps(self) -> int:
        return sum(1 for entry in self.entries if entry.path is None)

    def method_words(self) -> str:
        """How the MP4 will be made, said before it starts."""
        if self.copy:
            return "The picks are alike: the MP4 is a stream copy (no re-encode)."
        return ("The MP4 is re-encoded with libx264 (this takes a while): "
                + "; ".join(self.reencode_reasons) + ".")


@dataclass(frozen=True)
class CutResult:
    """What :func:`write_cut` wrote.

    Attributes:
        mp4: the video. timelines: the timeline files written (``.otio``, ``.xml``,
            ``.edl``). missing: one line per timeline file not written, and why.
        duration: the cut's length in seconds. picks, gaps: its pieces.
        copied: the MP4 is a stream copy.
    """

    mp4: Path
    timelines: tuple[Path, ...]
    missing: tuple[str, ...]
    duration: float
    picks: int
    gaps: int
    copied: bool
    notes: tuple[str, ...] = field(default=())

    def summary(self) -> str:
        made = "stream copy" if self.copied else "re-encoded"
        return (f"Cut {self.mp4.name}: {self.picks} pick{'s' if self.picks != 1 else ''}, "
                f"{self.gaps} gap{'s' if self.gaps != 1 else ''}, {self.duration:.1f} s "
                f"({made}); timeline: "
                + (", ".join(p.name for p in self.timelines) or "none") + ".")


def have_timeline() -> bool:
    """Whether OpenTimelineIO is installed (the ``.otio``, ``.xml``, ``.edl`` need it)."""
    try:
        import opentimelineio  # noqa: F401
    except ImportError:
        return False
    return True


def _sha256(path: Path) -> str:
    digest = hashlib.sha256()
    with path.open("rb") as handle:
        while chunk := handle.read(_HASH_CHUNK):
            digest.update(chunk)
    return digest.hexdigest()


def _row_seconds(group: TakeGroup) -> float:
    """A row's length without a pick: its duration parameter, else the default."""
    for job in group.takes:
        value = job.params.get("duration")
        if isinstance(value, int | float) and not isinstance(value, bool) and value > 0:
            return min(float(value), MAX_GAP_SECONDS)
        if isinstance(value, str):
            try:
                seconds = float(value.strip().rstrip("s"))
            except ValueError:
                continue
            if 0 < seconds < float("inf"):
                return min(seconds, MAX_GAP_SECONDS)
    return DEFAULT_GAP_SECONDS


def _pick_words(row: CutRow, job: Job) -> str:
    return f"row {row.group.row_number} ({row.group.name}), job {job.id}"


def batch_folder(batch: Batch, jobs: Sequence[Job], videos_dir: Path) -> Path:
    """The batch's folder on this machine (the journal keeps it relative to the videos
    folder)."""
    folder = local_path(batch.output_dir, videos_dir) if batch.output_dir else None
    if folder is None:
        for job in jobs:
            path = local_path(job.output_path, videos_dir)
            if path is not None:
                return path.parent
        raise InputError(f"Batch {batch.name!r} has no folder under {videos_dir}.")
    return folder


def plan_cut(batch: Batch, rows: Sequence[CutRow], videos_dir: Path,
             options: CutOptions = CutOptions()) -> CutPlan:
    """Check and measure every pick of ``rows`` (sheet order). InputError, naming every
    offending pick, when a pick has no finished video, or is held by another machine and
    cannot be fetched; a changed file is named in ``left_out`` (or used, ``use_changed``)."""
    if not have_pyav():
        raise InputError("The cut's MP4 needs PyAV: pip install av (or 'reelqueue[cut]').")
    jobs = [job for row in rows for job in row.group.takes]
    folder = batch_folder(batch, jobs, videos_dir)
    host = this_host()
    refused: list[str] = []
    held: list[str] = []
    left_out: list[str] = []
    notes: list[str] = []
    entries: list[CutEntry] = []
    for row in rows:
        job = row.pick
        if job is None:
            entries.append(CutEntry(row, _row_seconds(row.group), why_gap="no pick"))
            continue
        if job.state != JobState.COMPLETED or not job.output_sha256:
            refused.append(f"{_pick_words(row, job)} has no finished video "
                           f"({job.state.value})")
            continue
        path = local_path(job.output_path, videos_dir)
        if path is None:
            refused.append(f"{_pick_words(row, job)}: its path {job.output_path!r} would "
                           "leave the videos folder")
            continue
        elsewhere = bool(job.output_host) and job.output_host != host
        if not path.is_file() and elsewhere:
            if options.fetch is None:
                held.append(f"{_pick_words(row, job)} is on {job.output_host}")
                continue
            path = folder / "cut" / "fetched" / f"{job.id}-{path.name}"
            if not (path.is_file() and _sha256(path) == job.output_sha256):
                path.parent.mkdir(parents=True, exist_ok=True)
                options.fetch(job, path)
            notes.append(f"{_pick_words(row, job)} fetched from {job.output_host}")
        if not path.is_file():
            refused.append(f"{_pick_words(row, job)}: its file {path} is gone")
            continue
        if _sha256(path) != job.output_sha256:
            if not options.use_changed:
                left_out.append(f"{_pick_words(row, job)}: {path.name} changed since it was "
                                "rendered (sha256 differs from the journal); left out "
                                "(--use-changed uses it)")
                entries.append(CutEntry(row, _row_seconds(row.group),
                                        why_gap="its file changed"))
                continue
            notes.append(f"{_pick_words(row, job)}: {path.name} changed since it was "
                         "rendered; used as it is now (--use-changed)")
        info = probe(path)
        entries.append(CutEntry(row, info.duration, path, info))
    if held:
        raise InputError("Takes held by another machine of the team cannot be cut here: "
                         + "; ".join(held) + ". Cut on that machine, or fetch them through "
                         "its API with --from-api URL.")
    if refused:
        raise InputError("These picks cannot be cut: " + "; ".join(refused) + ".")
    if options.skip_gaps:
        entries = [entry for entry in entries if entry.path is not None]
    if not any(entry.path is not None for entry in entries):
        raise InputError("No picked take can be cut (every pick was left out).")
    blockers = copy_blockers([Segment(e.duration, e.path, e.info) for e in entries])
    return CutPlan(batch, folder, tuple(entries), not blockers, tuple(blockers),
                   tuple(left_out), tuple(notes))


def _reserve(cut_dir: Path, stem: str) -> tuple[int, Path]:
    """A new cut number and its MP4's temporary file (made here: two cuts at once take
    different numbers)."""
    taken = [int(m.group(1)) for p in cut_dir.iterdir()
             if p.name.startswith(f"{stem}-cut-") or p.name.startswith(f".{stem}-cut-")
             if (m := _CUT_NAME.search(p.name)) is not None]
    number = max(taken, default=0) + 1
    while True:
        temporary = cut_dir / f".{stem}-cut-{number}.mp4.part"
        try:
            with temporary.open("xb"):
                return number, temporary
        except FileExistsError:
            number += 1


def _frame_rate(plan: CutPlan) -> Fraction:
    for entry in plan.entries:
        if entry.info is not None and entry.info.frame_rate:
            return min(entry.info.frame_rate, MAX_FRAME_RATE)
    return DEFAULT_FRAME_RATE


def _timecode_rate(rate: float) -> float:
    """A rate FCP XML and EDL timecode can hold: ``rate`` itself, else the first of the
    common ones at or above it (a 12 fps clip is counted at 24)."""
    import opentimelineio as otio

    if otio.opentime.RationalTime.is_valid_timecode_rate(rate):
        return rate
    return next((common for common in (24.0, 25.0, 30.0, 50.0, 60.0) if common >= rate), 60.0)


def _timeline(plan: CutPlan, name: str, cut_dir: Path, rate: float, *,
              file_urls: bool = False) -> Any:
    """The cut as an OTIO timeline; media paths relative to ``cut_dir`` (``file_urls``:
    absolute ``file://`` URLs, what FCP XML importers look for)."""
    import opentimelineio as otio

    timeline = otio.schema.Timeline(name=name)
    track = otio.schema.Track(name="picks", kind=otio.schema.TrackKind.Video)
    timeline.tracks.append(track)
    for entry in plan.entries:
        length = otio.opentime.RationalTime(round(entry.duration * rate), rate)
        if entry.path is None:
            track.append(otio.schema.Gap(
                name=f"row {entry.row.group.row_number}: {entry.why_gap}",
                source_range=otio.opentime.TimeRange(otio.opentime.RationalTime(0, rate),
                                                     length)))
            continue
        pick = entry.row.pick
        assert pick is not None
        whole = otio.opentime.TimeRange(otio.opentime.RationalTime(0, rate), length)
        target = (entry.path.absolute().as_uri() if file_urls
                  else Path(os.path.relpath(entry.path, cut_dir)).as_posix())
        clip = otio.schema.Clip(
            name=entry.row.group.name or entry.path.stem,
            media_reference=otio.schema.ExternalReference(target_url=target,
                                                          available_range=whole),
            source_range=whole,
            metadata={"reelqueue": {"job_id": pick.id, "job_key": pick.job_key,
                                    "row": entry.row.group.row_number,
                                    "seed": pick.params.get("seed"),
                                    "sha256": pick.output_sha256}})
        track.append(clip)
    return timeline


def _write_timelines(plan: CutPlan, stem: str, cut_dir: Path) -> tuple[
        list[tuple[Path, Path]], list[str]]:
    """The timeline files at temporary names: [(temporary, final)], and what was not
    written and why."""
    if not have_timeline():
        return [], [f"the .otio, .xml and .edl files need OpenTimelineIO: {INSTALL_HINT}"]
    import opentimelineio as otio

    rate = float(_frame_rate(plan))
    written: list[tuple[Path, Path]] = []
    missing: list[str] = []
    for suffix, adapter in TIMELINE_FORMATS.items():
        final = cut_dir / f"{stem}{suffix}"
        temporary = cut_dir / f".{stem}{suffix}.part"
        try:
            # The .otio keeps the clips' own rate and relative paths (the folder can move);
            # FCP XML and EDL count in timecode, and FCP XML names files by URL.
            timeline = _timeline(plan, stem, cut_dir,
                                 rate if adapter == "otio_json" else _timecode_rate(rate),
                                 file_urls=adapter == "fcp_xml")
            text = otio.adapters.write_to_string(timeline, adapter_name=adapter)
            temporary.write_text(text, encoding="utf-8")
        except OSError:
            raise
        except Exception as exc:  # an adapter's own error (missing plugin, a refusal)
            missing.append(f"{final.name} not written ({adapter}: {exc}); {INSTALL_HINT}")
            continue
        written.append((temporary, final))
    return written, missing


def write_cut(plan: CutPlan,
              progress: Callable[[int, int], None] | None = None) -> CutResult:
    """Write the cut of ``plan`` in ``<batch folder>/cut`` under a new number. Nothing
    appears under its final name until it is whole."""
    cut_dir = plan.folder / "cut"
    stem_base = plan.folder.name
    temporaries: list[Path] = []
    try:
        cut_dir.mkdir(parents=True, exist_ok=True)
        number, mp4_part = _reserve(cut_dir, stem_base)
        temporaries.append(mp4_part)
        stem = f"{stem_base}-cut-{number}"
        segments = [Segment(e.duration, e.path, e.info) for e in plan.entries]
        write_mp4(segments, mp4_part, copy=plan.copy, progress=progress)
        timelines, missing = _write_timelines(plan, stem, cut_dir)
        temporaries += [temporary for temporary, _final in timelines]
        mp4 = cut_dir / f"{stem}.mp4"
        os.replace(mp4_part, mp4)
        for temporary, final in timelines:
            os.replace(temporary, final)
        temporaries.clear()
    except OSError as exc:
        raise OutputNotWritable(f"The cut could not be written in {cut_dir} ({exc}).") from exc
    finally:
        for leftover in temporaries:
            leftover.unlink(missing_ok=True)
    return CutResult(mp4, tuple(final for _t, final in timelines), tuple(missing),
                     plan.duration, plan.picks, plan.gaps, plan.copy,
                     plan.left_out + plan.notes)
