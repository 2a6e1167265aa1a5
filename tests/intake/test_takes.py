"""Takes are repeats (issue 35 item 1): ``--takes N`` sets the repeat of rows that give
none; every take has its own seed (the row's S, S+1... or one drawn, in its params); a
re-import with more takes adds only the new ones; up to 100, the price said above 10."""

from __future__ import annotations

import random
from pathlib import Path

import pytest

from reelqueue.application.take_groups import take_groups
from reelqueue.domain.errors import InputError
from reelqueue.intake import StaticCatalog

from .conftest import plan_text

SHEET = "prompt,seed,repeat\na fox,,\na cat,40,\na dog,,2\n"


def test_takes_repeat_rows_without_their_own_and_give_each_take_a_seed(
        tmp_path: Path, catalog: StaticCatalog) -> None:
    plan = plan_text(tmp_path, SHEET, catalog, takes=3, rng=random.Random(1))
    by_row: dict[int | None, list[dict[str, object]]] = {}
    for job in plan.jobs:
        by_row.setdefault(job.row_number, []).append(job.params)
    assert {row: len(params) for row, params in by_row.items()} == {2: 3, 3: 3, 4: 2}
    assert [p["seed"] for p in by_row[3]] == [40, 41, 42]  # the row's seed, then +1
    drawn = [p["seed"] for p in by_row[2]] + [p["seed"] for p in by_row[4]]
    assert all(isinstance(seed, int) and 0 <= seed < 2**31 for seed in drawn)
    assert len(set(drawn)) == 5
    keys = [job.job_key for job in plan.jobs]
    assert keys[1:3] == [f"{keys[0]}#2", f"{keys[0]}#3"]
    assert plan.takes_words() is None  # 3 takes: the estimate alone says the price
    # The same sheet with other draws: the same keys (a seed is drawn after the key).
    again = plan_text(tmp_path, SHEET, catalog, takes=3, rng=random.Random(2))
    assert [job.job_key for job in again.jobs] == keys
    # Raising the takes adds only the new ones.
    more = plan_text(tmp_path, SHEET, catalog, takes=4, existing=set(keys))
    new = [job.job_key for job in more.jobs if job.job_key not in keys]
    assert new == [f"{keys[0]}#4", f"{keys[3]}#4"]


def test_a_row_of_one_take_draws_no_seed(tmp_path: Path, catalog: StaticCatalog) -> None:
    plan = plan_text(tmp_path, SHEET, catalog)  # the fox: one take; the dog: its own 2
    assert [job.row_number for job in plan.jobs] == [2, 3, 4, 4]
    assert [("seed" in job.params) for job in plan.jobs] == [False, True, True, True]


def test_a_seedless_provider_gets_takes_without_seeds(tmp_path: Path,
                                                       catalog: StaticCatalog) -> None:
    plan = plan_text(tmp_path, "prompt\na fox\n", catalog, takes=2, provider="fixed")
    assert len(plan.jobs) == 2 and not any("seed" in job.params for job in plan.jobs)


def test_up_to_100_takes_with_the_price_said_above_10(tmp_path: Path,
                                                       catalog: StaticCatalog) -> None:
    plan = plan_text(tmp_path, "prompt\na fox\n", catalog, takes=11)
    assert len(plan.jobs) == 11
    words = plan.takes_words()
    assert words is not None and "up to 11 of a row" in words and "$" in words
    assert len(plan_text(tmp_path, "prompt\na fox\n", catalog, takes=100).jobs) == 100
    for bad in (0, 101):
        with pytest.raises(InputError, match="Takes per row"):
            plan_text(tmp_path, "prompt\na fox\n", catalog, takes=bad)


def test_a_rows_takes_are_one_take_group(tmp_path: Path, catalog: StaticCatalog) -> None:
    plan = plan_text(tmp_path, SHEET, catalog, takes=2)
    from dataclasses import replace

    from reelqueue.domain.models import Job
    from reelqueue.domain.states import JobState

    jobs = [Job(id=i, batch_id=1, job_key=spec.job_key, row_number=spec.row_number,
                name=spec.name, prompt=spec.prompt, provider=spec.provider, params=spec.params,
                pinned_account=None, priority=0, output_path=spec.output_path,
                state=JobState.QUEUED, attempts=0, max_attempts=3, account=None,
                claim_token=None, lease_owner=None, lease_until=None, client_token=None,
                provider_job_id=None, sub_status=None, progress=None, run_after=0.0,
                output_size=None, output_sha256=None, cost=None, error_class=None,
                error_label=None, error_message=None, created_at=0.0, updated_at=0.0,
                started_at=None, finished_at=None, metadata=spec.metadata)
            for i, spec in enumerate(reversed(plan.jobs), start=1)]
    jobs.append(replace(jobs[0], id=99, job_key=jobs[-1].job_key + "~seed7"))
    groups = take_groups(jobs)
    assert [(g.row_number, len(g.takes)) for g in groups] == [(2, 3), (3, 2), (4, 2)]


def test_a_test_run_takes_every_take_of_its_rows(tmp_path: Path,
                                                  catalog: StaticCatalog) -> None:
    plan = plan_text(tmp_path, SHEET, catalog, takes=3)
    first = plan.first_rows(2)
    assert [job.row_number for job in first.jobs] == [2, 2, 2, 3, 3, 3]
    assert first.estimate.jobs == 6
    assert len(plan.first_rows(3).jobs) == 8 and plan.first_rows(0).jobs == []
