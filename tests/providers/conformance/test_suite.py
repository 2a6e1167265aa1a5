"""The provider conformance suite: every adapter, the same behaviours (issue 36 item 1).

Each test takes one adapter's :class:`~conformance.facts.AdapterFacts`; the ids in
docs/providers/conformance.md name the behaviour each test checks. The tests are plain
functions of ``(facts, client_for)`` too, so test_conformance_catches_bugs.py can run them
on an adapter with a planted bug.
"""

from __future__ import annotations

import json
import logging
import re
from pathlib import Path
from typing import Any

import httpx2
import pytest
from hypothesis import HealthCheck, given, settings
from hypothesis import strategies as st
from provider_fakes import (
    HTML_PAGE,
    SENTINEL_KEY,
    VIDEO_BYTES,
    ClientFor,
    Router,
    all_texts,
    echo_error,
    fixture,
    json_response,
    read_timeout,
    run_one_row,
)

from conformance import (
    fal,
    kling,
    luma,
    luma_legacy,
    minimax,
    mock,
    openai_compat,
    replicate,
    runway,
    veo,
)
from conformance.facts import AdapterFacts
from conformance.plugins import PLUGIN_FACTS, PLUGIN_REGISTRY
from reelqueue.domain.errors import ErrorClass, ErrorLabel, ProviderError
from reelqueue.domain.states import AccountStatus, JobState, RemotePhase
from reelqueue.providers.adapters import _client as api_client
from reelqueue.providers.base import LostCreateSearch, RemoteStatus, lost_create_search
from reelqueue.providers.download_limits import DownloadLimits, using_limits
from reelqueue.providers.http import DEFAULT_MAX_ANSWER_BYTES

# The built-in adapters, then every installed provider plug-in that brings its facts
# (tests/plugins/sample/ in CI; conformance/plugins.py).
ALL = [*(m.FACTS for m in (runway, veo, luma, luma_legacy, fal, replicate, openai_compat,
                           kling, minimax)), minimax.FACTS_V2, mock.FACTS, *PLUGIN_FACTS]
every = pytest.mark.parametrize("facts", ALL, ids=str)


async def _raised(call: Any) -> ProviderError:
    with pytest.raises(ProviderError) as caught:
        await call
    return caught.value


async def _finished(facts: AdapterFacts, client_for: ClientFor) -> tuple[Any, Any, Any]:
    """A fake whose render is finished, the adapter on it, and the polled status."""
    fake = facts.fake([facts.finished])
    provider = facts.make(client_for(fake.router))
    status = await provider.poll(facts.job(fake))
    assert status.phase is RemotePhase.SUCCEEDED and status.video_url is not None
    return fake, provider, status


async def _collect(provider: Any, job_id: str, status: Any) -> bytes:
    return b"".join([chunk async for chunk in provider.download(job_id, status)])


# -- create ------------------------------------------------------------------------------

@every
async def test_create_is_sent_once_with_the_key(facts: AdapterFacts,
                                                client_for: ClientFor) -> None:
    """CREATE-ONCE"""
    fake = facts.fake()
    job_id = await facts.make(client_for(fake.router)).submit(facts.request())
    assert job_id and fake.creates() == 1 and len(fake.router.calls) == 1
    assert facts.key_header in fake.router.calls[0].headers


@every
async def test_create_errors_are_classified(facts: AdapterFacts,
                                            client_for: ClientFor) -> None:
    """ERR-CLASS, RETRY-AFTER (a create answered with an error is never sent again; the
    provider's words are shown where the facts name them)"""
    for status, name, headers, error_class, label, wait, maybe_sent in facts.create_errors:
        fake = facts.fake()
        body = fixture(facts.provider, name) if isinstance(name, str) else name
        fake.router.script("POST", facts.create, json_response(status, body, dict(headers)))
        error = await _raised(facts.make(client_for(fake.router)).submit(facts.request()))
        assert (error.error_class, error.label, error.retry_after, error.body_maybe_sent,
                error.status_code) == (error_class, label, wait, maybe_sent,
                                       status if status >= 400
                                       else facts.refusal_in_200_status), (status, name, headers)
        assert facts.error_words is None or facts.error_words(body) in str(error), body
        assert fake.creates() == 1


