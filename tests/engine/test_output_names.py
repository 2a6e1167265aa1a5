"""Output names (issue 22): a name the journal did not record is the user's. The download
picks a free suffixed name, and the rename into place never replaces anything — also
a file, a folder or a dangling link that appears at the name during the download."""

from __future__ import annotations

import asyncio
import os
import random
from collections.abc import AsyncIterator
from pathlib import Path

import pytest
from hypothesis import given, settings
from hypothesis import strategies as st

from reelqueue.domain.errors import ErrorClass, ErrorLabel, ProviderError
from reelqueue.domain.models import AccountSpec, BatchSpec, JobSpec
from reelqueue.domain.states import JobState
from reelqueue.engine.engine import Engine
from reelqueue.engine.outputs import (
    OUTPUT_NAME_CLEANED,
    OutputWriter,
    WrittenFile,
    free_output_name,
    is_absolute,
)
from reelqueue.store.memory import MemoryStore
from tests.engine.fakes import VIDEO, FakeProvider, Script
from tests.engine.test_engine import FAST, install

pytestmark = pytest.mark.unit


def test_a_free_name_is_kept_and_a_taken_one_gets_the_first_free_suffix(
        tmp_path: Path) -> None:
    planned = tmp_path / "clip.mp4"
    assert free_output_name(planned) == planned
    planned.write_bytes(b"mine")
    assert free_output_name(planned) == tmp_path / "clip (2).mp4"
    (tmp_path / "clip (2).mp4").write_bytes(b"mine too")
    os.symlink(tmp_path / "nowhere", tmp_path / "clip (3).mp4")  # dangling: still taken
    (tmp_path / "clip (4).mp4").mkdir()
    assert free_output_name(planned) == tmp_path / "clip (5).mp4"
    # A suffixed name (an earlier download's) that is taken gives the next, not "(2) (2)".
    assert free_output_name(tmp_path / "clip (2).mp4") == tmp_path / "clip (5).mp4"
    # "take (1)" is the sheet's own name: its "(1)" stays.
    (tmp_path / "take (1).mp4").write_bytes(b"x")
    assert free_output_name(tmp_path / "take (1).mp4") == tmp_path / "take (1) (2).mp4"


def test_a_suffixed_name_stays_within_255_bytes(tmp_path: Path) -> None:
    planned = tmp_path / ("é" * 125 + ".mp4")  # 254 bytes
    planned.write_bytes(b"x")
    chosen = free_output_name(planned)
    assert len(chosen.name.encode()) <= 255 and chosen.name.endswith(" (2).mp4")
    chosen.write_bytes(b"the name can be created")


async def chunks() -> AsyncIterator[bytes]:
    yield VIDEO


@pytest.mark.parametrize("blocker", ["file", "folder", "dangling link"])
async def test_a_name_taken_during_the_download_is_never_replaced(
        tmp_path: Path, blocker: str) -> None:
    final = tmp_path / "clip.mp4"
    recorded: list[WrittenFile] = []

    async def take_the_name(written: WrittenFile) -> None:
        recorded.append(written)  # the hash is recorded, then the user's file appears
        if blocker == "file":
            final.write_bytes(b"the user's")
        elif blocker == "folder":
            final.mkdir()
        else:
            os.symlink(tmp_path / "nowhere", final)

    writer = OutputWriter()
    try:
        with pytest.raises(ProviderError) as caught:
            await writer.write_atomically(chunks(), final, "claim-token-1",
                                          before_publish=take_the_name)
    finally:
        writer.shutdown()
    assert caught.value.error_class == ErrorClass.RETRYABLE
    assert caught.value.label == ErrorLabel.DOWNLOAD_FAILED
    assert len(recorded) == 1 and recorded[0].size == len(VIDEO)
    if blocker == "file":
        assert final.read_bytes() == b"the user's"
    elif blocker == "folder":
        assert final.is_dir() and not any(final.iterdir())
    else:
        assert final.is_symlink() and not (tmp_path / "nowhere").exists()
    assert sorted(p.name for p in tmp_path.iterdir()) == ["clip.mp4"], "no .part left"


async def test_a_failing_record_discards_the_download_before_it_has_a_name(
        tmp_path: Path) -> None:
    final = tmp_path / "clip.mp4"

    async def fenced_out(written: WrittenFile) -> None:
        raise RuntimeError("claim lost")

    writer = OutputWriter()
    try:
        with pytest.raises(RuntimeError, match="claim lost"):
            await writer.write_atomically(chunks(), final, "claim-token-1",
                                          before_publish=fenced_out)
    finally:
        writer.shutdown()
    assert list(tmp_path.iterdir()) == []


@settings(max_examples=3000, deadline=None)
@given(st.text(alphabet="/\\:aZ1. ?é\u0663\u01c4", max_size=8))
def test_is_absolute_says_what_the_two_path_flavours_say(stored: str) -> None:
    """The string tests (a 100,000-row table asks twice a row) against their definition:
    absolute on POSIX, or a Windows drive or share."""
    from pathlib import PurePosixPath, PureWindowsPath

    expected = (PurePosixPath(stored).is_absolute() or bool(PureWindowsPath(stored).drive)
                or stored.startswith(("/", "\\")))
    assert is_absolute(stored) == expected


@settings(max_examples=3000, deadline=None)
@given(st.text(alphabet="/\\:aZ1. ?é\u0663\u01c4~", max_size=12),
       st.sampled_from(["/videos", "/", "/home/ann/Videos/ReelQueue/", "/tmp/a b"]))
def test_the_tables_paths_by_string_say_what_pathlib_says(stored: str, base: str) -> None:
    """The jobs table places 100,000 journal paths under the videos folder by string
    (application/outputs.py local_path_texts); pathlib's join is the definition."""
    from reelqueue.application.outputs import local_path_texts, local_paths

    slow = local_paths(Path(base))(stored)
    assert local_path_texts(Path(base))(stored) == (None if slow is None else str(slow))


# -- issue 34: a name from a team database's row is made safe where the file is written ---
async def test_a_hostile_name_in_the_journal_is_written_under_its_cleaned_name(
        tmp_path: Path) -> None:
    store = MemoryStore()
    out = tmp_path / "out"
    batch = store.create_batch(BatchSpec("b", "s.csv", str(out)), 0)
    hostile = "\x1b[31mclip\u202egpj.desktop"
    store.add_jobs(batch.id, [JobSpec("k0", "p", "fake", str(out / hostile))], 0)
    store.add_account(AccountSpec("a", "fake", 1), 0)
    engine = Engine(store, providers=install(FakeProvider({"p": Script()})), config=FAST,
                    rng=random.Random(1))
    await engine.start()
    await asyncio.wait_for(engine.run_until_drained(), 20)
    await engine.stop()
    engine.close_store()
    [job] = store.list_jobs()
    assert job.state == JobState.COMPLETED, job
    assert sorted(p.name for p in out.iterdir()) == ["clipgpj.desktop.mp4"]
    assert job.output_path == str(out / "clipgpj.desktop.mp4")
    [note] = [e for e in store.ledger(job.id) if e.event == OUTPUT_NAME_CLEANED]
    assert note.detail == {"from": hostile, "to": "clipgpj.desktop.mp4"}
