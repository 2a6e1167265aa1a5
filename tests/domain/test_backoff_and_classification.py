"""Backoff (full jitter, capped, injected randomness) and the default error classes."""

from __future__ import annotations

import random

import httpx2
import pytest

from reelqueue.domain.backoff import BackoffPolicy
from reelqueue.domain.errors import MAX_RETRY_AFTER_SECONDS, ErrorClass, ErrorLabel, ProviderError
from reelqueue.providers.base import classify_http_status, parse_retry_after
from reelqueue.providers.httpx_session import transport_error

pytestmark = pytest.mark.unit


def test_ceiling_grows_exponentially_and_is_capped() -> None:
    policy = BackoffPolicy(base=2.0, cap=60.0, factor=2.0)
    assert [policy.ceiling(a) for a in range(1, 7)] == [2, 4, 8, 16, 32, 60]
    assert policy.ceiling(10_000) == 60.0


def test_full_jitter_is_uniform_below_the_ceiling_and_deterministic() -> None:
    policy = BackoffPolicy(base=1.0, cap=100.0)
    draws = [policy.delay(4, random.Random(seed)) for seed in range(2000)]
    assert all(0.0 <= d <= 8.0 for d in draws)
    assert min(draws) < 0.5 and max(draws) > 7.5, "full jitter spans the whole range"
    assert 3.5 < sum(draws) / len(draws) < 4.5
    assert policy.delay(4, random.Random(7)) == policy.delay(4, random.Random(7))


@pytest.mark.parametrize(("status", "klass", "label"), [
    (401, ErrorClass.ACCOUNT, ErrorLabel.KEY_REJECTED),
    (403, ErrorClass.ACCOUNT, ErrorLabel.KEY_REJECTED),
    (402, ErrorClass.ACCOUNT, ErrorLabel.OUT_OF_CREDITS),
    (429, ErrorClass.ACCOUNT, ErrorLabel.RATE_LIMITED),
    (408, ErrorClass.RETRYABLE, ErrorLabel.TIMED_OUT),
    (500, ErrorClass.RETRYABLE, ErrorLabel.PROVIDER_ERROR),
    (503, ErrorClass.RETRYABLE, ErrorLabel.PROVIDER_ERROR),
    (400, ErrorClass.PERMANENT, ErrorLabel.INVALID_INPUT),
    (422, ErrorClass.PERMANENT, ErrorLabel.INVALID_INPUT),
])
def test_http_status_classes(status: int, klass: ErrorClass, label: ErrorLabel) -> None:
    error = classify_http_status(status, "x", retry_after=3.0)
    assert (error.error_class, error.label, error.status_code) == (klass, label, status)


def test_retry_after_in_seconds_and_as_a_date() -> None:
    assert parse_retry_after("12") == 12.0
    assert parse_retry_after(None, 5.0) == 5.0
    assert parse_retry_after("garbage", 1.0) == 1.0
    assert parse_retry_after("Wed, 21 Oct 2015 07:28:00 GMT") == 0.0  # in the past



@pytest.mark.parametrize(("header", "seconds"), [
    ("inf", 5.0), ("-inf", 5.0), ("nan", 5.0),  # not a number of seconds: the default
    ("1e12", MAX_RETRY_AFTER_SECONDS), ("Fri, 01 Jan 9999 00:00:00 GMT", MAX_RETRY_AFTER_SECONDS),
    ("-3", 0.0), ("86399.5", 86399.5)])
def test_a_hostile_retry_after_is_bounded(header: str, seconds: float) -> None:
    """A provider's "wait this long" never parks a job or an account for good: at most a
    day, and a value that is not a finite number is no value."""
    assert parse_retry_after(header, 5.0) == seconds


@pytest.mark.parametrize(("given", "kept"), [
    (None, None), (float("nan"), None), (float("inf"), None), (-1.0, 0.0), (12.0, 12.0),
    (1e12, MAX_RETRY_AFTER_SECONDS)])
def test_every_provider_error_keeps_a_bounded_retry_after(given: float | None,
                                                          kept: float | None) -> None:
    """Also a wait an adapter reads from a body field, not from the header."""
    error = ProviderError("x", error_class=ErrorClass.RETRYABLE,
                          label=ErrorLabel.RATE_LIMITED, retry_after=given)
    assert error.retry_after == kept


def test_transport_errors_know_whether_a_create_may_have_been_sent() -> None:
    request = httpx2.Request("POST", "https://example.invalid/v1/x")
    connect = transport_error(httpx2.ConnectError("no", request=request), during_create=True)
    read = transport_error(httpx2.ReadTimeout("slow", request=request), during_create=True)
    poll = transport_error(httpx2.ReadTimeout("slow", request=request), during_create=False)
    assert not connect.body_maybe_sent
    assert read.body_maybe_sent and read.label == ErrorLabel.TIMED_OUT
    assert not poll.body_maybe_sent


def test_provider_error_reads_well() -> None:
    error = ProviderError("boom", error_class=ErrorClass.RETRYABLE,
                          label=ErrorLabel.PROVIDER_ERROR, status_code=500)
    assert str(error) == "boom"
    assert "retryable" in repr(error) and "500" in repr(error)
