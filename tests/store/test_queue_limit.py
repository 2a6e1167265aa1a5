"""The one queue-limit rule (store/queue_limit.py) that the intake and every store use."""

from __future__ import annotations

import pytest

from reelqueue.domain.errors import InputError
from reelqueue.store.queue_limit import check_queue_room

pytestmark = pytest.mark.unit


@pytest.mark.parametrize(("waiting", "new", "limit"), [
    (0, 5, 5), (3, 2, 5), (9, 0, 5), (100, 100, None)])
def test_what_fits_passes(waiting: int, new: int, limit: int | None) -> None:
    check_queue_room(waiting, new, limit)  # raises when it does not fit


@pytest.mark.parametrize(("waiting", "new", "limit", "message"), [
    (3, 3, 5, "holds 3 waiting jobs and its limit is 5: only 2 of these 3 new jobs fit"),
    (7, 1, 5, "holds 7 waiting jobs and its limit is 5: only 0 of these 1 new jobs fit"),
])
def test_what_does_not_fit_is_refused_with_the_numbers(
        waiting: int, new: int, limit: int, message: str) -> None:
    with pytest.raises(InputError, match=message):
        check_queue_room(waiting, new, limit)
