"""Video file names from a template, safe on Windows, macOS and Linux.

The template (``{row:03}_{name}`` by default) may use the fields in :data:`TEMPLATE_FIELDS`
with ordinary format specs; attribute or index access is refused. The rendered name is one
path component: separators and characters Windows forbids become ``_``, invisible
characters go (bidi controls that make ``gpj.exe`` read as ``exe.jpg``, zero-width spaces,
C1 controls), leading dots and trailing dots or spaces go (no ``..``, no hidden files),
reserved device names such as ``CON`` or ``COM1`` get a ``_`` after the device word, also
when an extension follows (``nul.txt`` is the NUL device to Windows: it becomes
``nul_.txt``), and the name is cut to :data:`MAX_STEM_CHARS`
characters and :data:`MAX_STEM_BYTES` UTF-8 bytes (file systems count bytes, 255 at most).
Collisions are resolved in row order, ignoring case (Windows and macOS do), by adding
``_2``, ``_3``...
"""

from __future__ import annotations

import re
import string
import unicodedata
from collections.abc import Mapping

from reelqueue.domain.errors import InputError

TEMPLATE_FIELDS = ("row", "name", "seed", "model", "provider", "date", "n", "id", "batch")
DEFAULT_TEMPLATE = "{row:03}_{name}"
VIDEO_SUFFIX = ".mp4"
VIDEO_SUFFIXES = frozenset({".mp4", ".m4v", ".mov", ".webm"})
"""The suffixes of what a download may be (engine/outputs.py looks_like_video)."""
MAX_STEM_CHARS = 150
MAX_STEM_BYTES = 200
NAME_FROM_PROMPT_CHARS = 40
FORBIDDEN = re.compile(r'[<>:"/\\|?*\x00-\x1f\x7f]')
RUNS = re.compile(r"[_\s]{2,}")
ANSI_ESCAPE = re.compile(r"\x1b\[[0-?]*[ -/]*[@-~]|\x1b\][^\x07\x1b]*(?:\x07|\x1b\\)?"
                         r"|\x1b[@-_]?")
"""Terminal escapes (colours, cursor moves, titles): taken out whole, not just their ESC."""
_CONFUSABLES = str.maketrans({
    ch: "_" for ch in "\u2044\u2215\u29f8\uff0f\u2216\u29f9\ufe68\uff3c"  # / and \\
                      "\u2024\u2025\u2026\ufe52\uff0e\u3002\uff61\ufe12"})  # dots
"""Look-alikes of ``/``, ``\\`` and ``.`` (fullwidth solidus, division slash, one-dot
leader...): a name cannot read as a path or as ``..``."""
RESERVED = frozenset(
    {"CON", "PRN", "AUX", "NUL", "CONIN$", "CONOUT$", "CLOCK$"}
    | {f"{device}{digit}" for device in ("COM", "LPT") for digit in "0123456789¹²³"}
)


def check_template(template: str) -> str:
    """Refuse a template that names unknown fields or reaches into objects."""
    try:
        parsed = list(string.Formatter().parse(template))
    except ValueError as exc:
        raise InputError(f"Filename template {template!r} is malformed: {exc}.") from None
    for _literal, field_name, format_spec, _conversion in parsed:
        if field_name is None:
            continue
        if field_name not in TEMPLATE_FIELDS:
            raise InputError(
                f"Filename template {template!r} uses {{{field_name}}}; the fields are "
                + ", ".join("{" + name + "}" for name in TEMPLATE_FIELDS) + "."
            )
        if format_spec and "{" in format_spec:
            raise InputError(f"Filename template {template!r}: nested fields are not allowed.")
    return template


def render_template(template: str, values: Mapping[str, object]) -> str:
    """The template filled in. An empty value stays empty whatever its format spec (no
    ``00000`` for a missing seed); a value that does not fit its spec is used as text."""
    return CompiledTemplate(template).render(values)


