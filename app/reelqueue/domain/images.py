"""What a usable local reference image is: a regular file, read once, not through a link
at its last step, at most :data:`MAX_IMAGE_BYTES`, starting like a PNG, JPEG or WebP image.

Checked at import (intake/images.py, which also pins its sha256) and again by the adapter
at render time (providers/adapters/_images.load_image), with this one function.
"""

from __future__ import annotations

import os
import stat
from pathlib import Path

MAX_IMAGE_BYTES = 20 * 1024 * 1024
"""The largest local reference image accepted: more than a first frame ever needs, and
a bound on what one row can make ReelQueue read and send."""
_NOFOLLOW = getattr(os, "O_NOFOLLOW", 0)


def image_kind(head: bytes) -> str | None:
    """"png", "jpeg" or "webp" from a file's first 12 bytes; None for anything else."""
    if head.startswith(b"\x89PNG\r\n\x1a\n"):
        return "png"
    if head.startswith(b"\xff\xd8\xff"):
        return "jpeg"
    if head[:4] == b"RIFF" and head[8:12] == b"WEBP":
        return "webp"
    return None


class ImageProblem(ValueError):
    """A local image that may not be used; the message says why, in the user's words."""


def read_pinned_image(path: Path, *, max_bytes: int = MAX_IMAGE_BYTES) -> bytes:
    """The bytes of a local image, read once, checked: a regular file (not through a link
    at its last step), at most ``max_bytes``, with an image signature.

    Raises :class:`ImageProblem`. Used at import and again at render time.
    """
    try:
        # O_NONBLOCK: a FIFO named as an image must not hang the import until a writer
        # comes; it is refused below as not a regular file.
        fd = os.open(path, os.O_RDONLY | _NOFOLLOW | getattr(os, "O_NONBLOCK", 0)
                     | getattr(os, "O_BINARY", 0))
    except FileNotFoundError:
        raise ImageProblem(f"the image {path.name!r} does not exist") from None
    except OSError as exc:
        if path.is_symlink():
            raise ImageProblem(f"the image {path.name!r} is a symbolic link; name the file "
                               "itself") from None
        raise ImageProblem(f"the image {path.name!r} cannot be read "
                           f"({exc.strerror or exc})") from None
    try:
        info = os.fstat(fd)
        if stat.S_ISDIR(info.st_mode):
            raise ImageProblem(f"the image {path.name!r} is a folder")
        if not stat.S_ISREG(info.st_mode):
            raise ImageProblem(f"the image {path.name!r} is not a regular file")
        if info.st_size > max_bytes:
            raise ImageProblem(f"the image {path.name!r} is {info.st_size / 2**20:.1f} MB; "
                               f"the limit is {max_bytes / 2**20:.0f} MB")
        with os.fdopen(os.dup(fd), "rb") as handle:
            data = handle.read(max_bytes + 1)
    finally:
        os.close(fd)
    if len(data) > max_bytes:
        raise ImageProblem(f"the image {path.name!r} is larger than "
                           f"{max_bytes / 2**20:.0f} MB")
    if image_kind(data[:12]) is None:
        raise ImageProblem(f"{path.name!r} is not a PNG, JPEG or WebP image")
    return data
