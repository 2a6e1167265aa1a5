"""Thumbnails from PyAV on a worker thread, cached by sha256; damaged videos give the
placeholder; the job detail shows the picture and Play says when nothing opened."""

from __future__ import annotations

import hashlib
import os
import shutil
import threading
from pathlib import Path

import pytest
from PySide6.QtGui import QImage

from reelqueue.application import keyframes
from reelqueue.domain.models import AccountSpec, BatchSpec, JobSpec
from reelqueue.engine.queries import JobDetail
from reelqueue.store.base import ClaimParams
from reelqueue.store.memory import MemoryStore
from reelqueue.ui import thumbnails
from reelqueue.ui.job_detail import JobDetailDialog
from reelqueue.ui.preview import PreviewPane
from reelqueue.ui.thumbnails import Thumbnail, Thumbnailer, cached_thumbnail
from tests.gui.conftest import save_screenshot

REPO = Path(__file__).resolve().parents[2]
SAMPLE = REPO / "resources" / "sample.mp4"


def ask(qtbot, thumbnailer: Thumbnailer, video: Path, sha256: str | None = None) -> Thumbnail:
    with qtbot.waitSignal(thumbnailer.ready, timeout=20_000) as blocker:
        thumbnailer.request(video, sha256)
    thumb = blocker.args[0]
    assert isinstance(thumb, Thumbnail) and thumb.video == str(video)
    return thumb


def test_thumbnail_is_made_off_the_gui_thread_and_cached(qtbot, tmp_path: Path) -> None:
    video = tmp_path / "clip.mp4"
    shutil.copyfile(SAMPLE, video)
    cache = tmp_path / "data" / "thumbnails"
    thumbnailer = Thumbnailer(cache)
    made = ask(qtbot, thumbnailer, video)
    assert made.source == "made"
    assert made.thread != threading.current_thread().name
    assert made.thread.startswith("reelqueue-thumbnails")
    assert made.image is not None and not made.image.isNull()
    assert (made.image.width(), made.image.height()) == (160, 90), "never scaled up"
    sha = hashlib.sha256(SAMPLE.read_bytes()).hexdigest()
    assert [p.name for p in cache.iterdir()] == [f"{sha}-{thumbnails.CACHE_VERSION}.jpg"]
    again = ask(qtbot, thumbnailer, video)
    assert again.source == "cache" and again.image is not None
    thumbnailer.close()
    # A new window (empty memory) reads the picture from disk, by sha256, without
    # decoding: the video is garbage now, and the picture still comes.
    video.write_bytes(os.urandom(4096))
    fresh = Thumbnailer(cache)
    from_disk = ask(qtbot, fresh, video, sha)
    assert from_disk.source == "cache" and from_disk.image is not None
    assert from_disk.image.size() == made.image.size()
    fresh.close()


@pytest.mark.skipif(not hasattr(os, "getpriority") or os.uname().sysname != "Linux",
                    reason="a thread's own nice value is Linux's")
def test_the_decoding_worker_yields_the_cpu_to_the_window(qtbot, tmp_path: Path) -> None:
    """A 1080p keyframe is a quarter of a second of decoding: at the window's priority the
    worker took a core from it on a busy machine. It runs niced, as the gallery's do."""
    video = tmp_path / "clip.mp4"
    shutil.copyfile(SAMPLE, video)
    thumbnailer = Thumbnailer(tmp_path / "thumbnails")
    made = ask(qtbot, thumbnailer, video)
    (worker,) = [t for t in threading.enumerate() if t.name == made.thread]
    assert worker.native_id is not None
    window = os.getpriority(os.PRIO_PROCESS, threading.get_native_id())
    assert os.getpriority(os.PRIO_PROCESS, worker.native_id) == min(
        19, window + thumbnails.WORKER_NICE)
    thumbnailer.close()


