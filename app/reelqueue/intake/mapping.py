"""Which column holds which field: header aliases, user overrides, and the saved mapping.

Headers are normalised (case, accents, punctuation, a unit in brackets) and matched
against the aliases below; the first column matching a field wins. Columns mapped to no
field are kept as metadata and come back in the export. A user override names a column
(by header, by letter such as ``C``, or by 1-based number) and a field, or ``ignore``.
"""

from __future__ import annotations

import re
import unicodedata
from collections.abc import Mapping, Sequence
from dataclasses import dataclass, field

from reelqueue.domain.errors import InputError

FIELDS: tuple[str, ...] = (
    "prompt", "negative_prompt", "duration", "aspect_ratio", "resolution", "seed", "model",
    "provider", "account", "image", "name", "repeat", "priority", "id",
)
IGNORE = "ignore"

ALIASES: dict[str, tuple[str, ...]] = {
    "prompt": ("prompt", "prompts", "text", "description", "prompt text", "video prompt",
               "positive prompt", "caption", "scene", "scene description"),
    "negative_prompt": ("negative prompt", "negative", "neg prompt", "negative prompts",
                        "negativeprompt", "avoid"),
    "duration": ("duration", "seconds", "secs", "sec", "length", "duration s",
                 "duration sec", "duration seconds", "duration secs", "video length"),
    "aspect_ratio": ("aspect ratio", "aspectratio", "ratio", "aspect", "ar"),
    "resolution": ("resolution", "res", "video resolution"),
    "seed": ("seed", "random seed", "seed value"),
    "model": ("model", "model name", "model id", "engine"),
    "provider": ("provider", "service", "platform", "api", "providers", "route"),
    "account": ("account", "account name", "pinned account"),
    "image": ("image", "reference", "reference image", "first frame", "image url",
              "image path", "ref image", "init image", "start image", "start frame",
              "first frame image", "input image", "reference image url"),
    "name": ("name", "title", "output", "output name", "filename", "file name", "file",
             "output file", "video name", "video title", "clip", "clip name", "clip title",
             "shot name"),
    "repeat": ("repeat", "repeats", "count", "copies", "variations", "times"),
    "priority": ("priority", "prio"),
    "id": ("id", "key", "job id", "row id", "uid", "job key"),
}
ALIAS_TO_FIELD: dict[str, str] = {
    alias: name for name, aliases in ALIASES.items() for alias in aliases
}
FIELD_WORDS: dict[str, str] = {
    **{name: name for name in FIELDS},
    **{name.replace("_", " "): name for name in FIELDS},
    **ALIAS_TO_FIELD,
    IGNORE: IGNORE, "-": IGNORE, "none": IGNORE, "skip": IGNORE,
}


def normalise_header(header: str) -> str:
    """ "Aspect-Ratio (W:H)" -> "aspect ratio"; "Négative_Prompt" -> "negative prompt"."""
    text = unicodedata.normalize("NFKD", header)
    text = "".join(char for char in text if not unicodedata.combining(char)).casefold()
    text = re.sub(r"[(\[{].*?[)\]}]", " ", text)
    text = re.sub(r"[^0-9a-z]+", " ", text)
    return text.strip()


def column_letter(index: int) -> str:
    """0 -> "A", 25 -> "Z", 26 -> "AA"."""
    letters = ""
    index += 1
    while index:
        index, remainder = divmod(index - 1, 26)
        letters = chr(65 + remainder) + letters
    return letters


@dataclass(frozen=True)
class ColumnMapping:
    """Field name -> the header of the column that holds it.

    Attributes:
        by_field: e.g. {"prompt": "Description", "duration": "Seconds"}.
        ignored: headers the user chose not to import (not even as metadata).
    """

    by_field: Mapping[str, str] = field(default_factory=dict)
    ignored: frozenset[str] = frozenset()

    def header_for(self, field_name: str) -> str | None:
        return self.by_field.get(field_name)

    def as_dict(self) -> dict[str, str]:
        return dict(self.by_field)

    def with_overrides(self, headers: Sequence[str], overrides: Mapping[str, str]) -> ColumnMapping:
        """Apply ``{column: field}`` overrides (``field`` may be "ignore")."""
        by_field = dict(self.by_field)
        ignored = set(self.ignored)
        for column, wanted in overrides.items():
            header = resolve_column(headers, column)
            field_name = parse_field(wanted)
            by_field = {f: h for f, h in by_field.items() if h != header}
            ignored.discard(header)
            if field_name == IGNORE:
                ignored.add(header)
            else:
                by_field[field_name] = header
        return ColumnMapping(by_field=by_field, ignored=frozenset(ignored))


def suggest_mapping(headers: Sequence[str]) -> ColumnMapping:
    """Match headers against the aliases; the first column for a field wins."""
    by_field: dict[str, str] = {}
    for header in headers:
        name = ALIAS_TO_FIELD.get(normalise_header(header))
        if name and name not in by_field:
            by_field[name] = header
    return ColumnMapping(by_field=by_field)


def parse_field(word: str) -> str:
    name = FIELD_WORDS.get(normalise_header(word)) or FIELD_WORDS.get(word.strip().lower())
    if name is None:
        raise InputError(
            f"Unknown field {word!r}. Fields are: {', '.join(FIELDS)} (or 'ignore')."
        )
    return name


def resolve_column(headers: Sequence[str], column: str) -> str:
    """A column named by its header (any case), its letter ("C") or its number ("3")."""
    if column in headers:
        return column
    wanted = normalise_header(column)
    for header in headers:
        if wanted and normalise_header(header) == wanted:
            return header
    letters = column.strip().upper()
    if letters.isdigit() and 1 <= int(letters) <= len(headers):
        return headers[int(letters) - 1]
    for index, header in enumerate(headers):
        if letters == column_letter(index):
            return header
    listed = ", ".join(repr(header) for header in headers[:30])
    raise InputError(f"No column {column!r} in the sheet. Its columns are: {listed}.")


def parse_map_options(values: Sequence[str]) -> dict[str, str]:
    """``["Text=prompt", "C=seed"]`` (from ``--map``) -> ``{"Text": "prompt", "C": "seed"}``."""
    overrides: dict[str, str] = {}
    for value in values:
        column, sep, wanted = value.rpartition("=")
        if not sep or not column.strip() or not wanted.strip():
            raise InputError(f"--map {value!r}: write it as COLUMN=FIELD, e.g. 'Text=prompt'.")
        overrides[column.strip()] = wanted.strip()
    return overrides


def display_headers(headers: Sequence[str]) -> list[str]:
    """Unique, non-empty names for every column: an empty header becomes "Column C",
    a repeated one "notes (2)"."""
    seen: dict[str, int] = {}
    names: list[str] = []
    for index, header in enumerate(headers):
        name = header.strip() or f"Column {column_letter(index)}"
        count = seen.get(name.casefold(), 0) + 1
        seen[name.casefold()] = count
        names.append(name if count == 1 else f"{name} ({count})")
    return names