class CompiledTemplate:
    """A template parsed once, rendered per job (see :func:`render_template`).

    Attributes:
        fields: the fields the template uses, in order.
    """

    def __init__(self, template: str) -> None:
        parsed = list(string.Formatter().parse(template))
        self._parts = [
            (literal, field_name, format_spec or "")
            for literal, field_name, format_spec, _conversion in parsed
        ]
        self.fields = tuple(name for _, name, _ in self._parts if name is not None)
        # str.format_map gives the same text when every value is set and fits its spec
        # (checked templates have no conversions, attribute or index access).
        self._plain = None if any(conversion for *_, conversion in parsed) else template

    def render(self, values: Mapping[str, object]) -> str:
        if self._plain is not None:
            for name in self.fields:
                value = values.get(name)
                if value is None or value == "":
                    break
            else:
                try:
                    return self._plain.format_map(values)
                except (ValueError, TypeError, KeyError, AttributeError, IndexError):
                    pass
        parts: list[str] = []
        for literal, field_name, format_spec in self._parts:
            parts.append(literal)
            if field_name is None:
                continue
            value = values.get(field_name, "")
            if value == "" or value is None:
                continue
            try:
                parts.append(format(value, format_spec))
            except (ValueError, TypeError):
                parts.append(str(value))
        return "".join(parts)


def name_from_prompt(prompt: str) -> str:
    """The first words of the prompt, for rows without a name."""
    words = prompt.split()
    name = ""
    for word in words:
        if len(name) + len(word) + 1 > NAME_FROM_PROMPT_CHARS:
            break
        name = f"{name} {word}" if name else word
    return (name or prompt[:NAME_FROM_PROMPT_CHARS]).rstrip(" ,;:-")


def sanitise_component(text: str, fallback: str) -> str:
    """One safe path component (without suffix) from any text."""
    if "\x1b" in text:
        text = ANSI_ESCAPE.sub("", text)
    if not text.isascii():
        text = unicodedata.normalize("NFC", text)
        text = "".join(ch for ch in text if unicodedata.category(ch) not in _INVISIBLE)
        text = text.translate(_CONFUSABLES)
    if "\n" in text:
        text = text.replace("\r\n", " ").replace("\n", " ")
    text = FORBIDDEN.sub("_", text)
    text = RUNS.sub("_", text)
    text = text.strip(" ._-")  # also no leading "-", which command lines take as an option
    text = _cut(text)
    text = text.rstrip(" .")
    if not text:
        text = fallback
    device, dot, rest = text.partition(".")
    if device.upper().rstrip(" ") in RESERVED:
        text = f"{device.rstrip(' ')}_{dot}{rest}"
    return text


def safe_output_name(name: str, default_suffix: str = VIDEO_SUFFIX) -> str:
    """A video's file name that is safe wherever it came from (a sheet, a team database's
    row, a provider): its stem cleaned by :func:`sanitise_component` (controls and ANSI
    escapes, bidi overrides, look-alikes of ``/``, ``\\`` and ``.``, reserved device
    names, trailing dots and spaces, at most :data:`MAX_STEM_BYTES` bytes after NFC), and a
    video's suffix: its own when it is one of :data:`VIDEO_SUFFIXES`, else
    ``default_suffix`` added (``page.html`` becomes ``page.html.mp4``). A safe name is
    returned as it is."""
    if "\x1b" in name:
        name = ANSI_ESCAPE.sub("", name)
    name = unicodedata.normalize("NFC", name).rstrip(" .")
    stem, dot, suffix = name.rpartition(".")
    if not dot or ("." + suffix).lower() not in VIDEO_SUFFIXES or not stem.strip(" ._-"):
        stem, suffix = name, default_suffix.lstrip(".")
    return f"{sanitise_component(stem, 'video')}.{suffix}"


# Unicode categories taken out of file names: controls (C0 are already forbidden; C1 are
# not), format characters (bidi overrides and isolates, zero-width space and joiners, BOM,
# soft hyphen) and lone surrogates.
_INVISIBLE = frozenset({"Cc", "Cf", "Cs"})


def _cut(text: str) -> str:
    text = text[:MAX_STEM_CHARS]
    if text.isascii() and len(text) <= MAX_STEM_BYTES:
        return text  # one byte per character
    while len(text.encode("utf-8")) > MAX_STEM_BYTES:
        text = text[:-1]
    return text


class NameAllocator:
    """Hands out collision-free file names in one folder, in call order."""

    def __init__(self, taken: set[str] | None = None) -> None:
        self._taken = {name.casefold() for name in (taken or set())}

    def take(self, stem: str) -> str:
        """``stem`` + suffix, or ``stem_2`` + suffix, ... whichever is free first."""
        candidate, counter = stem, 1
        while (candidate + VIDEO_SUFFIX).casefold() in self._taken:
            counter += 1
            tail = f"_{counter}"
            candidate = _cut(stem)[: MAX_STEM_CHARS - len(tail)] + tail
        file_name = candidate + VIDEO_SUFFIX
        self._taken.add(file_name.casefold())
        return file_name
