"""Each machine's record of a batch: ``manifest-<host>.json`` in the batch's folder
(issue 23; the format: docs/manifest.md).

The engine writes it (so ``run``, ``worker`` and the window alike), not the import: one
file per machine per batch folder (a shared folder gets one per machine, never two
machines writing one file), each listing every job of the batch as the journal has it
(state, file, size, sha256, provider job id, price and cost, error, the host holding the
file). Writes are coalesced: a batch whose jobs changed is written at most once every
``EngineConfig.manifest_seconds`` (longer for a batch whose write takes long) and once
more at the engine's stop. The journal is read on the journal thread, the file encoded
and written on the manifest's own thread (never the event loop's), atomically: a
temporary file, fsync, ``os.replace``, so a reader sees the old manifest or the new one,
never half of one.
"""

from __future__ import annotations

import asyncio
import contextlib
import json
import logging
import os
import re
import time
from collections.abc import Iterable
from concurrent.futures import ThreadPoolExecutor
from pathlib import Path
from typing import Any

from reelqueue.domain.models import Batch, Job
from reelqueue.engine.async_store import AsyncStore
from reelqueue.engine.outputs import is_absolute, located_output, path_parts
from reelqueue.engine.waits import wait_event
from reelqueue.store.spend import price_of

log = logging.getLogger(__name__)

FORMAT = "reelqueue-manifest"
VERSION = 2
_UNSAFE = re.compile(r"[^A-Za-z0-9._-]+")


def manifest_name(host: str) -> str:
    """``manifest-<host>.json``, the host name made safe for a file name."""
    return f"manifest-{_UNSAFE.sub('_', host).strip('._') or 'host'}.json"


def batch_folder(batch: Batch, videos_dir: Path | None) -> Path | None:
    """The batch's folder on this machine (None: its journal path is refused)."""
    return located_output(batch.output_dir, videos_dir)


def _file_in_batch(job: Job) -> str:
    """The job's file, relative to its batch folder (the journal keeps it as
    ``<batch folder>/<file>``; an untrusted absolute path gives its name only)."""
    parts = path_parts(job.output_path) or [""]
    if is_absolute(job.output_path) or len(parts) < 2:
        return parts[-1]
    return "/".join(parts[1:])


def job_entry(job: Job) -> dict[str, Any]:
    """One job of the manifest (docs/manifest.md)."""
    return {
        "id": job.id, "key": job.job_key, "row": job.row_number, "name": job.name,
        "prompt": job.prompt, "state": job.state.value, "file": _file_in_batch(job),
        "host": job.output_host, "size": job.output_size, "sha256": job.output_sha256,
        "provider": job.provider, "account": job.account,
        "provider_job_id": job.provider_job_id, "price_usd": price_of(job.metadata),
        "cost_usd": job.cost, "attempts": job.attempts,
        "error": None if job.error_label is None else {
            "class": job.error_class, "label": job.error_label,
            "message": job.error_message},
        "finished_at": job.finished_at,
        # a routed job (issue 24): where it could render, best first, and who refused it
        "route": None if job.route is None else [
            {"provider": c.provider, "refused": c.refused} for c in job.route.candidates],
    }


def manifest_text(batch: Batch, jobs: Iterable[Job], host: str, written_at: float) -> str:
    head = {"format": FORMAT, "version": VERSION, "host": host, "written_at": written_at,
            "batch": {"id": batch.id, "name": batch.name, "folder": batch.output_dir,
                      "source": batch.source_path, "created_at": batch.created_at}}
    text = json.dumps(head, ensure_ascii=False)
    entries = ",\n".join(json.dumps(job_entry(job), ensure_ascii=False) for job in jobs)
    return text[:-1] + ',\n "jobs": [\n' + entries + "\n]}\n"


def write_atomically(target: Path, text: str) -> None:
    """``text`` at ``target``: a temporary file beside it, fsynced, then ``os.replace``."""
    temporary = target.with_name(f".{target.name}.{os.getpid()}.tmp")
    try:
        with temporary.open("w", encoding="utf-8") as stream:
            stream.write(text)
            stream.flush()
            os.fsync(stream.fileno())
        os.replace(temporary, target)
    except BaseException:
        temporary.unlink(missing_ok=True)
        raise


