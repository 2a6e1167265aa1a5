"""A test run's plan counts and prices only its rows (issue 23: the import dialog's summary
said the whole sheet's "6 new jobs · $0.30" for a test run of 2)."""

from __future__ import annotations

from pathlib import Path

import pytest

from reelqueue.intake import StaticCatalog
from tests.intake.conftest import plan_text

pytestmark = pytest.mark.unit

SHEET = ("prompt,duration\n"
         "one,2\n"
         "two,3\n"
         "three,4\n"
         "four,5\n")


def test_the_first_rows_have_their_own_count_and_estimate(tmp_path: Path,
                                                          catalog: StaticCatalog) -> None:
    whole = plan_text(tmp_path, SHEET, catalog)
    assert len(whole.new_jobs) == 4 and whole.estimate.total_usd == pytest.approx(0.14)
    two = whole.first_rows(2)
    assert [job.prompt for job in two.new_jobs] == ["one", "two"]
    assert two.estimate.jobs == 2
    assert two.estimate.total_usd == pytest.approx(0.05)  # 2 s + 3 s at $0.01/s
    assert two.estimate.describe_total() == "$0.05"
    assert whole.estimate.total_usd == pytest.approx(0.14), "the whole plan is unchanged"


def test_rows_already_imported_in_a_test_run_are_skipped_not_priced(
        tmp_path: Path, catalog: StaticCatalog) -> None:
    first = plan_text(tmp_path, SHEET, catalog)
    present = {first.jobs[0].job_key}
    plan = plan_text(tmp_path, SHEET, catalog, existing=present)
    two = plan.first_rows(2)
    assert [job.prompt for job in two.new_jobs] == ["two"]
    assert two.already_present == 1
    assert two.estimate.jobs == 1 and two.estimate.total_usd == pytest.approx(0.03)
    assert plan.first_rows(0).estimate.jobs == 0
