"""The routes of the HTTP API, on aiohttp, running on the engine's asyncio loop.

Every route calls the application layer (:class:`~reelqueue.application.remote.RemoteAccess`:
submit, the session's commands, the journal feed); none reaches the journal, the keyring or
the engine itself. See docs/api.md for the why.
"""

from __future__ import annotations

import asyncio
import contextlib
import json
import logging
import ssl
import tempfile
import time
from collections.abc import Callable, Mapping
from pathlib import Path
from typing import IO, Any

from aiohttp import web
from aiohttp.http_exceptions import HttpProcessingError

from reelqueue.api.auth import CLIENT_KEY, FailureThrottle, middleware, needs
from reelqueue.api.bodies import (
    checked_batch_items,
    checked_job_body,
    read_json_items,
    storable_text,
    whole_number,
)
from reelqueue.api.connections import ConnectionLimits, Connections, GatedSite
from reelqueue.api.dashboard import add_dashboard_routes
from reelqueue.api.links import FileLinks
from reelqueue.api.openapi import openapi_document
from reelqueue.api.parse_errors import MAX_HEADER_FIELD, MAX_REQUEST_LINE
from reelqueue.api.problems import Refused, problem_errors
from reelqueue.api.problems import problem as error
from reelqueue.api.requests import BodyInvalid, parse_job, review_body
from reelqueue.application.account_figures import AccountFigures, figures_fields
from reelqueue.application.batch_upload import json_rows_as_csv
from reelqueue.application.dashboard import matches as dashboard_matches
from reelqueue.application.imports import ROUTE_POLICIES, TOLERANCES
from reelqueue.application.outputs import local_video, this_host
from reelqueue.application.remote import RemoteAccess
from reelqueue.application.spend_reconcile import DEFAULT_DAYS, MAX_DAYS
from reelqueue.application.submit import (
    IdempotencyConflict,
    JobInvalid,
    QueueFull,
)
from reelqueue.application.tokens import TokenInfo
from reelqueue.application.views import AccountSummary
from reelqueue.application.words import StateWords, job_state_words
from reelqueue.domain.errors import InputError
from reelqueue.domain.models import Job
from reelqueue.domain.review import ReviewConflict, ReviewRefused
from reelqueue.domain.routes import Route
from reelqueue.domain.states import FINAL, JobState

log = logging.getLogger(__name__)

MAX_BODY_BYTES = 1024 * 1024
MAX_UPLOAD_BYTES = 100 * 1024 * 1024
"""An uploaded sheet or JSON batch: exactly 100 MiB is taken, one byte more is 413."""
INLINE_JSON_BYTES = 64 * 1024
"""A submit body up to this size is parsed on the loop (tens of microseconds: a thread hop
would cost more); a larger one in a thread, so the engine's loop never waits on it."""
MAX_PAGE = 500
MAX_IDEMPOTENCY_KEY = 200
RETRY_AFTER_SECONDS = 5
SSE_PAGE = 500
SSE_IDLE_SECONDS = 1.0
VIDEO_CHUNK = 256 * 1024
DRY_RUN_WORDS = ("0", "1", "true", "false", "yes", "no")
ROUTE_QUERY = ("route", "route_policy", "tolerance", "route_on_policy")
MAX_ROUTE_QUERY = 2000

ApiServices = RemoteAccess
"""What the routes use: the application layer's view for remote clients."""

MAX_SEARCH = 200
SEARCH_SCAN = 20_000
"""Jobs a search (``GET /v1/jobs?q=``) reads for one page at most."""
REVOKED_CHECK_SECONDS = 2.0
"""An open event stream checks its token this often: a revoked one is closed in time."""

MAX_SEED = 2**31 - 1
"""The largest seed a retry takes (the window's seed field and every provider's)."""