@every
async def test_a_429_honours_retry_after(facts: AdapterFacts, client_for: ClientFor) -> None:
    """RETRY-AFTER (delta seconds, on the create; the account waits that long)"""
    if not facts.retry_after:
        pytest.skip("the provider's 429 gives no Retry-After (its own test says so)")
    name = next(row[1] for row in facts.create_errors if row[0] == 429)
    body = fixture(facts.provider, name) if isinstance(name, str) else name
    fake = facts.fake()
    fake.router.script("POST", facts.create, json_response(429, body, {"Retry-After": "17"}))
    error = await _raised(facts.make(client_for(fake.router)).submit(facts.request()))
    assert (error.error_class, error.label, error.retry_after) == (
        ErrorClass.ACCOUNT, ErrorLabel.RATE_LIMITED, 17.0)


@every
async def test_a_create_without_an_answer_is_never_sent_again(
    facts: AdapterFacts, client_for: ClientFor
) -> None:
    """RETRY-CREATE-TIMEOUT, RETRY-CREATE-CONNECT"""
    fake = facts.fake()
    fake.router.script("POST", facts.create, read_timeout)
    error = await _raised(facts.make(client_for(fake.router)).submit(facts.request()))
    assert (error.error_class, error.label, error.body_maybe_sent) == (
        ErrorClass.RETRYABLE, ErrorLabel.TIMED_OUT, True)
    assert len(fake.router.calls) == 1
    assert SENTINEL_KEY not in all_texts(error)
    fake.router.script("POST", facts.create, httpx2.ConnectError("refused"))
    error = await _raised(facts.make(client_for(fake.router)).submit(facts.request()))
    assert error.body_maybe_sent is False


@every
async def test_a_create_answer_without_an_id_is_an_unknown_outcome(
    facts: AdapterFacts, client_for: ClientFor
) -> None:
    """CREATE-UNKNOWN-NO-ID, CREATE-UNKNOWN-UNREADABLE"""
    for answer in facts.no_id:
        fake = facts.fake()
        fake.router.script("POST", facts.create, json_response(facts.created, answer))
        error = await _raised(facts.make(client_for(fake.router)).submit(facts.request()))
        assert (error.error_class, error.label, error.body_maybe_sent) == (
            ErrorClass.PERMANENT, ErrorLabel.SUBMIT_UNKNOWN, True), answer
        assert fake.creates() == 1
    for body in facts.unreadable:
        fake = facts.fake()
        fake.router.script("POST", facts.create, httpx2.Response(facts.created, content=body))
        error = await _raised(facts.make(client_for(fake.router)).submit(facts.request()))
        assert error.body_maybe_sent is True, body
        if facts.unreadable_as is not None:
            assert (error.error_class, error.label) == facts.unreadable_as, body
        assert fake.creates() == 1


DEEP = b"[" * 100_000 + b"]" * 100_000
"""Valid JSON nested past Python's parser (RecursionError, not ValueError): a hostile or
broken answer."""


@every
async def test_an_answer_nested_past_the_parser_is_unreadable_never_a_crash(
    facts: AdapterFacts, client_for: ClientFor
) -> None:
    """ANSWER-TOO-DEEP: such an answer to a create may have created (never resent), to a
    poll is a retryable error, as an error body leaves the status's class; always a
    ProviderError, never the parser's RecursionError."""
    fake = facts.fake()
    fake.router.script("POST", facts.create, httpx2.Response(facts.created, content=DEEP))
    error = await _raised(facts.make(client_for(fake.router)).submit(facts.request()))
    assert error.body_maybe_sent is True and fake.creates() == 1
    if facts.unreadable_as is not None:
        assert (error.error_class, error.label) == facts.unreadable_as
    fake = facts.fake()
    fake.router.script("GET", facts.poll, httpx2.Response(200, content=DEEP))
    error = await _raised(facts.make(client_for(fake.router)).poll(facts.job(fake)))
    assert error.error_class is ErrorClass.RETRYABLE or error.label is ErrorLabel.SUBMIT_UNKNOWN
    fake = facts.fake()
    fake.router.script("POST", facts.create, httpx2.Response(
        503, content=DEEP, headers={"Content-Type": "application/json"}))
    error = await _raised(facts.make(client_for(fake.router)).submit(facts.request()))
    assert error.error_class is ErrorClass.RETRYABLE and fake.creates() == 1


