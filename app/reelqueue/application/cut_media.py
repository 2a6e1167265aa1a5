"""The cut's MP4 (issue 35 item 5): picks and gaps joined into one video with PyAV.

:func:`probe` reads what a stream copy needs to know of a take's file; :func:`copy_blockers`
says why the picks cannot be joined by a stream copy (empty: they can); :func:`write_mp4`
writes the segments (a file, or a gap of black) to a path, either by copying the packets
(every pick's codec, profile, level, extradata, pixel format, frame rate and time base the
same, no gap to draw) or by a re-encode with libx264 at the first pick's size and frame rate
(AAC audio: when any pick has sound, the others and the gaps get silence).

Pure of Qt and of the journal: :mod:`reelqueue.application.cut` decides what to join.
PyAV is imported when a function is called, so the rest of the app runs without it.
"""

from __future__ import annotations

from collections.abc import Callable, Generator, Sequence
from dataclasses import dataclass
from fractions import Fraction
from pathlib import Path
from typing import TYPE_CHECKING, Any

from reelqueue.domain.errors import InputError

if TYPE_CHECKING:
    import av.container

__all__ = ["AudioInfo", "MediaInfo", "Segment", "copy_blockers", "have_pyav", "probe",
           "write_mp4"]

#: a file's streams are read for at most this long (a broken or hostile file)
OPEN_TIMEOUT_SECONDS = 20.0
#: the re-encode's sound: what every pick's audio is resampled to
AUDIO_RATE = 48000
AUDIO_LAYOUT = "stereo"
_AUDIO_BYTES_PER_SAMPLE = 4  # s16, two channels, interleaved
_AUDIO_CHUNK = 1024
DEFAULT_FRAME_RATE = Fraction(24)
#: a re-encoded frame rate above this is held to it (a file that says 1000 fps)
MAX_FRAME_RATE = Fraction(120)


def have_pyav() -> bool:
    """Whether PyAV can be imported (the MP4 needs it)."""
    try:
        import av  # noqa: F401
    except ImportError:
        return False
    return True


@dataclass(frozen=True)
class AudioInfo:
    """A file's first audio stream: what a stream copy must find equal in every pick."""

    codec: str
    sample_rate: int
    layout: str
    extradata: bytes
    time_base: Fraction


@dataclass(frozen=True)
class MediaInfo:
    """A take's file as PyAV reads it.

    Attributes:
        path: the file.
        duration: its video's length in seconds.
        codec, profile, level, extradata, pix_fmt, frame_rate, time_base, width, height:
            its first video stream's (what a stream copy must find equal in every pick).
        audio: its first audio stream, or None.
    """

    path: Path
    duration: float
    codec: str
    profile: str | None
    level: int | None
    extradata: bytes
    pix_fmt: str | None
    frame_rate: Fraction | None
    time_base: Fraction
    width: int
    height: int
    audio: AudioInfo | None

    @property
    def copy_identity(self) -> tuple[object, ...]:
        """What must be equal between two picks for their packets to be joined."""
        return (self.codec, self.profile, self.level, self.pix_fmt, self.frame_rate,
                self.time_base, self.width, self.height, self.extradata)


@dataclass(frozen=True)
class Segment:
    """One piece of the cut: a pick's file, or a gap (``path`` None) of black."""

    duration: float
    path: Path | None = None
    info: MediaInfo | None = None


def _open(path: Path) -> av.container.InputContainer:
    import av

    try:
        return av.open(str(path), mode="r", timeout=OPEN_TIMEOUT_SECONDS)
    except (av.FFmpegError, OSError) as exc:
        raise InputError(f"{path.name} cannot be read as a video ({exc}).") from exc


def probe(path: Path) -> MediaInfo:
    """What :func:`write_mp4` needs to know of ``path``; InputError when it is no video."""
    import av

    with _open(path) as container:
        if not container.streams.video:
            raise InputError(f"{path.name} holds no video stream.")
        video = container.streams.video[0]
        context = video.codec_context
        time_base = video.time_base or Fraction(1, 90000)
        if video.duration:
            duration = float(video.duration * time_base)
        elif container.duration:
            duration = container.duration / av.time_base
        else:
            duration = 0.0
        if duration <= 0:
            raise InputError(f"{path.name} says no length; it cannot be placed in a cut.")
        rate = video.average_rate or video.guessed_rate
        audio = None
        if container.streams.audio:
            sound = container.streams.audio[0]
            audio = AudioInfo(sound.codec_context.name, sound.codec_context.sample_rate,
                              sound.codec_context.layout.name,
                              bytes(sound.codec_context.extradata or b""),
                              sound.time_base or Fraction(1, sound.codec_context.sample_rate
                                                          or AUDIO_RATE))
        return MediaInfo(path, duration, context.name, context.profile,
                         getattr(context, "level", None), bytes(context.extradata or b""),
                         context.pix_fmt, Fraction(rate) if rate else None, time_base,
                         context.width, context.height, audio)


