"""The routes the web dashboard needs (issue 37), beside the first ones of api/server.py:
a job's history, a retry's plan and price before acting, resolve, pause and resume of a
batch and of an account, the batches with their counts, the needs-attention list, the
machines, thumbnails and short-lived links for ``<video>`` and ``<img>``; and the page
itself (``/`` and ``/static/…``, package data, no build step).

Every response of the server carries the page's Content-Security-Policy and the other
safety headers (:func:`safety_headers`): the page runs only its own scripts, loads from
its own origin only, and cannot be framed.
"""

from __future__ import annotations

import asyncio
import re
from collections.abc import Awaitable, Callable
from importlib import resources
from pathlib import Path
from typing import Any

from aiohttp import web

from reelqueue.api.auth import CLIENT_KEY, needs
from reelqueue.api.bodies import storable_text, whole_number
from reelqueue.api.links import KINDS, FileLinks
from reelqueue.api.problems import Refused
from reelqueue.api.problems import problem as error
from reelqueue.application.dashboard import AttentionItem, BatchCounts, state_names
from reelqueue.application.keyframes import thumbnail_png
from reelqueue.application.outputs import local_video
from reelqueue.application.remote import RemoteAccess
from reelqueue.application.retry_words import retry_summary
from reelqueue.application.team import TeamMachine
from reelqueue.application.tokens import TokenInfo
from reelqueue.domain.errors import InputError
from reelqueue.domain.models import Job
from reelqueue.domain.states import JobState

__all__ = ["CSP", "DashboardRoutes", "add_dashboard_routes", "safety_headers"]

CSP = ("default-src 'none'; script-src 'self'; style-src 'self'; img-src 'self' blob:; "
       "media-src 'self'; connect-src 'self'; base-uri 'none'; form-action 'none'; "
       "frame-ancestors 'none'")
SAFETY_HEADERS = {
    "Content-Security-Policy": CSP,
    "X-Content-Type-Options": "nosniff",
    "Referrer-Policy": "no-referrer",
    "X-Frame-Options": "DENY",
    "Cross-Origin-Opener-Policy": "same-origin",
    "Cross-Origin-Resource-Policy": "same-origin",
}
STATIC_NAME = re.compile(r"^[a-z0-9][a-z0-9.-]{0,80}\.(js|css|svg)$")
MEDIA_TYPES = {"js": "text/javascript", "css": "text/css", "svg": "image/svg+xml"}
MAX_RENDER_ID = 500
MAX_ACCOUNT_NAME = 500
SEED_LIMIT = 2**31 - 1


async def safety_headers(request: web.Request, response: web.StreamResponse) -> None:
    """``on_response_prepare``: the page's CSP and the other safety headers on every
    answer (API answers too: a JSON body opened in a tab runs nothing either)."""
    del request
    for name, value in SAFETY_HEADERS.items():
        response.headers.setdefault(name, value)
    response.headers.setdefault("Cache-Control", "no-store")


def _page_file(name: str) -> bytes | None:
    try:
        return resources.files("reelqueue.api").joinpath("web", name).read_bytes()
    except (FileNotFoundError, IsADirectoryError, OSError):
        return None


def _history_json(history: Any) -> dict[str, Any]:
    return {"job_id": history.job.id, "pruned_before": history.pruned_before,
            "entries": [{"seq": line.seq, "at": line.at, "event": line.event,
                         "words": line.words, "account": line.account,
                         "detail": line.detail} for line in history.lines]}


def _batch_json(item: BatchCounts) -> dict[str, Any]:
    batch = item.batch
    return {"id": batch.id, "name": batch.name, "created_at": batch.created_at,
            "paused": item.paused, "counts": item.by_state,
            "jobs": sum(item.by_state.values()),
            "max_spend": batch.settings.get("max_spend")}