@every
async def test_an_answer_over_the_read_bound_is_not_read(
    facts: AdapterFacts, client_for: ClientFor, monkeypatch: pytest.MonkeyPatch
) -> None:
    """ANSWER-TOO-LONG: an answer over the adapter's read bound is refused unread: to a
    create, an unknown outcome that may have created (never resent); to a poll, an error;
    never read into memory whole. (The built-ins' bound, 64 MiB with room for an echoed
    inline image, is made 256 KiB here, so Veo's 8 x is 2 MiB; a plug-in's session reads
    4 MiB: the answer is one byte over the largest.)"""
    monkeypatch.setattr(api_client, "MAX_API_ANSWER_BYTES", 256 * 1024)
    huge = b'{"id": "' + b"x" * max(DEFAULT_MAX_ANSWER_BYTES, 8 * 256 * 1024) + b'"}'
    fake = facts.fake()
    fake.router.script("POST", facts.create, httpx2.Response(facts.created, content=huge))
    error = await _raised(facts.make(client_for(fake.router)).submit(facts.request()))
    assert error.body_maybe_sent is True and fake.creates() == 1
    assert "bytes" in str(error) and SENTINEL_KEY not in str(error)
    fake = facts.fake()
    fake.router.script("GET", facts.poll, httpx2.Response(200, content=huge))
    error = await _raised(facts.make(client_for(fake.router)).poll(facts.job(fake)))
    assert "bytes" in str(error) and not error.body_maybe_sent


@every
@pytest.mark.parametrize("link", ["https://[::1/v.mp4", "https://ex\x00ample.com/v.mp4",
                                  "https://example.com:99999/v.mp4"],
                         ids=["bracket", "nul", "port"])
async def test_a_video_link_that_is_no_address_is_a_download_failure(
    facts: AdapterFacts, client_for: ClientFor, link: str
) -> None:
    """DL-BAD-LINK: a finished render's link that cannot be read as an address is a
    download failure (the link is read again before the job gives up), never the URL
    parser's ValueError; nothing is fetched."""
    fake = facts.fake([facts.finished])
    provider = facts.make(client_for(fake.router))
    finished = RemoteStatus(RemotePhase.SUCCEEDED, video_url=link)
    calls = len(fake.router.calls)
    error = await _raised(_collect(provider, facts.job(fake), finished))
    assert error.label is ErrorLabel.DOWNLOAD_FAILED, error
    assert not any(link in str(c.url) for c in fake.router.calls[calls:])


@every
async def test_a_bare_5xx_page_to_a_create_is_retryable_and_never_sent_again(
    facts: AdapterFacts, client_for: ClientFor
) -> None:
    """CREATE-GATEWAY-PAGE (a 5xx page that is not the provider's error body: something in
    between answered; a 504, and where the facts say so any 5xx, may have created)"""
    for status in (500, 502, 503, 504):
        fake = facts.fake()
        fake.router.script("POST", facts.create, httpx2.Response(
            status, content=HTML_PAGE, headers={"Content-Type": "text/html"}))
        error = await _raised(facts.make(client_for(fake.router)).submit(facts.request()))
        assert (error.error_class, error.label, error.body_maybe_sent) == (
            ErrorClass.RETRYABLE,
            ErrorLabel.TIMED_OUT if status == 504 else ErrorLabel.PROVIDER_ERROR,
            status == 504 or facts.page_5xx_maybe_sent), status
        assert fake.creates() == 1


@every
@settings(max_examples=120, deadline=None,
          suppress_health_check=[HealthCheck.function_scoped_fixture])