def job_json(job: Job) -> dict[str, Any]:
    return {
        "id": job.id, "batch_id": job.batch_id, "name": job.name, "prompt": job.prompt,
        "provider": job.provider, "account": job.account or job.pinned_account,
        "params": job.params, "priority": job.priority, "state": job.state.value,
        "state_words": job_state_words(job.state.value, job.sub_status, job.error_label,
                                       job.provider_job_id).as_dict(),
        "attempts": job.attempts, "max_attempts": job.max_attempts,
        "sub_status": job.sub_status, "progress": job.progress,
        "error": None if job.error_label is None else {
            "label": job.error_label, "message": job.error_message},
        "output": None if job.state is not JobState.COMPLETED else {
            "size": job.output_size, "sha256": job.output_sha256,
            "path": job.output_path, "host": job.output_host},
        "cost": job.cost, "created_at": job.created_at, "updated_at": job.updated_at,
        "finished_at": job.finished_at, "route": route_json(job.route),
        # the instance rendering it now (its lease), for the dashboard's machines
        "instance": job.lease_owner if job.state not in FINAL else None,
    }


def account_json(summary: AccountSummary, words: StateWords,
                 figures: AccountFigures | None = None) -> dict[str, Any]:
    """An account for a client (never its key): ``words`` is its condition's one name
    and hint (application.words), as the window's card and ``status`` say it;
    ``figures`` its view, limit in force and balance gate (issue 32) under the names
    ``accounts list --json`` and ``status --json`` give them; ``balance`` the balance
    gate's words alone (the web dashboard's card)."""
    a = summary.account
    fields = figures.fields() if figures is not None else figures_fields(None, None)
    return {
        "name": a.name, "provider": a.provider, "capacity": a.capacity,
        "live": summary.live, "enabled": a.enabled,
        "status": str(a.status.value), "status_detail": a.status_detail,
        "state_words": words.as_dict(), "cooldown_until": a.cooldown_until,
        "daily_cap": a.settings.get("daily_cap"),
        **fields, "balance": (fields["credits"] or {}).get("words"),
    }


def route_json(route: Route | None) -> dict[str, Any] | None:
    """A job's route (issue 24) for a client: its providers best first, how they were
    ranked, the ones that refused the job (never tried again) and those left out at import;
    the job's ``provider`` is the one it is with now. None for a job bound to one provider."""
    if route is None:
        return None
    return {
        "providers": route.providers(), "policy": route.policy.value,
        "tolerance": route.tolerance.value, "on_policy": route.on_policy,
        "refused": [{"provider": c.provider, "why": c.refused}
                    for c in route.candidates if c.refused is not None],
        "left_out": [{"provider": provider, "why": why} for provider, why in route.left_out],
    }


def route_preview_json(route: Route | None) -> dict[str, Any] | None:
    """A routed row in a batch's preview: each candidate with its parameters, price and
    the settings the tolerance moved (field -> [as written, as sent])."""
    if route is None:
        return None
    return {
        **(route_json(route) or {}),
        "candidates": [{"provider": c.provider, "params": dict(c.params),
                        "price_usd": c.price,
                        "changed": {name: list(pair) for name, pair in c.changed.items()}}
                       for c in route.candidates],
    }