class ManifestWriter:
    """Writes this machine's manifest of each batch whose jobs changed.

    Attributes:
        host: the machine's name in the file's name and its ``host`` field.
    """

    def __init__(self, store: AsyncStore, host: str, videos_dir: Path | None, *,
                 interval: float) -> None:
        self.store = store
        self.host = host
        self.videos_dir = videos_dir
        self.interval = interval
        self._executor = ThreadPoolExecutor(max_workers=1, thread_name_prefix="manifest")
        self._dirty: set[int] = set()
        self._batches: dict[int, int] = {}  # job id -> batch id
        self._all_dirty = False
        self._next_at: dict[int, float] = {}
        self._wake = asyncio.Event()
        self._task: asyncio.Task[None] | None = None

    def job_changed(self, job_id: int, batch_id: int | None = None) -> None:
        """Job ``job_id`` (of ``batch_id`` when known) changed. A job whose batch this
        writer has not seen (a cancel, a retry, recovery) has every batch looked at.
        Without a videos folder (tests, embedders placing absolute paths) no manifest is
        written."""
        if self.videos_dir is None:
            return
        if batch_id is not None:
            self._batches[job_id] = batch_id
        batch_id = self._batches.get(job_id, batch_id)
        if batch_id is None:
            self._all_dirty = True
        else:
            self._dirty.add(batch_id)
        self._wake.set()

    def start(self) -> None:
        self._task = asyncio.create_task(self._loop(), name="manifests")

    async def stop(self) -> None:
        """Stop the loop and write each batch this engine touched once more, as the
        journal has it now (the run's last word: other machines' jobs finished since)."""
        if self._task is not None:
            self._task.cancel()
            with contextlib.suppress(asyncio.CancelledError):
                await self._task
            self._task = None
        self._dirty.update(self._next_at)
        try:
            await self.flush(force=True)
        finally:
            self._executor.shutdown(wait=True)

    async def _loop(self) -> None:
        while True:
            await self._wake.wait()
            self._wake.clear()
            await self.flush(force=False)
            now = time.monotonic()
            waits = [self._next_at.get(batch_id, now) - now for batch_id in self._dirty]
            if waits:  # changed batches whose turn has not come: wake at the first turn
                delay = max(0.05, min(waits))
                await wait_event(self._wake, delay)
                self._wake.set()

    async def flush(self, *, force: bool) -> None:
        """Write each changed batch whose turn came (every one when ``force``)."""
        if self._all_dirty:
            self._all_dirty = False
            try:
                self._dirty.update(b.id for b in await self.store.list_batches())
            except Exception:
                log.exception("the manifests' batches could not be read")
        now = time.monotonic()
        for batch_id in sorted(self._dirty):
            if not force and self._next_at.get(batch_id, 0.0) > now:
                continue
            self._dirty.discard(batch_id)
            started = time.monotonic()
            try:
                await self._write(batch_id)
            except Exception as exc:  # a manifest is a record: the renders go on
                log.warning("the manifest of batch %s was not written: %s", batch_id, exc)
            took = time.monotonic() - started
            # A batch whose write takes long is written less often (never > ~10% busy).
            self._next_at[batch_id] = time.monotonic() + max(self.interval, took * 10)

    async def _write(self, batch_id: int) -> None:
        batch = await self.store.get_batch(batch_id)
        if batch is None:
            return
        folder = batch_folder(batch, self.videos_dir)
        if folder is None:
            log.warning("batch %s: its folder %r is not under this machine's videos "
                        "folder; no manifest written", batch.id, batch.output_dir)
            return
        jobs = await self.store.list_jobs(batch.id)
        loop = asyncio.get_running_loop()
        await loop.run_in_executor(self._executor, self._write_file, folder, batch, jobs)

    def _write_file(self, folder: Path, batch: Batch, jobs: list[Job]) -> None:
        folder.mkdir(parents=True, exist_ok=True)
        text = manifest_text(batch, jobs, self.host, time.time())
        write_atomically(folder / manifest_name(self.host), text)