@given(data=st.data())
async def test_property_a_create_answer_is_an_id_or_an_unknown_outcome(
    facts: AdapterFacts, client_for: ClientFor, data: st.DataObject
) -> None:
    """CREATE-PROPERTY: random and malformed 2xx create answers give a job id only from a
    readable id field, a definite refusal only from the provider's own refusal; anything
    else says the create may have gone through."""
    values = st.recursive(
        st.none() | st.booleans() | st.integers(-2, 2_000_000) | st.text(max_size=12),
        lambda inner: st.lists(inner, max_size=3) | st.dictionaries(st.sampled_from(
            [facts.id_key, "status", "error", "detail", "data", "x", *facts.create_keys]),
            inner, max_size=4),
        max_leaves=12)
    wrapped = values.map(facts.envelope) if facts.envelope else values
    raw = data.draw(st.one_of(values.map(lambda b: json.dumps(b).encode()),
                              st.binary(max_size=40),
                              wrapped.map(lambda b: json.dumps(b).encode())))
    fake = facts.fake()
    fake.router.script("POST", facts.create, httpx2.Response(facts.created, content=raw))
    try:
        job_id = await facts.make(client_for(fake.router)).submit(facts.request())
    except ProviderError as error:
        body = _decoded(raw)
        refused = facts.refusal(body) if isinstance(body, dict) else None
        if refused is not None:
            assert error.body_maybe_sent is refused
        else:  # the engine never resends it by itself
            assert error.body_maybe_sent is True
            unknown = (ErrorClass.PERMANENT, ErrorLabel.SUBMIT_UNKNOWN)
            if isinstance(body, dict) and (facts.lost_create is not LostCreateSearch.LOOKUP
                                           or facts.unknown_as is not None):
                assert (error.error_class, error.label) == (facts.unknown_as or unknown)
            elif not isinstance(body, dict) and facts.unreadable_as is not None:
                assert (error.error_class, error.label) == facts.unreadable_as
    else:
        body = _decoded(raw)
        assert isinstance(body, dict) and facts.reads_as(body, job_id)
    assert fake.creates() == 1


def _decoded(raw: bytes) -> Any:
    try:
        return json.loads(raw)
    except ValueError:
        return None


# -- poll ----------------------------------------------------------------------------------

@every
async def test_every_documented_state(facts: AdapterFacts, client_for: ClientFor) -> None:
    """POLL-STATES (the sub-status is the provider's own word)"""
    for name, phase, sub_status in facts.states:
        fake = facts.fake([name])
        status = await facts.make(client_for(fake.router)).poll(facts.job(fake))
        assert status.phase is phase, name
        assert sub_status is None or status.sub_status == sub_status, name
        assert status.error is None, name


@every
async def test_every_documented_failure_ends_the_render(
    facts: AdapterFacts, client_for: ClientFor
) -> None:
    """POLL-TERMINAL, FAIL-CLASS (undocumented reasons are permanent, never a guess)"""
    for name, error_class, label in facts.failures:
        fake = facts.fake([name])
        status = await facts.make(client_for(fake.router)).poll(facts.job(fake))
        assert status.phase is RemotePhase.FAILED, name
        assert status.error is not None, name
        assert (status.error.error_class, status.error.label) == (error_class, label), name
        assert facts.failure_words.get(name, "") in str(status.error), name
    for body, error_class, label, words in facts.failed_answers:
        fake = facts.fake([facts.failures[0][0]])
        fake.router.script("GET", facts.poll, json_response(200, body))
        status = await facts.make(client_for(fake.router)).poll(facts.job(fake))
        assert status.phase is RemotePhase.FAILED and status.error is not None, body
        assert (status.error.error_class, status.error.label) == (error_class, label), body
        assert words in str(status.error), body


