"""The two places the window meets the Qt binding's signal machinery: :func:`emit` and
the event loop (:class:`QEventLoop`, qasync's).

PySide6 6.12.0 on Python < 3.12 returned ``True`` from ``SignalInstance.emit()`` without a
reference of its own, and the interpreter aborted ("bool_dealloc") after a few thousand
events. The pins exclude that version (``PySide6-Essentials>=6.6,!=6.12.0``), so the
reference-count patch that kept it alive is gone; ``tests/gui/test_qtcompat.py`` fails if
an installed binding leaks again.
"""

from __future__ import annotations

import qasync
from PySide6.QtCore import SignalInstance

QEventLoop = qasync.QEventLoop


def emit(signal: SignalInstance, *args: object) -> None:
    """``signal.emit(*args)``."""
    signal.emit(*args)
