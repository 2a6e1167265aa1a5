"""What a listing may carry of a row (issue 34: rows are untrusted, listings are bounded).

A row of the team database is written by anyone with write access, so a listing (the
window's table, the gallery, ``status``, the API's lists and its ledger stream, the
manifest, an export) must not carry a value of any size: two 50 MB columns took the
window from 144 MB to 2 GB. Every listing statement cuts long text *on the server*, in its
SELECT (``listed_job_columns`` and ``listed_ledger_columns`` in each dialect's
``queries.sql``), so the oversized value never crosses the wire (the memory store is the
SQLite journal in memory: the same SQL). A cut value ends with :func:`cut_marker`, so a
reader sees that something was left out and how much.

Only listings are cut. A job's single fetch (``get_job``: the detail view, ``GET
/v1/jobs/{id}``) and every read the engine acts on (a claim, a resumed render) carry the
whole row; the claim refuses a row over the bounds of ``domain/row_limits.py`` instead.
"""

from __future__ import annotations

from reelqueue.domain.routes import MAX_ROUTE_CHARS

__all__ = ["CUT_KEY", "LIST_LIMITS", "cut_marker", "fill_listing"]

LIST_PROMPT_CHARS = 2_000
LIST_NAME_CHARS = 200
"""A name, and every short word of a row (provider, account, tokens, ids, labels)."""
LIST_PATH_CHARS = 1_024
"""An output path, its temporary part, a job key."""
LIST_ERROR_CHARS = 4_000
LIST_JSON_BYTES = 16 * 1024
"""A JSON document (parameters, metadata, a ledger entry's detail), as stored."""
LIST_SETTINGS_BYTES = 64 * 1024
"""A batch's settings (its import's mapping and scope, caps, pause), as stored. Over it,
a listing keeps only ``paused`` and ``max_spend`` beside the ``cut`` key."""

LIST_LIMITS: dict[str, int] = {
    "list_prompt_chars": LIST_PROMPT_CHARS, "list_name_chars": LIST_NAME_CHARS,
    "list_path_chars": LIST_PATH_CHARS, "list_error_chars": LIST_ERROR_CHARS,
    "list_json_bytes": LIST_JSON_BYTES, "list_route_chars": MAX_ROUTE_CHARS,
    "list_settings_bytes": LIST_SETTINGS_BYTES,
}
"""The bounds as the listing SQL names them (``{list_prompt_chars}``...), filled in when
the named queries are loaded (:func:`fill_listing`)."""

CUT_KEY = "cut"
"""The only key of the object that stands for a JSON document too large to list."""


def cut_marker(size: int) -> str:
    """What ends a cut text whose whole value is ``size`` bytes in UTF-8 (SQL writes the
    same words: ``listed_job_columns``). Bytes, not characters: PostgreSQL reads a long
    value's byte size from its TOAST header, where counting its characters would fetch and
    decompress all of it (a 50 MB prompt, each time it is listed)."""
    return f"… [cut: {size} bytes]"


def fill_listing(queries: dict[str, str]) -> dict[str, str]:
    """``queries`` with ``{listed_job_columns}``/``{listed_ledger_columns}`` (the dialect's
    own blocks of those names) and the bounds ``{list_...}`` filled in."""
    blocks = {name: queries[name] for name in ("listed_job_columns", "listed_ledger_columns",
                                            "listed_batch_columns")
              if name in queries}
    for block_name in list(blocks):
        for key, limit in LIST_LIMITS.items():
            blocks[block_name] = blocks[block_name].replace(f"{{{key}}}", str(limit))
    filled: dict[str, str] = {}
    for name, text in queries.items():
        for block_name, block in blocks.items():
            text = text.replace(f"{{{block_name}}}", block)
        filled[name] = text
    return filled

