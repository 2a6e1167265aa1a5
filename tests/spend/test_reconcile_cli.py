"""Issue 32 items 5 and 6 on the command line, against a Runway fake whose usage answer
has the SDK's shape (tests/fixtures/runway/SOURCE.md): ``spend --reconcile`` names a
price drift with the table's entry and the price that would match, renders the journal
does not know, and says "provider's figures unavailable" for a hostile answer;
``resolve JOB`` shows what the counts say of a lost create, and nothing is created."""

from __future__ import annotations

import json

import pytest

from reelqueue.domain.states import JobState
from tests.spend.conftest import Journal, RunwayFake, today, usage_body

pytestmark = [pytest.mark.integration]


def reconcile(journal: Journal, capsys: pytest.CaptureFixture[str]) -> tuple[dict, str]:  # type: ignore[type-arg]
    assert journal.cli("spend", "--reconcile", "--days", "2", "--json") == 0
    data = json.loads(capsys.readouterr().out)
    assert journal.cli("spend", "--reconcile", "--days", "2") == 0
    return data, capsys.readouterr().out


def days_of(data: dict) -> dict[str, dict]:  # type: ignore[type-arg]
    (account,) = data["accounts"]
    return {d["model"]: d for d in account["days"]}


def test_a_provider_charging_20_percent_more_is_named_price_drift_with_the_matching_price(
        journal: Journal, runway_fake: RunwayFake,
        capsys: pytest.CaptureFixture[str]) -> None:
    journal.started(3)  # 3 x 5 s at 12 credits/s = 180 credits in the table
    runway_fake.answer(usage_body(**{"gen4.5": 216}))  # 14.4 credits/s
    data, text = reconcile(journal, capsys)
    day = days_of(data)["gen4.5"]
    assert day["day"] == today() and day["creates"] == 3
    assert day["journal_units"] == pytest.approx(180) and day["provider_units"] == 216
    assert day["kind"] == "price_drift"
    assert day["matching_per_second"] == pytest.approx(14.4)
    assert day["table"]["unit_per_second"] == 12.0
    assert day["table"]["read_on"] == "2026-12-01"
    assert "docs.dev.runwayml.com/guides/pricing" in day["table"]["source"]
    assert "price drift, the provider charged 20 % more than the table's gen4.5 price, " \
        "12 credits/s" in text
    assert "the price that would match: 14.40 credits/s" in text
    # the image model the key also used is not a render of ReelQueue's
    assert "gen4_image" not in days_of(data)
    assert runway_fake.creates() == []
    asked = [json.loads(r[2]) for r in runway_fake.requests
             if r[1] == "/v1/organization/usage"]
    assert len(asked) == 2  # one read for --json, one for the text
    assert all(a["beforeDate"] > today() >= a["startDate"] for a in asked)


def test_a_render_made_by_another_tool_on_the_key_is_unexplained_usage(
        journal: Journal, runway_fake: RunwayFake,
        capsys: pytest.CaptureFixture[str]) -> None:
    journal.started(2)  # 120 credits
    journal.started(1, model="gen4_turbo", price=0.25)  # 25 credits, matched exactly
    runway_fake.answer(usage_body(**{"gen4.5": 180, "gen4_turbo": 25, "veo3.1": 320}))
    data, text = reconcile(journal, capsys)
    days = days_of(data)
    assert days["gen4.5"]["kind"] == "unknown_renders" and days["gen4.5"]["renders"] == 1
    assert days["gen4_turbo"]["kind"] == "matches"
    assert days["veo3.1"]["kind"] == "unknown_renders" and days["veo3.1"]["creates"] == 0
    assert "1 render the journal does not know (another tool on the key, or a lost " \
        "create that was billed), 60 credits" in text
    assert "320 credits of renders the journal does not know" in text
    assert runway_fake.creates() == []


def test_a_lost_create_alone_in_its_window_is_billed_and_not_provable_beside_another(
        journal: Journal, runway_fake: RunwayFake,
        capsys: pytest.CaptureFixture[str]) -> None:
    (lost,) = journal.started(0, lost=1)
    runway_fake.answer(usage_body(**{"gen4.5": 60}))
    assert journal.cli("resolve", str(lost)) == 0
    out = capsys.readouterr().out
    assert "the provider counted it: billed (60 credits used on " + today() in out
    assert "--create-again" in out  # the existing choices, beside the evidence

    runway_fake.answer(usage_body())  # nothing used that day
    assert journal.cli("resolve", str(lost)) == 0
    assert "not counted (0 credits used on " + today() in capsys.readouterr().out

    journal.started(1)  # another create on the account and model, the same day
    runway_fake.answer(usage_body(**{"gen4.5": 60}))
    assert journal.cli("resolve", str(lost)) == 0
    assert "not provable: 2 creates in the window" in capsys.readouterr().out

    store = journal.store()
    try:
        job = store.get_job(lost)
        assert job is not None and job.state == JobState.PARKED  # nothing decided
        assert job.provider_job_id is None
        assert len(store.list_jobs()) == 2
    finally:
        store.close()
    assert runway_fake.creates() == []