def route_query(query: Mapping[str, str], check_route: Callable[[str], tuple[str, ...]]
                ) -> dict[str, Any]:
    """``?route=veo,runway&route_policy=cheapest&tolerance=nearest&route_on_policy=1`` as
    import options; a 422 problem naming the field for a value not accepted."""
    for name in ROUTE_QUERY:
        storable_text(query.get(name, ""), name)
    policy = query.get("route_policy") or "order"
    if policy not in ROUTE_POLICIES:
        words = "one of " + ", ".join(ROUTE_POLICIES)
        raise Refused(422, f"route_policy must be {words}.", fields={"route_policy": words})
    tolerance = query.get("tolerance") or "exact"
    if tolerance not in TOLERANCES:
        words = "one of " + ", ".join(TOLERANCES)
        raise Refused(422, f"tolerance must be {words}.", fields={"tolerance": words})
    on_policy = query.get("route_on_policy", "0")
    if on_policy not in DRY_RUN_WORDS:
        words = "one of " + ", ".join(DRY_RUN_WORDS)
        raise Refused(422, f"route_on_policy must be {words}.",
                      fields={"route_on_policy": words})
    text = query.get("route", "")
    if len(text) > MAX_ROUTE_QUERY:
        words = f"at most {MAX_ROUTE_QUERY} characters"
        raise Refused(422, f"route must be {words}.", fields={"route": words})
    try:
        providers = check_route(text) if text.strip() else ()
    except InputError as exc:
        raise Refused(422, str(exc), fields={"route": str(exc)}) from None
    return {"route": providers, "route_policy": policy, "tolerance": tolerance,
            "route_on_policy": on_policy in ("1", "true", "yes")}


