"""One set of words for job states and account conditions (issue 34, "one set of words").

Every front end (the window, ``reelqueue status``, the HTTP API's ``state_words``, any
later one) names a job's state and an account's condition through this module, so each
state has one name, the same everywhere. A front end adds layout only (colours, width,
capitals where a sentence starts), never its own word for a state.

- :func:`job_state_words`: a job's state, with the RENDERING sub-statuses and the two
  PARKED cases (a create whose outcome is unknown; a render parked after repeated crashes,
  kept).
- :func:`condition_words`: an account's (or the queue's) condition by its code
  (:class:`Condition`; the engine's stall reasons use the same codes).
- :func:`account_condition_words` / :func:`account_words`: which condition an account is
  in, from its status, whether it is paused, its cool-down, its daily cap and this
  machine's key.

No Qt, no I/O.
"""

from __future__ import annotations

import time
from dataclasses import dataclass, replace
from enum import StrEnum

from reelqueue.application.trust import address_unreadable
from reelqueue.domain.errors import ErrorLabel
from reelqueue.domain.models import Account
from reelqueue.domain.states import JobState
from reelqueue.store.spend import AccountSpend

__all__ = ["OUTCOME_UNKNOWN", "Condition", "StateWords", "account_condition_words",
           "account_words", "condition_words", "daily_cap_reached", "is_outcome_unknown",
           "job_state_words"]


@dataclass(frozen=True)
class StateWords:
    """What to call a state, and what the user can do about it.

    Attributes:
        name: the short name (lower case; a front end may capitalise it to start a line).
        hint: one sentence of what the user can do (or that nothing is needed).
        code: the stable code the name was chosen by (a job state's value, a
            :class:`Condition`, or ``OUTCOME_UNKNOWN``): for colours and tests, never shown.
    """

    name: str
    hint: str
    code: str

    def as_dict(self) -> dict[str, str]:
        """The API's and ``status --json``'s ``state_words``."""
        return {"name": self.name, "hint": self.hint}


OUTCOME_UNKNOWN = "OUTCOME_UNKNOWN"
"""The code of a job whose create's outcome is unknown (invariant 13): PARKED (or FAILED by
an older ReelQueue) with the label ``submit outcome unknown`` and no provider job id."""

_JOB: dict[str, tuple[str, str]] = {
    JobState.QUEUED: ("queued", "It waits for a free slot on an account of its provider; "
                      "nothing to do."),
    JobState.CLAIMED: ("starting", "An account took it and its render is being started; "
                       "nothing to do."),
    JobState.SUBMITTING: ("submitting", "Its create request is on its way to the provider "
                          "(never sent twice); nothing to do."),
    JobState.RENDERING: ("rendering", "The provider is rendering it; the video is "
                         "downloaded when it is done."),
    JobState.DOWNLOADING: ("downloading", "The render is done; its video is being "
                           "downloaded and checked."),
    JobState.RETRY_WAIT: ("waiting to retry", "Its last attempt hit an error that may pass; "
                          "it is tried again by itself at its retry time."),
    JobState.COMPLETED: ("completed", "Its video is on disk, its size and checksum "
                         "recorded."),
    JobState.FAILED: ("failed", "It will not be tried again by itself: read its error, "
                      "change the row if the error says so, then Retry."),
    JobState.CANCELLED: ("cancelled", "It was cancelled; Retry puts it back in the queue."),
    JobState.PARKED: ("parked", "Resuming its render kept stopping ReelQueue, so the render "
                      "was parked and kept: Retry reads it again (no new render, no new "
                      "charge)."),
    OUTCOME_UNKNOWN: ("outcome unknown", "Its create may have reached the provider and was "
                      "not sent again (not a failure, not charged twice): resolve it (open "
                      "the job, or 'reelqueue resolve ID') to read the render if it is "
                      "there, or create it again if it is not."),
}

# The provider's sub-status while RENDERING (the engine's own "submitted" and
# "reattached", and the normalised phases): a name each; any other provider word is
# shown after "rendering ·".
_SUB_STATUS: dict[str, tuple[str, str]] = {
    "queued": ("queued at the provider", "The provider accepted it and has not started it "
               "yet; nothing to do."),
    "throttled": ("throttled by the provider", "The provider holds it back for now (its own "
                  "limit); it goes on by itself."),
    "running": _JOB[JobState.RENDERING],
    "submitted": ("submitted", "The provider accepted its create; its first progress "
                  "report is awaited."),
    "reattached": ("rendering (picked up again)", "ReelQueue restarted and picked up the "
                   "render it had submitted; it is not created again."),
}


