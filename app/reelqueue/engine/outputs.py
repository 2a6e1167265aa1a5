"""Crash-safe output files (DESIGN.md invariant 5).

A video is streamed into ``.<name>.<claim>.part`` beside its final path, checked (it must
look like an MP4/MOV/WebM), fsynced, renamed into place and the folder fsynced; only then
does the engine record completion with the size and sha256 computed on the way. A file at
the final path therefore always is a whole video, which is what lets start-up recovery
complete a job from the disk instead of rendering it again.

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
import time
from collections.abc import AsyncIterator, Callable, Iterable
from concurrent.futures import ThreadPoolExecutor
from dataclasses import dataclass
from pathlib import Path
from typing import Any, BinaryIO, TypeVar

from reelqueue.domain.errors import ErrorClass, ErrorLabel, OutputNotWritable, ProviderError
from reelqueue.domain.models import FileCheck, Job
from reelqueue.engine.config import EngineConfig
from reelqueue.providers.download_limits import DownloadLimits, bounded, using_limits

T = TypeVar("T")

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
        self.fault_hook: object | None = None

    def shutdown(self) -> None:
        self._executor.shutdown(wait=True)

    async def _run(self, fn: Callable[..., T], *args: Any) -> T:
        return await asyncio.get_running_loop().run_in_executor(self._executor, fn, *args)

    async def write_atomically(
        self, chunks: AsyncIterator[bytes], final: Path, claim_token: str
    ) -> WrittenFile:
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
            await self._run(self._finish, handle, part, final)
        except BaseException:
            try:
                await stream.aclose()  # closes the adapter's response: no connection kept
            finally:
                await self._run(self._discard, handle, part)
            raise
        return WrittenFile(final, size, digest.hexdigest())

    def _write(self, handle: BinaryIO, chunk: bytes, digest: hashlib._Hash) -> None:
        hook = self.fault_hook
        if callable(hook):
            hook(handle, chunk)
        handle.write(chunk)
        digest.update(chunk)

    @staticmethod
    def _finish(handle: BinaryIO, part: Path, final: Path) -> None:
        handle.flush()
        os.fsync(handle.fileno())
        handle.close()
        os.replace(part, final)
        _fsync_dir(final.parent)

    @staticmethod
    def _discard(handle: BinaryIO, part: Path) -> None:
        try:
            handle.close()
        finally:
            part.unlink(missing_ok=True)


def check_output(job: Job) -> FileCheck:
    """What recovery needs to know of a job's final file: there, whole, and its hash."""
    path = Path(job.output_path)
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


def missing_outputs(outputs: Iterable[tuple[int, str, int]]) -> list[int]:
    """The ids of completed jobs whose video is gone or no longer has its recorded size
    (``Store.completed_outputs`` rows). One ``stat`` each: a journal keeps every completed
    job, so this runs over tens of thousands of files at each start."""
    missing: list[int] = []
    for job_id, path, size in outputs:
        try:
            if os.stat(path).st_size == size:
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