class Routes:
    def __init__(self, services: ApiServices) -> None:
        self.s = services

    async def _read_json(self, request: web.Request) -> object:
        raw = await request.read()  # 413 past client_max_size
        if len(raw) <= INLINE_JSON_BYTES:
            return checked_job_body(raw)
        return await asyncio.to_thread(checked_job_body, raw)

    async def health(self, request: web.Request) -> web.Response:
        state = self.s.engine_state()
        try:
            journal = await self.s.feed.writable()
        except Exception:
            log.warning("health: the journal cannot be read", exc_info=True)
            journal = "unreadable"
        return web.json_response({
            "status": "up" if journal == "writable" else "degraded", "journal": journal,
            "engine": "paused" if state.paused else "running",
            "active_renders": state.active_renders,
        })

    async def openapi(self, request: web.Request) -> web.Response:
        return web.json_response(openapi_document())

    @needs("submit")
    async def submit_job(self, request: web.Request) -> web.Response:
        key = request.headers.get("Idempotency-Key")
        if key is not None and not (0 < len(key) <= MAX_IDEMPOTENCY_KEY):
            return error(422, f"Idempotency-Key must be 1 to {MAX_IDEMPOTENCY_KEY} characters.")
        if key is not None:
            storable_text(key, "Idempotency-Key")
        body = await self._read_json(request)
        try:
            job_request = parse_job(body)
        except BodyInvalid as exc:
            return error(422, "The job is not valid.", fields=exc.problems)
        client: TokenInfo = request[CLIENT_KEY]
        try:
            outcome = await self.s.submitter.submit(job_request, client=client.name,
                                                   idempotency_key=key)
        except QueueFull as exc:
            response = error(429, str(exc), waiting=exc.waiting, limit=exc.limit)
            response.headers["Retry-After"] = str(RETRY_AFTER_SECONDS)
            return response
        except IdempotencyConflict as exc:
            return error(409, str(exc), job_id=exc.job_id)
        except JobInvalid as exc:
            return error(422, "The job is not valid.",
                         fields={e.column: f"{e.message} (accepted: {e.accepted})"
                                 for e in exc.errors})
        return web.json_response({"id": outcome.job_id, "replay": outcome.replay},
                                 status=200 if outcome.replay else 201)

    async def _job(self, request: web.Request) -> Job:
        job_id = whole_number(request.match_info["job_id"], "job_id", minimum=1)
        job = await self.s.get_job(job_id)
        if job is None:
            raise Refused(404, f"There is no job {job_id}.")
        return job

    @needs("submit")
    async def upload_batch(self, request: web.Request) -> web.Response:
        """A spreadsheet (``?filename=prompts.xlsx``, the file as the body) or a JSON list
        of jobs; ``?dry_run=1`` plans only; ``?name=`` the batch, ``?provider=`` the
        default provider. The import's rules, keys and queue limit apply."""
        query = request.query
        dry_run_text = query.get("dry_run", "0")
        if dry_run_text not in DRY_RUN_WORDS:
            words = "one of " + ", ".join(DRY_RUN_WORDS)
            raise Refused(422, f"dry_run must be {words}.", fields={"dry_run": words})
        dry_run = dry_run_text in ("1", "true", "yes")
        for field in ("name", "provider", "filename"):
            storable_text(query.get(field, ""), field)
        routing = route_query(query, self.s.check_route)
        name = query.get("name") or None
        is_json = request.content_type == "application/json"
        file_name = f"{name or 'api-batch'}.csv" if is_json else query.get("filename", "")
        if not file_name:
            return error(422, "Name the upload: ?filename=prompts.xlsx (or send a JSON list "
                              "with Content-Type: application/json).")
        try:
            with await _spool_limited(request, MAX_UPLOAD_BYTES) as spooled:
                content = await asyncio.to_thread(
                    _json_batch_as_csv if is_json else _whole_file, spooled)
            outcome = await self.s.upload_batch(
                content, file_name, provider=(query.get("provider") or "mock").lower(),
                batch_name=name, dry_run=dry_run, routing=routing)
        except QueueFull as exc:
            response = error(429, str(exc), waiting=exc.waiting, limit=exc.limit)
            response.headers["Retry-After"] = str(RETRY_AFTER_SECONDS)
            return response
        except InputError as exc:
            return error(422, str(exc))
        plan = outcome.plan
        body: dict[str, Any] = {
            "batch_name": plan.batch.name,
            "refused_rows": [{"row": e.row_number, "column": e.column, "message": e.message,
                              "accepted": e.accepted} for e in outcome.errors],
            "estimate": {"total_usd": plan.estimate.total_usd,
                         "jobs": plan.estimate.jobs,
                         "unpriced_jobs": plan.estimate.unpriced_jobs,
                         # Per provider / pinned account: the priced jobs' sum and sources,
                         # and for the others the "price unknown — set it with ..." words.
                         "lines": [{"provider": line.provider, "account": line.account,
                                    "jobs": line.jobs, "usd": line.usd,
                                    "unpriced_jobs": line.unpriced_jobs,
                                    "price_unknown": line.unknown or None,
                                    "sources": list(line.sources)}
                                   for line in plan.estimate.lines],
                         # Each routed job at its dearest usable candidate (None: some
                         # candidate's price is unknown); total_usd counts its best one.
                         "worst_case_usd": plan.worst_case.usd,
                         "routed_jobs": plan.worst_case.routed_jobs},
            "routing": plan.routing.as_dict(),
        }
        if outcome.result is None:
            body.update(dry_run=dry_run, would_add=len(plan.new_jobs),
                        already_present=plan.already_present,
                        preview=[{"row": p.row_number, "name": p.name, "prompt": p.prompt,
                                  "provider": p.provider, "params": p.params,
                                  "file_name": p.file_name,
                                  "already_present": p.already_present,
                                  "price_usd": p.price.usd if p.price else None,
                                  "price_source": (p.price.source or None) if p.price
                                  else None,
                                  "price_unknown": (p.price.unknown or None) if p.price
                                  else None,
                                  "route": route_preview_json(p.route)}
                                 for p in plan.preview(20)])
            return web.json_response(body, status=200 if dry_run else 422)
        result = outcome.result
        body.update(batch_id=result.batch_id, added=result.added,
                    already_present=result.already_present)
        return web.json_response(body, status=201 if result.added else 200)

    @needs("read")
    async def get_job(self, request: web.Request) -> web.Response:
        job = await self._job(request)
        evidence = await self.s.create_evidence(job)
        return web.json_response({**job_json(job), "create_evidence": (
            None if evidence is None else evidence.data)})

    @needs("read")
    async def list_jobs(self, request: web.Request) -> web.Response:
        query = request.query
        cursor = whole_number(query.get("cursor", "0"), "cursor", minimum=0)
        limit = whole_number(query.get("limit", "100"), "limit", minimum=1, maximum=MAX_PAGE)
        batch = (whole_number(query["batch"], "batch", minimum=1) if "batch" in query
                 else None)
        states = query.getall("state", [])
        unknown = [s for s in states if s not in JobState.__members__]
        if unknown:
            words = "one of " + ", ".join(JobState.__members__)
            raise Refused(422, f"Unknown state {unknown[0]!r}: use {words}.",
                          fields={"state": words})
        words = query.get("q", "")
        storable_text(words, "q")
        if len(words) > MAX_SEARCH:
            raise Refused(422, f"q must be at most {MAX_SEARCH} characters.",
                          fields={"q": f"at most {MAX_SEARCH} characters"})
        if words.strip():
            jobs, next_cursor = await self._search(words, cursor, limit, batch, states)
        else:
            jobs = await self.s.feed.jobs_after(cursor, limit, batch_id=batch,
                                                states=states)
            next_cursor = jobs[-1].id if len(jobs) == limit else None
        return web.json_response({"jobs": [job_json(j) for j in jobs],
                                  "next_cursor": next_cursor})

    async def _search(self, words: str, cursor: int, limit: int, batch: int | None,
                      states: list[str]) -> tuple[list[Job], int | None]:
        """Jobs after ``cursor`` whose prompt or name holds every word of ``words``, at
        most ``limit``; the scan stops after :data:`SEARCH_SCAN` jobs, and the cursor
        then names the last one looked at (the next page goes on from there)."""
        found: list[Job] = []
        scanned, after = 0, cursor
        while scanned < SEARCH_SCAN:
            page = await self.s.feed.jobs_after(after, SSE_PAGE, batch_id=batch,
                                                states=states)
            for job in page:
                after = job.id
                scanned += 1
                if dashboard_matches(job, words):
                    found.append(job)
                    if len(found) == limit:
                        return found, job.id
            if len(page) < SSE_PAGE:
                return found, None
        return found, after

    @needs("admin")
    async def cancel_job(self, request: web.Request) -> web.Response:
        job = await self._job(request)
        return web.json_response({"id": job.id, "cancelled": await self.s.cancel(job.id)})

    @needs("admin")
    async def retry_job(self, request: web.Request) -> web.Response:
        job = await self._job(request)
        if "new_seed" not in request.query:
            return web.json_response({"id": job.id, "requeued": await self.s.retry(job.id)})
        seed = whole_number(request.query["new_seed"], "new_seed", minimum=0,
                            maximum=MAX_SEED)
        plan, done = await self.s.retry_with_seed(job.id, seed)
        return web.json_response({
            "id": job.id, "requeued": job.id in done, "new_seed": seed,
            # A completed job is kept; its new seed is a new job (its own file).
            "new_jobs": [i for i in done if i != job.id],
            "estimate": plan.price_text if plan.pays else None,
        })

    # -- review (issue 35 item 3) --------------------------------------------------------
    @needs("read")
    async def batch_takes(self, request: web.Request) -> web.Response:
        batch_id = whole_number(request.match_info["batch_id"], "batch_id", minimum=1)
        try:
            takes = await self.s.batch_takes(batch_id)
        except InputError as exc:
            raise Refused(404, str(exc)) from None
        return web.json_response(takes.as_dict())

    @needs("submit")
    async def review_job(self, request: web.Request) -> web.Response:
        job_id = whole_number(request.match_info["job_id"], "job_id", minimum=1)
        try:
            decision, rating, version = review_body(await self._read_json(request))
        except BodyInvalid as exc:
            return error(422, "The review is not valid.", fields=exc.problems)
        client: TokenInfo = request[CLIENT_KEY]
        try:
            written = await self.s.set_review(job_id, decision, rating=rating,
                                              seen_version=version, by=client.name)
        except ReviewConflict as exc:
            raise Refused(409, str(exc), current=exc.current.as_dict()) from None
        except ReviewRefused as exc:  # the take's state, not the request, is in the way
            raise Refused(409, str(exc)) from None
        except InputError as exc:
            raise Refused(404, str(exc)) from None
        return web.json_response(written.as_dict())

    @needs("read")
    async def video(self, request: web.Request) -> web.StreamResponse:
        return await send_video(request, await self._job(request), self.s.videos_dir)

    @needs("read")
    async def accounts(self, request: web.Request) -> web.Response:
        summaries = await self.s.accounts()
        words = await self.s.account_words(summaries)
        figures = await self.s.account_figures(summaries)
        return web.json_response({"accounts": [
            account_json(summary, words[summary.account.name],
                         figures.get(summary.account.name))
            for summary in summaries]})

    @needs("read")
    async def spend(self, request: web.Request) -> web.Response:
        """The money figures of ``reelqueue spend`` and the window's cards (one read);
        with ``reconcile=1``, also ``spend --reconcile``'s (``days``: 1 to 90, default 7),
        read from the providers now."""
        reconcile = whole_number(request.query.get("reconcile", "0"), "reconcile",
                                 minimum=0, maximum=1)
        days = whole_number(request.query.get("days", str(DEFAULT_DAYS)), "days",
                            minimum=1, maximum=MAX_DAYS)
        body = (await self.s.money()).as_dict()
        if reconcile:
            body["reconcile"] = (await self.s.reconcile_spend(days)).as_dict()
        return web.json_response(body)

    @needs("read")
    async def events(self, request: web.Request) -> web.StreamResponse:
        """Server-Sent Events from the ledger: each entry's ``seq`` is its event id, so a
        client that reconnects with ``Last-Event-ID`` misses nothing and sees nothing twice."""
        header = request.headers.get("Last-Event-ID")
        after: int | None = None
        if "after" in request.query:  # checked even when the header wins
            after = whole_number(request.query["after"], "after", minimum=0)
        if header is not None:
            after = whole_number(header.strip(), "Last-Event-ID", minimum=0, status=400)
        headers = {"Content-Type": "text/event-stream", "Cache-Control": "no-cache"}
        if request.method == "HEAD":
            return web.Response(headers=headers)
        feed = self.s.feed
        if after is None:
            after = await feed.last_seq()
        response = web.StreamResponse(headers=headers)
        _streams(request)
        await response.prepare(request)
        try:
            await response.write(b": connected\n\n")
            pages = feed.follow(after, self.s.subscribe, page=SSE_PAGE,
                                idle_seconds=SSE_IDLE_SECONDS)
            token = request.headers.get("Authorization", "").partition(" ")[2].strip()
            checked = time.monotonic()
            async with contextlib.aclosing(pages):  # unsubscribes when the client goes
                async for entries in pages:
                    if time.monotonic() - checked >= REVOKED_CHECK_SECONDS:
                        # A token revoked (or expired) while its stream is open: the
                        # stream ends within seconds, and the reconnect gets a 401.
                        checked = time.monotonic()
                        if await self.s.tokens.verify(token) is None:
                            break
                    if not entries:
                        await response.write(b": keep-alive\n\n")
                    for entry in entries:
                        data = json.dumps({"seq": entry.seq, "at": entry.at,
                                           "event": entry.event, "job_id": entry.job_id,
                                           "account": entry.account, "detail": entry.detail},
                                          default=str)
                        await response.write(f"id: {entry.seq}\nevent: {entry.event}\n"
                                             f"data: {data}\n\n".encode())
        except ConnectionResetError:
            pass  # the client went away; a cancellation (server shutdown) propagates
        return response


