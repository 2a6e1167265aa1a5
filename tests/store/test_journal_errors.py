"""The journal's error paths say what happened (issue 11, item 6).

Real failures where the machine allows them: a full tmpfs (ENOSPC during a commit), a
read-only remount, a damaged page written into the file. Each must reach the user as the
plain message of its kind, never as a raw SQLite text, "cannot rollback" or exit 70.
"""

from __future__ import annotations

import contextlib
import os
import sqlite3
import stat
import subprocess
import sys
from collections.abc import Iterator
from pathlib import Path

import pytest

from reelqueue.domain.errors import (
    JournalBug,
    JournalBusy,
    JournalCorrupt,
    JournalError,
    JournalFull,
    JournalReadOnly,
    KnownError,
)
from reelqueue.domain.models import BatchSpec
from reelqueue.store.lockfile import LOCK_NAME, DataDirLock
from reelqueue.store.sqlite import SqliteStore, _known_error
from tests.conftest import make_specs

CLI = [sys.executable, "-m", "reelqueue"]


def rq(data: Path, *args: str, cwd: Path | None = None) -> subprocess.CompletedProcess[str]:
    return subprocess.run([*CLI, "--data-dir", str(data), "--videos-dir",
                           str(data.parent / "videos"), *args],
                          capture_output=True, text=True, timeout=120, check=False, cwd=cwd)


@contextlib.contextmanager
def tmpfs(where: Path, size: str) -> Iterator[Path]:
    """A small real file system, or a skip where this machine may not mount one."""
    where.mkdir()
    mounted = subprocess.run(["mount", "-t", "tmpfs", "-o", f"size={size}", "tmpfs",
                              str(where)], capture_output=True, check=False)
    if mounted.returncode != 0:
        pytest.skip("mounting a tmpfs needs root (CI runs as root)")
    try:
        yield where
    finally:
        subprocess.run(["umount", "-l", str(where)], check=False)


def test_primary_result_codes_sort_errors_into_plain_kinds() -> None:
    def error(code: int, text: str = "x") -> sqlite3.Error:
        exc = sqlite3.OperationalError(text)
        exc.sqlite_errorcode = code  # type: ignore[attr-defined]
        return exc

    # Extended codes keep their primary code in the low byte (SQLITE_IOERR_WRITE = 778).
    assert isinstance(_known_error(error(13)), JournalFull)
    assert isinstance(_known_error(error(8)), JournalReadOnly)
    assert isinstance(_known_error(error(8 | (1 << 8))), JournalReadOnly)
    assert isinstance(_known_error(error(14)), JournalReadOnly)
    assert isinstance(_known_error(error(5)), JournalBusy)
    assert isinstance(_known_error(error(6)), JournalBusy)
    assert isinstance(_known_error(error(11)), JournalCorrupt)
    assert isinstance(_known_error(error(26)), JournalCorrupt)
    assert type(_known_error(error(778))) is JournalError
    # A constraint or a syntax error is ours: reported as a bug, not blamed on the disk.
    bug = _known_error(error(19, "CHECK constraint failed"))
    assert isinstance(bug, JournalBug) and not isinstance(bug, KnownError)
    assert "bug" in str(bug)


def test_sqlite_full_during_a_write_says_full_not_cannot_rollback(tmp_path: Path) -> None:
    store = SqliteStore.open(tmp_path / "journal.sqlite3", now=1.0)
    try:
        batch = store.create_batch(BatchSpec("b", "s.csv", str(tmp_path)), 1.0)
        pages = store.raw_connection().execute("PRAGMA page_count").fetchone()[0]
        # SQLite's own SQLITE_FULL, as a full disk gives it, without a full disk.
        store.raw_connection().execute(f"PRAGMA max_page_count = {pages + 2}")
        with pytest.raises(JournalFull, match="full") as caught:
            store.add_jobs(batch.id, make_specs(tmp_path, 2000), 1.0)
        assert "rollback" not in str(caught.value).lower()
        # The store is still usable: the failed transaction left nothing half written.
        assert sum(store.counts().by_state.values()) == 0
        store.raw_connection().execute("PRAGMA max_page_count = 1073741823")
        store.add_jobs(batch.id, make_specs(tmp_path, 3), 1.0)
        assert sum(store.counts().by_state.values()) == 3
    finally:
        store.close()


