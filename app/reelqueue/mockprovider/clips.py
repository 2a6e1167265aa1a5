"""The mock's clip of a prompt (issue 35 item 6): a short video per prompt and seed, its
colours and motion drawn from them and the prompt's first words written in, so two takes
of a demo look different and the same prompt and seed always give the same file.

Made with PyAV (libx264, 160x90, 24 fps, one second: a few KB, well under 50 KB and 100 ms)
once, then read from :class:`ClipCache`'s folder. Without PyAV, or with
``--plain-video``, the mock serves its one sample video as before (:meth:`ClipCache.clip`
gives None).
"""

from __future__ import annotations

import hashlib
import logging
import os
import threading
from collections import OrderedDict
from pathlib import Path
from typing import Any

log = logging.getLogger(__name__)

__all__ = ["CLIP_VERSION", "ClipCache", "default_clip_dir", "render_clip"]

#: part of every clip's cache name: a change of the drawing makes new files
CLIP_VERSION = 1
WIDTH, HEIGHT, FPS, FRAMES = 160, 90, 24, 24
SCALE = 2  # the 5x7 font drawn at 10x14
_LINE_CHARS = WIDTH // (6 * SCALE)
#: files kept in the folder; past it the oldest go (a long demo renders many prompts)
MAX_FILES = 1000
#: clips kept in memory
MAX_IN_MEMORY = 32

# The classic 5x7 LCD font (capitals, digits, a little punctuation): five columns per
# glyph, bit 0 the top row.
_FONT: dict[str, bytes] = {
    " ": bytes(5), "!": bytes.fromhex("00005f0000"), "'": bytes.fromhex("0005030000"),
    ",": bytes.fromhex("0050300000"), "-": bytes.fromhex("0808080808"),
    ".": bytes.fromhex("0060600000"), ":": bytes.fromhex("0036360000"),
    "?": bytes.fromhex("0201510906"),
    "0": bytes.fromhex("3e5149453e"), "1": bytes.fromhex("00427f4000"),
    "2": bytes.fromhex("4261514946"), "3": bytes.fromhex("2141454b31"),
    "4": bytes.fromhex("1814127f10"), "5": bytes.fromhex("2745454539"),
    "6": bytes.fromhex("3c4a494930"), "7": bytes.fromhex("0171090503"),
    "8": bytes.fromhex("3649494936"), "9": bytes.fromhex("064949291e"),
    "A": bytes.fromhex("7e1111117e"), "B": bytes.fromhex("7f49494936"),
    "C": bytes.fromhex("3e41414122"), "D": bytes.fromhex("7f4141221c"),
    "E": bytes.fromhex("7f49494941"), "F": bytes.fromhex("7f09090101"),
    "G": bytes.fromhex("3e41415132"), "H": bytes.fromhex("7f0808087f"),
    "I": bytes.fromhex("00417f4100"), "J": bytes.fromhex("2040413f01"),
    "K": bytes.fromhex("7f08142241"), "L": bytes.fromhex("7f40404040"),
    "M": bytes.fromhex("7f0204027f"), "N": bytes.fromhex("7f0408107f"),
    "O": bytes.fromhex("3e4141413e"), "P": bytes.fromhex("7f09090906"),
    "Q": bytes.fromhex("3e4151215e"), "R": bytes.fromhex("7f09192946"),
    "S": bytes.fromhex("4649494931"), "T": bytes.fromhex("01017f0101"),
    "U": bytes.fromhex("3f4040403f"), "V": bytes.fromhex("1f2040201f"),
    "W": bytes.fromhex("7f2018207f"), "X": bytes.fromhex("6314081463"),
    "Y": bytes.fromhex("0304780403"), "Z": bytes.fromhex("6151494543"),
}


def default_clip_dir() -> Path:
    """The mock's folder of clips: in the user's cache folder (safe to delete)."""
    import platformdirs

    return platformdirs.user_cache_path("ReelQueue", appauthor=False) / "mock-clips"


def _lines(prompt: str) -> list[str]:
    """The prompt's first words in capitals, in at most two lines of the frame's width."""
    words = ["".join(c if c in _FONT else " " for c in word.upper()).strip()
             for word in prompt.split()]
    lines: list[str] = []
    current = ""
    for word in filter(None, words):
        word = word[:_LINE_CHARS]
        if current and len(current) + 1 + len(word) > _LINE_CHARS:
            lines.append(current)
            current = ""
            if len(lines) == 2:
                break
        current = f"{current} {word}" if current else word
    if current and len(lines) < 2:
        lines.append(current)
    return lines


def _hue(byte: int, shift: int) -> tuple[int, int, int]:
    """A saturated colour from one byte of the digest."""
    sector, rest = divmod((byte + shift) % 256 * 6, 256)
    up, down = rest, 255 - rest
    return [(255, up, 40), (down, 255, 40), (40, 255, up), (40, down, 255),
            (up, 40, 255), (255, 40, down)][sector % 6]


