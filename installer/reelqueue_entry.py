"""The frozen ReelQueue's entry point: PyInstaller runs this file as ``__main__``.

It is ``python -m reelqueue`` for the bundle, with two additions that only the frozen app
needs:

* ``reelqueue self-test`` starts a child ``sys.executable -m reelqueue ...`` (its crash
  check). In the frozen app ``sys.executable`` is this program, so a leading
  ``-m reelqueue`` is dropped: the child is the same command line as under Python.
* ``REELQUEUE_FROZEN_SMOKE=window`` (set by ``installer/linux/smoke-test.sh`` only): the
  program exits as soon as its first top-level window has been shown and painted, after
  printing how long that took, and saves a screenshot of it when
  ``REELQUEUE_FROZEN_SMOKE_SCREENSHOT`` names a PNG file. Exit code 77 when the build has no
  window module (``reelqueue.ui.app``) yet.
* ``REELQUEUE_FROZEN_SMOKE=thumbnail`` (the smoke test too): decodes the bundled
  ``resources/sample.mp4``'s first keyframe with the bundled PyAV, as the window's
  thumbnails do, prints the picture's size and exits (1 when no picture came out).
"""

from __future__ import annotations

import os
import sys
import time

_STARTED = time.perf_counter()
SKIP = 77


def _drop_python_m() -> None:
    if sys.argv[1:3] == ["-m", "reelqueue"]:
        del sys.argv[1:3]


def _install_window_probe() -> None:
    """Make the first exposed top-level window end the process once it has painted."""
    from importlib.util import find_spec

    if find_spec("reelqueue.ui.app") is None:
        print("reelqueue-smoke: SKIP: this build has no window (reelqueue.ui.app)", flush=True)
        os._exit(SKIP)
    # A display is what the CLI looks for before it opens the window; with
    # QT_QPA_PLATFORM=offscreen Qt itself never connects to it.
    os.environ.setdefault("DISPLAY", ":0")
    os.environ.setdefault("QT_API", "pyside6")
    from PySide6 import QtCore, QtGui, QtWidgets

    screenshot = os.environ.get("REELQUEUE_FROZEN_SMOKE_SCREENSHOT")

    def report(window: QtGui.QWindow) -> None:
        elapsed = time.perf_counter() - _STARTED
        title = window.title() or type(window).__name__
        if screenshot:
            for widget in QtWidgets.QApplication.topLevelWidgets():
                if widget.isVisible() and widget.windowHandle() is window:
                    widget.grab().save(screenshot)
        print(f"reelqueue-smoke: window shown after {elapsed:.3f} s "
              f"(from the entry script): {title!r}", flush=True)
        sys.stderr.flush()
        os._exit(0)

    class _Probe(QtCore.QObject):
        def __init__(self) -> None:
            super().__init__()
            self.done = False

        def eventFilter(self, obj: QtCore.QObject, event: QtCore.QEvent) -> bool:
            if (not self.done and event.type() == QtCore.QEvent.Type.Expose
                    and isinstance(obj, QtGui.QWindow) and obj.isExposed()
                    and obj.transientParent() is None):
                self.done = True
                # Report after this expose event is handled, i.e. after the first paint.
                QtCore.QTimer.singleShot(0, lambda: report(obj))
            return False

    probe = _Probe()
    original = QtWidgets.QApplication

    class _ProbedApplication(original):  # type: ignore[misc, valid-type]
        def __init__(self, *args: object) -> None:
            super().__init__(*args)
            self.installEventFilter(probe)

    # The window module takes QApplication from PySide6.QtWidgets when it is imported,
    # which is after this.
    QtWidgets.QApplication = _ProbedApplication


def _thumbnail_probe() -> int:
    from reelqueue.resources import resource
    from reelqueue.ui.thumbnails import decode_first_keyframe

    image = decode_first_keyframe(resource("sample.mp4"))
    if image.isNull():
        print("reelqueue-smoke: the sample video gave no picture", flush=True)
        return 1
    print(f"reelqueue-smoke: thumbnail {image.width()}x{image.height()}", flush=True)
    return 0


def main() -> int:
    _drop_python_m()
    if os.environ.get("REELQUEUE_FROZEN_SMOKE") == "thumbnail":
        return _thumbnail_probe()
    if os.environ.get("REELQUEUE_FROZEN_SMOKE") == "window":
        _install_window_probe()
    from reelqueue.entry import main as reelqueue_main

    return reelqueue_main()


if __name__ == "__main__":
    raise SystemExit(main())
