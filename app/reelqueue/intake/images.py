"""Reference (first-frame) images named in a sheet: https URLs, or local image files.

A local path is read relative to the sheet's folder; the file must exist, be readable and
start like a PNG, JPEG or WebP image. Results are cached per path, because one image is
often named by thousands of rows.
"""

from __future__ import annotations

from pathlib import Path
from urllib.parse import urlsplit

from reelqueue.intake.fields import FieldProblem, cell_text

IMAGE_ACCEPTED = "an https:// URL, or the path of a PNG, JPEG or WebP file"


def image_kind(head: bytes) -> str | None:
    """"png", "jpeg" or "webp" from a file's first 12 bytes; None for anything else."""
    if head.startswith(b"\x89PNG\r\n\x1a\n"):
        return "png"
    if head.startswith(b"\xff\xd8\xff"):
        return "jpeg"
    if head[:4] == b"RIFF" and head[8:12] == b"WEBP":
        return "webp"
    return None


class ImageChecker:
    """Checks reference-image cells against one sheet's folder.

    Attributes:
        base_dir: where relative paths are looked up (the sheet's folder).
    """

    def __init__(self, base_dir: Path) -> None:
        self.base_dir = base_dir
        self._checked: dict[str, str | FieldProblem] = {}

    def check(self, value: object) -> str:
        """The URL, or the absolute path of the image; FieldProblem if unusable."""
        text = cell_text(value)
        cached = self._checked.get(text)
        if cached is None:
            try:
                cached = self._check(text)
            except FieldProblem as problem:
                cached = problem
            self._checked[text] = cached
        if isinstance(cached, FieldProblem):
            raise cached
        return cached

    def _check(self, text: str) -> str:
        if "://" in text:
            parts = urlsplit(text)
            if parts.scheme.lower() != "https" or not parts.hostname:
                raise FieldProblem(
                    f"the image URL {text!r} does not use https", IMAGE_ACCEPTED
                )
            return text
        path = Path(text).expanduser()
        if not path.is_absolute():
            path = self.base_dir / path
        try:
            with path.open("rb") as image:
                head = image.read(12)
        except FileNotFoundError:
            raise FieldProblem(f"the image {text!r} does not exist", IMAGE_ACCEPTED) from None
        except IsADirectoryError:
            raise FieldProblem(f"the image {text!r} is a folder", IMAGE_ACCEPTED) from None
        except OSError as exc:
            raise FieldProblem(
                f"the image {text!r} cannot be read ({exc.strerror})", IMAGE_ACCEPTED
            ) from None
        if image_kind(head) is None:
            raise FieldProblem(
                f"{text!r} is not a PNG, JPEG or WebP image", IMAGE_ACCEPTED
            )
        return str(path.resolve())
