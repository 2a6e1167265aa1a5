"""Crash-safe output files (DESIGN.md invariant 5), and the user's files kept (issue 22).

A video is streamed into ``.<name>.<claim>.part`` beside its final path, checked (it must
look like an MP4/MOV/WebM), fsynced; its size and sha256 (computed on the way) are recorded
in the journal (``Store.record_download``), then it is renamed into place without replacing
anything (a hard link, then the ``.part`` name removed) and the folder fsynced; only then
does the engine record completion. Start-up recovery completes a job from the disk only
from the file whose hash its download recorded (:func:`recorded_output`), never from
whatever else is at its output path.

A file at a job's output name that the journal did not record is the user's: it is never
replaced. The download chooses a free name instead ("clip (2).mp4",
:func:`free_output_name`), and the DOWNLOADING write records it as the job's output path
with the temporary file's name.

Every download is bounded (DESIGN.md invariant 12, ``providers/download_limits.py``): a
byte cap, a deadline and a throughput floor, whatever the adapter. A download that passes
one fails as a retryable ``DOWNLOAD_FAILED`` with its ``.part`` removed; the engine keeps
the render and downloads it again later.
"""

from __future__ import annotations

import asyncio
import contextlib
import errno
import glob
import hashlib
import os
import re
import stat
import time
from collections.abc import AsyncIterator, Awaitable, Callable, Iterable
from concurrent.futures import ThreadPoolExecutor
from dataclasses import dataclass
from pathlib import Path
from typing import Any, BinaryIO, TypeVar

from reelqueue.domain.errors import ErrorClass, ErrorLabel, OutputNotWritable, ProviderError
from reelqueue.domain.models import FileCheck, Job
from reelqueue.engine.config import EngineConfig
from reelqueue.intake.filenames import safe_output_name
from reelqueue.providers.download_limits import DownloadLimits, bounded, using_limits

T = TypeVar("T")

OUTPUT_NAME_CLEANED = "output_name_cleaned"
"""The ledger entry of a download written under a safer name than the journal's
(:func:`writable_output`): ``{"from": the journal's name, "to": the name written}``."""

_VIDEO_BOXES = (b"ftyp", b"moov", b"mdat", b"free", b"wide", b"skip")
_WEBM_MAGIC = b"\x1a\x45\xdf\xa3"


@dataclass(frozen=True)
class WrittenFile:
    path: Path
    size: int
    sha256: str


def limits_from_config(config: EngineConfig) -> DownloadLimits:
    """The download bounds an engine with ``config`` enforces."""
    return DownloadLimits(
        max_bytes=config.download_max_bytes,
        deadline_seconds=config.download_deadline_seconds,
        min_bytes_per_second=config.download_min_bytes_per_second,
        floor_window_seconds=config.download_floor_window_seconds,
    )


def part_path(final: Path, claim_token: str) -> Path:
    return final.with_name(f".{final.name}.{claim_token[:12]}.part")


def looks_like_video(head: bytes) -> bool:
    return head[4:8] in _VIDEO_BOXES or head.startswith(_WEBM_MAGIC)


def _fsync_dir(folder: Path) -> None:
    if os.name == "nt":  # directories cannot be opened for fsync on Windows
        return
    fd = os.open(folder, os.O_RDONLY)
    try:
        os.fsync(fd)
    finally:
        os.close(fd)


