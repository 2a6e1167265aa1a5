"""A batch's re-rolls (issue 35 item 4): each is a batch of its own whose settings name
the batch it re-rolls (``reroll_of``) and whose ``max_spend`` is the amount the user
confirmed. So its cap is a batch cap, checked in the claim's transaction like every
batch cap (store/spend.py): a crash and a restart cannot spend past it. Its takes belong
to the rows of the batch it re-rolls (domain/review.py ``take_group``)."""

from __future__ import annotations

from reelqueue.domain.models import Batch

REROLL_OF = "reroll_of"
"""The batch setting that names the batch a re-roll belongs to."""


def reroll_root(batch: Batch | None, batch_id: int) -> int:
    """The batch whose rows ``batch`` (id ``batch_id``) holds takes of: the one it
    re-rolls, or itself."""
    if batch is None:
        return batch_id
    value = batch.settings.get(REROLL_OF)
    if isinstance(value, int) and not isinstance(value, bool) and value > 0:
        return value
    return batch_id


__all__ = ["REROLL_OF", "reroll_root"]
