"""Jobs that need the user, in one place for the CLI's closing line, ``status`` and the
window (what each kind is called and what to do about it: application.words and
application.status.attention_sentences).

Two kinds wait on the user, and neither is a failure to just retry blindly:

- *parked*: a render whose resume kept killing the process. The render exists and is
  kept; ``reelqueue retry --parked`` reads it again (poll + download, no new render).
- *submit outcome unknown*: a create whose answer was lost and that the provider's own
  records could not settle (a provider that cannot be asked, several candidates, a list
  that could not be read whole). It was not sent again and is not a failure (DESIGN.md
  invariants 11, 13): it is PARKED, holding no slot. ``reelqueue resolve ID`` shows the
  candidates; ``--render RID`` reads the right one, ``--create-again`` renders anew (paid,
  written in the ledger as ``deliberate_rerender``).

And one kind waits for something the user must add: jobs *pinned to an account not
configured here* (issue 34, N1) wait until it is added (or, on a team database, until a
machine that has it takes them); ``status`` says so in a ``waiting:`` line.
"""

from __future__ import annotations

from dataclasses import dataclass

from reelqueue.domain.errors import ErrorLabel
from reelqueue.domain.states import JobState
from reelqueue.intake.pins import not_configured_words
from reelqueue.store.base import Store


@dataclass(frozen=True)
class NeedsAttention:
    """Attributes:
    parked: ids of parked jobs whose renders exist and are kept.
    submit_unknown: ids of jobs whose create's outcome is unknown (parked, or failed by an
        older ReelQueue).
    pinned_elsewhere: (account, waiting jobs) for each account that waiting jobs are
        pinned or bound to and that is not configured here.
    """

    parked: tuple[int, ...] = ()
    submit_unknown: tuple[int, ...] = ()
    pinned_elsewhere: tuple[tuple[str, int], ...] = ()

    def __bool__(self) -> bool:
        return bool(self.parked or self.submit_unknown or self.pinned_elsewhere)

    def as_dict(self) -> dict[str, int]:
        return {"parked": len(self.parked), "submit_unknown": len(self.submit_unknown),
                "pinned_not_configured": sum(n for _name, n in self.pinned_elsewhere)}

    def waiting_sentences(self) -> list[str]:
        """One line per account that waiting jobs are pinned to and that is not
        configured here: "pinned to account X, which is not configured here (2 jobs; …)"."""
        return [f"{not_configured_words(name)} ({n:,} {'job' if n == 1 else 'jobs'}; add "
                f"it with 'reelqueue accounts add {name} --provider …', or render them on "
                "a machine that has it)" for name, n in self.pinned_elsewhere]


def needs_attention(store: Store, batch_id: int | None = None) -> NeedsAttention:
    """The parked and submit-unknown jobs of the journal (or of one batch), and the
    accounts not configured here that waiting jobs (of any batch) are pinned to."""
    jobs = store.list_jobs(batch_id=batch_id, states=[JobState.PARKED, JobState.FAILED])
    unknown = tuple(j.id for j in jobs if j.error_label == ErrorLabel.SUBMIT_UNKNOWN.value
                    and j.provider_job_id is None)
    configured = {account.name for account in store.list_accounts()}
    elsewhere: dict[str, int] = {}
    for group in store.to_go():  # every waiting job, grouped by the account it needs
        if group.account is not None and group.account not in configured:
            elsewhere[group.account] = (elsewhere.get(group.account, 0) + group.priced
                                        + group.unpriced)
    return NeedsAttention(
        parked=tuple(j.id for j in jobs if j.state == JobState.PARKED and j.id not in unknown),
        submit_unknown=unknown, pinned_elsewhere=tuple(sorted(elsewhere.items())))
