"""The window's own files in the data folder (settings.json, session.json) are files on
disk, so hostile input: a damaged or planted one gives the defaults and a line in the log,
never a crash at start, a read of gigabytes or a start that blocks."""

from __future__ import annotations

import os
import threading
from collections.abc import Callable
from pathlib import Path

import pytest

from reelqueue.ui.settings import (
    MAX_FILE_BYTES,
    SESSION_NAME,
    SETTINGS_NAME,
    SessionMarker,
    Settings,
    load_settings,
    read_marker,
    save_settings,
)


def nested(path: Path) -> None:
    path.write_text("[" * 200_000, "utf-8")  # past the parser's recursion limit


def not_utf8(path: Path) -> None:
    path.write_bytes(b'{"theme": "\xff\xfe"}')


def too_large(path: Path) -> None:  # valid JSON, one byte over the bound
    padding = MAX_FILE_BYTES - len('{"theme": "dark", "x": ""}') + 1
    path.write_text('{"theme": "dark", "x": "' + "a" * padding + '"}', "utf-8")


def huge_sparse(path: Path) -> None:  # 3 GiB of zeros that take no disk
    with path.open("wb") as handle:
        handle.truncate(3 << 30)


def a_folder(path: Path) -> None:
    path.mkdir()


def a_fifo(path: Path) -> None:  # opening one to read blocks until a writer comes
    os.mkfifo(path)


def not_an_object(path: Path) -> None:
    path.write_text('["theme", "dark"]', "utf-8")


HOSTILE = [nested, not_utf8, too_large, huge_sparse, a_folder, a_fifo, not_an_object]


def within(seconds: float, read: Callable[[], object]) -> object:
    """``read()`` on a thread, failing the test (not hanging it) if it blocks."""
    answer: list[object] = []
    worker = threading.Thread(target=lambda: answer.append(read()), daemon=True)
    worker.start()
    worker.join(seconds)
    assert answer, f"reading blocked for more than {seconds} s"
    return answer[0]


@pytest.mark.expect_warnings(r"(settings|session)\.json is (unreadable|not a regular file|"
                             r"larger than)")
@pytest.mark.parametrize("plant", HOSTILE, ids=lambda plant: plant.__name__)
def test_a_hostile_settings_or_session_file_gives_the_defaults(
        tmp_path: Path, plant: Callable[[Path], None]) -> None:
    if plant is a_fifo and not hasattr(os, "mkfifo"):
        pytest.skip("no FIFOs on this platform")
    plant(tmp_path / SETTINGS_NAME)
    plant(tmp_path / SESSION_NAME)
    assert within(30, lambda: load_settings(tmp_path)) == Settings().checked()
    assert within(30, lambda: read_marker(tmp_path)) == SessionMarker()


def test_a_settings_file_under_the_bound_is_read(tmp_path: Path) -> None:
    """The bound does not cut what the window writes itself (and a little more)."""
    save_settings(tmp_path, Settings(theme="dark", filename_template="{row}_{name}"))
    path = tmp_path / SETTINGS_NAME
    path.write_text(path.read_text("utf-8")[:-1] + ', "x": "' + "a" * 4096 + '"}', "utf-8")
    loaded = load_settings(tmp_path)
    assert loaded.theme == "dark" and loaded.filename_template == "{row}_{name}"