@every
async def test_a_poll_answer_without_a_state_is_an_unknown_outcome(
    facts: AdapterFacts, client_for: ClientFor
) -> None:
    """POLL-UNKNOWN"""
    if not facts.no_state:
        pytest.skip("its own test file reads its poll envelope")
    for answer in facts.no_state:
        fake = facts.fake()
        fake.router.script("GET", facts.poll, json_response(200, answer))
        error = await _raised(facts.make(client_for(fake.router)).poll(facts.job(fake)))
        assert (error.error_class, error.label) == (ErrorClass.PERMANENT,
                                                    ErrorLabel.SUBMIT_UNKNOWN), answer


@every
async def test_poll_errors_are_retryable_and_create_nothing(
    facts: AdapterFacts, client_for: ClientFor
) -> None:
    """POLL-ERR (a 503 or a timeout on a poll)"""
    fake = facts.fake()
    provider = facts.make(client_for(fake.router))
    job_id = facts.job(fake)
    fake.router.script("GET", facts.poll, httpx2.Response(503, content=b"Service Unavailable"))
    error = await _raised(provider.poll(job_id))
    assert (error.error_class, error.body_maybe_sent) == (ErrorClass.RETRYABLE, False)
    fake.router.script("GET", facts.poll, read_timeout)
    error = await _raised(provider.poll(job_id))
    assert (error.label, error.body_maybe_sent) == (ErrorLabel.TIMED_OUT, False)
    assert fake.creates() == 0


@every
async def test_finished_without_its_file_is_succeeded_not_failed(
    facts: AdapterFacts, client_for: ClientFor
) -> None:
    """NO-FILE (a failed render may be created again; this one may have been paid)"""
    if not facts.no_file:
        pytest.skip("its own test file covers a finished render without a file")
    for answer in facts.no_file:
        fake = facts.fake([facts.finished])
        fake.router.script("GET", facts.poll, json_response(200, answer))
        status = await facts.make(client_for(fake.router)).poll(facts.job(fake))
        assert status.phase is RemotePhase.SUCCEEDED, answer
        assert status.video_url is None and status.error is None, answer
        assert fake.creates() == 0


@every
@settings(max_examples=100, deadline=None,
          suppress_health_check=[HealthCheck.function_scoped_fixture])
@given(data=st.data())
async def test_property_a_poll_answer_never_reads_as_a_failed_render(
    facts: AdapterFacts, client_for: ClientFor, data: st.DataObject
) -> None:
    """POLL-PROPERTY: only the documented failed/cancelled words end a render; a body
    without a readable state is unknown (not JSON at all: a retryable unreadable answer)."""
    shape = facts.poll_shape
    if shape is None:
        pytest.skip("its poll answer is not one object with a state field")
    values = st.recursive(
        st.none() | st.booleans() | st.integers(-2, 2_000_000) | st.text(max_size=12)
        | st.sampled_from(shape.states),
        lambda inner: st.lists(inner, max_size=3) | st.dictionaries(
            st.sampled_from(shape.keys), inner, max_size=4), max_leaves=12)
    raw = data.draw(st.one_of(values.map(lambda b: json.dumps(b).encode()),
                              st.binary(max_size=40)))
    fake = facts.fake()
    fake.router.script("GET", facts.poll, httpx2.Response(200, content=raw))
    body = _decoded(raw)
    try:
        status = await facts.make(client_for(fake.router)).poll(facts.job(fake))
    except ProviderError as error:
        if isinstance(body, dict):
            assert error.label is ErrorLabel.SUBMIT_UNKNOWN
        else:
            assert error.error_class is ErrorClass.RETRYABLE
    else:
        assert isinstance(body, dict)
        if status.phase in (RemotePhase.FAILED, RemotePhase.CANCELLED):
            assert body[shape.state_key] in shape.ending
    assert fake.creates() == 0


# -- downloads -------------------------------------------------------------------------------

@every
async def test_download_gives_the_video_and_keeps_the_key_off_its_host(
    facts: AdapterFacts, client_for: ClientFor
) -> None:
    """DL-OK, KEY-OFF-CDN"""
    fake, provider, status = await _finished(facts, client_for)
    assert await _collect(provider, facts.job(fake), status) == VIDEO_BYTES
    video = [c for c in fake.router.calls if Router(calls=[c]).count("GET", facts.video)]
    assert video and all(facts.key_header not in c.headers for c in video)
    assert fake.creates() == 0