def render_clip(prompt: str, seed: object) -> bytes:
    """The clip of ``prompt`` and ``seed`` as MP4 bytes (PyAV must be installed)."""
    import io

    import av

    digest = hashlib.sha256(repr((CLIP_VERSION, prompt, seed)).encode("utf-8",
                                                                     "surrogatepass")).digest()
    top, bottom = _hue(digest[0], 0), _hue(digest[1], 96)
    mover = _hue(digest[2], 160)
    row_size = WIDTH * 3
    base = bytearray()
    for y in range(HEIGHT):
        mix = y / (HEIGHT - 1)
        colour = bytes(int(a + (b - a) * mix) for a, b in zip(top, bottom, strict=True))
        if y >= 50:  # a dark band under the words
            colour = bytes(c // 4 for c in colour)
        base += colour * WIDTH
    white = b"\xff\xff\xff" * SCALE
    for line_number, line in enumerate(_lines(prompt)):
        y0 = 54 + line_number * 18
        x0 = max(2, (WIDTH - len(line) * 6 * SCALE) // 2)
        for index, char in enumerate(line):
            for column, bits in enumerate(_FONT[char]):
                x = x0 + (index * 6 + column) * SCALE
                for row in range(7):
                    if bits >> row & 1:
                        for dy in range(SCALE):
                            start = (y0 + row * SCALE + dy) * row_size + x * 3
                            base[start:start + 3 * SCALE] = white
    size = 12 + digest[3] % 12
    speed_x = 1 + digest[4] % 5
    speed_y = 1 + digest[5] % 3
    block = bytes(mover) * size
    output = io.BytesIO()
    with av.open(output, mode="w", format="mp4") as container:
        stream = container.add_stream("libx264", rate=FPS)
        stream.width, stream.height, stream.pix_fmt = WIDTH, HEIGHT, "yuv420p"
        # One thread: the same prompt and seed give the same bytes on every machine.
        stream.options = {"preset": "ultrafast", "crf": "30", "threads": "1"}
        for index in range(FRAMES):
            picture = bytearray(base)
            x = (digest[6] + speed_x * index * 2) % (WIDTH - size)
            bounce = (digest[7] + speed_y * index * 2) % (2 * (48 - size))
            y = bounce if bounce < 48 - size else 2 * (48 - size) - bounce
            for dy in range(size):
                start = (y + dy) * row_size + x * 3
                picture[start:start + 3 * size] = block
            frame: Any = av.VideoFrame(WIDTH, HEIGHT, "rgb24")
            frame.planes[0].update(bytes(picture))
            frame.pts = index
            for packet in stream.encode(frame):
                container.mux(packet)
        for packet in stream.encode():
            container.mux(packet)
    return output.getvalue()


class ClipCache:
    """Clips by prompt and seed: in memory, in a folder, else made (thread-safe: the mock's
    request threads share one).

    Attributes:
        folder: where clips are kept (made on first use).
    """

    def __init__(self, folder: Path | None = None) -> None:
        self.folder = folder if folder is not None else default_clip_dir()
        self._lock = threading.Lock()
        self._memory: OrderedDict[str, bytes] = OrderedDict()
        self._writes = 0
        self.made = 0  # clips rendered by this cache (the rest were read)

    @staticmethod
    def available() -> bool:
        try:
            import av  # noqa: F401
        except ImportError:
            return False
        return True

    def clip(self, prompt: str, seed: object) -> bytes | None:
        """The clip of ``prompt`` and ``seed``; None when it cannot be made (no PyAV, or
        PyAV failed: logged), so the caller serves its sample."""
        name = hashlib.sha256(repr((CLIP_VERSION, prompt, seed)).encode(
            "utf-8", "surrogatepass")).hexdigest()[:32] + ".mp4"
        with self._lock:
            held = self._memory.get(name)
            if held is not None:
                self._memory.move_to_end(name)
                return held
            data = self._read(name)
            if data is None:
                try:
                    data = render_clip(prompt, seed)
                except ImportError:
                    return None
                except Exception:  # PyAV's own errors: the sample is served instead
                    log.exception("the mock could not render a clip; serving its sample")
                    return None
                self.made += 1
                self._write(name, data)
            self._memory[name] = data
            if len(self._memory) > MAX_IN_MEMORY:
                self._memory.popitem(last=False)
            return data

    def _read(self, name: str) -> bytes | None:
        try:
            return (self.folder / name).read_bytes()
        except OSError:
            return None

    def _write(self, name: str, data: bytes) -> None:
        """Kept in the folder for the next time (a folder that cannot be written is only
        a slower mock)."""
        try:
            self.folder.mkdir(parents=True, exist_ok=True)
            partial = self.folder / f".{name}.{os.getpid()}.part"
            partial.write_bytes(data)
            os.replace(partial, self.folder / name)
            self._writes += 1
            if self._writes % 100 == 1:
                self._prune()
        except OSError as exc:
            log.info("the mock's clip folder %s cannot be written (%s)", self.folder, exc)

    def _prune(self) -> None:
        files = sorted(self.folder.glob("*.mp4"), key=lambda p: p.stat().st_mtime)
        for old in files[:max(0, len(files) - MAX_FILES)]:
            old.unlink(missing_ok=True)
