"""Submitting one job from another program (the HTTP API's ``POST /v1/jobs``).

A job is validated by the import's own row rules (the same per-field messages), and is
written by the store's ``add_jobs`` in one transaction together with everything a replay
needs: its job key is derived from the client's name and its ``Idempotency-Key``, and the
sha256 of the request's canonical JSON is in the job's metadata. After a crash the replay
of a submit finds the job by that key, so a client that retries with the same key gets the
same job id, never a second job. The queue limit (``max_waiting``) is checked inside the
same transaction, so a refused submit (429) writes nothing.

::

    SubmitError
    ├── QueueFull             waiting jobs >= the queue limit (429, Retry-After)
    ├── IdempotencyConflict   the key was used with another body (409)
    └── JobInvalid            per-field problems, as the import words them (422)
"""

from __future__ import annotations

import asyncio
import hashlib
import json
import uuid
from collections.abc import Mapping
from dataclasses import dataclass, field
from pathlib import Path
from typing import Any

from reelqueue.application.feed import FeedReader
from reelqueue.domain.errors import InputError, KnownError
from reelqueue.domain.models import BatchSpec, Job, JobSpec
from reelqueue.engine.engine import Engine
from reelqueue.intake.catalog import ProviderCatalog
from reelqueue.intake.estimate import AccountPrices, stamp_prices
from reelqueue.intake.filenames import VIDEO_SUFFIX, name_from_prompt, sanitise_component
from reelqueue.intake.images import ImageChecker
from reelqueue.intake.rows import BatchDefaults, RowError, RowValidator, RowValues
from reelqueue.intake.sheet import SheetRow
from reelqueue.store.base import Store

__all__ = ["API_BATCH_DEFAULT", "JOB_PARAM_FIELDS", "IdempotencyConflict", "JobInvalid",
           "JobRequest", "JobSubmitter", "QueueFull", "SubmitError", "SubmitOutcome", "job_key_for"]

API_BATCH_DEFAULT = "api"
JOB_PARAM_FIELDS = ("model", "duration", "aspect_ratio", "resolution", "seed",
                    "negative_prompt")
"""The parameters a submitted job may set (a reference image is not taken over HTTP: a
server-side path would let a client read the server's files)."""


class SubmitError(KnownError):
    """The job was not submitted."""


class QueueFull(SubmitError):
    """The queue is full; nothing was written. Try again later."""

    def __init__(self, waiting: int, limit: int) -> None:
        super().__init__(f"The queue holds {waiting} waiting jobs and its limit is {limit}; "
                         "nothing was written. Try again later.")
        self.waiting = waiting
        self.limit = limit


class IdempotencyConflict(SubmitError):
    """This Idempotency-Key was used with a different request body."""

    def __init__(self, job_id: int) -> None:
        super().__init__(f"This Idempotency-Key was already used for job {job_id} with a "
                         "different request body. Use a new key for a new job.")
        self.job_id = job_id


class JobInvalid(SubmitError):
    """The job has invalid fields."""

    def __init__(self, errors: list[RowError]) -> None:
        super().__init__("; ".join(f"{e.column}: {e.message} (accepted: {e.accepted})"
                                   for e in errors))
        self.errors = errors


@dataclass(frozen=True)
class JobRequest:
    """One job as a client asks for it (types already checked by the front end).

    Attributes:
        prompt: the prompt text.
        provider: the provider kind (None: the account's, or "mock").
        account: pin the job to this account (None: any account of the provider).
        name: the job's name (used in its file name).
        batch: the batch the job joins, made on first use.
        params: provider parameters (:data:`JOB_PARAM_FIELDS`).
        priority: claims take higher first.
    """

    prompt: str
    provider: str | None = None
    account: str | None = None
    name: str = ""
    batch: str = API_BATCH_DEFAULT
    params: Mapping[str, Any] = field(default_factory=dict)
    priority: int = 0

    def canonical_sha256(self) -> str:
        body = {"prompt": self.prompt, "provider": self.provider, "account": self.account,
                "name": self.name, "batch": self.batch, "params": dict(self.params),
                "priority": self.priority}
        text = json.dumps(body, sort_keys=True, separators=(",", ":"), ensure_ascii=False)
        return hashlib.sha256(text.encode("utf-8")).hexdigest()


@dataclass(frozen=True)
class SubmitOutcome:
    """Attributes:
    job_id: the job's id.
    replay: True when the key had already made this job (nothing new was written).
    """

    job_id: int
    replay: bool


