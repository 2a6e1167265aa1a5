"""Reference (first-frame) images named in a sheet: https URLs, or local image files.

A sheet comes from anyone, so a local image is pinned at import (issue 11, item 5):

- its path is confined to the sheet's folder and its subfolders, however it is written
  (relative, or absolute: most sheets name files by their absolute path; a ``..`` that
  stays inside is fine) unless the user allows images from other folders
  (``--allow-images-anywhere``, or the import dialog's "Allow images from other folders");
- it is opened without following a symbolic link at the last step, and its real path must
  stay inside the allowed folder, so a link cannot smuggle in ``~/.ssh/id_rsa``;
- it must be a regular file of at most :data:`MAX_IMAGE_BYTES` that starts like a PNG, JPEG
  or WebP image;
- its sha256 is recorded with the job (``params["image_sha256"]``). At render time the
  adapter reads the file once, with the same checks, and refuses it if the bytes differ
  (``providers/adapters/_images.load_image``): a file swapped after import is never sent.

Results are cached per path, because one image is often named by thousands of rows.
"""

from __future__ import annotations

import hashlib
import os
from pathlib import Path
from urllib.parse import urlsplit

from reelqueue.domain.images import ImageProblem, image_kind, read_pinned_image
from reelqueue.intake.fields import FieldProblem, cell_text

__all__ = ["IMAGE_ACCEPTED", "PIN_FIELD", "ImageChecker", "image_kind"]

IMAGE_ACCEPTED = "an https:// URL, or the path of a PNG, JPEG or WebP file"
PIN_FIELD = "image_sha256"
"""The params key that holds a local image's sha256, recorded at import."""


ALLOW_HINT = ("--allow-images-anywhere, or \"Allow images from other folders\" in the "
              "import dialog")


def _inside(path: str, folder: str) -> bool:
    return os.path.commonpath([path, folder]) == folder


class ImageChecker:
    """Checks reference-image cells against one sheet's folder.

    Attributes:
        base_dir: where relative paths are looked up (the sheet's folder).
        anywhere: True lets a row name an image outside ``base_dir``; links are still
            refused at the last step.
    """

    def __init__(self, base_dir: Path, *, anywhere: bool = False,
                 opened_as: Path | None = None) -> None:
        self.base_dir = base_dir
        self.anywhere = anywhere
        self._real_base = os.path.realpath(base_dir)
        # The folder as written and as the sheet was opened (a path through a linked
        # folder names the same files): where an absolute path may point.
        self._written_bases = {os.path.abspath(base_dir), self._real_base,
                               *([os.path.abspath(opened_as)] if opened_as else [])}
        self._checked: dict[str, str | FieldProblem] = {}
        self._pins: dict[str, str] = {}

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

    def pin(self, checked: object) -> str | None:
        """The sha256 recorded for a path :meth:`check` returned; None for a URL."""
        return self._pins.get(checked) if isinstance(checked, str) else None

    def _check(self, text: str) -> str:
        if "://" in text:
            parts = urlsplit(text)
            if parts.scheme.lower() != "https" or not parts.hostname:
                raise FieldProblem(
                    f"the image URL {text!r} does not use https", IMAGE_ACCEPTED
                )
            return text
        given = Path(text).expanduser()
        path = given if given.is_absolute() else self.base_dir / given
        real = os.path.realpath(path)
        if not self.anywhere:
            # Where the cell points as written (absolute, relative, with ``..``): inside
            # the sheet's folder as the user sees it, or through its real path.
            written = os.path.normpath(os.path.abspath(path))
            if not any(_inside(written, folder) for folder in self._written_bases):
                raise FieldProblem(
                    # The reason first: a table cell shows its start.
                    f"the image is outside the sheet's folder ({self.base_dir}): {text!r}",
                    f"a file in {self.base_dir} (or allow images from other folders: "
                    f"{ALLOW_HINT})",
                )
            # The path as the loader will open it: a link (of a folder on the way) must
            # not lead out of the sheet's folder.
            if not _inside(real, self._real_base):
                raise FieldProblem(
                    f"the image leads outside the sheet's folder ({self.base_dir}) "
                    f"through a symbolic link: {text!r}",
                    f"a file in {self.base_dir} (or allow images from other folders: "
                    f"{ALLOW_HINT})",
                )
        try:
            data = read_pinned_image(path)
        except ImageProblem as problem:
            raise FieldProblem(str(problem), IMAGE_ACCEPTED) from None
        self._pins[real] = hashlib.sha256(data).hexdigest()
        return real
