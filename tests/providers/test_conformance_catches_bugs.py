"""The conformance suite catches what it is for (issue 36 item 1, part b).

Five bugs are planted, one at a time, in a subclass of the Runway adapter (the adapter's
own code otherwise); the suite's checks are run on it as they run on every adapter, and
each planted bug must make one of them fail. The unplanted adapter passes the same checks
(tests/providers/conformance/test_suite.py), so the failure is the bug's.
"""

from __future__ import annotations

import dataclasses
import inspect
from collections.abc import AsyncIterator, Awaitable, Callable, Mapping
from typing import Any

import httpx2
import pytest
from conformance import maker
from conformance import runway as runway_facts
from conformance import test_suite as suite
from provider_fakes import ClientFor

from reelqueue.domain.errors import ErrorClass, ProviderError
from reelqueue.domain.states import RemotePhase
from reelqueue.providers.adapters import runway
from reelqueue.providers.base import ProviderConfig, RemoteStatus

Check = Callable[..., Awaitable[None]]


class WrongErrorClass(runway.RunwayProvider):
    """Bug: every error answer is read as a passing blip (no account pause, no failure)."""

    def _error(self, response: httpx2.Response, *, during_create: bool = False
               ) -> ProviderError:
        error = super()._error(response, during_create=during_create)
        return ProviderError(str(error), error_class=ErrorClass.RETRYABLE, label=error.label,
                             retry_after=error.retry_after, status_code=error.status_code,
                             body_maybe_sent=error.body_maybe_sent)


class DroppedRetryAfter(runway.RunwayProvider):
    """Bug: the provider's Retry-After is not passed on (the account's own default)."""

    def _error(self, response: httpx2.Response, *, during_create: bool = False
               ) -> ProviderError:
        error = super()._error(response, during_create=during_create)
        return ProviderError(str(error), error_class=error.error_class, label=error.label,
                             status_code=error.status_code,
                             body_maybe_sent=error.body_maybe_sent)


class KeyInErrorText(runway.RunwayProvider):
    """Bug: the provider's words are not scrubbed of the key before they are shown."""

    def __init__(self, client: httpx2.AsyncClient, config: ProviderConfig) -> None:
        super().__init__(client, config)
        self._api.scrub = lambda text: text  # type: ignore[method-assign]


class MissedTerminalState(runway.RunwayProvider):
    """Bug: FAILED is not among the words that end a render: it polls on for ever."""

    def _status(self, task: Mapping[str, Any]) -> RemoteStatus:
        if task.get("status") == "FAILED":
            return RemoteStatus(RemotePhase.RUNNING, sub_status="FAILED")
        return super()._status(task)


class NoByteCap(runway.RunwayProvider):
    """Bug: the video is streamed straight from its link, past the download checks."""

    async def download(self, provider_job_id: str, status: RemoteStatus
                       ) -> AsyncIterator[bytes]:
        assert status.video_url is not None
        async with self._api._client.stream("GET", status.video_url) as response:
            async for chunk in response.aiter_bytes():
                yield chunk


def planted(adapter: type[runway.RunwayProvider]) -> Any:
    return dataclasses.replace(runway_facts.FACTS, make=maker(adapter, "studio"))


# bug -> (the planted adapter, the suite's check, what its failure says: the check fails
# where the bug is, not by accident)
BUGS: dict[str, tuple[type[runway.RunwayProvider], Check, str]] = {
    "wrong error class": (WrongErrorClass, suite.test_create_errors_are_classified,
                          "(401, 'error_401', {})"),
    "dropped Retry-After": (DroppedRetryAfter, suite.test_a_429_honours_retry_after, "17.0"),
    "key left in an error text": (
        KeyInErrorText, suite.test_the_key_never_appears_in_errors_even_when_echoed,
        "SENTINEL"),
    "missed terminal state": (MissedTerminalState,
                              suite.test_every_documented_failure_ends_the_render,
                              "task_failed_safety"),
    "download without its byte cap": (NoByteCap, suite.test_downloads_keep_the_byte_cap,
                                      "DID NOT RAISE"),
}


@pytest.mark.parametrize("bug", BUGS, ids=str)
async def test_each_planted_bug_fails_the_suite(
    bug: str, client_for: ClientFor, caplog: pytest.LogCaptureFixture
) -> None:
    adapter, check, says = BUGS[bug]
    with pytest.raises((AssertionError, pytest.fail.Exception)) as caught:  # or raises()
        await run(check, planted(adapter), client_for, caplog)
    assert says in str(caught.value)


@pytest.mark.parametrize("bug", BUGS, ids=str)
async def test_the_same_checks_pass_without_the_bug(
    bug: str, client_for: ClientFor, caplog: pytest.LogCaptureFixture
) -> None:
    _, check, _ = BUGS[bug]
    await run(check, planted(runway.RunwayProvider), client_for, caplog)


async def run(check: Check, facts: Any, client_for: ClientFor,
              caplog: pytest.LogCaptureFixture) -> None:
    """One check of the suite, given the fixtures it asks for."""
    wants_log = "caplog" in inspect.signature(check).parameters
    await (check(facts, client_for, caplog) if wants_log else check(facts, client_for))