def _attention_json(item: AttentionItem) -> dict[str, Any]:
    job = item.job
    return {"id": job.id, "batch_id": job.batch_id, "name": job.name,
            "prompt": job.prompt, "state": job.state.value,
            "state_words": item.words.as_dict(), "unknown": item.unknown,
            "what_to_do": item.what_to_do, "account": job.account,
            "error": job.error_message, "candidates": [
                {key: value for key, value in c.items()
                 if isinstance(value, str | int | float | bool) or value is None}
                for c in item.candidates],
            "create_evidence": None if item.evidence is None else item.evidence.data}


def _machine_json(machine: TeamMachine) -> dict[str, Any]:
    return {"id": machine.id, "host": machine.host, "pid": machine.pid,
            "version": machine.version, "started_at": machine.started_at,
            "heartbeat_at": machine.heartbeat_at, "live_renders": machine.live_renders,
            "state": machine.state, "silent_for": machine.silent_for,
            "this_machine": machine.this_machine, "clock_offset": machine.clock_offset,
            "providers": list(machine.providers) if machine.providers is not None else None}


SendVideo = Callable[[web.Request, Job, Path], Awaitable[web.StreamResponse]]
"""api/server.py's ``send_video``: a job's file with Range and ETag."""


_CONTROL = re.compile(r"[\x00-\x1f\x7f-\x9f]")
"""A control character (C0, DEL, C1): never in a render id (api/openapi.py's RENDER_ID_SCHEMA)."""


def valid_render_id(render: str) -> bool:
    """What ``?render=`` accepts, as the document's ``RENDER_ID_SCHEMA`` says:
    1 to 500 characters besides surrounding spaces, none of them a control character."""
    return 0 < len(render.strip()) <= MAX_RENDER_ID and _CONTROL.search(render) is None