async def send_video(request: web.Request, job: Job, videos_dir: Path) -> web.StreamResponse:
    """The job's finished video with ``Range`` and ``ETag`` (the sha256): for
    ``/v1/jobs/{id}/video`` and for a short-lived link."""
    if job.state is not JobState.COMPLETED or not job.output_sha256 or not job.output_path:
        return error(409, f"Job {job.id} has no finished video (state {job.state.value}).")
    path = local_video(job, videos_dir)
    try:
        if path is None:
            raise FileNotFoundError(job.output_path)
        size = path.stat().st_size
    except OSError:
        if job.output_host and job.output_host != this_host():
            # Each machine writes under its own videos folder (issue 23).
            return error(409, f"The video of job {job.id} is on {job.output_host} "
                         f"({job.output_path} under its videos folder), not on this "
                         "machine.", output_host=job.output_host,
                         output_path=job.output_path)
        return error(410, f"The video of job {job.id} is no longer at "
                     f"{path or job.output_path}.")
    etag = f'"{job.output_sha256}"'
    if request.headers.get("If-None-Match") == etag:
        return web.Response(status=304, headers={"ETag": etag})
    start, end = 0, size - 1
    status = 200
    wanted = request.headers.get("Range")
    if wanted and request.headers.get("If-Range", etag) == etag:
        parsed = _parse_range(wanted, size)
        if parsed is None:
            return error(416, f"The range {wanted!r} cannot be served from {size} bytes.",
                         headers={"Content-Range": f"bytes */{size}"})
        start, end = parsed
        status = 206
    headers = {"ETag": etag, "Accept-Ranges": "bytes", "Content-Type": "video/mp4",
               "Content-Length": str(end - start + 1)}
    if status == 206:
        headers["Content-Range"] = f"bytes {start}-{end}/{size}"
    if request.method == "HEAD":  # the headers a GET would send, and no body
        return web.Response(status=status, headers=headers)
    response = web.StreamResponse(status=status, headers=headers)
    _streams(request)
    await response.prepare(request)
    with path.open("rb") as handle:
        handle.seek(start)
        left = end - start + 1
        while left > 0:
            chunk = await asyncio.to_thread(handle.read, min(VIDEO_CHUNK, left))
            if not chunk:
                break
            await response.write(chunk)
            left -= len(chunk)
    await response.write_eof()
    return response