class OutputWriter:
    """Writes downloads off the event loop, on its own thread.

    Attributes:
        limits: the byte cap, deadline and throughput floor of every download.
        fault_hook: tests set it to raise an OSError (ENOSPC) on a write.
    """

    def __init__(self, limits: DownloadLimits | None = None) -> None:
        self._executor = ThreadPoolExecutor(max_workers=2, thread_name_prefix="outputs")
        self.limits = limits or DownloadLimits()
        self.fault_hook: Callable[[BinaryIO, bytes], object] | None = None

    def shutdown(self) -> None:
        self._executor.shutdown(wait=True)

    async def _run(self, fn: Callable[..., T], *args: Any) -> T:
        return await asyncio.get_running_loop().run_in_executor(self._executor, fn, *args)

    async def write_atomically(
        self, chunks: AsyncIterator[bytes], final: Path, claim_token: str, *,
        before_publish: Callable[[WrittenFile], Awaitable[None]] | None = None,
    ) -> WrittenFile:
        """Download ``chunks`` to ``final`` through its ``.part`` file. ``before_publish``
        runs once the whole file is fsynced and before it takes its name (the engine
        records its hash there); when it raises, the file is discarded. A name taken
        meanwhile is never replaced: a retryable download failure instead."""
        final.parent.mkdir(parents=True, exist_ok=True)
        part = part_path(final, claim_token)
        digest = hashlib.sha256()
        size = 0
        limits = self.limits
        handle: BinaryIO = await self._run(open, part, "wb")
        stream = bounded(chunks, limits)
        try:
            head = b""
            # The adapter reads the limits too, to refuse a Content-Length over the cap
            # before any byte comes.
            with using_limits(limits):
                async for chunk in stream:
                    if len(head) < 16:
                        head += chunk[: 16 - len(head)]
                    await self._run(self._write, handle, chunk, digest)
                    size += len(chunk)
            if size == 0 or not looks_like_video(head):
                raise ProviderError(
                    "The provider sent something that is not a video (an error page?).",
                    error_class=ErrorClass.RETRYABLE, label=ErrorLabel.DOWNLOAD_FAILED)
            await self._run(self._seal, handle)
            written = WrittenFile(final, size, digest.hexdigest())
            if before_publish is not None:
                await before_publish(written)
            try:
                await self._run(publish, part, final)
            except FileExistsError:
                raise ProviderError(
                    f"A file appeared at {final.name} while the video was downloading; it "
                    "was kept, and the video is downloaded again under a free name.",
                    error_class=ErrorClass.RETRYABLE,
                    label=ErrorLabel.DOWNLOAD_FAILED) from None
        except BaseException:
            try:
                await stream.aclose()  # closes the adapter's response: no connection kept
            finally:
                await self._run(self._discard, handle, part)
            raise
        return written

    def _write(self, handle: BinaryIO, chunk: bytes, digest: hashlib._Hash) -> None:
        hook = self.fault_hook
        if hook is not None:
            hook(handle, chunk)
        handle.write(chunk)
        digest.update(chunk)

    @staticmethod
    def _seal(handle: BinaryIO) -> None:
        handle.flush()
        os.fsync(handle.fileno())
        handle.close()

    @staticmethod
    def _discard(handle: BinaryIO, part: Path) -> None:
        try:
            handle.close()
        finally:
            part.unlink(missing_ok=True)


def publish(part: Path, final: Path) -> None:
    """Give the fsynced ``part`` the name ``final`` without replacing anything there
    (FileExistsError when something is), then fsync the folder.

    A hard link fails when the name exists, atomically; the ``.part`` name is removed
    after it (a crash in between leaves both names on one file: the start-up cleaning
    removes the ``.part``). Windows' rename never replaces. Where the file system has no
    hard links (FAT, exFAT, some network shares), the name is checked just before a rename:
    a file put there in that instant could be replaced, the only window left.
    """
    if os.name == "nt":
        os.rename(part, final)
    else:
        try:
            os.link(part, final, follow_symlinks=False)
        except FileExistsError:
            raise
        except OSError as exc:
            if exc.errno not in _NO_HARD_LINKS:
                raise
            if os.path.lexists(final):
                raise FileExistsError(errno.EEXIST, "the name is taken", str(final)) from None
            os.rename(part, final)
        else:
            part.unlink()
    _fsync_dir(final.parent)


_NO_HARD_LINKS = {errno.EPERM, errno.ENOTSUP, errno.EOPNOTSUPP, errno.EXDEV, errno.EMLINK,
                  errno.ENOSYS}

_SUFFIXED = re.compile(r"(?P<base>.*) \((?P<n>[0-9]+)\)")
_MAX_NAME_BYTES = 255  # a file name's limit on every common file system
MAX_SUFFIX = 9_999


def free_output_name(planned: Path) -> Path:
    """``planned`` when nothing is there (not even a dangling link); else the first free
    ``"<stem> (N)<suffix>"``, N from 2. Whatever holds the planned name is the user's (or
    an earlier, unrecorded download's) and is kept. A suffix already there is replaced,
    not stacked: "clip (2).mp4" taken gives "clip (3).mp4"."""
    if not os.path.lexists(planned):
        return planned
    stem, suffix = planned.stem, planned.suffix
    found = _SUFFIXED.fullmatch(stem)
    base = found.group("base") if found and int(found.group("n")) >= 2 else stem
    for n in range(2, MAX_SUFFIX + 1):
        tail = f" ({n}){suffix}"
        cut = base
        while len((cut + tail).encode("utf-8", "surrogatepass")) > _MAX_NAME_BYTES and cut:
            cut = cut[:-1]
        candidate = planned.with_name(cut + tail)
        if not os.path.lexists(candidate):
            return candidate
    raise OutputNotWritable(
        f"Every name from {planned.name} to \"{base} ({MAX_SUFFIX}){suffix}\" is taken in "
        f"{planned.parent}; move some files away.")


