"""The cut (issue 35 item 5): picks in sheet order to an MP4 (stream copy or re-encode),
an .otio timeline read back by OpenTimelineIO, FCP XML and an EDL; gaps, sound, changed
files and takes held by another machine."""

from __future__ import annotations

import shutil
from dataclasses import replace
from pathlib import Path

import av
import opentimelineio as otio
import pytest

from reelqueue.application.cut import (
    CutOptions,
    picks_from_journal,
    plan_cut,
    write_cut,
)
from reelqueue.application.take_groups import take_group_key, take_groups, take_number
from reelqueue.domain.errors import InputError
from reelqueue.domain.models import Batch, Job
from reelqueue.domain.states import JobState
from reelqueue.store.base import this_host
from tests.application.media_clips import make_clip, seconds_of, video_seconds

FRAME = 1 / 12


def _batch() -> Batch:
    return Batch(id=1, name="Trailer", source_path="s.csv", output_dir="Trailer",
                 max_attempts=3, created_at=0.0, settings={})


def _job(job_id: int, key: str, row: int, file: str, sha: str | None = None,
         **changes: object) -> Job:
    job = Job(id=job_id, batch_id=1, job_key=key, row_number=row, name=f"row{row}",
              prompt="p", provider="mock", params={"seed": job_id}, pinned_account=None,
              priority=0, output_path=f"Trailer/{file}", state=JobState.COMPLETED,
              attempts=1, max_attempts=3, account="a", claim_token=None, lease_owner=None,
              lease_until=None, client_token=None, provider_job_id="r", sub_status=None,
              progress=None, run_after=0.0, output_size=1, output_sha256=sha, cost=None,
              error_class=None, error_label=None, error_message=None, created_at=0.0,
              updated_at=0.0, started_at=0.0, finished_at=1.0, metadata={},
              output_host=this_host())
    return replace(job, **changes)


@pytest.fixture
def videos(tmp_path: Path) -> Path:
    (tmp_path / "Trailer").mkdir()
    return tmp_path


def _cut(videos: Path, jobs: list[Job], picks: list[str], **options: object):  # type: ignore[no-untyped-def]
    plan = plan_cut(_batch(), picks_from_journal(jobs, picks), videos,
                    CutOptions(**options))  # type: ignore[arg-type]
    return plan, write_cut(plan)


def test_take_groups_join_repeats_and_new_seeds_in_sheet_order() -> None:
    jobs = [_job(1, "row:b", 2, "b.mp4"), _job(2, "row:a~2#2~seed9", 1, "a2s.mp4"),
            _job(3, "row:a~2", 1, "a.mp4"), _job(4, "row:a~2#2", 1, "a2.mp4"),
            _job(5, "row:a~2~seed5", 1, "as.mp4")]
    groups = take_groups(jobs)
    assert [g.key for g in groups] == ["row:a~2", "row:b"]
    assert [j.id for j in groups[0].takes] == [3, 5, 4, 2]
    assert take_group_key("row:a~2#3~seed42") == "row:a~2"
    assert take_number("row:a~2#3~seed42") == 3 and take_number("row:a") == 1


def test_picks_are_named_once_per_row() -> None:
    jobs = [_job(1, "row:a", 1, "a.mp4"), _job(2, "row:a#2", 1, "a2.mp4"),
            _job(3, "row:b", 2, "b.mp4")]
    with pytest.raises(InputError, match="No take of this batch is picked yet"):
        picks_from_journal(jobs, [])
    with pytest.raises(InputError, match="picked twice"):
        picks_from_journal(jobs, ["1", "row:a#2"])
    with pytest.raises(InputError, match="not a job of this batch"):
        picks_from_journal(jobs, ["99"])
    rows = picks_from_journal(jobs, ["row:a#2"])
    assert [(r.group.key, r.pick.id if r.pick else None) for r in rows] == [
        ("row:a", 2), ("row:b", None)]


