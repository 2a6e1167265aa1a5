"""Fault directives written inside a prompt, e.g. ``[[mock:rate_limit*2]]``.

Syntax: ``[[mock:ITEM]]`` or ``[[mock:ITEM,ITEM,...]]`` anywhere in the prompt, where an
item is ``name``, ``name*N`` (only the first N times, counted per job key for create-time
faults and per render for poll/download faults) or ``name=VALUE`` / ``name=VALUE*N`` for
the directives that take a number. Unknown names are rejected (HTTP 400), so a typo in a
test sheet fails loudly instead of silently rendering.

Holding back a create's answer while the render exists (what a kill test needs: the
client dies while the provider holds the answer): ``create_timeout`` creates the render,
then holds the connection ``hang_seconds`` (or ``create_timeout=S`` seconds) and closes
it with no answer at all; ``hold_answer=S`` creates the render, holds the answer S seconds
(default ``hang_seconds``) and then sends it, to whoever is still listening. Either way the
create is counted and the render is listed (after its list delay) while the answer waits.

``foreign_twin=S`` plants, beside the render, a render with the same prompt and params
created S seconds earlier (default 0: at the same moment) by "another client on the same
key": it is listed like any render of that key, so a search must tell the two apart by
time (or cannot, at 0).
"""

from __future__ import annotations

import re
from dataclasses import dataclass

CREATE_FAULTS: tuple[str, ...] = (
    "echo_request",
    "bad_key",
    "no_credits",
    "content_policy",
    "rate_limit",
    "server_error",
    "malformed",
    "create_timeout",
    "connection_reset",
    "hold_answer",
)
"""Faults answered on ``POST /v1/renders``; their budget is counted per job key.
``create_timeout=S`` and ``hold_answer=S`` take the seconds to hold the answer."""

LIST_DIRECTIVES: tuple[str, ...] = ("foreign_twin",)
"""Directives that change what the account's list holds; budget per job key."""

RENDER_FAULTS: tuple[str, ...] = ("render_fail",)
"""Faults decided when a render is created; budget per job key."""

POLL_FAULTS: tuple[str, ...] = ("poll_timeout", "poll_malformed")
"""Faults answered on ``GET /v1/renders/{id}``; budget per render."""

DOWNLOAD_FAULTS: tuple[str, ...] = ("expired_link", "truncated", "html", "slow_download",
                                     "oversize", "gzip_bomb")
"""Faults answered on ``GET /v1/files/{id}.mp4``; budget per render. ``oversize=MIB``
streams the video then zeros, chunked, until MIB MiB (default 64) or the client hangs up;
``gzip_bomb=MIB`` sends a small gzip body that decodes to MIB MiB (default 64)."""

SETTINGS: tuple[str, ...] = ("render_seconds",)
"""Directives that set a value rather than inject a fault (``render_seconds=3``)."""

ALL_NAMES: frozenset[str] = frozenset(
    CREATE_FAULTS + RENDER_FAULTS + POLL_FAULTS + DOWNLOAD_FAULTS + SETTINGS
    + LIST_DIRECTIVES
)

_BLOCK = re.compile(r"\[\[mock:([^\]]*)\]\]")
_ITEM = re.compile(r"^([a-z_]+)(?:=([0-9]+(?:\.[0-9]*)?))?(?:\*([0-9]+))?$")


class DirectiveError(ValueError):
    """A ``[[mock:...]]`` directive could not be understood."""


@dataclass(frozen=True)
class Directive:
    """One parsed directive.

    Attributes:
        name: the directive name (``rate_limit``...).
        times: apply only the first N times; None means always.
        value: the number after ``=``, for directives that take one.
    """

    name: str
    times: int | None = None
    value: float | None = None


def without_directives(prompt: str) -> str:
    """The prompt as a person wrote it: its ``[[mock:...]]`` blocks removed."""
    return _BLOCK.sub("", prompt).strip()


def parse_directives(prompt: str) -> dict[str, Directive]:
    """Every directive in ``prompt`` by name (a later one with the same name wins)."""
    found: dict[str, Directive] = {}
    for block in _BLOCK.findall(prompt):
        for raw in block.split(","):
            item = raw.strip()
            if not item:
                continue
            match = _ITEM.match(item)
            if match is None:
                raise DirectiveError(f"Cannot read mock directive {item!r}.")
            name, value, times = match.groups()
            if name not in ALL_NAMES:
                known = ", ".join(sorted(ALL_NAMES))
                raise DirectiveError(f"Unknown mock directive {name!r}. Known: {known}.")
            found[name] = Directive(
                name=name,
                times=int(times) if times is not None else None,
                value=float(value) if value is not None else None,
            )
    return found
