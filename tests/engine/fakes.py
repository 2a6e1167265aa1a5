"""An in-process provider with scripted behaviour, for engine unit tests."""

from __future__ import annotations

import asyncio
from collections.abc import AsyncIterator
from dataclasses import dataclass, field

from reelqueue.domain.errors import ErrorClass, ErrorLabel, ProviderError
from reelqueue.domain.states import RemotePhase
from reelqueue.providers.base import RemoteStatus, RenderRequest
from reelqueue.resources import resource

VIDEO = resource("sample.mp4").read_bytes()


@dataclass
class Script:
    """What the fake does for one prompt.

    submit_errors: raised by the first submits, one per call.
    polls: how many polls answer RUNNING before the render succeeds.
    remote_failures: how many renders of this prompt fail remotely.
    download_errors: raised by the first downloads.
    body: what the download sends.
    lookup_errors: raised by the first lookups, one per call.
    lost: a create that raises a body-maybe-sent error did NOT reach the provider.
    no_file_polls: how many finished answers come without the file (-1: every one).
    remote_error: the failure of a remotely failed render (default: retryable).
    submit_seconds: how long a create takes to be answered (the render exists from the
        moment it is sent).
    """

    submit_errors: list[ProviderError] = field(default_factory=list)
    polls: int = 1
    remote_failures: int = 0
    download_errors: list[BaseException] = field(default_factory=list)
    body: bytes = VIDEO
    lookup_errors: list[ProviderError] = field(default_factory=list)
    lost: bool = False
    no_file_polls: int = 0
    remote_error: ProviderError | None = None
    submit_seconds: float = 0.0


class FakeProvider:
    kind = "fake"
    # The budget this fake provider publishes for an account's polls (engine/polling.py):
    # it answers at once, so its tests are not paced by a real provider's limit.
    polls_per_minute = 600_000.0

    def __init__(self, scripts: dict[str, Script] | None = None, supports_lookup: bool = False
                 ) -> None:
        self.scripts = scripts or {}
        self.supports_lookup = supports_lookup
        self.creates: dict[str, int] = {}
        self.by_token: dict[str, str] = {}
        self.renders: dict[str, dict[str, object]] = {}
        self.live = 0
        self.max_live = 0
        self.gate: asyncio.Event | None = None
        self.polls_of: dict[str, int] = {}
        self.lookups = 0
        self.gone: set[str] = set()  # render ids whose polls answer 404 (dropped)

    def _script(self, prompt: str) -> Script:
        return self.scripts.setdefault(prompt, Script())

    async def check_key(self) -> None:
        return None

    async def submit(self, request: RenderRequest) -> str:
        self.creates[request.job_key] = self.creates.get(request.job_key, 0) + 1
        script = self._script(request.prompt)
        if script.submit_seconds:
            render_id = self._create(request, script)  # it reached the provider
            await asyncio.sleep(script.submit_seconds)
            return render_id
        if script.submit_errors:
            error = script.submit_errors.pop(0)
            if error.body_maybe_sent and not script.lost:  # the provider did get it
                self._create(request, script)
            raise error
        return self._create(request, script)

    def _create(self, request: RenderRequest, script: Script) -> str:
        render_id = f"r{len(self.renders) + 1}"
        failed = script.remote_failures > 0
        if failed:
            script.remote_failures -= 1
        self.renders[render_id] = {"prompt": request.prompt, "polls": script.polls,
                                   "failed": failed}
        self.by_token[request.client_token] = render_id
        self.live += 1
        self.max_live = max(self.max_live, self.live)
        return render_id

    async def poll(self, provider_job_id: str) -> RemoteStatus:
        if self.gate is not None:
            await self.gate.wait()
        self.polls_of[provider_job_id] = self.polls_of.get(provider_job_id, 0) + 1
        render = self.renders[provider_job_id]
        script = self._script(str(render["prompt"]))
        if provider_job_id in self.gone:
            raise ProviderError("404 no such task", error_class=ErrorClass.PERMANENT,
                                label=ErrorLabel.PROVIDER_ERROR, status_code=404)
        left = int(render["polls"])  # type: ignore[call-overload]
        if left > 0:
            render["polls"] = left - 1
            return RemoteStatus(RemotePhase.RUNNING, "running", progress=0.5, poll_after=0.001)
        self.live -= 1 if not render.get("done") else 0
        render["done"] = True
        if render["failed"]:
            return RemoteStatus(RemotePhase.FAILED, "failed", error=script.remote_error
                                or ProviderError("render failed",
                                                 error_class=ErrorClass.RETRYABLE,
                                                 label=ErrorLabel.PROVIDER_ERROR))
        if script.no_file_polls:
            script.no_file_polls -= 1 if script.no_file_polls > 0 else 0
            return RemoteStatus(RemotePhase.SUCCEEDED, "succeeded", progress=1.0)
        return RemoteStatus(RemotePhase.SUCCEEDED, "succeeded", cost=0.25,
                            video_url=f"mem://{provider_job_id}")

    async def lookup(self, request: RenderRequest) -> str | None:
        self.lookups += 1
        script = self._script(request.prompt)
        if script.lookup_errors:
            raise script.lookup_errors.pop(0)
        return self.by_token.get(request.client_token)

    async def download(self, provider_job_id: str, status: RemoteStatus) -> AsyncIterator[bytes]:
        script = self._script(str(self.renders[provider_job_id]["prompt"]))
        if script.download_errors:
            raise script.download_errors.pop(0)
        for start in range(0, len(script.body), 4096):
            yield script.body[start:start + 4096]

    async def cancel(self, provider_job_id: str) -> None:
        return None