def test_identical_takes_are_a_stream_copy_and_the_otio_reads_back(videos: Path) -> None:
    sha_a = make_clip(videos / "Trailer" / "a.mp4")
    sha_b = make_clip(videos / "Trailer" / "b.mp4", rgb=(20, 200, 40), seconds=2.0)
    jobs = [_job(1, "row:a", 1, "a.mp4", sha_a), _job(2, "row:b", 2, "b.mp4", sha_b)]
    plan, result = _cut(videos, jobs, ["1", "2"])
    assert plan.copy and plan.reencode_reasons == ()
    assert result.mp4 == videos / "Trailer" / "cut" / "Trailer-cut-1.mp4"
    assert video_seconds(result.mp4) == pytest.approx(3.0, abs=FRAME)
    with av.open(str(result.mp4)) as container:
        assert container.streams.video[0].frames == 36
    timeline = otio.adapters.read_from_file(str(result.mp4.with_suffix(".otio")))
    clips = list(timeline.find_clips())
    assert [c.media_reference.target_url for c in clips] == ["../a.mp4", "../b.mp4"]
    assert [c.source_range.duration.to_seconds() for c in clips] == [1.0, 2.0]
    assert clips[1].metadata["reelqueue"]["job_id"] == 2
    for suffix in (".xml", ".edl"):
        assert result.mp4.with_suffix(suffix).stat().st_size > 0
    xml = result.mp4.with_suffix(".xml").read_text()
    assert (videos / "Trailer" / "a.mp4").as_uri() in xml
    assert "a.mp4" in result.mp4.with_suffix(".edl").read_text()
    # A new number each time; nothing left at a temporary name.
    _plan, again = _cut(videos, jobs, ["1"])
    assert again.mp4.name == "Trailer-cut-2.mp4"
    assert not [p for p in (videos / "Trailer" / "cut").iterdir() if p.name.startswith(".")]


def test_mixed_sizes_gap_and_sound_are_re_encoded(videos: Path) -> None:
    folder = videos / "Trailer"
    jobs = [_job(1, "row:a", 1, "a.mp4", make_clip(folder / "a.mp4")),
            _job(2, "row:b", 2, "b.mp4", None, state=JobState.FAILED,
                 params={"duration": 2}),
            _job(3, "row:c", 3, "c.mp4", make_clip(folder / "c.mp4", width=80, height=48,
                                                   audio=True))]
    plan, result = _cut(videos, jobs, ["1", "3"])
    assert not plan.copy
    words = plan.method_words()
    assert "re-encoded with libx264" in words and "black" in words
    assert "width differs (64 in a.mp4, 80 in c.mp4)" in words and "sound" in words
    assert plan.duration == pytest.approx(4.0)
    assert seconds_of(result.mp4) == pytest.approx(4.0, abs=0.1)
    assert video_seconds(result.mp4) == pytest.approx(4.0, abs=FRAME)
    with av.open(str(result.mp4)) as container:
        assert container.streams.video[0].codec_context.width == 64
        audio = container.streams.audio[0]
        assert float(audio.duration * audio.time_base) == pytest.approx(4.0, abs=0.05)
    timeline = otio.adapters.read_from_file(str(result.mp4.with_suffix(".otio")))
    kinds = [type(item).__name__ for item in timeline.tracks[0]]
    assert kinds == ["Clip", "Gap", "Clip"]
    assert timeline.tracks[0][1].source_range.duration.to_seconds() == 2.0
    # --skip-gaps: the row without a pick is left out.
    plan, result = _cut(videos, jobs, ["1", "3"], skip_gaps=True)
    assert plan.gaps == 0
    assert video_seconds(result.mp4) == pytest.approx(2.0, abs=FRAME)


