"""The one exception tree of ReelQueue.

::

    ReelQueueError
    ├── KnownError                 the environment's fault; shown to the user plainly
    │   ├── JournalError           the journal cannot be opened or written
    │   │   ├── JournalCorrupt     the file is not a ReelQueue journal, or is damaged
    │   │   ├── JournalBusy        locked by another program
    │   │   ├── JournalFull        its disk is full
    │   │   ├── JournalReadOnly    the file or its folder cannot be written
    │   │   ├── JournalUnreachable the team database cannot be reached
    │   │   ├── JournalLoginRefused the team database refused the login (password)
    │   │   └── JournalTlsRefused  the encrypted connection was refused or not verified
    │   ├── DataDirLocked          another ReelQueue uses this data folder
    │   ├── OutputNotWritable      the output folder cannot be written
    │   ├── KeyringUnavailable     no usable OS keyring backend
    │   ├── KeyTooLong             a key over the platform keyring's limit
    │   ├── WindowUnavailable      the window cannot open on this desktop (Qt's platform
    │   │                          plugin cannot load, or there is no display)
    │   └── InputError             a spreadsheet or argument is wrong
    ├── ProviderError              a provider call failed; carries an ErrorClass and label
    └── JournalBug                 SQLite refused something we asked for: our bug

Exception classes use their docstring as the default message; the message says what to
do next. Anything not in this tree is a bug (ours) and is logged with a traceback.
"""

from __future__ import annotations

import math
import time
from enum import StrEnum

from reelqueue.domain.states import AccountStatus


class ErrorClass(StrEnum):
    """How the engine reacts to an error (DESIGN.md invariant 6)."""

    RETRYABLE = "retryable"
    PERMANENT = "permanent"
    ACCOUNT = "account"
    #: a job's create whose outcome is unknown (invariant 13): not a failure, kept for
    #: reconciliation or the user; only ever written on a job, never raised by an adapter
    UNKNOWN = "unknown"


class ErrorLabel(StrEnum):
    """What the user is told, in words they understand (PRODUCT.md, feature 6)."""

    KEY_REJECTED = "key rejected"
    OUT_OF_CREDITS = "out of credits"
    RATE_LIMITED = "rate limited"
    CONTENT_POLICY = "content policy"
    TIMED_OUT = "timed out"
    PROVIDER_ERROR = "provider error"
    INVALID_INPUT = "invalid input"
    DOWNLOAD_FAILED = "download failed"
    DISK = "disk error"
    INTERNAL = "internal error"
    SUBMIT_UNKNOWN = "submit outcome unknown"
    NO_FILE = "finished without file"
    PARKED = "parked"


HINTS: dict[ErrorLabel, str] = {
    ErrorLabel.KEY_REJECTED: "The provider refused the API key. Check it, then run "
    "'reelqueue accounts test NAME'. Jobs wait; none were failed.",
    ErrorLabel.OUT_OF_CREDITS: "The account has no credits or quota left. Top it up, then "
    "run 'reelqueue accounts test NAME'.",
    ErrorLabel.RATE_LIMITED: "The provider asked us to slow down; the account pauses until "
    "the time it gave, then resumes by itself.",
    ErrorLabel.CONTENT_POLICY: "The provider's safety filter refused this prompt or image. "
    "Change it in your sheet and import the sheet again (the changed row comes in as a new "
    "job); retried unchanged, it will most likely be refused again.",
    ErrorLabel.TIMED_OUT: "The provider did not answer in time. The job is retried.",
    ErrorLabel.PROVIDER_ERROR: "The provider reported an error on its side.",
    ErrorLabel.INVALID_INPUT: "The provider rejected the parameters of this row.",
    ErrorLabel.DOWNLOAD_FAILED: "The finished video could not be downloaded intact; "
    "the download is retried without rendering again.",
    ErrorLabel.DISK: "The video could not be written to disk (full or not writable).",
    ErrorLabel.INTERNAL: "ReelQueue hit an internal error; the job is retried. "
    "Please report it with the log.",
    ErrorLabel.SUBMIT_UNKNOWN: "The create request may have reached the provider and its "
    "answer was lost. It was not sent again, so you are not charged twice, and the job is "
    "not counted as failed. Where the provider lists the account's renders, ReelQueue looked "
    "for it there first. Look in the provider's dashboard for what the message names, then "
    "'reelqueue resolve JOB --render ID' if the render is there, or 'reelqueue resolve JOB "
    "--create-again' (charged again) if it is not.",
    ErrorLabel.NO_FILE: "The provider reported the render finished but gave no file. It "
    "was not created again (a finished render is paid); check the provider's dashboard. "
    "Retry reads it again without creating it.",
    ErrorLabel.PARKED: "The process died each time this render was resumed, so it was "
    "parked with its render kept. Retry it to read the render again (no new render).",
}