BAD_DOWNLOADS = {
    "truncated": lambda: httpx2.Response(200, content=VIDEO_BYTES[:100], headers={
        "Content-Type": "video/mp4", "Content-Length": str(len(VIDEO_BYTES))}),
    "html-page": lambda: httpx2.Response(200, content=HTML_PAGE,
                                        headers={"Content-Type": "text/html"}),
    "html-labelled-as-video": lambda: httpx2.Response(200, content=HTML_PAGE,
                                                     headers={"Content-Type": "video/mp4"}),
    "server-error": lambda: httpx2.Response(500),
}


@every
async def test_bad_downloads_are_retryable_download_failures(
    facts: AdapterFacts, client_for: ClientFor
) -> None:
    """DL-BAD (truncated, a text page, a text page labelled video, a 5xx)"""
    for name, answer in BAD_DOWNLOADS.items():
        fake, provider, status = await _finished(facts, client_for)
        fake.router.script("GET", facts.video, answer())
        error = await _raised(_collect(provider, facts.job(fake), status))
        assert (error.error_class, error.label) == (
            ErrorClass.RETRYABLE, ErrorLabel.DOWNLOAD_FAILED), name
        assert fake.creates() == 0


@every
async def test_downloads_keep_the_byte_cap(facts: AdapterFacts, client_for: ClientFor) -> None:
    """DL-BYTE-CAP (announced by Content-Length, or only counted while it streams)"""
    limits = DownloadLimits(max_bytes=1000, min_bytes_per_second=0)
    for announced in (True, False):
        fake, provider, status = await _finished(facts, client_for)
        fake.router.script("GET", facts.video, httpx2.Response(
            200, headers={"Content-Type": "video/mp4"}, content=VIDEO_BYTES) if announced
            else httpx2.Response(200, headers={"Content-Type": "video/mp4"},
                                stream=httpx2.ByteStream(VIDEO_BYTES)))
        got = 0
        with using_limits(limits), pytest.raises(ProviderError) as caught:
            async for chunk in provider.download(facts.job(fake), status):
                got += len(chunk)
        assert caught.value.label is ErrorLabel.DOWNLOAD_FAILED, announced
        assert "cap" in str(caught.value) and got <= limits.max_bytes, announced


@every
async def test_an_expired_link_is_refreshed_once(facts: AdapterFacts,
                                                 client_for: ClientFor) -> None:
    """LINK-EXPIRY (read again for a fresh link; still dead: a retryable download failure)"""
    fake, provider, status = await _finished(facts, client_for)
    facts.expire(fake, status)
    assert await _collect(provider, facts.job(fake), status) == VIDEO_BYTES
    assert {route: fake.router.count("GET", route) for route in facts.refresh} == facts.refresh
    assert fake.creates() == 0
    fake, provider, status = await _finished(facts, client_for)
    fake.router.script("GET", facts.video, httpx2.Response(403))
    fake.router.script("GET", facts.video, httpx2.Response(403))
    error = await _raised(_collect(provider, facts.job(fake), status))
    assert (error.error_class, error.label) == (ErrorClass.RETRYABLE,
                                                ErrorLabel.DOWNLOAD_FAILED)


@every
async def test_a_file_gone_for_good_is_a_permanent_download_failure(
    facts: AdapterFacts, client_for: ClientFor
) -> None:
    """DL-GONE (deleted at the provider: never downloaded again, never created again)"""
    if facts.gone is None:
        pytest.skip("the provider documents no file deleted after the render")
    states, gone, words = facts.gone
    fake = facts.fake(list(states))
    provider = facts.make(client_for(fake.router))
    status = await provider.poll(facts.job(fake))
    gone(fake)
    error = await _raised(_collect(provider, facts.job(fake), status))
    assert (error.error_class, error.label) == (ErrorClass.PERMANENT,
                                                ErrorLabel.DOWNLOAD_FAILED)
    assert words in str(error)
    assert fake.creates() == 0