def test_a_changed_file_is_named_and_left_out_unless_asked(videos: Path) -> None:
    folder = videos / "Trailer"
    jobs = [_job(1, "row:a", 1, "a.mp4", make_clip(folder / "a.mp4")),
            _job(2, "row:b", 2, "b.mp4", make_clip(folder / "b.mp4", seconds=2.0))]
    make_clip(folder / "b.mp4", rgb=(0, 0, 255), seconds=2.0)  # edited after the render
    plan, result = _cut(videos, jobs, ["1", "2"])
    assert len(plan.left_out) == 1 and "b.mp4 changed since it was rendered" in plan.left_out[0]
    assert plan.gaps == 1 and result.notes == plan.left_out
    assert video_seconds(result.mp4) == pytest.approx(1.0 + 5.0, abs=FRAME)
    plan, result = _cut(videos, jobs, ["1", "2"], use_changed=True)
    assert plan.copy and plan.gaps == 0
    assert video_seconds(result.mp4) == pytest.approx(3.0, abs=FRAME)


def test_takes_held_by_another_machine_are_refused_or_fetched(videos: Path,
                                                              tmp_path: Path) -> None:
    elsewhere = tmp_path / "other"
    elsewhere.mkdir()
    sha = make_clip(elsewhere / "b.mp4")
    folder = videos / "Trailer"
    jobs = [_job(1, "row:a", 1, "a.mp4", make_clip(folder / "a.mp4")),
            _job(2, "row:b", 2, "b.mp4", sha, output_host="render-box")]
    with pytest.raises(InputError, match=r"job 2 is on render-box.*--from-api"):
        _cut(videos, jobs, ["1", "2"])
    fetched: list[int] = []

    def fetch(job: Job, target: Path) -> None:
        fetched.append(job.id)
        shutil.copyfile(elsewhere / "b.mp4", target)

    plan, result = _cut(videos, jobs, ["1", "2"], fetch=fetch)
    assert fetched == [2] and plan.copy
    assert any("fetched from render-box" in note for note in result.notes)
    clips = list(otio.adapters.read_from_file(
        str(result.mp4.with_suffix(".otio"))).find_clips())
    assert clips[1].media_reference.target_url == "fetched/2-b.mp4"


def test_a_pick_without_a_video_is_refused(videos: Path) -> None:
    jobs = [_job(1, "row:a", 1, "a.mp4", None, state=JobState.QUEUED)]
    with pytest.raises(InputError, match=r"row 1 .*job 1 has no finished video"):
        _cut(videos, jobs, ["1"])


def test_picks_alike_with_sound_are_copied_with_their_sound(videos: Path) -> None:
    folder = videos / "Trailer"
    jobs = [_job(1, "row:a", 1, "a.mp4", make_clip(folder / "a.mp4", audio=True)),
            _job(2, "row:b", 2, "b.mp4", make_clip(folder / "b.mp4", audio=True,
                                                   rgb=(0, 90, 200)))]
    plan, result = _cut(videos, jobs, ["1", "2"])
    assert plan.copy
    with av.open(str(result.mp4)) as container:
        audio = container.streams.audio[0]
        assert float(audio.duration * audio.time_base) == pytest.approx(2.0, abs=0.05)
    assert video_seconds(result.mp4) == pytest.approx(2.0, abs=FRAME)


def test_without_named_picks_the_reviews_picks_are_cut() -> None:
    """The review's decisions are the picks (issue 35: review, then cut); naming takes with
    --pick replaces them for that cut."""
    from reelqueue.domain.review import Decision, Review

    picked = Review(decision=Decision.PICK, version=1)
    rejected = Review(decision=Decision.REJECT, version=1)
    jobs = [_job(1, "row:a", 1, "a.mp4", review=rejected),
            _job(2, "row:a#2", 1, "a2.mp4", review=picked),
            _job(3, "row:b", 2, "b.mp4"), _job(4, "row:b#2", 2, "b2.mp4")]
    rows = picks_from_journal(jobs)
    assert [(row.group.key, row.pick.id if row.pick else None) for row in rows] == [
        ("row:a", 2), ("row:b", None)]
    named = picks_from_journal(jobs, ["1", "4"])
    assert [row.pick.id if row.pick else None for row in named] == [1, 4]
