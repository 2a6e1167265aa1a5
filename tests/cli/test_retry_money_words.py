"""Every word about money true (issue 32, item 1): ``retry`` and ``resolve`` say what the
account's own adapter can do with a create whose outcome is unknown, and do only that.

Each test failed on the main of 2026-12-06:
- a fal account with its own base URL: ``retry --failed --yes`` said the rows were "looked
  for in the provider's records first (no charge...)" and then created them again (the
  plan read a table that said fal is searched; the adapter turns search off for a gateway);
- ``resolve JOB`` said "no candidates were found in the provider's records" where nothing
  was searched;
- ``retry --parked`` (help: "no new render") created unknown creates again on providers
  that cannot be asked, without asking.
"""

from __future__ import annotations

import time
from pathlib import Path

import pytest

from reelqueue.domain.errors import ErrorLabel
from reelqueue.domain.models import AccountSpec, BatchSpec, JobSpec
from reelqueue.domain.states import JobState
from reelqueue.store.base import ClaimParams, JobError
from reelqueue.store.lockfile import make_private_dir
from reelqueue.store.sqlite import SqliteStore
from tests.cli.test_cli_e2e import rq

pytestmark = pytest.mark.integration

FAL_PARAMS = {"model": "fal-ai/veo3", "duration": 8}
GATEWAY = "https://fal-gateway.example.com"


def _unknown_creates(data: Path, provider: str, account: str, base_url: str | None,
                     *, parked: bool, n: int = 2) -> list[int]:
    """``n`` jobs of ``account`` whose create's answer was lost (client token kept, no
    render id): parked, or failed as the engine of earlier versions left them."""
    make_private_dir(data)
    store = SqliteStore.open(data / "journal.sqlite3", now=time.time())
    try:
        batch = store.create_batch(BatchSpec("b", "s.csv", str(data / "videos")), time.time())
        params = FAL_PARAMS if provider == "fal" else {"model": "mock-1", "duration": 5}
        store.add_jobs(batch.id, [JobSpec(f"k{i}", f"prompt {i}", provider,
                                          str(data / "videos" / f"k{i}.mp4"),
                                          params=dict(params)) for i in range(n)],
                       time.time())
        store.add_account(AccountSpec(account, provider, 4, base_url), time.time())
        ids = []
        for i in range(n):
            claim = store.claim_next_job(ClaimParams(account, "i", time.time(), 60))
            assert claim is not None
            assert store.mark_submitting(claim.token, f"ct-{i}", time.time())
            error = JobError("unknown", ErrorLabel.SUBMIT_UNKNOWN.value,
                             "Submit outcome unknown: the answer was lost.")
            if parked:
                assert store.park_job(claim.token, error, time.time())
            else:
                assert store.mark_failed(claim.token, error, time.time())
            ids.append(claim.job.id)
        return ids
    finally:
        store.close()


def _jobs(data: Path) -> dict[int, tuple[JobState, str | None]]:
    store = SqliteStore.open(data / "journal.sqlite3", now=time.time())
    try:
        return {j.id: (j.state, j.client_token) for j in store.list_jobs()}
    finally:
        store.close()


def _requeued(data: Path, job_id: int) -> list[dict[str, object]]:
    store = SqliteStore.open(data / "journal.sqlite3", now=time.time())
    try:
        return [e.detail for e in store.ledger(job_id) if e.event == "requeued"]
    finally:
        store.close()


def _set_base_url(data: Path, account: str, url: str) -> None:
    store = SqliteStore.open(data / "journal.sqlite3", now=time.time())
    try:
        store.update_account(account, time.time(), base_url=url)
    finally:
        store.close()


def test_fal_on_its_own_queue_is_looked_for_and_never_created_without_the_users_word(
        tmp_path: Path) -> None:
    data = tmp_path / "data"
    ids = _unknown_creates(data, "fal", "falacct", None, parked=False)
    done = rq(data, "retry", "--failed", "--yes")
    assert done.returncode == 0, done.stderr
    out = done.stdout
    assert "2 marked “outcome unknown” will be looked for in the provider's records " \
        "(no charge); if not found, they stay unknown for you to resolve" in out, out
    assert "never prove one absent" in out, out
    assert "rendered again" not in out and "may pay twice" not in out, out
    # Queued to be looked for: the client token kept, nothing to be created.
    assert all(_jobs(data)[i] == (JobState.QUEUED, f"ct-{n}") for n, i in enumerate(ids))
    assert all(d["reconcile"] is True for d in _requeued(data, ids[0]))