def damaged_videos(folder: Path) -> list[Path]:
    data = SAMPLE.read_bytes()
    flipped = bytearray(data)
    for i in range(600, len(flipped), 5):
        flipped[i] ^= 0xA5
    cases = {"empty.mp4": b"", "half.mp4": data[: len(data) // 2], "noise.mp4": os.urandom(6000),
             "flipped.mp4": bytes(flipped), "header-only.mp4": data[:64],
             "text.mp4": b"<html>not a video</html>" * 40}
    paths = []
    for name, content in cases.items():
        path = folder / name
        path.write_bytes(content)
        paths.append(path)
    return paths


def test_damaged_videos_give_the_placeholder(qtbot, tmp_path: Path) -> None:
    cache = tmp_path / "thumbnails"
    thumbnailer = Thumbnailer(cache)
    for video in damaged_videos(tmp_path):
        thumb = ask(qtbot, thumbnailer, video)
        assert (thumb.source, thumb.image) == ("failed", None), video.name
        # the refusal is remembered: the file is not read again
        assert cached_thumbnail(video, cache) == (None, "cache")
    assert cached_thumbnail(tmp_path / "missing.mp4", cache) == (None, "failed")
    thumbnailer.close()


def test_pictures_beyond_the_limits_are_refused(tmp_path: Path,
                                                monkeypatch: pytest.MonkeyPatch) -> None:
    """The sample is 160x90: with a 100-pixel side limit it is 'too big', and refused
    before anything is decoded."""
    monkeypatch.setattr(keyframes, "MAX_SIDE", 100)  # the bounded read is shared
    video = tmp_path / "clip.mp4"
    shutil.copyfile(SAMPLE, video)
    with pytest.raises(thumbnails.ThumbnailError, match="outside the limits"):
        thumbnails.decode_first_keyframe(video)
    assert cached_thumbnail(video, tmp_path / "cache") == (None, "failed")


def completed_job(tmp_path: Path, video: Path) -> JobDetail:
    store = MemoryStore()
    batch = store.create_batch(BatchSpec("b", "s.csv", str(tmp_path)), 1.0)
    store.add_jobs(batch.id, [JobSpec(job_key="k", prompt="a fox", provider="mock",
                                      output_path=str(video), name="fox")], 1.0)
    store.add_account(AccountSpec("acct", "mock", 1), 1.0)
    claim = store.claim_next_job(ClaimParams("acct", "inst", 2.0, 60.0))
    assert claim is not None
    assert store.mark_submitting(claim.token, "ct", 2.0)
    assert store.record_submitted(claim.token, "pj", 2.0)
    assert store.mark_downloading(claim.token, 3.0)
    sha = hashlib.sha256(video.read_bytes()).hexdigest()
    assert store.mark_completed(claim.token, size=video.stat().st_size, sha256=sha,
                                cost=None, now=4.0)
    job = store.get_job(claim.job.id)
    assert job is not None
    return JobDetail(job, store.ledger(job_id=job.id))


def test_job_detail_shows_the_thumbnail_and_says_when_nothing_played(
    qtbot, tmp_path: Path
) -> None:
    video = tmp_path / "fox.mp4"
    shutil.copyfile(SAMPLE, video)
    thumbnailer = Thumbnailer(tmp_path / "thumbnails")
    opened: list[Path] = []

    def no_player(path: Path) -> bool:
        opened.append(path)
        return False

    dialog = JobDetailDialog(1, thumbnails=thumbnailer,
                             preview=PreviewPane(opener=no_player, inline=False))
    qtbot.addWidget(dialog)
    placeholder = dialog.thumbnail.pixmap().toImage()
    assert not dialog.preview.has_picture
    with qtbot.waitSignal(thumbnailer.ready, timeout=20_000):
        dialog.set_detail(completed_job(tmp_path, video))
    assert dialog.preview.has_picture
    save_screenshot(dialog, "job-detail-thumbnail")
    shown = dialog.thumbnail.pixmap().toImage()
    assert shown.size() != placeholder.size(), "the video's picture replaced the film frame"
    assert shown.width() > 48 and shown.format() != QImage.Format.Format_Invalid
    assert dialog.open_button.text() == "Play" and dialog.open_button.isEnabled()
    dialog.open_button.click()
    assert opened == [video]
    assert not dialog.play_notice.isHidden()
    assert "No video player opened fox.mp4" in dialog.play_notice.text()
    thumbnailer.close()


def test_play_opens_the_system_player(qtbot, tmp_path: Path) -> None:
    pane = PreviewPane(opener=lambda _path: True, inline=False)
    qtbot.addWidget(pane)
    with qtbot.waitSignal(pane.notice) as blocker:
        pane.play(tmp_path / "fox.mp4")
    assert blocker.args == ["Opened fox.mp4 in your video player."]