def copy_blockers(segments: Sequence[Segment]) -> list[str]:
    """Why the segments cannot be joined by a stream copy, in the user's words (empty: they
    can: every pick's video and audio alike, no gap to draw)."""
    reasons: list[str] = []
    if any(segment.path is None for segment in segments):
        reasons.append("a row without a pick is black, which must be drawn")
    infos = [segment.info for segment in segments if segment.info is not None]
    if not infos:
        return reasons or ["there is no pick"]
    first = infos[0]
    # In the order the user can act on; the extradata (the encoder's settings) last.
    names = ("codec", "profile", "level", "pixel format", "frame rate", "time base",
             "width", "height")
    for info in infos[1:]:
        for name, mine, theirs in zip(names, first.copy_identity, info.copy_identity,
                                      strict=False):
            if mine != theirs:
                reasons.append(f"the {name} differs ({_shown(mine)} in {first.path.name}, "
                               f"{_shown(theirs)} in {info.path.name})")
                break
        else:
            if first.extradata != info.extradata:
                reasons.append(f"the encoder's settings (extradata) of {info.path.name} "
                               f"differ from {first.path.name}'s")
    sounds = {info.audio for info in infos}
    if len(sounds) > 1:
        if None in sounds:
            reasons.append("some picks have sound and others none (silence must be added)")
        else:
            reasons.append("the picks' sound differs (codec, rate, channels)")
    return reasons


def _shown(value: object) -> str:
    return "none" if value is None else str(value)


def write_mp4(segments: Sequence[Segment], target: Path, *, copy: bool,
              progress: Callable[[int, int], None] | None = None) -> None:
    """Join ``segments`` into the MP4 ``target`` (written in place: the caller gives a
    temporary name and renames it). ``copy``: packets are copied (the caller checked
    :func:`copy_blockers`); else everything is re-encoded. ``progress(done, total)`` is
    called after each segment. InputError for a file PyAV cannot read, OSError for disk."""
    import av

    if not any(segment.info is not None for segment in segments) and copy:
        raise InputError("A stream copy needs at least one pick.")
    try:
        with av.open(str(target), mode="w", format="mp4") as output:
            if copy:
                _copy(segments, output, progress)
            else:
                _encode(segments, output, progress)
    except av.FFmpegError as exc:
        raise InputError(f"The cut could not be written ({exc}).") from exc


def _copy(segments: Sequence[Segment], output: av.container.OutputContainer,
          progress: Callable[[int, int], None] | None) -> None:
    first = next(s.info for s in segments if s.info is not None)
    out_video: Any = None
    out_audio: Any = None
    start = 0.0
    last_dts: dict[str, int] = {}
    for index, segment in enumerate(segments):
        assert segment.path is not None  # copy_blockers refused gaps
        with _open(segment.path) as source:
            video = source.streams.video[0]
            audio = source.streams.audio[0] if source.streams.audio and first.audio else None
            if out_video is None:
                out_video = output.add_stream_from_template(video)
                if audio is not None:
                    out_audio = output.add_stream_from_template(audio)
            streams = [video] + ([audio] if audio is not None else [])
            firsts: dict[int, int] = {}
            for packet in source.demux(*streams):
                if packet.dts is None or packet.size == 0:
                    continue
                kind = packet.stream.type
                base = packet.stream.time_base or Fraction(1, 90000)
                first_ts = firsts.setdefault(packet.stream.index,
                                             packet.pts if packet.pts is not None
                                             else packet.dts)
                shift = round(start / base) - first_ts
                packet.dts += shift
                if packet.pts is not None:
                    packet.pts += shift
                # A B-frame clip's first dts lies before its first pts: held after the
                # previous clip's last one so the muxer's dts only grows.
                if kind in last_dts and packet.dts <= last_dts[kind]:
                    bump = last_dts[kind] + 1 - packet.dts
                    packet.dts += bump
                    if packet.pts is not None and packet.pts < packet.dts:
                        packet.pts = packet.dts
                last_dts[kind] = packet.dts
                packet.stream = out_video if kind == "video" else out_audio
                output.mux(packet)
        start += segment.duration
        if progress is not None:
            progress(index + 1, len(segments))


def _black(width: int, height: int) -> Any:
    import av

    frame = av.VideoFrame(width, height, "yuv420p")
    for plane, value in zip(frame.planes, (16, 128, 128), strict=True):
        plane.update(bytes([value]) * plane.buffer_size)
    return frame


