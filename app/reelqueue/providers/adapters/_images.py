"""Reference images of a row: an https link as given, or the bytes of a data: URI or a
local file (read with the import's checks and refused if changed since the import)."""

from __future__ import annotations

import asyncio
import base64
import binascii
import hashlib
import mimetypes
import re
from dataclasses import dataclass
from pathlib import Path
from typing import Any
from urllib.parse import urlsplit

from reelqueue.domain.errors import ErrorClass, ErrorLabel, ProviderError
from reelqueue.domain.images import ImageProblem, read_pinned_image


@dataclass(frozen=True)
class ImageInput:
    """A reference image: a public https URL as given, or bytes (from a path or data: URI).

    Attributes:
        url: the https URL, when the row gave one.
        data: the image bytes, when it gave a file or a data: URI.
        mime_type: the image's type, guessed from the name when not stated.
    """

    url: str | None
    data: bytes | None
    mime_type: str

    def b64(self) -> str:
        return base64.b64encode(self.data or b"").decode("ascii")

    def data_uri(self) -> str:
        return f"data:{self.mime_type};base64,{self.b64()}"

    def url_or_data_uri(self) -> str:
        return self.url or self.data_uri()


def image_kind(value: Any) -> str:
    """"url", "data" or "file" for a reference-image cell; "" when empty."""
    if value is None or str(value).strip() == "":
        return ""
    text = str(value).strip()
    if text.startswith("https://"):
        return "url"
    if text.startswith("data:"):
        return "data"
    return "file"


_DATA_URI = re.compile(r"^data:(?P<mime>[\w.+-]+/[\w.+-]+)?(?P<b64>;base64)?,(?P<data>.*)$",
                       re.DOTALL)


async def load_image(value: Any, title: str, pin: Any = None) -> ImageInput:
    """Read a reference image cell (https URL, data: URI or local file path).

    A local file is read once with the import's checks (a regular file, not through a
    link, an image signature, a size cap: intake/images.py) and, when the job recorded its
    sha256 at import (``params["image_sha256"]``, passed as ``pin``), refused if its bytes
    changed since: a file swapped after import is never sent to the provider.
    """
    text = str(value).strip()
    kind = image_kind(text)
    if kind == "url":
        mime = mimetypes.guess_type(urlsplit(text).path)[0] or "image/jpeg"
        return ImageInput(url=text, data=None, mime_type=mime)
    if kind == "data":
        match = _DATA_URI.match(text)
        if not match or not match.group("b64"):
            raise _bad_image(title, "the data: URI is not base64 image data")
        try:
            data = base64.b64decode(match.group("data"), validate=True)
        except (binascii.Error, ValueError):
            raise _bad_image(title, "the data: URI is not valid base64") from None
        return ImageInput(url=None, data=data, mime_type=match.group("mime") or "image/png")
    path = Path(text).expanduser()
    try:
        data = await asyncio.to_thread(read_pinned_image, path)
    except ImageProblem as problem:
        raise _bad_image(title, str(problem)) from None
    if isinstance(pin, str) and pin and hashlib.sha256(data).hexdigest() != pin.lower():
        raise _bad_image(title, f"{path.name!r} changed after the sheet was imported; "
                                "nothing of it was sent. Import the sheet again to use the "
                                "new file")
    mime = mimetypes.guess_type(path.name)[0] or "image/png"
    return ImageInput(url=None, data=data, mime_type=mime)


def _bad_image(title: str, why: str) -> ProviderError:
    return ProviderError(f"{title}: reference image unusable: {why}",
                         error_class=ErrorClass.PERMANENT, label=ErrorLabel.INVALID_INPUT)