def is_outcome_unknown(state: str, error_label: str | None,
                       provider_job_id: str | None) -> bool:
    """A create whose outcome the provider's records could not settle (it holds no render
    id): PARKED, or FAILED by a ReelQueue older than issue 19."""
    return (state in (JobState.PARKED, JobState.FAILED) and provider_job_id is None
            and error_label == ErrorLabel.SUBMIT_UNKNOWN.value)


def job_state_words(state: str, sub_status: str | None = None,
                    error_label: str | None = None,
                    provider_job_id: str | None = None) -> StateWords:
    """The one name of a job's state (a :class:`JobState` value) and what to do about it.

    ``sub_status``: the provider's word while RENDERING; ``error_label`` and
    ``provider_job_id`` tell a create of unknown outcome from a parked render.
    ``state`` may be :data:`OUTCOME_UNKNOWN` itself (a count of such jobs)."""
    if is_outcome_unknown(state, error_label, provider_job_id):
        name, hint = _JOB[OUTCOME_UNKNOWN]
        return StateWords(name, hint, OUTCOME_UNKNOWN)
    if state == JobState.RENDERING and sub_status:
        known = _SUB_STATUS.get(sub_status.strip().lower())
        if known is not None:
            return StateWords(*known, code=str(state))
        return StateWords(f"rendering · {sub_status}", _JOB[JobState.RENDERING][1],
                          str(state))
    name, hint = _JOB.get(state, (state.replace("_", " ").lower(), ""))
    return StateWords(name, hint, str(state))


class Condition(StrEnum):
    """An account's (or the queue's) condition. The engine's stall reasons carry the
    same codes (``StallReason.code``)."""

    READY = "ready"
    RENDERING = "rendering"
    DAILY_CAP = "daily_cap"
    SPEND_CAP = "spend_cap"
    RATE_LIMITED = "rate_limited"
    KEY_REJECTED = "key_rejected"
    OUT_OF_CREDITS = "out_of_credits"
    KEY_MISSING = "key_missing"
    NO_KEY = "no_key"
    KEY_NOT_HERE = "key_not_here"
    CONFIRM = "confirm"
    ADDRESS_UNREADABLE = "address_unreadable"
    DISABLED = "disabled"
    UNUSABLE = "unusable"
    NO_ACCOUNT = "no_account"
    BATCH_PAUSED = "batch_paused"
    NOT_CONFIGURED = "not_configured"
    STALLED = "stalled"
    PAUSED = "paused"


_CONDITION: dict[str, tuple[str, str]] = {
    Condition.READY: ("ready", "It takes new jobs as its slots free up."),
    Condition.RENDERING: ("rendering", "It renders now and takes new jobs as its slots free "
                          "up."),
    Condition.DAILY_CAP: ("daily cap reached", "It starts nothing more today (renders "
                          "already running finish): raise its daily cap, or wait for "
                          "tomorrow."),
    Condition.SPEND_CAP: ("spend cap reached", "A spend cap holds the waiting jobs: raise "
                          "it (the account's or the batch's), or for a daily cap wait for "
                          "tomorrow."),
    Condition.RATE_LIMITED: ("rate limited", "The provider asked to slow down; it resumes "
                             "by itself."),
    Condition.KEY_REJECTED: ("key rejected", "The provider refused its key: put a valid key "
                             "in, then mark it ready ('reelqueue accounts test NAME')."),
    Condition.OUT_OF_CREDITS: ("out of credits", "It has no credits or quota left: top it "
                               "up, then mark it ready ('reelqueue accounts test NAME')."),
    Condition.KEY_MISSING: ("key missing", "Its key is not in this machine's keyring: "
                            "connect the account again with its key."),
    Condition.KEY_NOT_HERE: ("key not on this machine", "The team's other machines render "
                             "for it; to render for it here too, keep its key here "
                             "('reelqueue --store URL team-key NAME')."),
    Condition.CONFIRM: ("address changed", "Its address changed on the team database; its "
                        "key is sent nowhere until you confirm the new address on this "
                        "machine ('reelqueue accounts confirm NAME')."),
    Condition.ADDRESS_UNREADABLE: ("address unreadable", "The address its row names cannot "
                                   "be read; its key is sent nowhere until the address is "
                                   "set again ('reelqueue accounts set NAME --base-url')."),
    Condition.DISABLED: ("paused", "It takes no new work (renders already running finish): "
                         "resume it when you want it to render."),
    Condition.UNUSABLE: ("cannot be used", "Check the account's settings (see the log)."),
    Condition.NO_ACCOUNT: ("no account", "Connect an account for this provider."),
    Condition.BATCH_PAUSED: ("batch paused", "Resume the batch to hand its jobs out again."),
    Condition.NOT_CONFIGURED: ("not configured here", "The sheet pinned these jobs to an "
                               "account this machine does not have: connect it here, or "
                               "let the machine that has it render them."),
    Condition.STALLED: ("stalled", "Jobs wait and no account can take them now: see each "
                        "account's reason; nothing was failed."),
    Condition.PAUSED: ("paused", "Nothing new starts (renders already running finish): "
                       "start again when you want."),
}
_CONDITION[Condition.NO_KEY] = _CONDITION[Condition.KEY_MISSING]  # the engine's code for it