def test_a_fal_gateway_cannot_be_looked_for_and_the_plans_words_change_with_its_address(
        tmp_path: Path) -> None:
    data = tmp_path / "data"
    ids = _unknown_creates(data, "fal", "falacct", None, parked=False)
    _set_base_url(data, "falacct", GATEWAY)  # the account moves to a gateway
    done = rq(data, "retry", "--failed", "--yes")
    assert done.returncode == 0, done.stderr
    out = done.stdout
    assert "will be looked for" not in out, out
    assert "2 marked “outcome unknown” that cannot be looked for in the provider's " \
        "records" in out and "left out" in out, out
    assert {state for state, _ in _jobs(data).values()} == {JobState.FAILED}, \
        "--failed leaves them out: nothing queued, nothing created"
    # Named (or --include-permanent), they are created again only as a paid re-render:
    # said with "may pay twice", refused without --yes when no terminal can ask.
    refused = rq(data, "retry", *map(str, ids))
    assert refused.returncode == 1, refused.stdout
    assert "may pay twice" in refused.stdout and "--yes" in refused.stdout, refused.stdout
    assert {state for state, _ in _jobs(data).values()} == {JobState.FAILED}
    agreed = rq(data, "retry", "--failed", "--include-permanent", "--yes")
    assert agreed.returncode == 0, agreed.stderr
    assert "2 will be rendered again" in agreed.stdout, agreed.stdout
    assert "may pay twice" in agreed.stdout, agreed.stdout
    jobs = _jobs(data)
    assert all(jobs[i] == (JobState.QUEUED, None) for i in ids), \
        "the user agreed: the old token is dropped and the engine creates anew"


def test_retry_parked_never_creates_an_unknown_create_that_cannot_be_looked_for(
        tmp_path: Path) -> None:
    data = tmp_path / "data"
    ids = _unknown_creates(data, "fal", "gw", GATEWAY, parked=True)
    done = rq(data, "retry", "--parked", "--yes")
    assert done.returncode == 0, done.stderr
    assert "cannot be looked for" in done.stdout and "left out" in done.stdout, done.stdout
    assert all(_jobs(data)[i][0] == JobState.PARKED for i in ids), \
        "--parked reads renders and looks for creates; it never renders anew"
    # --include-permanent without a terminal and without --yes: refused, nothing changed.
    refused = rq(data, "retry", "--parked", "--include-permanent")
    assert refused.returncode == 1 and "Nothing was changed" in refused.stdout
    assert all(_jobs(data)[i][0] == JobState.PARKED for i in ids)
    help_text = rq(data, "retry", "--help").stdout
    assert "no new render" in help_text and "left out" in help_text, help_text


def test_retry_parked_looks_for_unknown_creates_where_the_account_can_be_asked(
        tmp_path: Path) -> None:
    data = tmp_path / "data"
    ids = _unknown_creates(data, "mock", "acct", "http://127.0.0.1:9", parked=True, n=1)
    done = rq(data, "retry", "--parked")
    assert done.returncode == 0, done.stderr
    assert "1 marked “outcome unknown” will be looked for in the provider's records " \
        "first (no charge" in done.stdout, done.stdout
    assert _jobs(data)[ids[0]] == (JobState.QUEUED, "ct-0")


@pytest.mark.parametrize(("provider", "account", "url", "words"), [
    ("fal", "gw", GATEWAY, "this provider cannot be searched for an earlier create on its "
     "account; nothing was looked for in its records"),
    ("runway", "rw", None, "this provider cannot be searched for an earlier create on its "
     "account; nothing was looked for in its records"),
])
def test_resolve_says_nothing_was_looked_for_where_nothing_can_be(
        tmp_path: Path, provider: str, account: str, url: str | None, words: str) -> None:
    data = tmp_path / "data"
    ids = _unknown_creates(data, provider, account, url, parked=True, n=1)
    done = rq(data, "resolve", str(ids[0]))
    assert done.returncode == 0, done.stderr
    assert words in done.stdout, done.stdout
    assert "no candidates were found" not in done.stdout