def _recorded_part(job: Job, final: Path) -> Path | None:
    """The job's recorded temporary file, if its name is one this program makes beside
    ``final`` (the journal is untrusted input on a team store, DESIGN.md invariant 15)."""
    name = job.output_part
    if (not name or os.path.basename(name) != name or "/" in name or "\\" in name
            or not name.startswith(f".{final.name}.") or not name.endswith(".part")):
        return None
    return final.with_name(name)


def _hash_if_sized(path: Path, size: int | None) -> FileCheck:
    """Exists, size and sha256 of the regular file at ``path`` when its size is ``size``
    (a file of another size is not hashed: it cannot be the one recorded)."""
    try:
        info = os.lstat(path)
    except OSError:
        return FileCheck(exists=False)
    if not stat.S_ISREG(info.st_mode) or info.st_size == 0 or (
            size is not None and info.st_size != size):
        return FileCheck(exists=False)
    digest = hashlib.sha256()
    try:
        with path.open("rb") as handle:
            for block in iter(lambda: handle.read(1 << 20), b""):
                digest.update(block)
    except OSError:
        return FileCheck(exists=False)
    return FileCheck(exists=True, size=info.st_size, sha256=digest.hexdigest())


def recorded_output(job: Job, videos_dir: Path | None = None) -> FileCheck:
    """Recovery's look at a job's video (issue 22): the file at its output path when its
    sha256 is the one the journal recorded for this job's download; else, for a download
    that died between recording the hash and the rename, its recorded ``.part`` file with
    that hash, given its name now (never replacing anything). Anything else (no hash
    recorded, another file) is not the video: FileCheck(exists=False), and the render is
    read again."""
    if not job.output_sha256:
        return FileCheck(exists=False)
    final = located_output(job.output_path, videos_dir)
    if final is None:
        return FileCheck(exists=False)
    check = _hash_if_sized(final, job.output_size)
    if check.exists and check.sha256 == job.output_sha256:
        return check
    part = _recorded_part(job, final)
    if part is None or check.exists or os.path.lexists(final):
        return FileCheck(exists=False)
    check = _hash_if_sized(part, job.output_size)
    if not (check.exists and check.sha256 == job.output_sha256):
        return FileCheck(exists=False)
    try:
        publish(part, final)
    except OSError:
        return FileCheck(exists=False)
    return check


def check_output(job: Job, videos_dir: Path | None = None) -> FileCheck:
    """What recovery needs to know of a job's final file: there, whole, and its hash."""
    path = located_output(job.output_path, videos_dir)
    if path is None:
        return FileCheck(exists=False)
    try:
        size = path.stat().st_size
    except OSError:
        return FileCheck(exists=False)
    if size == 0:
        return FileCheck(exists=False)
    digest = hashlib.sha256()
    with path.open("rb") as handle:
        head = handle.read(16)
        if not looks_like_video(head):
            return FileCheck(exists=False)
        digest.update(head)
        for block in iter(lambda: handle.read(1 << 20), b""):
            digest.update(block)
    return FileCheck(exists=True, size=size, sha256=digest.hexdigest())


def missing_outputs(outputs: Iterable[tuple[int, str, int]],
                    videos_dir: Path | None = None) -> list[int]:
    """The ids of completed jobs whose video is gone or no longer has its recorded size
    (``Store.completed_outputs`` rows). One ``stat`` each: a journal keeps every completed
    job, so this runs over tens of thousands of files at each start."""
    missing: list[int] = []
    for job_id, stored, size in outputs:
        path = located_output(stored, videos_dir)
        try:
            if path is not None and os.stat(path).st_size == size:
                continue
        except OSError:
            pass
        missing.append(job_id)
    return missing


def remove_partials(folders: set[Path]) -> int:
    """Delete ``.part`` files of dead attempts (called before any worker starts)."""
    removed = 0
    for folder in folders:
        if not folder.is_dir():
            continue
        for part in folder.glob(".*.part"):
            part.unlink(missing_ok=True)
            removed += 1
    return removed


def remove_parts_of(final: Path, *, idle_seconds: float) -> int:
    """Delete the ``.part`` files of other attempts at ``final`` that nothing wrote for
    ``idle_seconds`` (called once the job is completed). On a shared store the start-up
    cleaning cannot run (another instance may be downloading into the folder), so a dead
    attempt's partial file goes when its job completes, wherever that happens. A fresh one
    is left alone: it may be a frozen instance's, which comes back, downloads the same bytes
    and is fenced out at its completion (tests/proof/test_checklist.py)."""
    removed = 0
    cutoff = time.time() - idle_seconds
    for part in final.parent.glob(f".{glob.escape(final.name)}.*.part"):
        with contextlib.suppress(FileNotFoundError):
            if part.stat().st_mtime < cutoff:
                part.unlink()
                removed += 1
    return removed