def _video_frames(path: Path) -> Generator[tuple[float, Any], None, None]:
    """(time from the clip's start, frame) of ``path``'s video, in order."""
    with _open(path) as source:
        stream = source.streams.video[0]
        stream.thread_type = "AUTO"
        origin: float | None = None
        for frame in source.decode(stream):
            at = frame.time or 0.0  # a frame without a time stamp is placed at the start
            if origin is None:
                origin = at
            yield at - origin, frame


def _audio_bytes(path: Path, samples: int) -> bytes:
    """``samples`` of ``path``'s sound as s16 stereo at :data:`AUDIO_RATE`, cut or padded
    with silence (none when it has no sound)."""
    import av

    wanted = samples * _AUDIO_BYTES_PER_SAMPLE
    pieces: list[bytes] = []
    have = 0
    with _open(path) as source:
        if not source.streams.audio:
            return bytes(wanted)
        resampler = av.AudioResampler(format="s16", layout=AUDIO_LAYOUT, rate=AUDIO_RATE)
        for frame in source.decode(source.streams.audio[0]):
            for out in resampler.resample(frame):
                data = bytes(out.planes[0])[:out.samples * _AUDIO_BYTES_PER_SAMPLE]
                pieces.append(data)
                have += len(data)
            if have >= wanted:
                break
    joined = b"".join(pieces)[:wanted]
    return joined + bytes(wanted - len(joined))


def _encode(segments: Sequence[Segment], output: av.container.OutputContainer,
            progress: Callable[[int, int], None] | None) -> None:
    import av

    infos = [s.info for s in segments if s.info is not None]
    lead = infos[0] if infos else None
    width = max(2, (lead.width if lead else 640) // 2 * 2)
    height = max(2, (lead.height if lead else 360) // 2 * 2)
    rate = (lead.frame_rate if lead and lead.frame_rate else DEFAULT_FRAME_RATE)
    rate = min(rate, MAX_FRAME_RATE)
    video = output.add_stream("libx264", rate=rate)
    video.width, video.height, video.pix_fmt = width, height, "yuv420p"
    video.options = {"preset": "veryfast", "crf": "20"}
    sound = any(info.audio is not None for info in infos)
    audio: Any = None
    if sound:
        audio = output.add_stream("aac", rate=AUDIO_RATE)
        audio.layout = AUDIO_LAYOUT
    black = _black(width, height)
    start = 0.0
    frame_index = 0
    sample_index = 0
    for index, segment in enumerate(segments):
        end = start + segment.duration
        last_frame = round(end * rate)
        clip_frames = _video_frames(segment.path) if segment.path is not None else None
        current: Any = None
        upcoming = next(clip_frames, None) if clip_frames is not None else None
        while frame_index < last_frame:
            at = frame_index / rate - start
            # The clip's latest frame at this moment (a frame rate of its own is resampled).
            while upcoming is not None and upcoming[0] <= at + 1e-6:
                current = upcoming[1]
                upcoming = next(clip_frames, None) if clip_frames is not None else None
            if current is None and upcoming is not None:
                current = upcoming[1]
            picture = black if current is None else current.reformat(
                width=width, height=height, format="yuv420p")
            frame = picture
            frame.pts = frame_index
            frame.time_base = Fraction(1) / rate
            # A decoded frame says it was a key frame or not; the encoder chooses anew.
            frame.pict_type = av.video.frame.PictureType.NONE
            for packet in video.encode(frame):
                output.mux(packet)
            frame_index += 1
        if clip_frames is not None:
            clip_frames.close()
        if audio is not None:
            last_sample = round(end * AUDIO_RATE)
            samples = last_sample - sample_index
            data = (_audio_bytes(segment.path, samples) if segment.path is not None
                    and segment.info is not None and segment.info.audio is not None
                    else bytes(samples * _AUDIO_BYTES_PER_SAMPLE))
            for offset in range(0, samples, _AUDIO_CHUNK):
                count = min(_AUDIO_CHUNK, samples - offset)
                chunk = av.AudioFrame(format="s16", layout=AUDIO_LAYOUT, samples=count)
                chunk.planes[0].update(data[offset * _AUDIO_BYTES_PER_SAMPLE:
                                            (offset + count) * _AUDIO_BYTES_PER_SAMPLE])
                chunk.sample_rate = AUDIO_RATE
                chunk.pts = sample_index + offset
                for packet in audio.encode(chunk):
                    output.mux(packet)
            sample_index = last_sample
        start = end
        if progress is not None:
            progress(index + 1, len(segments))
    for packet in video.encode():
        output.mux(packet)
    if audio is not None:
        for packet in audio.encode():
            output.mux(packet)
