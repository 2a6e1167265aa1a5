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
    """

    submit_errors: list[ProviderError] = field(default_factory=list)
    polls: int = 1
    remote_failures: int = 0
    download_errors: list[BaseException] = field(default_factory=list)
    body: bytes = VIDEO


class FakeProvider:
    kind = "fake"

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

    def _script(self, prompt: str) -> Script:
        return self.scripts.setdefault(prompt, Script())

    async def check_key(self) -> None:
        return None

    async def submit(self, request: RenderRequest) -> str:
        self.creates[request.job_key] = self.creates.get(request.job_key, 0) + 1
        script = self._script(request.prompt)
        if script.submit_errors:
            error = script.submit_errors.pop(0)
            if error.body_maybe_sent:  # the provider did get it
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
        render = self.renders[provider_job_id]
        left = int(render["polls"])  # type: ignore[call-overload]
        if left > 0:
            render["polls"] = left - 1
            return RemoteStatus(RemotePhase.RUNNING, "running", progress=0.5, poll_after=0.001)
        self.live -= 1 if not render.get("done") else 0
        render["done"] = True
        if render["failed"]:
            return RemoteStatus(RemotePhase.FAILED, "failed", error=ProviderError(
                "render failed", error_class=ErrorClass.RETRYABLE,
                label=ErrorLabel.PROVIDER_ERROR))
        return RemoteStatus(RemotePhase.SUCCEEDED, "succeeded", cost=0.25,
                            video_url=f"mem://{provider_job_id}")

    async def lookup(self, request: RenderRequest) -> str | None:
        return self.by_token.get(request.client_token)

    async def download(self, provider_job_id: str, status: RemoteStatus) -> AsyncIterator[bytes]:
        script = self._script(str(self.renders[provider_job_id]["prompt"]))
        if script.download_errors:
            raise script.download_errors.pop(0)
        for start in range(0, len(script.body), 4096):
            yield script.body[start:start + 4096]

    async def cancel(self, provider_job_id: str) -> None:
        return None
