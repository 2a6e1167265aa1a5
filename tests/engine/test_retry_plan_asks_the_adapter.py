"""The retry plan asks the adapter the engine would build for the account now how a lost
create is found (issue 32): no table of providers, so an account's address and settings
change the plan's words, and a provider whose records never prove absence (fal) is
looked for without ever being created again by the retry."""

from __future__ import annotations

from dataclasses import replace

import pytest

from reelqueue.application.retry_words import retry_summary
from reelqueue.domain.errors import ErrorLabel
from reelqueue.domain.models import Account, Job
from reelqueue.domain.states import AccountStatus, JobState
from reelqueue.engine.lost_creates import account_lost_create_search
from reelqueue.engine.retry_plan import plan_retry
from reelqueue.providers.base import LostCreateSearch
from reelqueue.providers.builtin import builtin_registry

pytestmark = pytest.mark.unit


def _account(provider: str, base_url: str | None = None, **settings: object) -> Account:
    return Account(name="acct", provider=provider, capacity=2, position=0, enabled=True,
                   base_url=base_url, key_ref=None, status=AccountStatus.READY,
                   status_detail=None, cooldown_until=None, settings=dict(settings),
                   created_at=0.0)


def _unknown(provider: str) -> Job:
    return Job(id=1, batch_id=1, job_key="k", row_number=2, name="", prompt="p",
               provider=provider, params={}, pinned_account=None, priority=0,
               output_path="k.mp4", state=JobState.PARKED, attempts=1, max_attempts=3,
               account="acct", claim_token=None, lease_owner=None, lease_until=None,
               client_token="ct", provider_job_id=None, sub_status=None, progress=None,
               run_after=0.0, output_size=None, output_sha256=None, cost=None,
               error_class="unknown", error_label=ErrorLabel.SUBMIT_UNKNOWN.value,
               error_message="lost", created_at=0.0, updated_at=0.0, started_at=None,
               finished_at=None, metadata={})


@pytest.mark.parametrize(("provider", "base_url", "settings", "expected"), [
    ("fal", None, {}, LostCreateSearch.SEARCH_FINDS_ONLY),
    ("fal", "https://gateway.example.com", {}, LostCreateSearch.NONE),
    ("kling", None, {}, LostCreateSearch.LOOKUP),
    ("replicate", None, {}, LostCreateSearch.SEARCH),
    ("openai-compat", "https://gw.example.com/v1", {}, LostCreateSearch.SEARCH),
    ("luma-legacy", None, {}, LostCreateSearch.SEARCH),
    ("runway", None, {}, LostCreateSearch.NONE),
    ("veo", None, {}, LostCreateSearch.NONE),
    ("luma", None, {}, LostCreateSearch.NONE),
    ("minimax", None, {}, LostCreateSearch.NONE),
    ("mock", None, {}, LostCreateSearch.LOOKUP),
    ("mock", None, {"reconcile": "search"}, LostCreateSearch.SEARCH),
    ("mock", None, {"reconcile": "none"}, LostCreateSearch.NONE),
    ("openai-compat", None, {}, LostCreateSearch.NONE),  # no address: cannot be used
])
def test_each_account_is_asked_of_its_own_adapter(
        provider: str, base_url: str | None, settings: dict[str, object],
        expected: LostCreateSearch) -> None:
    account = _account(provider, base_url, **settings)
    assert account_lost_create_search(account, builtin_registry()) == expected


def test_a_removed_account_or_an_unparsable_address_promises_nothing() -> None:
    assert account_lost_create_search(None, builtin_registry()) == LostCreateSearch.NONE
    broken = _account("fal", "https://queue.fal.run\uff20evil.example")
    assert account_lost_create_search(broken, builtin_registry()) == LostCreateSearch.NONE


def test_changing_an_accounts_base_url_changes_the_plans_words() -> None:
    job = _unknown("fal")
    own = _account("fal")
    plan = plan_retry([1], {1: job}, account_rows={"acct": own}, include_permanent=False)
    assert [j.id for j in plan.look_only] == [1] and not plan.pays
    assert "looked for in the provider's records (no charge); if not found, it stays " \
        "unknown" in retry_summary(plan)
    gateway = replace(own, base_url="https://gateway.example.com")
    plan = plan_retry([1], {1: job}, account_rows={"acct": gateway}, include_permanent=False)
    assert not plan.look_only and not plan.reconcile
    assert [j.id for j in plan.left_out_unknown] == [1]
    assert "cannot be looked for" in retry_summary(plan)
    named = plan_retry([1], {1: job}, account_rows={"acct": gateway})
    assert named.create_again == [1] and named.pays
    assert "may pay twice" in retry_summary(named)
