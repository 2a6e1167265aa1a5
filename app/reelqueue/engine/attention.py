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
"""

from __future__ import annotations

from dataclasses import dataclass

from reelqueue.domain.errors import ErrorLabel
from reelqueue.domain.states import JobState
from reelqueue.store.base import Store


@dataclass(frozen=True)
class NeedsAttention:
    """Attributes:
    parked: ids of parked jobs whose renders exist and are kept.
    submit_unknown: ids of jobs whose create's outcome is unknown (parked, or failed by an
        older ReelQueue).
    """

    parked: tuple[int, ...] = ()
    submit_unknown: tuple[int, ...] = ()

    def __bool__(self) -> bool:
        return bool(self.parked or self.submit_unknown)

    def as_dict(self) -> dict[str, int]:
        return {"parked": len(self.parked), "submit_unknown": len(self.submit_unknown)}


def needs_attention(store: Store, batch_id: int | None = None) -> NeedsAttention:
    """The parked and submit-unknown jobs of the journal (or of one batch)."""
    jobs = store.list_jobs(batch_id=batch_id, states=[JobState.PARKED, JobState.FAILED])
    unknown = tuple(j.id for j in jobs if j.error_label == ErrorLabel.SUBMIT_UNKNOWN.value
                    and j.provider_job_id is None)
    return NeedsAttention(
        parked=tuple(j.id for j in jobs if j.state == JobState.PARKED and j.id not in unknown),
        submit_unknown=unknown)
