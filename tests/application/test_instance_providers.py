"""``reelqueue instances`` says which machine has which provider, and explains a job that
waits for a provider no machine has (issue 36 item 2): on the local journal from this
machine's registry, on the team database from the running machines' rows (a machine whose
providers are unknown may have it: said, not guessed)."""

from __future__ import annotations

import argparse
import io
import json
from pathlib import Path

import pytest

from reelqueue.application.team import (
    RUNNING,
    SILENT,
    STOPPED,
    TeamMachine,
    providers_words,
    unserved_lines,
)
from reelqueue.cli import cmd_instances
from reelqueue.cli.context import CliContext
from reelqueue.domain.clock import FakeClock
from reelqueue.domain.models import BatchSpec, JobSpec
from reelqueue.store.sqlite import SqliteStore


def machine(host: str, state: str, providers: tuple[str, ...] | None) -> TeamMachine:
    return TeamMachine(id=host, host=host, pid=1, version="v", started_at=0.0,
                       heartbeat_at=0.0, live_renders=0, state=state, silent_for=0.0,
                       providers=providers)


def test_a_provider_no_running_machine_has_is_named_with_its_waiting_jobs() -> None:
    machines = [machine("box-a", RUNNING, ("mock", "veo")),
                machine("box-b", SILENT, ("sample",)),  # gone: it claims nothing
                machine("box-c", STOPPED, ("sample",))]
    lines = unserved_lines({"veo": 3, "sample": 2, "luma": 0}, machines, team_store=True)
    assert lines == ["2 jobs wait for provider sample, which no running machine has: "
                     "install it on one, or start ReelQueue where it is."]
    assert unserved_lines({"veo": 3}, machines, team_store=True) == []


def test_a_machine_of_unknown_providers_is_said_not_guessed() -> None:
    machines = [machine("box-a", RUNNING, ("mock",)), machine("box-old", RUNNING, None)]
    assert unserved_lines({"sample": 1}, machines, team_store=True) == [
        "1 job waits for provider sample: no running machine says it has it "
        "(box-old: providers unknown)."]
    assert providers_words(machines[1]) == "providers unknown"
    assert providers_words(machines[0]) == "providers mock"
    assert providers_words(machine("x", RUNNING, ())) == "no providers"


def test_no_running_machine_is_said_by_the_count_not_per_provider() -> None:
    assert unserved_lines({"sample": 4}, [machine("a", SILENT, ("mock",))],
                          team_store=True) == []


@pytest.fixture
def ctx(tmp_path: Path) -> CliContext:
    return CliContext(data_dir=tmp_path / "data", videos_dir=tmp_path / "videos",
                      out=io.StringIO(), clock=FakeClock())


def run(ctx: CliContext, *argv: str) -> str:
    parser = argparse.ArgumentParser()
    cmd_instances.register(parser.add_subparsers(dest="command"))
    args = parser.parse_args(["instances", *argv])
    assert isinstance(ctx.out, io.StringIO)
    ctx.out.seek(0)
    ctx.out.truncate()
    assert int(args.handler(args, ctx)) == 0
    return ctx.out.getvalue()


def test_the_local_journal_names_this_machines_providers_and_a_job_none_has(
        ctx: CliContext, tmp_path: Path) -> None:
    ctx.data_dir.mkdir(parents=True)
    store = SqliteStore.open(ctx.journal_path, now=0)
    batch = store.create_batch(BatchSpec("b", "s.csv", str(tmp_path / "out")), 0)
    store.add_jobs(batch.id, [
        JobSpec(f"k{i}", "a paper boat", kind, str(tmp_path / "out" / f"{i}.mp4"),
                row_number=i + 2) for i, kind in enumerate(["not-installed", "mock"])], 0)
    store.close()
    text = run(ctx)
    assert "providers " in text and "mock" in text.split("providers ", 1)[1]
    assert ("1 job waits for provider not-installed, which this machine does not have"
            in text)
    assert "provider mock," not in text
    (row,) = json.loads(run(ctx, "--json"))
    assert "mock" in row["providers"] and "not-installed" not in row["providers"]
