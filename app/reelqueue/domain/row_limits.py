"""What a job row may hold before ReelQueue renders it (issue 21: rows are untrusted input).

A row of the team database can be written by anyone with write access to it, and a local
journal is a file anyone can edit. The claim checks the row in SQL, on the server, before
the row is fetched (so a 50 MB prompt never crosses the wire and a parameter document
nested ten thousand deep is never parsed here): a row over any of these bounds is failed
with the reason, by the named transition ``row_refused`` in the claim's own transaction,
and the claim goes on to the next job (no head-of-line blocking). The refused row keeps
the first :data:`KEPT_PROMPT_CHARS` characters of its prompt and none of its parameters,
so no later read fetches the oversized value either.

The bounds are far above anything an import writes (a provider takes a few thousand
characters of prompt; an import's parameters are a flat object of a few hundred bytes):
they only catch rows ReelQueue did not write.
"""

from __future__ import annotations

from typing import Any

__all__ = ["KEPT_PROMPT_CHARS", "MAX_JSON_DEPTH", "MAX_REFUSED_PER_CLAIM", "REFUSAL_PREFIX",
           "REFUSAL_SUFFIX", "ROW_LIMITS", "ROW_REFUSED", "refusal_params", "refusal_words"]

MAX_PROMPT_BYTES = 64 * 1024
MAX_PARAMS_BYTES = 64 * 1024
MAX_JSON_DEPTH = 16
"""Nesting levels of a job's parameters (an import writes 1, a reference image 2)."""
MAX_NAME_BYTES = 4 * 1024
MAX_PATH_BYTES = 4 * 1024
MAX_KEY_BYTES = 1024
MAX_ROUTE_BYTES = 64_000
"""A routed job's route (issue 24): domain/routes.py reads none longer (MAX_ROUTE_CHARS)."""
KEPT_PROMPT_CHARS = 2000

ROW_REFUSED = "row_refused"
"""The ledger event (and the transition) of a job row failed by these checks."""

ROW_LIMITS: dict[str, Any] = {
    "max_prompt_bytes": MAX_PROMPT_BYTES, "max_params_bytes": MAX_PARAMS_BYTES,
    "max_name_bytes": MAX_NAME_BYTES, "max_path_bytes": MAX_PATH_BYTES,
    "max_key_bytes": MAX_KEY_BYTES, "max_route_bytes": MAX_ROUTE_BYTES,
    "kept_prompt_chars": KEPT_PROMPT_CHARS,
}
"""The bounds as the SQL of both dialects names them (``row_problem``, ``refuse_row``)."""


REFUSAL_PREFIX = "This row was refused before anything was sent: "
REFUSAL_SUFFIX = (". ReelQueue never writes such a row, so it was changed in the journal by "
                  "someone or something else; import the row again from its sheet if you "
                  "want it rendered.")
MAX_REFUSED_PER_CLAIM = 16
"""Rows one claim refuses before it gives up for now (the next claim goes on)."""


def refusal_words(problem: str) -> str:
    """The job's error message for a row refused because of ``problem`` (SQL's words)."""
    return f"{REFUSAL_PREFIX}{problem}{REFUSAL_SUFFIX}"


def refusal_params() -> dict[str, Any]:
    """What the claim statements bind for the checks and the refusal's words."""
    return {**ROW_LIMITS, "refusal_prefix": REFUSAL_PREFIX, "refusal_suffix": REFUSAL_SUFFIX}
