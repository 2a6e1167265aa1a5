"""Property tests shared by adapters whose answers are one JSON object with an id and a
state: no create answer is read as "nothing was created", no poll answer as "the render
failed" unless it says so in the documented words (issue 10: money fails closed).

An adapter's test module calls :func:`answer_properties` with its fake and constants and
binds the two tests it returns to module-level names, so pytest collects them there.
"""

from __future__ import annotations

import json
from collections.abc import Callable, Sequence
from dataclasses import dataclass
from typing import Any

import httpx2
import pytest
from hypothesis import HealthCheck, given, settings
from hypothesis import strategies as st

from reelqueue.domain.errors import ErrorClass, ErrorLabel, ProviderError
from reelqueue.domain.states import RemotePhase


@dataclass(frozen=True)
class AnswerShape:
    """Attributes:
    states: the provider's documented state words (mixed into the random answers).
    keys: field names the random objects are built from (documented ones and a stranger).
    fake: builds the provider fake (with ``.router`` and ``.creates()``).
    make: builds the adapter on a client.
    request: builds a render request.
    create, created: the create path pattern and its success status.
    poll, job_id: the poll path pattern and the job id polled.
    state_key: the field that holds the state; ending: the states that end a render.
    """

    states: Sequence[str]
    keys: Sequence[str]
    fake: Callable[[], Any]
    make: Callable[[httpx2.AsyncClient], Any]
    request: Callable[[], Any]
    create: str
    created: int
    poll: str
    job_id: str
    state_key: str
    ending: Sequence[str]


def _decoded(raw: bytes) -> Any:
    try:
        return json.loads(raw)
    except ValueError:
        return None


def answer_properties(shape: AnswerShape) -> tuple[Callable[..., Any], Callable[..., Any]]:
    """The create-answer and poll-answer property tests for ``shape``."""
    values = st.recursive(
        st.none() | st.booleans() | st.integers(-2, 2_000_000) | st.text(max_size=12)
        | st.sampled_from(list(shape.states)),
        lambda inner: st.lists(inner, max_size=3) | st.dictionaries(
            st.sampled_from(list(shape.keys)), inner, max_size=4),
        max_leaves=12)
    answers = st.one_of(values.map(lambda body: json.dumps(body).encode()),
                        st.binary(max_size=40))

    @settings(max_examples=100, deadline=None,
              suppress_health_check=[HealthCheck.function_scoped_fixture])
    @given(raw=answers)
    async def test_property_a_create_answer_is_an_id_or_an_unknown_outcome(
        client_for: Callable[..., httpx2.AsyncClient], raw: bytes
    ) -> None:
        """Random and malformed 2xx create answers: a job id only from a readable id
        field; anything else says the create may have gone through, so it is never sent
        again."""
        fake = shape.fake()
        fake.router.script("POST", shape.create, httpx2.Response(shape.created, content=raw))
        try:
            job_id = await shape.make(client_for(fake.router)).submit(shape.request())
        except ProviderError as error:
            assert error.body_maybe_sent is True
            if isinstance(_decoded(raw), dict):
                assert error.label is ErrorLabel.SUBMIT_UNKNOWN
        else:
            body = _decoded(raw)
            assert isinstance(body, dict) and job_id == str(body["id"])
        assert fake.creates() == 1
        with pytest.raises(ProviderError) as caught:
            await shape.make(client_for(fake.router)).lookup(shape.request())
        assert caught.value.label is ErrorLabel.SUBMIT_UNKNOWN

    @settings(max_examples=100, deadline=None,
              suppress_health_check=[HealthCheck.function_scoped_fixture])
    @given(raw=answers)
    async def test_property_a_poll_answer_never_reads_as_a_failed_render(
        client_for: Callable[..., httpx2.AsyncClient], raw: bytes
    ) -> None:
        """Random and malformed poll answers: only the documented failed/cancelled state
        ends a render (which could lead to a new create); a body without a readable state
        is an unknown outcome (or, not JSON at all, a retryable unreadable answer)."""
        fake = shape.fake()
        fake.router.script("GET", shape.poll, httpx2.Response(200, content=raw))
        body = _decoded(raw)
        try:
            status = await shape.make(client_for(fake.router)).poll(shape.job_id)
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

    return (test_property_a_create_answer_is_an_id_or_an_unknown_outcome,
            test_property_a_poll_answer_never_reads_as_a_failed_render)


def create_answer_property(
    *, fake: Callable[[], Any], make: Callable[[httpx2.AsyncClient], Any],
    request: Callable[[], Any], create: str, created: int, id_key: str,
    reads_as: Callable[[dict[str, Any], str], bool],
) -> Callable[..., Any]:
    """The create-answer property for adapters whose create answer is one JSON object:
    random and malformed 2xx answers give a job id only from a readable ``id_key`` (as
    ``reads_as(body, job_id)`` checks); anything else is an error saying the create may
    have gone through, the documented unknown outcome for a JSON object."""
    values = st.recursive(
        st.none() | st.booleans() | st.integers(-2, 2_000_000) | st.text(max_size=12),
        lambda inner: st.lists(inner, max_size=3) | st.dictionaries(
            st.sampled_from([id_key, "status", "error", "detail", "data", "x"]), inner,
            max_size=4),
        max_leaves=12)
    answers = st.one_of(values.map(lambda body: json.dumps(body).encode()),
                        st.binary(max_size=40))

    @settings(max_examples=120, deadline=None,
              suppress_health_check=[HealthCheck.function_scoped_fixture])
    @given(raw=answers)
    async def test_property_a_create_answer_is_an_id_or_an_unknown_outcome(
        client_for: Callable[..., httpx2.AsyncClient], raw: bytes
    ) -> None:
        """Random and malformed 2xx create answers: a job id only from a readable id
        field; anything else is an error that says the create may have gone through."""
        provider_fake = fake()
        provider_fake.router.script("POST", create, httpx2.Response(created, content=raw))
        try:
            job_id = await make(client_for(provider_fake.router)).submit(request())
        except ProviderError as error:
            assert error.body_maybe_sent is True  # the engine never resends it by itself
            if isinstance(_decoded(raw), dict):  # no usable id: the unknown outcome
                assert (error.error_class, error.label) == (ErrorClass.PERMANENT,
                                                            ErrorLabel.SUBMIT_UNKNOWN)
        else:
            body = _decoded(raw)
            assert isinstance(body, dict)
            assert reads_as(body, job_id)
        assert provider_fake.creates() == 1

    return test_property_a_create_answer_is_an_id_or_an_unknown_outcome