async def _spool_limited(request: web.Request, limit: int) -> IO[bytes]:
    """The body in an anonymous temporary file (rewound), refused (413) past ``limit``
    bytes: by its Content-Length before anything is read, else at the byte that passes it.
    Memory holds one chunk at a time; the file goes when it is closed."""
    if request.content_length is not None and request.content_length > limit:
        raise _too_large(limit, request.content_length)
    spooled = await asyncio.to_thread(tempfile.TemporaryFile)
    try:
        size = 0
        async for chunk in request.content.iter_chunked(256 * 1024):
            size += len(chunk)
            if size > limit:
                raise _too_large(limit, size)
            await asyncio.to_thread(spooled.write, chunk)
        await asyncio.to_thread(spooled.seek, 0)
    except BaseException:
        spooled.close()
        raise
    return spooled


def _too_large(limit: int, size: int) -> Refused:
    return Refused(413, f"The upload is larger than {limit // (1024 * 1024)} MiB "
                        f"({size:,} bytes or more).", limit=limit)


def _json_batch_as_csv(spooled: IO[bytes]) -> bytes:
    """A JSON batch, read item by item, as the CSV the import reads (in a thread)."""
    return json_rows_as_csv(checked_batch_items(read_json_items(spooled)))


def _whole_file(spooled: IO[bytes]) -> bytes:
    return spooled.read()


