"""The installed Qt binding does not leak references to ``True`` on emit (PySide6 6.12.0
on Python < 3.12 did, and the interpreter aborted after a few thousand events): the pins
exclude that version, and this fails if a binding that leaks gets installed again."""

from __future__ import annotations

import sys

import pytest
from PySide6.QtCore import QObject, Signal

from reelqueue.ui.qtcompat import emit

pytestmark = pytest.mark.gui

EMITS = 2000


class _Probe(QObject):
    ping = Signal()


@pytest.mark.skipif(sys.version_info >= (3, 12), reason="True is immortal from 3.12")
def test_emit_does_not_take_references_from_true() -> None:
    probe = _Probe()
    received: list[None] = []
    probe.ping.connect(lambda: received.append(None))
    before = sys.getrefcount(True)
    for _ in range(EMITS):
        emit(probe.ping)
        probe.ping.emit()
    lost = before - sys.getrefcount(True)
    assert len(received) == 2 * EMITS
    # A leaking binding loses one per emit (4000); other threads may move the count a
    # little either way meanwhile.
    assert lost < EMITS, f"{lost} references to True lost over {2 * EMITS} emits"