def job_key_for(client: str, idempotency_key: str | None) -> str:
    """The job key of a submit: the same client and key always give the same job key; no
    key gives a fresh one (each such submit is a new job)."""
    if idempotency_key is None:
        return "api:" + uuid.uuid4().hex
    digest = hashlib.sha256(f"{client}\0{idempotency_key}".encode()).hexdigest()[:32]
    return "api:" + digest


class JobSubmitter:
    """Validates and writes submitted jobs for one engine.

    Attributes:
        engine: the running engine (its journal thread writes the job).
        reader: reads a job back by its key.
        videos_dir: the root under which each batch gets its folder.
        catalog: the providers and their parameters.
        max_waiting: the queue limit (None: no limit).
    """

    def __init__(self, engine: Engine, reader: FeedReader, videos_dir: Path,
                 catalog: ProviderCatalog, max_waiting: int | None) -> None:
        self.engine = engine
        self.reader = reader
        self.videos_dir = videos_dir
        self.catalog = catalog
        self.max_waiting = max_waiting
        self._batch_ids: dict[str, int] = {}
        self._pending: list[tuple[str, JobSpec, asyncio.Future[SubmitOutcome]]] = []
        self._flusher: asyncio.Task[None] | None = None

    def build_spec(self, request: JobRequest, job_key: str, body_sha256: str,
                   client: str) -> JobSpec:
        """The job's spec, validated by the import's rules; JobInvalid with the problems."""
        provider = request.provider or "mock"
        headers = ["prompt", *request.params.keys()]
        values: list[Any] = [request.prompt, *request.params.values()]
        if request.account is not None:
            headers.append("account")
            values.append(request.account)
        validator = RowValidator({h: (i, h) for i, h in enumerate(headers)},
                                 BatchDefaults(provider=provider), self.catalog,
                                 ImageChecker(self.videos_dir))
        try:
            checked = validator.validate(SheetRow(1, values))
        except InputError as exc:
            raise JobInvalid([RowError(1, "provider", str(exc), "a known provider")]) from exc
        if isinstance(checked, list):
            raise JobInvalid(checked)
        return self._spec(request, checked, job_key, body_sha256, client)

    def _spec(self, request: JobRequest, row: RowValues, job_key: str, body_sha256: str,
              client: str) -> JobSpec:
        # Relative to the videos folder: each machine renders under its own (issue 23).
        folder = sanitise_component(request.batch, "batch")
        stem = sanitise_component(request.name, "") or name_from_prompt(row.prompt)
        output = f"{folder}/{stem}_{job_key[4:16]}{VIDEO_SUFFIX}"
        return JobSpec(
            job_key=job_key, prompt=row.prompt, provider=row.provider,
            output_path=output, params=row.params, pinned_account=request.account,
            name=request.name or stem, priority=request.priority,
            metadata={"api": {"client": client, "body_sha256": body_sha256}},
        )

    async def submit(self, request: JobRequest, *, client: str,
                     idempotency_key: str | None) -> SubmitOutcome:
        job_key = job_key_for(client, idempotency_key)
        body_sha256 = request.canonical_sha256()
        known = await asyncio.to_thread(self.reader.job_by_key, job_key)
        if known is not None:  # a replay: answered from the journal, nothing written
            return self._replay(known, body_sha256)
        spec = self.build_spec(request, job_key, body_sha256, client)
        waiter: asyncio.Future[SubmitOutcome] = asyncio.get_running_loop().create_future()
        self._pending.append((request.batch, spec, waiter))
        if self._flusher is None or self._flusher.done():
            self._flusher = asyncio.create_task(self._flush_pending())
        outcome = await waiter
        if outcome.replay:  # the same key raced in between: add_jobs kept the first
            existing = await asyncio.to_thread(self.reader.job_by_key, job_key)
            if existing is None:  # pragma: no cover - keys are never deleted
                raise SubmitError("The job of this Idempotency-Key cannot be found.")
            return self._replay(existing, body_sha256)
        return outcome

    async def _flush_pending(self) -> None:
        """Group commit: the submits that arrived while the last write ran are written
        together, in one transaction per batch (one fsync for many clients). Each waiter
        is answered only after its transaction committed."""
        store = self.engine.store
        while self._pending:
            group, self._pending = self._pending, []
            try:
                answers = await store.call(self._write_group, store.sync,
                                           [(batch, spec) for batch, spec, _ in group])
            except Exception as exc:
                for _, _, waiter in group:
                    if not waiter.done():
                        waiter.set_exception(exc)
                continue
            for (_, _, waiter), answer in zip(group, answers, strict=True):
                if waiter.done():
                    continue
                if isinstance(answer, SubmitOutcome):
                    waiter.set_result(answer)
                else:
                    waiter.set_exception(answer)
            self.engine.wake()

    def _write_group(self, store: Store, items: list[tuple[str, JobSpec]]
                     ) -> list[SubmitOutcome | Exception]:
        """On the journal thread: each batch's jobs in one ``add_jobs`` (queue limit
        counted inside it); when they do not all fit, one by one, so each submit gets its
        own answer (201 or 429)."""
        answers: list[SubmitOutcome | Exception | None] = [None] * len(items)
        # The price the spend caps reserve, as an import stamps it (intake/estimate.py):
        # without one a job never starts under a cap.
        stamp_prices([spec for _, spec in items], self.catalog.params,
                     AccountPrices.of(store.list_accounts()))
        by_batch: dict[str, list[int]] = {}
        for index, (batch, _) in enumerate(items):
            by_batch.setdefault(batch, []).append(index)
        for batch, indexes in by_batch.items():
            specs = [items[i][1] for i in indexes]
            try:
                batch_id = self._batch_id(store, batch)
                present = store.existing_job_keys([spec.job_key for spec in specs])
                result = store.add_jobs(batch_id, specs, self.engine.clock.now(),
                                        max_waiting=self.max_waiting)
            except InputError:
                for i in indexes:
                    try:
                        answers[i] = self._write(store, batch, items[i][1])
                    except Exception as exc:
                        answers[i] = exc
                continue
            fresh = {spec.job_key for spec in specs} - present
            if len(result.job_ids) != len(fresh):
                # Another machine wrote some of these keys between the look-up and the
                # write (a team database, issue 21): ask the journal which job is whose.
                ours = set(result.job_ids)
                for i, spec in zip(indexes, specs, strict=True):
                    job = self.reader.job_by_key(spec.job_key)
                    answers[i] = (SubmitOutcome(job.id, False)
                                  if job is not None and job.id in ours
                                  else SubmitOutcome(0, True))  # looked up by the caller
                    ours.discard(job.id if job is not None else -1)
                continue
            new_ids = iter(result.job_ids)
            seen: set[str] = set(present)
            for i, spec in zip(indexes, specs, strict=True):
                if spec.job_key in seen:
                    answers[i] = SubmitOutcome(0, True)  # looked up by the caller
                else:
                    seen.add(spec.job_key)
                    answers[i] = SubmitOutcome(next(new_ids), False)
        return [a if a is not None else SubmitError("not written") for a in answers]

    @staticmethod
    def _replay(job: Job, body_sha256: str) -> SubmitOutcome:
        api = job.metadata.get("api") or {}
        if api.get("body_sha256") != body_sha256:
            raise IdempotencyConflict(job.id)
        return SubmitOutcome(job.id, True)

    def _write(self, store: Store, batch_name: str, spec: JobSpec) -> SubmitOutcome:
        """On the journal thread: find or make the batch, then add the job (one write
        transaction, the queue limit counted inside it)."""
        batch_id = self._batch_id(store, batch_name)
        try:
            result = store.add_jobs(batch_id, [spec], self.engine.clock.now(),
                                    max_waiting=self.max_waiting)
        except InputError:
            waiting = store.count_waiting()
            if self.max_waiting is not None and waiting >= self.max_waiting:
                raise QueueFull(waiting, self.max_waiting) from None
            raise
        if result.added:
            return SubmitOutcome(result.job_ids[0], False)
        return SubmitOutcome(0, True)

    def _batch_id(self, store: Store, name: str) -> int:
        cached = self._batch_ids.get(name)
        if cached is not None:
            return cached
        source = f"api:{name}"
        for batch in store.list_batches():
            if batch.source_path == source:
                self._batch_ids[name] = batch.id
                return batch.id
        folder = sanitise_component(name, "batch")
        batch = store.create_batch(BatchSpec(name=name, source_path=source,
                                             output_dir=folder), self.engine.clock.now())
        self._batch_ids[name] = batch.id
        return batch.id
