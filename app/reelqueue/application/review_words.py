"""The words of review (issue 35 item 2): a take's decision, a batch's progress, a row's
state, the re-roll's quote. Every front end (the gallery, ``reelqueue review``, the HTTP
API) says them through here, as application/words.py does for job states. No Qt, no I/O.
"""

from __future__ import annotations

from reelqueue.domain.review import Decision, Review

DECISION_WORDS: dict[Decision, str] = {
    Decision.PICK: "picked",
    Decision.REJECT: "rejected",
    Decision.NONE: "not reviewed",
}

ROW_PICKED = "picked"
ROW_REROLL = "to re-roll"
ROW_OPEN = "to review"
ROW_WAITING = "rendering"


NO_TAKES = "No takes to review here."
ALL_DECIDED = "Every finished take has a decision."
NO_VIDEO_HERE = "This take has no video on this machine."
NOTHING_TO_DECIDE = "there is nothing to pick or reject."


def decision_words(review: Review) -> str:
    """"picked", "rejected, 2/5", "not reviewed"."""
    words = DECISION_WORDS[review.decision]
    return words if review.rating is None else f"{words}, {review.rating}/5"


def progress_words(reviewed: int, total: int) -> str:
    """"12 of 15 reviewed": finished takes with a decision, of the finished takes."""
    return f"{reviewed} of {total} reviewed"


def decided_words(review: Review) -> str:
    """"by ana" or "" (never decided)."""
    return "" if review.decided_by is None else f"by {review.decided_by}"


__all__ = ["ALL_DECIDED", "DECISION_WORDS", "NOTHING_TO_DECIDE", "NO_TAKES", "NO_VIDEO_HERE",
           "ROW_OPEN", "ROW_PICKED", "ROW_REROLL", "ROW_WAITING",
           "decided_words", "decision_words", "progress_words"]