def submit_unknown_message(words: str, *, client_token: str | None, token_sent: bool,
                           account: str | None, around: float | None) -> str:
    """The text of a create whose outcome stays unknown (engine and recovery): what to look
    for in the provider's dashboard -- the client token only where the provider was sent it
    and keeps it, otherwise the prompt, the account and the creation time."""
    if token_sent and client_token:
        look = f"client token {client_token}"
    else:
        when = ("" if around is None else " created around "
                + time.strftime("%Y-%m-%d %H:%M UTC", time.gmtime(around)))
        look = (f"a render of this job's prompt on account {account or '(its account)'}"
                f"{when} (this provider is not sent ReelQueue's client token)")
    return (f"Submit outcome unknown: {words}. The create request may have reached the "
            "provider; it was not resent, so you are not charged twice, and the job is not "
            f"counted as failed. Look in the provider's dashboard for {look}; then "
            "'reelqueue resolve JOB --render ID' if it is there, or 'reelqueue resolve JOB "
            "--create-again' (charged again) if it is not.")


class ReelQueueError(Exception):
    """ReelQueue failed."""

    def __init__(self, message: str | None = None) -> None:
        super().__init__(message or (self.__doc__ or type(self).__name__).strip())


class KnownError(ReelQueueError):
    """Something in the environment stopped ReelQueue."""


class JournalError(KnownError):
    """The journal could not be opened or written."""


class JournalCorrupt(JournalError):
    """The journal file is not a ReelQueue database.

    It was left untouched; move it away or choose another --data-dir.
    """


class JournalBusy(JournalError):
    """The journal is locked by another program.

    Close the other program (or wait for it), then run the command again.
    """


class JournalFull(JournalError):
    """The disk that holds the journal is full; the last change was not written.

    Free some space, then run the command again: nothing recorded before was lost.
    """


class JournalReadOnly(JournalError):
    """The journal cannot be written: the file or its folder is read-only.

    Check the permissions of the data folder, or pass a different --data-dir.
    """


class JournalUnreachable(JournalError):
    """The team database cannot be reached.

    Check that the server runs and the network, then run the command again.
    """


class JournalLoginRefused(JournalError):
    """The team database refused the login: the password is wrong or none is saved.

    Save the right one with 'reelqueue store-password URL' (or in a pgpass file).
    """


class JournalTlsRefused(JournalError):
    """The encrypted (TLS) connection to the team database was refused or not verified.

    Check the server's TLS setting and the address's sslmode and sslrootcert.
    """


class JournalBug(ReelQueueError):
    """The journal refused a request ReelQueue made: this is a bug in ReelQueue.

    Please report it with the log file.
    """


class DataDirLocked(KnownError):
    """Another ReelQueue is already using this data folder.

    Close it (or wait for it to finish), or pass a different --data-dir.
    """


class OutputNotWritable(KnownError):
    """The output folder cannot be written.

    Choose a folder you can write to; nothing was started.
    """


class KeyringUnavailable(KnownError):
    """No usable OS keyring was found, so API keys cannot be stored safely.

    On Linux, install and unlock a Secret Service (gnome-keyring or KeePassXC) in a D-Bus
    session; keys are never written in plain text.
    """


class KeyTooLong(KnownError):
    """The API key is longer than the OS keyring accepts (2560 bytes on Windows)."""


class RenderAlreadyRecorded(KnownError):
    """That render is already recorded for another job: a render goes to at most one job."""


class WindowUnavailable(KnownError):
    """The window cannot open on this desktop: Qt's platform plugin cannot be loaded.
    Install the system packages named, or use the commands that need no window."""


class InputError(KnownError):
    """The input is not usable; nothing was imported."""


class ProviderError(ReelQueueError):
    """The provider call failed.

    Attributes:
        error_class: how the engine reacts (retry, fail, pause the account).
        label: the user-facing category.
        retry_after: seconds the provider asked us to wait, if it said.
        status_code: the HTTP status, when there was one.
        body_maybe_sent: True when a create request may have reached the provider.
    """

    def __init__(
        self,
        message: str,
        *,
        error_class: ErrorClass,
        label: ErrorLabel,
        retry_after: float | None = None,
        status_code: int | None = None,
        body_maybe_sent: bool = False,
    ) -> None:
        super().__init__(message)
        self.error_class = error_class
        self.label = label
        self.retry_after = bounded_retry_after(retry_after)
        self.status_code = status_code
        self.body_maybe_sent = body_maybe_sent

    def __repr__(self) -> str:
        return (
            f"ProviderError({str(self)!r}, error_class={self.error_class.value}, "
            f"label={self.label.value!r}, status_code={self.status_code})"
        )


MAX_RETRY_AFTER_SECONDS = 86_400.0
"""The longest wait a provider's answer can ask for (a day: a daily quota's end). A longer
one (``Retry-After: 1e12``, a date years ahead) would park the job or the account for
good; the next try after a day costs one request."""


def bounded_retry_after(seconds: float | None) -> float | None:
    """A provider's "wait this long" made safe to act on: None for a value that is not a
    finite number of seconds (NaN, infinity), never below 0 nor above
    :data:`MAX_RETRY_AFTER_SECONDS`."""
    if seconds is None or not math.isfinite(seconds):
        return None
    return min(max(0.0, float(seconds)), MAX_RETRY_AFTER_SECONDS)


def account_status_for(label: ErrorLabel) -> AccountStatus | None:
    """The account's status after an account-level error with ``label`` (a render that
    hit it, or a key check): None when the label says nothing about the account."""
    return {ErrorLabel.KEY_REJECTED: AccountStatus.KEY_REJECTED,
            ErrorLabel.OUT_OF_CREDITS: AccountStatus.OUT_OF_CREDITS,
            ErrorLabel.RATE_LIMITED: AccountStatus.RATE_LIMITED}.get(label)