# -- crash and reconcile ---------------------------------------------------------------------

@every
async def test_a_new_instance_reattaches_by_the_job_id(facts: AdapterFacts,
                                                       client_for: ClientFor) -> None:
    """REATTACH, RECONCILE-METHOD, LOOKUP-NEVER-NONE"""
    fake = facts.fake()
    job_id = await facts.make(client_for(fake.router)).submit(facts.request())
    second = facts.make(client_for(fake.router))  # the app died; the job id survived
    status = await second.poll(job_id)
    for _ in range(10):
        if status.phase is RemotePhase.SUCCEEDED:
            break
        status = await second.poll(job_id)
    assert await _collect(second, job_id, status) == VIDEO_BYTES
    assert fake.creates() == 1
    assert lost_create_search(second) is facts.lost_create
    assert second.supports_lookup is (facts.lost_create is LostCreateSearch.LOOKUP)
    if not second.supports_lookup:  # never "no such render" (invariant 11), nothing asked
        sent = len(fake.router.calls)
        error = await _raised(second.lookup(facts.request()))
        assert error.label is ErrorLabel.SUBMIT_UNKNOWN
        assert len(fake.router.calls) == sent


@every
async def test_cancel_asks_the_provider_once(facts: AdapterFacts,
                                             client_for: ClientFor) -> None:
    """CANCEL (where documented; elsewhere nothing is sent)"""
    fake = facts.fake()
    await facts.make(client_for(fake.router)).cancel(facts.job(fake))
    if facts.cancel is None:  # none documented: nothing is sent, the render runs on
        assert fake.router.calls == []
    else:
        assert fake.router.count(*facts.cancel) == 1


# -- the account -----------------------------------------------------------------------------

@every
async def test_check_key_reads_and_creates_nothing(facts: AdapterFacts,
                                                   client_for: ClientFor) -> None:
    """ACCOUNT-CHECK-KEY (read-only; a refused key is an account error)"""
    route, refused = facts.check_key
    fake = facts.fake()
    provider = facts.make(client_for(fake.router))
    await provider.check_key()
    assert fake.router.count("GET", route) >= 1 and fake.creates() == 0
    if refused is not None:
        fake.router.script("GET", route, refused())
        error = await _raised(provider.check_key())
        assert (error.error_class, error.label) == (ErrorClass.ACCOUNT,
                                                    ErrorLabel.KEY_REJECTED)


@every
async def test_the_key_never_appears_in_errors_even_when_echoed(
    facts: AdapterFacts, client_for: ClientFor, caplog: pytest.LogCaptureFixture
) -> None:
    """KEY-REDACTION (create and poll answers that echo our request, headers and all)"""
    caplog.set_level(logging.DEBUG)
    for code in facts.echo_statuses:
        fake = facts.fake()
        fake.router.script("POST", facts.create, lambda r, code=code: echo_error(code, r))
        fake.router.script("GET", facts.poll, lambda r, code=code: echo_error(code, r))
        provider = facts.make(client_for(fake.router))
        job_id = facts.job(fake)
        for step in ("submit", "poll"):
            try:
                status = await (provider.submit(facts.request()) if step == "submit"
                                else provider.poll(job_id))
            except ProviderError as error:
                assert SENTINEL_KEY not in all_texts(error), code
                assert "[redacted]" in str(error), code
            else:  # an answer read as a failed render carries the words too
                assert getattr(status, "error", None) is not None, code
                assert SENTINEL_KEY not in all_texts(status.error), code
        assert SENTINEL_KEY not in repr(provider) and SENTINEL_KEY not in str(vars(provider))
    assert SENTINEL_KEY not in caplog.text


# -- through the real engine (MemoryStore), counting creates at the fake ------------------

async def _run(facts: AdapterFacts, tmp_path: Path, fake: Any) -> tuple[Any, Any]:
    return await run_one_row(tmp_path, fake.router, facts.kind, prompt=facts.engine.prompt,
                             account=facts.engine.account, base_url=facts.base_url,
                             settings=dict(facts.engine.settings), key=facts.key,
                             params=dict(facts.engine.params), providers=PLUGIN_REGISTRY)