def _parse_range(header: str, size: int) -> tuple[int, int] | None:
    unit, _, spec = header.partition("=")
    if unit.strip() != "bytes" or "," in spec or size == 0:
        return None
    first, _, last = spec.strip().partition("-")
    try:
        if first == "":
            length = int(last)
            if length <= 0:
                return None
            return max(0, size - length), size - 1
        start = int(first)
        end = int(last) if last else size - 1
    except ValueError:
        return None
    if start > end or start >= size:
        return None
    return start, min(end, size - 1)


CONNECTIONS_KEY = web.AppKey("reelqueue.connections", Connections)


def _streams(request: web.Request) -> None:
    """This response streams: its connection is not closed as idle."""
    connections = request.app.get(CONNECTIONS_KEY)
    if connections is not None:
        connections.exempt(request)


def build_app(services: ApiServices, connections: Connections | None = None
              ) -> web.Application:
    authenticate = (middleware(services.tokens, FailureThrottle()) if connections is None
                    else middleware(services.tokens, FailureThrottle(), connections.notice))
    app = web.Application(client_max_size=MAX_BODY_BYTES,
                          middlewares=[problem_errors, authenticate])
    if connections is not None:
        app[CONNECTIONS_KEY] = connections
    routes = Routes(services)
    app.router.add_get("/v1/health", routes.health)
    app.router.add_get("/v1/openapi.json", routes.openapi)
    app.router.add_post("/v1/jobs", routes.submit_job)
    app.router.add_get("/v1/jobs", routes.list_jobs)
    app.router.add_post("/v1/batches", routes.upload_batch)
    app.router.add_get("/v1/jobs/{job_id}", routes.get_job)
    app.router.add_post("/v1/jobs/{job_id}/cancel", routes.cancel_job)
    app.router.add_post("/v1/jobs/{job_id}/retry", routes.retry_job)
    app.router.add_get("/v1/jobs/{job_id}/video", routes.video)
    app.router.add_get("/v1/batches/{batch_id}/takes", routes.batch_takes)
    app.router.add_post("/v1/jobs/{job_id}/review", routes.review_job)
    app.router.add_get("/v1/accounts", routes.accounts)
    app.router.add_get("/v1/spend", routes.spend)
    app.router.add_get("/v1/events", routes.events)
    add_dashboard_routes(app, services, FileLinks(), send_video)
    return app