def test_real_enospc_during_an_import_is_a_plain_message(tmp_path: Path) -> None:
    with tmpfs(tmp_path / "small", "600k") as small:
        data = small / "data"
        sheet = tmp_path / "sheet.csv"
        rows = "\n".join(f"shot{i},{'a long prompt for a full disk ' * 8}{i}"
                         for i in range(4000))
        sheet.write_text("name,prompt\n" + rows + "\n", encoding="utf-8")
        done = rq(data, "import", str(sheet), "--provider", "mock")
        assert done.returncode == 2, done.stderr
        assert "full" in done.stderr.lower()
        assert "Traceback" not in done.stderr and "rollback" not in done.stderr.lower()


def test_read_only_data_folder_says_read_only(tmp_path: Path) -> None:
    with tmpfs(tmp_path / "ro", "8m") as mount:
        data = mount / "data"
        sheet = tmp_path / "sheet.csv"
        sheet.write_text("name,prompt\nshot,a cat\n", encoding="utf-8")
        assert rq(data, "status").returncode == 0
        subprocess.run(["mount", "-o", "remount,ro", str(mount)], check=True)
        done = rq(data, "import", str(sheet), "--provider", "mock")
        assert done.returncode == 2, done.stderr
        assert "read-only" in done.stderr.lower(), done.stderr
        assert "free some space" not in done.stderr.lower()
        assert "Traceback" not in done.stderr


def test_a_damaged_page_says_damaged_with_exit_2(tmp_path: Path) -> None:
    data = tmp_path / "data"
    data.mkdir()
    store = SqliteStore.open(data / "journal.sqlite3", now=1.0)
    batch = store.create_batch(BatchSpec("b", "s.csv", str(tmp_path)), 1.0)
    store.add_jobs(batch.id, make_specs(tmp_path, 3000), 1.0)
    store.raw_connection().execute("PRAGMA wal_checkpoint(TRUNCATE)")
    store.close()
    journal = data / "journal.sqlite3"
    with journal.open("r+b") as handle:
        page_size = 4096
        # Overwrite interior pages (past the header page) with garbage.
        for page in range(3, 12):
            handle.seek(page * page_size)
            handle.write(b"\xa5" * page_size)
    done = rq(data, "status")
    assert done.returncode == 2, (done.returncode, done.stderr)
    assert "damaged" in done.stderr.lower(), done.stderr
    assert "malformed" not in done.stderr.split("(")[0].lower()
    assert "Traceback" not in done.stderr


def test_lock_file_is_never_opened_through_a_link(tmp_path: Path) -> None:
    data = tmp_path / "data"
    data.mkdir()
    victim = tmp_path / "victim.txt"
    victim.write_text("precious", encoding="utf-8")
    (data / LOCK_NAME).symlink_to(victim)
    with pytest.raises(JournalError, match="symbolic link"):
        DataDirLock(data).acquire()
    assert victim.read_text(encoding="utf-8") == "precious"


@pytest.mark.skipif(sys.platform == "win32", reason="POSIX modes")
def test_data_and_log_folders_are_private(tmp_path: Path) -> None:
    data = tmp_path / "data"
    old = os.umask(0o022)
    try:
        done = rq(data, "status")
    finally:
        os.umask(old)
    assert done.returncode == 0, done.stderr
    log_file = data / "logs" / "reelqueue.log"
    assert log_file.exists()
    assert stat.S_IMODE(data.stat().st_mode) == 0o700
    assert stat.S_IMODE((data / "logs").stat().st_mode) == 0o700
    assert stat.S_IMODE(log_file.stat().st_mode) == 0o600


@pytest.mark.skipif(sys.platform == "win32", reason="POSIX modes")
def test_a_wide_existing_data_folder_is_narrowed(tmp_path: Path) -> None:
    data = tmp_path / "data"
    (data / "logs").mkdir(parents=True)
    data.chmod(0o755)
    (data / "logs").chmod(0o755)
    done = rq(data, "status")
    assert done.returncode == 0, done.stderr
    assert stat.S_IMODE(data.stat().st_mode) == 0o700
    assert stat.S_IMODE((data / "logs").stat().st_mode) == 0o700