def ensure_writable(folder: Path) -> None:
    """Refuse an output folder that cannot be written, before anything starts."""
    try:
        folder.mkdir(parents=True, exist_ok=True)
        # Named like a partial download, so a kill right here leaves nothing that
        # start-up cleaning would not remove.
        probe = folder / f".reelqueue-write-test-{os.getpid()}.part"
        probe.write_bytes(b"ok")
        probe.unlink()
    except OSError as exc:
        reason = "disk full" if exc.errno == errno.ENOSPC else exc.strerror or str(exc)
        raise OutputNotWritable(
            f"The output folder {folder} cannot be written ({reason}). Choose a folder you "
            "can write to (--output-dir); nothing was started."
        ) from None


# -- where a job's file is (issue 21/23: every machine writes under its own folder) -------

def path_parts(stored: str) -> list[str] | None:
    """The components of a journal path with either separator, or None when one of
    them is ``..`` (or the path names nothing)."""
    parts = [p for p in re.split(r"[/\\]", stored) if p not in ("", ".")]
    if not parts or ".." in parts:
        return None
    return parts


def is_absolute(stored: str) -> bool:
    """Absolute on POSIX (``/…``) or naming a Windows drive or share (``C:…``,
    ``\\\\host\\share``, ``\\…``): what ``PurePosixPath.is_absolute()`` or
    ``PureWindowsPath.drive`` say, by string tests (building the two paths cost ~40 µs a
    call, and every row of a 100,000-job table asked twice)."""
    first = stored[:1]
    return stored.startswith(("/", "\\")) or (stored[1:2] == ":" and first.isascii()
                                                and first.isalpha())


def output_refusal(stored: str, videos_dir: Path | None) -> str | None:
    """Why the journal's output path ``stored`` is not written on this machine (None:
    it is). A relative path (``<batch folder>/<file>``) is written under this machine's
    videos folder; one with ``..`` never; an absolute one (kept from before journal
    version 9, outside its batch's folder) only when it lies inside the videos folder.
    ``videos_dir`` None (tests, embedders that place absolute paths themselves): an
    absolute path without ``..`` is written where it says; a relative one is refused."""
    parts = path_parts(stored)
    where = f"this machine's videos folder ({videos_dir})" if videos_dir else "its folder"
    if parts is None:
        return (f"its output path {stored!r} in the journal leaves {where} ('..'); it is "
                "refused: nothing was rendered or written")
    if not is_absolute(stored):
        if videos_dir is None:  # never relative to whatever the current folder is
            return (f"its output path {stored!r} is relative to a videos folder and none "
                    "is set for this engine")
        return None
    if videos_dir is None:
        return None
    try:
        Path(stored).relative_to(videos_dir)
    except ValueError:
        return (f"its output path {stored} is absolute and outside {where} (a path kept "
                "from before journal version 9, or written by another program): it is not "
                "trusted, never written to; nothing was rendered. Import the row again to "
                "render it into this machine's folder")
    return None


def resolve_output(stored: str, videos_dir: Path | None) -> Path:
    """Where this machine writes (and reads) the file the journal names ``stored``:
    ``videos_dir / stored`` for a relative path. OutputNotWritable (with the reason, for
    the job's error) when :func:`output_refusal` refuses it."""
    reason = output_refusal(stored, videos_dir)
    if reason is not None:
        raise OutputNotWritable(f"Not written: {reason}.")
    if is_absolute(stored):
        return Path(stored)
    parts = path_parts(stored)
    assert parts is not None and videos_dir is not None
    return videos_dir.joinpath(*parts)


def writable_output(stored: str, videos_dir: Path | None) -> Path:
    """:func:`resolve_output` with its file name made safe (intake/filenames.py
    :func:`safe_output_name`), wherever the name came from: a team database's row names
    the file as it likes (``.html``, ``.desktop``, ANSI escapes, bidi overrides, ``CON``).
    Where the engine writes a video; the journal then records the name written."""
    path = resolve_output(stored, videos_dir)
    return path.with_name(safe_output_name(path.name))


def located_output(stored: str, videos_dir: Path | None) -> Path | None:
    """:func:`resolve_output`, or None when the path is refused (for reads: status,
    start-up checks, the API's download)."""
    try:
        return resolve_output(stored, videos_dir)
    except OutputNotWritable:
        return None


def stored_name(stored: str, final: Path) -> str:
    """The journal's path for ``final``, a (maybe suffixed) name chosen beside the file
    the journal named ``stored``: relative stays relative (``<batch folder>/<name>``)."""
    if is_absolute(stored):
        return str(final)
    parts = path_parts(stored)
    assert parts is not None
    return "/".join([*parts[:-1], final.name])
