"""The real ``reelqueue`` command line, with one fault hook installed first.

Usage: ``python tests/proof/_hooked_runner.py HOOK[:ARG] -- REELQUEUE-ARGS...``

Hooks (each reproduces one line of the seeds/001 checklist, deterministically):

``kill-after-save``
    The first video written is renamed into place (its hash recorded just before), then
    the process SIGKILLs itself: the file is on disk, its completion is not in the journal.
``raise-in-submit:MARKER``
    The mock adapter's submit raises RuntimeError (a bug of ours, not a ProviderError)
    for prompts containing MARKER: an exception inside the worker.
``kill-in-submit:MARKER``
    The process SIGKILLs itself inside the submit of a prompt containing MARKER, before
    the create request is sent: a job that kills its worker every time it is submitted.
``kill-in-poll:JOB_KEY``
    The process SIGKILLs itself when it polls the render of JOB_KEY: a job that kills its
    worker every time it is resumed, after the provider accepted it.
"""

from __future__ import annotations

import os
import signal
import sys
from dataclasses import replace
from pathlib import Path
from typing import Any


def _die() -> None:
    sys.stdout.flush()
    os.kill(os.getpid(), signal.SIGKILL)


def install(hook: str) -> None:
    name, _, arg = hook.partition(":")
    if name == "kill-after-save":
        from reelqueue.engine import engine as engine_module
        from reelqueue.engine.outputs import OutputWriter, WrittenFile

        class KillAfterSave(OutputWriter):
            async def write_atomically(self, chunks: Any, final: Path, claim_token: str,
                                       **options: Any) -> WrittenFile:
                written = await super().write_atomically(chunks, final, claim_token,
                                                         **options)
                print(f"hook: saved {final.name}; killing before completion is recorded",
                      flush=True)
                _die()
                return written  # pragma: no cover

        engine_module.OutputWriter = KillAfterSave  # type: ignore[misc]
        return

    from reelqueue.providers.mock import MockProvider

    class Hooked(MockProvider):
        async def submit(self, request: Any) -> str:
            if name == "raise-in-submit" and arg in request.prompt:
                raise RuntimeError("injected bug in the worker")
            if name == "kill-in-submit" and arg in request.prompt:
                print("hook: killing inside submit", flush=True)
                _die()
            return await super().submit(request)

        async def poll(self, provider_job_id: str) -> Any:
            if name == "kill-in-poll":
                raw = await self._client.get(f"{self.base_url}/v1/renders/{provider_job_id}")
                if raw.json().get("job_key") == arg:
                    print("hook: killing inside poll", flush=True)
                    _die()
            return await super().poll(provider_job_id)

        async def poll_many(self, provider_job_ids: Any) -> Any:
            # A list read that would answer the render polls it too (engine/polling.py).
            if name == "kill-in-poll":
                for provider_job_id in provider_job_ids:
                    raw = await self._client.get(
                        f"{self.base_url}/v1/renders/{provider_job_id}")
                    if raw.json().get("job_key") == arg:
                        print("hook: killing inside a list read", flush=True)
                        _die()
            return await super().poll_many(provider_job_ids)

    if name not in ("raise-in-submit", "kill-in-submit", "kill-in-poll"):
        raise SystemExit(f"unknown hook {hook!r}")
    # This process's built-in providers, with the hooked mock adapter: ``reelqueue run``
    # hands the default registry to its engine (a registry is never changed; the
    # function that supplies the default one is replaced, here only).
    from reelqueue.application import builtin_mock, compose
    from reelqueue.providers import builtin
    from reelqueue.providers.httpx_session import httpx_client_of

    hooked = builtin.builtin_registry().with_provider(replace(
        builtin.builtin_registry().get("mock"),
        factory=lambda session, config: Hooked(httpx_client_of(session), config)))
    # compose.py is the composition root every front end's engine comes from.
    for module in (builtin, builtin_mock, compose):
        module.builtin_registry = lambda: hooked  # type: ignore[attr-defined]


def main(argv: list[str]) -> int:
    hook, separator, *rest = argv
    assert separator == "--", "usage: _hooked_runner.py HOOK -- REELQUEUE-ARGS"
    install(hook)
    from reelqueue.cli.main import main as reelqueue_main

    return reelqueue_main(rest)


if __name__ == "__main__":
    raise SystemExit(main(sys.argv[1:]))