class _PlainParseErrors(logging.Filter):
    """aiohttp logs a request its parser refuses with a traceback that quotes the bytes
    of the request, headers included (an Authorization header could land in the log):
    one line at INFO instead, naming the kind of error only."""

    def filter(self, record: logging.LogRecord) -> bool:
        error = record.exc_info[1] if record.exc_info else None
        if isinstance(error, HttpProcessingError):
            record.msg, record.args = "refused a malformed HTTP request (%s)", (
                type(error).__name__,)
            record.exc_info, record.exc_text = None, None
            record.levelno, record.levelname = logging.INFO, "INFO"
        return True


HTTP_LOG = logging.getLogger("reelqueue.api.http")
HTTP_LOG.addFilter(_PlainParseErrors())


class ApiServer:
    """An aiohttp app on the running loop behind a :class:`GatedSite` (connection and
    handshake caps, timeouts). Attributes: host, port (the bound port), connections."""

    def __init__(self, services: ApiServices, host: str, port: int,
                 ssl_context: ssl.SSLContext | None,
                 limits: ConnectionLimits | None = None) -> None:
        self.host = host
        self.port = port
        self.connections = Connections(limits or ConnectionLimits())
        self._app = build_app(services, self.connections)
        self._ssl = ssl_context
        self._runner: web.AppRunner | None = None

    async def start(self) -> None:
        # aiohttp's keep-alive (idle between requests) is the same idle timeout.
        self._runner = web.AppRunner(self._app, access_log=None, shutdown_timeout=2.0,
                                     keepalive_timeout=self.connections.limits.idle_seconds,
                                     logger=HTTP_LOG, max_line_size=MAX_REQUEST_LINE,
                                     max_field_size=MAX_HEADER_FIELD)
        await self._runner.setup()
        site = GatedSite(self._runner, self.host, self.port, self.connections,
                         ssl_context=self._ssl, backlog=512)
        await site.start()
        self.port = site.port

    async def stop(self) -> None:
        if self._runner is not None:
            await self._runner.cleanup()
            self._runner = None
        await self.connections.close()
