"""The web dashboard's thumbnail cache is bounded (issue 37's "left": it had no bound):
past its file count or its bytes, the pictures used longest ago go first, and only the
cache's own files are touched."""

from __future__ import annotations

import os
from pathlib import Path

import pytest

from reelqueue.application import keyframes
from reelqueue.application.keyframes import CACHE_VERSION, thumbnail_png, trim_cache

pytestmark = pytest.mark.unit


def _picture(folder: Path, name: str, size: int, used: float) -> Path:
    path = folder / f"{name}-w1.png"
    path.write_bytes(b"p" * size)
    os.utime(path, (used, used))
    return path


def test_the_cache_keeps_its_newest_pictures_within_its_file_count(tmp_path: Path) -> None:
    paths = [_picture(tmp_path, f"{n:064x}", 10, 1_000 + n) for n in range(10)]
    kept = tmp_path / "notes.txt"
    kept.write_text("not the cache's")
    assert trim_cache(tmp_path, max_bytes=10_000, max_files=4) == 6
    assert [p.exists() for p in paths] == [False] * 6 + [True] * 4
    assert kept.exists(), "only the cache's own files"
    assert trim_cache(tmp_path, max_bytes=10_000, max_files=4) == 0


def test_the_cache_keeps_within_its_bytes(tmp_path: Path) -> None:
    paths = [_picture(tmp_path, f"{n:064x}", 100, 1_000 + n) for n in range(5)]
    assert trim_cache(tmp_path, max_bytes=250, max_files=100) == 3
    assert [p.exists() for p in paths] == [False, False, False, True, True]


def test_a_picture_read_from_the_cache_counts_as_used(tmp_path: Path,
                                                      monkeypatch: pytest.MonkeyPatch) -> None:
    old, new = "a" * 64, "b" * 64
    first = _picture(tmp_path, old, 10, 1_000)
    _picture(tmp_path, new, 10, 2_000)
    assert thumbnail_png(tmp_path / "video.mp4", old, tmp_path) == b"p" * 10
    assert trim_cache(tmp_path, max_bytes=10_000, max_files=1) == 1
    assert first.exists(), "read just now: the other one was used longer ago"


def test_writing_pictures_trims_the_cache(tmp_path: Path,
                                          monkeypatch: pytest.MonkeyPatch) -> None:
    """No video decodes here (the names are not videos): each miss caches "no picture",
    an empty file, and the cache still never holds more than its bound plus a trim's
    interval."""
    monkeypatch.setattr(keyframes, "CACHE_MAX_FILES", 5)
    monkeypatch.setattr(keyframes, "TRIM_EVERY", 2)
    monkeypatch.setattr(keyframes, "trim_cache",
                        lambda folder: trim_cache(folder, max_files=5))
    for n in range(20):
        assert thumbnail_png(tmp_path / "missing.mp4", f"{n:064x}", tmp_path) is None
        assert len(list(tmp_path.iterdir())) <= 5 + 2
    assert len(list(tmp_path.iterdir())) <= 6


@pytest.mark.skipif(not hasattr(os, "mkfifo"), reason="no FIFOs here")
@pytest.mark.parametrize("planted", ["fifo", "huge"])
def test_a_cache_entry_we_did_not_write_is_made_again_not_read(tmp_path: Path,
                                                               planted: str) -> None:
    """The cache is a folder on disk: a FIFO under a picture's name must not block the
    gallery, a file of gigabytes must not be read into memory. Either is written over
    (here with "no picture": the video is missing)."""
    sha = "ab" * 32
    target = tmp_path / f"{sha}-{CACHE_VERSION}.png"
    if planted == "fifo":
        os.mkfifo(target)
    else:
        with target.open("wb") as handle:
            handle.truncate(3 << 30)  # sparse: takes no disk
    assert thumbnail_png(tmp_path / "missing.mp4", sha, tmp_path) is None
    assert target.is_file() and target.stat().st_size == 0, "made again over it"