class DashboardRoutes:
    """The dashboard's routes on the application layer's view (``services``) and the
    server's table of short-lived links."""

    def __init__(self, services: RemoteAccess, links: FileLinks,
                 send_video: SendVideo) -> None:
        self.s = services
        self.links = links
        self.send_video = send_video

    async def _job(self, request: web.Request, text: str | None = None) -> Job:
        job_id = whole_number(text if text is not None else request.match_info["job_id"],
                              "job_id", minimum=1)
        job = await self.s.get_job(job_id)
        if job is None:
            raise Refused(404, f"There is no job {job_id}.")
        return job

    # -- the page ---------------------------------------------------------------------
    async def page(self, request: web.Request) -> web.Response:
        body = _page_file("index.html")
        if body is None:
            return error(404, "The dashboard's files are missing from this install.")
        return web.Response(body=body, content_type="text/html", charset="utf-8")

    async def static(self, request: web.Request) -> web.Response:
        name = request.match_info["name"]
        body = _page_file(name) if STATIC_NAME.match(name) else None
        if body is None:
            return error(404, "There is no such file of the dashboard.")
        kind = name.rsplit(".", 1)[1]
        return web.Response(body=body, content_type=MEDIA_TYPES[kind], charset="utf-8")

    # -- reads ------------------------------------------------------------------------
    @needs("read")
    async def history(self, request: web.Request) -> web.Response:
        job = await self._job(request)
        history = await self.s.history(job.id)
        if history is None:
            raise Refused(404, f"There is no job {job.id}.")
        return web.json_response(_history_json(history))

    @needs("read")
    async def batches(self, request: web.Request) -> web.Response:
        counts = await self.s.batch_counts()
        return web.json_response({"batches": [_batch_json(b) for b in counts.batches],
                                  "by_account": counts.by_account,
                                  "state_names": state_names()})

    @needs("read")
    async def token(self, request: web.Request) -> web.Response:
        """The token's own name and scope: the page shows actions to admin only."""
        info: TokenInfo = request[CLIENT_KEY]
        return web.json_response({"name": info.name, "scope": info.scope})

    @needs("read")
    async def attention(self, request: web.Request) -> web.Response:
        return web.json_response({"jobs": [_attention_json(item)
                                           for item in await self.s.attention()]})

    @needs("read")
    async def instances(self, request: web.Request) -> web.Response:
        return web.json_response({"machines": [_machine_json(m)
                                               for m in await self.s.machines()]})

    @needs("read")
    async def retry_plan(self, request: web.Request) -> web.Response:
        """What ``POST .../retry`` would do and cost, before acting (writes nothing)."""
        job = await self._job(request)
        seed = None
        if "new_seed" in request.query:
            seed = whole_number(request.query["new_seed"], "new_seed", minimum=0,
                                maximum=SEED_LIMIT)
        plan = await self.s.retry_plan(job.id, seed)
        return web.json_response({
            "id": job.id, "retryable": bool(plan.job_ids), "summary": retry_summary(
                plan, include_hint="retry it from the command line with --include-permanent"),
            "pays": plan.pays, "price": plan.price_text if plan.pays else None,
            "price_usd": plan.rerender_usd if plan.pays and not plan.unpriced else None,
            "reread": len(plan.reread), "rerender": len(plan.rerender),
            "variants": len(plan.variants), "maybe_charged": len(plan.maybe_charged)})

    @needs("read")
    async def thumbnail(self, request: web.Request) -> web.Response:
        return await self._thumbnail(await self._job(request))

    async def _thumbnail(self, job: Job) -> web.Response:
        if job.state is not JobState.COMPLETED or not job.output_sha256:
            return error(409, f"Job {job.id} has no finished video (state {job.state.value}).")
        path = local_video(job, self.s.videos_dir)
        if path is None or not await asyncio.to_thread(path.is_file):
            return error(410, f"The video of job {job.id} is not on this machine.")
        picture = await asyncio.to_thread(thumbnail_png, path, job.output_sha256,
                                          self.s.thumbnail_root)
        if picture is None:
            return error(404, f"The video of job {job.id} gives no picture.")
        return web.Response(body=picture, content_type="image/png",
                            headers={"ETag": f'"{job.output_sha256}"',
                                     "Cache-Control": "private, max-age=600"})

    @needs("read")
    async def make_link(self, request: web.Request) -> web.Response:
        """A short-lived link for the job's video or thumbnail (``?kind=``)."""
        job = await self._job(request)
        kind = request.query.get("kind", "video")
        if kind not in KINDS:
            words = "one of " + ", ".join(KINDS)
            raise Refused(422, f"kind must be {words}.", fields={"kind": words})
        if job.state is not JobState.COMPLETED:
            return error(409, f"Job {job.id} has no finished video (state {job.state.value}).")
        link = self.links.issue(job.id, kind)
        return web.json_response({"url": link.path, "kind": kind, "job_id": job.id,
                                  "expires_at": link.expires_at}, status=201)

    async def follow_link(self, request: web.Request) -> web.StreamResponse:
        """A link's file: no token, GET/HEAD with Range, until it expires."""
        link = self.links.find(request.match_info["token"])
        if link is None:
            return error(404, "This link is unknown or has expired; the page asks for a "
                              "new one.")
        job = await self._job(request, str(link.job_id))
        if link.kind == "thumbnail":
            return await self._thumbnail(job)
        return await self.send_video(request, job, self.s.videos_dir)

    # -- commands (admin) -------------------------------------------------------------
    @needs("admin")
    async def resolve_with_render(self, request: web.Request) -> web.Response:
        """A create whose outcome stayed unknown: ``?render=ID`` is the render the user
        found at the provider; the job reads it (nothing is created again)."""
        job = await self._job(request)
        render = request.query.get("render", "")
        storable_text(render, "render")
        # The document's pattern, said the same way: no control character (C0, DEL, C1:
        # Python's strip() takes \x1c-\x1f and \x85 for spaces, JSON Schema's \S not),
        # and something besides spaces.
        if not valid_render_id(render):
            raise Refused(422, f"render must be 1 to {MAX_RENDER_ID} printable characters.",
                          fields={"render": f"1 to {MAX_RENDER_ID} printable characters"})
        try:
            await self.s.resolve_with_render(job.id, render.strip())
        except InputError as exc:
            return error(409, str(exc))
        return web.json_response({"id": job.id, "resolved": "render",
                                  "summary": f"Job {job.id} reads render {render.strip()}."})

    @needs("admin")
    async def resolve_by_creating_again(self, request: web.Request) -> web.Response:
        """A create whose outcome stayed unknown is created again, on the user's word
        (the first may already be charged: the plan's words say so)."""
        job = await self._job(request)
        try:
            plan = await self.s.resolve_by_creating_again(job.id)
        except InputError as exc:
            return error(409, str(exc))
        return web.json_response({"id": job.id, "resolved": "create_again",
                                  "summary": retry_summary(plan)})

    async def _batch_paused(self, request: web.Request, paused: bool) -> web.Response:
        batch_id = whole_number(request.match_info["batch_id"], "batch_id", minimum=1)
        if not await self.s.set_batch_paused(batch_id, paused):
            raise Refused(404, f"There is no batch {batch_id}.")
        return web.json_response({"id": batch_id, "paused": paused})

    @needs("admin")
    async def pause_batch(self, request: web.Request) -> web.Response:
        return await self._batch_paused(request, True)

    @needs("admin")
    async def resume_batch(self, request: web.Request) -> web.Response:
        return await self._batch_paused(request, False)

    async def _account_enabled(self, request: web.Request, enabled: bool) -> web.Response:
        name = request.match_info["name"]
        storable_text(name, "name")
        if not 0 < len(name) <= MAX_ACCOUNT_NAME:
            raise Refused(404, "There is no such account.")
        known = {summary.account.name for summary in await self.s.accounts()}
        if name not in known:
            raise Refused(404, f"There is no account {name[:100]!r}.")
        try:
            await self.s.set_account_enabled(name, enabled)
        except InputError as exc:
            return error(409, str(exc))
        return web.json_response({"name": name, "enabled": enabled})

    @needs("admin")
    async def pause_account(self, request: web.Request) -> web.Response:
        return await self._account_enabled(request, False)

    @needs("admin")
    async def resume_account(self, request: web.Request) -> web.Response:
        return await self._account_enabled(request, True)


