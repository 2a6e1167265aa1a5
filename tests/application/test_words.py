"""The one set of words (issue 34): each job state and account condition has one name,
chosen in application/words.py for every front end."""

from __future__ import annotations

import pytest

from reelqueue.application.words import (
    OUTCOME_UNKNOWN,
    Condition,
    account_condition_words,
    condition_words,
    job_state_words,
)
from reelqueue.domain.errors import ErrorLabel
from reelqueue.domain.states import JobState

pytestmark = pytest.mark.unit

UNKNOWN = ErrorLabel.SUBMIT_UNKNOWN.value


def test_every_job_state_has_a_name_and_a_hint_and_no_two_share_a_name() -> None:
    words = [job_state_words(state) for state in JobState]
    words.append(job_state_words(JobState.PARKED, None, UNKNOWN, None))
    names = [w.name for w in words]
    assert len(set(names)) == len(names), names
    for w in words:
        assert w.name and w.name == w.name.lower() and w.hint.endswith("."), w


def test_a_parked_create_without_a_render_is_outcome_unknown_and_a_kept_render_is_parked(
) -> None:
    unknown = job_state_words(JobState.PARKED, None, UNKNOWN, None)
    assert (unknown.name, unknown.code) == ("outcome unknown", OUTCOME_UNKNOWN)
    assert "not a failure" in unknown.hint
    # an older ReelQueue failed such a create: the same name, never "failed"
    assert job_state_words(JobState.FAILED, None, UNKNOWN, None).code == OUTCOME_UNKNOWN
    crashed = job_state_words(JobState.PARKED, None, ErrorLabel.PARKED.value, "gen-1")
    assert (crashed.name, crashed.code) == ("parked", JobState.PARKED)
    # holding a render id, it is not a create of unknown outcome
    assert job_state_words(JobState.PARKED, None, UNKNOWN, "gen-1").name == "parked"
    assert job_state_words(OUTCOME_UNKNOWN).name == "outcome unknown"


@pytest.mark.parametrize(("sub", "name"), [
    (None, "rendering"), ("running", "rendering"), ("queued", "queued at the provider"),
    ("throttled", "throttled by the provider"), ("reattached", "rendering (picked up again)"),
    ("dreaming", "rendering · dreaming"),
])
def test_rendering_is_named_by_its_sub_status(sub: str | None, name: str) -> None:
    assert job_state_words(JobState.RENDERING, sub).name == name


def test_an_account_condition_is_chosen_in_the_order_the_user_needs() -> None:
    assert account_condition_words("ready").name == "ready"
    assert account_condition_words("ready", live=2).name == "rendering"
    assert account_condition_words("ready", enabled=False).name == "paused"
    assert account_condition_words("ready", cap_reached=True).name == "daily cap reached"
    assert account_condition_words("ready", cap_reached=True, live=1).name == \
        "daily cap reached · finishing"
    assert account_condition_words("key_rejected", cap_reached=True).name == "key rejected"
    assert account_condition_words("out_of_credits").name == "out of credits"
    assert account_condition_words("ready", key_here=False).name == "key not on this machine"
    assert account_condition_words("ready", confirm=True).name == "address changed"
    assert account_condition_words("ready", confirm=True,
                                   address_unreadable=True).name == "address unreadable"
    limited = account_condition_words("rate_limited", cooldown_until=1_800_000_000.0)
    assert limited.name.startswith("rate limited until ") and limited.name[-3] == ":"
    assert account_condition_words("rate_limited").name == "rate limited"


def test_every_condition_has_a_name_and_the_engine_s_codes_share_them() -> None:
    for code in Condition:
        assert condition_words(code).name and condition_words(code).hint, code
    assert condition_words("no_key").name == condition_words("key_missing").name
    assert condition_words("disabled").name == "paused"