HOSTILE = {
    "amount missing": usage_body(**{"gen4.5": 60}) | {"results": [
        {"date": "@", "usedCredits": [{"model": "gen4.5"}]}]},
    "amount a string": {"results": [{"date": "@", "usedCredits": [
        {"amount": "lots", "model": "gen4.5"}]}]},
    "amount NaN": b'{"results": [{"date": "@", "usedCredits": [{"amount": NaN, '
                  b'"model": "gen4.5"}]}]}',
    "amount absurd": {"results": [{"date": "@", "usedCredits": [
        {"amount": 1e15, "model": "gen4.5"}]}]},
    "amount absurdly negative": {"results": [{"date": "@", "usedCredits": [
        {"amount": -1e15, "model": "gen4.5"}]}]},
    "a model not a string": {"results": [{"date": "@", "usedCredits": [
        {"amount": 60, "model": 7}]}]},
    "another currency": {"unit": "USD", "results": [{"date": "@", "usedCredits": [
        {"amount": 60, "model": "gen4.5"}]}]},
    "a future day": {"results": [{"date": "2999-01-01", "usedCredits": [
        {"amount": 60, "model": "gen4.5"}]}]},
    "an unreadable day": {"results": [{"date": "yesterday", "usedCredits": []}]},
    "a model named twice": {"results": [{"date": "@", "usedCredits": [
        {"amount": 60, "model": "gen4.5"}, {"amount": 60, "model": "gen4.5"}]}]},
    "results missing": {"models": []},
    "not JSON": b"<html>teapot</html>",
    "too large": b'{"results": [' + b" " * (300 * 1024) + b"]}",
}


@pytest.mark.parametrize("case", sorted(HOSTILE))
def test_a_hostile_usage_answer_reads_unavailable_never_a_crash(
        case: str, journal: Journal, runway_fake: RunwayFake,
        capsys: pytest.CaptureFixture[str]) -> None:
    journal.started(1, lost=1)
    body = HOSTILE[case]
    if isinstance(body, bytes):
        runway_fake.answer(body.replace(b'"@"', f'"{today()}"'.encode()))
    else:
        runway_fake.answer(json.loads(json.dumps(body).replace('"@"', f'"{today()}"')))
    data, text = reconcile(journal, capsys)
    (account,) = data["accounts"]
    assert account["unavailable"].startswith("provider's figures unavailable (")
    assert "provider's figures unavailable" in text
    assert [d["creates"] for d in account["days"]] == [2]  # the journal's side still said
    lost = journal.store().list_jobs(states=[JobState.PARKED])[0].id
    assert journal.cli("resolve", str(lost)) == 0
    assert "Provider's counts: provider's figures unavailable" in capsys.readouterr().out
    assert runway_fake.creates() == []


def test_an_error_answer_reads_unavailable(
        journal: Journal, runway_fake: RunwayFake,
        capsys: pytest.CaptureFixture[str]) -> None:
    journal.started(1)
    runway_fake.answer({"error": "upstream"}, status=503)
    data, text = reconcile(journal, capsys)
    assert data["accounts"][0]["unavailable"].startswith("provider's figures unavailable")
    assert "HTTP 503" in text


def test_jobs_naming_no_model_are_counted_under_the_model_they_render_with(
        journal: Journal, runway_fake: RunwayFake,
        capsys: pytest.CaptureFixture[str]) -> None:
    """A sheet without a model column: each job renders with the account's default (the
    provider's first model, gen4.5 on Runway), as the claim counts it; the reconciler
    lines it up there, not under a model with no name that the provider never reports
    (which made the provider's own usage "renders the journal does not know")."""
    journal.started(2, model="")  # 2 x 5 s at 12 credits/s = 120 credits
    runway_fake.answer(usage_body(**{"gen4.5": 120}))
    data, text = reconcile(journal, capsys)
    assert set(days_of(data)) == {"gen4.5"}
    day = days_of(data)["gen4.5"]
    assert day["creates"] == 2 and day["kind"] == "matches", day
    assert f"{today()} gen4.5: the journal started 2 creates" in text, text
    assert "does not know" not in text
    assert runway_fake.creates() == []