def _clock(at: float) -> str:
    """Epoch seconds -> "14:32" (this machine's local time)."""
    return time.strftime("%H:%M", time.localtime(at))


def condition_words(code: str, until: float | None = None) -> StateWords:
    """The one name of a condition (a :class:`Condition` value, or a stall reason's code)
    and what to do; a cool-down's end is part of its name ("rate limited until 14:32")."""
    name, hint = _CONDITION.get(code, (code.replace("_", " "), ""))
    if code == Condition.RATE_LIMITED and until is not None:
        name = f"{name} until {_clock(until)}"
    return StateWords(name, hint, code)


def account_condition_words(status: str, *, enabled: bool = True,
                            cooldown_until: float | None = None, live: int = 0,
                            cap_reached: bool = False, key_here: bool = True,
                            confirm: bool = False,
                            address_unreadable: bool = False) -> StateWords:
    """The condition of one account: ``status`` is its :class:`AccountStatus` value;
    ``cap_reached``: its daily cap holds jobs back or is spent; ``key_here``: False for a
    team account whose key is not on this machine; ``confirm``: its row changed since this
    machine kept its key (``address_unreadable``: its address cannot be read)."""
    if not enabled:
        return condition_words(Condition.DISABLED)
    if status in ("ready", "key_missing"):
        if not key_here:
            return condition_words(Condition.KEY_NOT_HERE)
        if confirm or address_unreadable:
            return condition_words(Condition.ADDRESS_UNREADABLE if address_unreadable
                                   else Condition.CONFIRM)
    if status == Condition.RATE_LIMITED:
        return condition_words(status, cooldown_until)
    if status in (Condition.KEY_REJECTED, Condition.OUT_OF_CREDITS, Condition.KEY_MISSING):
        return condition_words(status)
    if cap_reached:  # it starts nothing more today: never "ready" (N6)
        words = condition_words(Condition.DAILY_CAP)
        # its renders already running still end: said, so a busy gauge is not a puzzle
        return replace(words, name=f"{words.name} · finishing") if live else words
    return condition_words(Condition.RENDERING if live else Condition.READY)


def daily_cap_reached(today: AccountSpend | None) -> bool:
    """The account's daily cap holds jobs back, or today's spend has reached it."""
    return (today is not None and today.cap is not None
            and (today.waiting > 0 or today.committed >= today.cap))


def account_words(account: Account, *, live: int, today: AccountSpend | None = None,
                  key_here: bool = True, confirm: bool = False) -> StateWords:
    """:func:`account_condition_words` of a journal's account row: ``live`` renders in
    flight, ``today`` its spend since local midnight (the journal's, for the daily cap)."""
    return account_condition_words(
        account.status.value, enabled=account.enabled, cooldown_until=account.cooldown_until,
        live=live, cap_reached=daily_cap_reached(today), key_here=key_here,
        confirm=confirm, address_unreadable=confirm and address_unreadable(account.base_url))