def add_dashboard_routes(app: web.Application, services: RemoteAccess,
                         links: FileLinks, send_video: SendVideo) -> None:
    routes = DashboardRoutes(services, links, send_video)
    app.on_response_prepare.append(safety_headers)
    app.router.add_get("/", routes.page)
    app.router.add_get("/static/{name}", routes.static)
    app.router.add_get("/links/{token}", routes.follow_link)
    app.router.add_get("/v1/batches", routes.batches)
    app.router.add_post("/v1/batches/{batch_id}/pause", routes.pause_batch)
    app.router.add_post("/v1/batches/{batch_id}/resume", routes.resume_batch)
    app.router.add_post("/v1/accounts/{name}/pause", routes.pause_account)
    app.router.add_post("/v1/accounts/{name}/resume", routes.resume_account)
    app.router.add_get("/v1/attention", routes.attention)
    app.router.add_get("/v1/token", routes.token)
    app.router.add_get("/v1/instances", routes.instances)
    app.router.add_get("/v1/jobs/{job_id}/history", routes.history)
    app.router.add_get("/v1/jobs/{job_id}/retry-plan", routes.retry_plan)
    app.router.add_post("/v1/jobs/{job_id}/resolve/render", routes.resolve_with_render)
    app.router.add_post("/v1/jobs/{job_id}/resolve/create-again",
                        routes.resolve_by_creating_again)
    app.router.add_get("/v1/jobs/{job_id}/thumbnail", routes.thumbnail)
    app.router.add_post("/v1/jobs/{job_id}/links", routes.make_link)
