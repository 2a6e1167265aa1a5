"""Work-arounds for bugs of the Qt binding in use, each measured before it is applied.

PySide6 6.12.0 on Python < 3.12: ``SignalInstance.emit()`` returns ``True`` without a
reference of its own, so every emit made from Python takes one reference away from
``True`` and the interpreter aborts ("Fatal Python error: bool_dealloc") once they run out
— after a few thousand events. 6.11.3 does not do it; Python 3.12+ makes ``True``
immortal. We probe the binding once and, where it leaks, give the reference back after
every Python-side emit: ours (:func:`emit`) and qasync's ``call_soon_threadsafe`` (every
journal call completes through it; :class:`QEventLoop`). ``disconnect()`` has the same
fault (qasync calls it when its loop closes). Because any reference still missing at exit
aborts the interpreter while it finalises, the leaking build also gets a cushion of spare
references on ``True``, ``False`` and ``None`` (the benchmark showed ``None`` losing some
too) — static objects that is never freed, so spare references cost
nothing (Python 3.12 makes it immortal for the same reason). Pinning
``PySide6-Essentials`` to ``!=6.12.0`` is the real fix; this keeps a 6.12.0 install alive.
"""

from __future__ import annotations

import ctypes
import sys
from typing import Any

import qasync
from PySide6.QtCore import QObject, Signal

_incref = ctypes.pythonapi.Py_IncRef
_incref.argtypes = [ctypes.py_object]
_incref.restype = None


class _Probe(QObject):
    ping = Signal()


def _emit_leaks() -> bool:
    if sys.version_info >= (3, 12):
        return False
    probe = _Probe()
    before = sys.getrefcount(True)
    for _ in range(8):
        probe.ping.emit()
    leaked = before - sys.getrefcount(True)
    for _ in range(max(0, leaked)):  # give back what the probe itself took
        _incref(True)
    return leaked >= 8


EMIT_LEAKS = _emit_leaks()
CUSHION = 1 << 24


def _add_cushion() -> None:
    if sys.implementation.name != "cpython":
        return
    for singleton in (True, False, None):  # static objects: never freed, whatever the count
        refcount = ctypes.c_ssize_t.from_address(id(singleton))  # ob_refcnt, the first field
        refcount.value += CUSHION


if EMIT_LEAKS:
    _add_cushion()


def emit(signal: Any, *args: Any) -> None:
    """``signal.emit(*args)``, minus the binding's reference leak where it has one."""
    result = signal.emit(*args)
    if EMIT_LEAKS and result is True:
        _incref(True)


class QEventLoop(qasync.QEventLoop):  # type: ignore[misc]
    """qasync's loop, with the emit in ``call_soon_threadsafe`` compensated."""

    def call_soon_threadsafe(self, callback: Any, *args: Any, context: Any = None) -> Any:
        handle = super().call_soon_threadsafe(callback, *args, context=context)
        if EMIT_LEAKS:
            _incref(True)
        return handle

    def close(self) -> None:
        closing = not self.is_closed()
        super().close()  # disconnects its call-soon signal: the same missing reference
        if EMIT_LEAKS and closing:
            _incref(True)