def _first(router: Router, method: str, route: str, answer: Any) -> None:
    """Answer every ``method route`` with ``answer()``, ahead of the fake's own route."""
    router.routes.insert(0, (method, re.compile(route),
                             lambda r, m: answer()))


@every
async def test_engine_completes_a_row(facts: AdapterFacts, tmp_path: Path) -> None:
    """ENGINE-COMPLETES"""
    fake = facts.fake([facts.finished])
    job, _ = await _run(facts, tmp_path, fake)
    assert job.state is JobState.COMPLETED
    assert Path(job.output_path).read_bytes() == VIDEO_BYTES
    assert fake.creates() == 1


@every
async def test_engine_documented_permanent_failure_one_create_then_failed(
    facts: AdapterFacts, tmp_path: Path
) -> None:
    """ENGINE-PERMANENT (moderation, bad input, an unreachable image: one create)"""
    for index, (method, route, answer, label, words) in enumerate(facts.engine.permanent):
        fake = facts.fake([facts.finished])
        fake.router.script(method, route, answer())
        job, _ = await _run(facts, tmp_path / str(index), fake)
        assert (job.state, job.error_label) == (JobState.FAILED, label.value), words
        assert job.error_class == "permanent"
        assert words in (job.error_message or "")
        assert fake.creates() == 1


@every
async def test_engine_out_of_credits_pauses_the_account_without_a_second_create(
    facts: AdapterFacts, tmp_path: Path
) -> None:
    """ENGINE-CREDITS (account-level: the row waits, unfailed, no attempt spent)"""
    answer, words = facts.engine.credits
    fake = facts.fake([facts.finished])
    _first(fake.router, "POST", facts.create, answer)
    job, store = await _run(facts, tmp_path, fake)
    assert job.state is JobState.QUEUED
    assert fake.creates() == 1
    account = store.get_account(facts.engine.account)
    assert account is not None and account.status is AccountStatus.OUT_OF_CREDITS
    assert words in (account.status_detail or "")


@every
async def test_engine_documented_retryable_failure_is_rendered_again(
    facts: AdapterFacts, tmp_path: Path
) -> None:
    """ENGINE-RETRYABLE"""
    for index, (method, route, answer) in enumerate(facts.engine.retryable):
        fake = facts.fake([facts.finished])
        fake.router.script(method, route, answer())
        job, _ = await _run(facts, tmp_path / str(index), fake)
        assert job.state is JobState.COMPLETED, route
        assert fake.creates() == 2


@every
async def test_engine_unreadable_create_answer_is_unknown_without_a_second_create(
    facts: AdapterFacts, tmp_path: Path
) -> None:
    """ENGINE-UNKNOWN (unknown is not a failure: parked for the user, issue 19)"""
    if facts.engine.unknown_create is None:
        pytest.skip("the adapter finds the render again: its own test file")
    fake = facts.fake([facts.finished])
    fake.router.script("POST", facts.create, facts.engine.unknown_create())
    job, _ = await _run(facts, tmp_path, fake)
    assert job.state is JobState.PARKED and job.error_class == "unknown"
    assert job.error_label == ErrorLabel.SUBMIT_UNKNOWN.value
    assert fake.creates() == 1


@every
async def test_engine_finished_without_a_file_is_never_created_again(
    facts: AdapterFacts, tmp_path: Path
) -> None:
    """ENGINE-NO-FILE (read again, then failed; never created again)"""
    if facts.engine.no_file is None:
        pytest.skip("its own test file covers it")
    route, answer, words = facts.engine.no_file
    fake = facts.fake([facts.finished])
    _first(fake.router, "GET", route, answer)
    job, _ = await _run(facts, tmp_path, fake)
    assert job.state is JobState.FAILED and words in (job.error_message or "")
    assert fake.creates() == 1
    assert fake.router.count("GET", route) >= 2
