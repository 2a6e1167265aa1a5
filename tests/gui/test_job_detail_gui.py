"""The job detail never scrolls sideways (N7): a 64-character sha256 (or any long
unbroken value: a provider job id, a path) is elided in the middle, its whole value in
the tooltip and copied whole."""

from __future__ import annotations

from dataclasses import replace

from PySide6.QtWidgets import QApplication, QLabel, QScrollArea

from reelqueue.domain.models import LedgerEntry
from reelqueue.engine.queries import JobDetail
from reelqueue.ui.main_window import MainWindow
from tests.gui.test_dialogs_fit import SHA, job_detail


def test_a_long_sha256_never_makes_the_detail_scroll_sideways(
        themed_app: QApplication, tmp_path, qtbot) -> None:  # type: ignore[no-untyped-def]
    window = MainWindow()
    qtbot.addWidget(window)
    window.show()
    dialog = job_detail(window, tmp_path)
    assert dialog.job is not None
    job = dialog.job
    long_path = str(tmp_path / ("a" * 90) / "clip.mp4")
    job = replace(job, params={**job.params, "image_sha256": SHA},
                  provider_job_id="gen_" + "7" * 60, output_path=long_path)
    dialog.set_detail(JobDetail(job=job, ledger=[LedgerEntry(
        seq=1, at=1.0, event="claimed", job_id=2, account="a", claim_token="t",
        detail={})]))
    dialog.show()
    try:
        for _ in range(3):
            QApplication.processEvents()
        for area in dialog.findChildren(QScrollArea):
            bar = area.horizontalScrollBar()
            assert bar.maximum() == 0, f"scrolls sideways by {bar.maximum()} px"
        shown = {label.toolTip(): label for label in dialog.findChildren(QLabel)
                 if label.isVisible()}
        label = shown[SHA]  # the whole value is in its tooltip
        assert label.text() != SHA and "…" in label.text()
        assert label.text().startswith(SHA[:8]) and label.text().endswith(SHA[-8:])
        copy = next(a for a in label.actions() if a.text() == "Copy")
        copy.trigger()
        assert QApplication.clipboard().text() == SHA
    finally:
        dialog.close()
        dialog.deleteLater()
        window.allow_close = True
