"""Banners say only what is still true, and do not pile up (issue 23): success and info
banners fade by themselves, errors and warnings stay; the HTTP API banner is shown once;
the crash banner's "the renders picked up go on" follows those renders; "All done" only
when nothing is in flight."""

from __future__ import annotations

import socket
import time

from PySide6.QtCore import QEvent, QPoint, QRect
from PySide6.QtWidgets import QApplication
from pytestqt.qtbot import QtBot

from reelqueue.domain.models import RecoveryReport
from reelqueue.engine.events import EngineStateEvent, JobEvent
from reelqueue.engine.queries import JobRow
from reelqueue.entry import start_window_api
from reelqueue.ui.banner import FADE_MS, BannerArea
from reelqueue.ui.dashboard import engine_words
from reelqueue.ui.jobs_data import JobTable
from reelqueue.ui.session import OpenReport, RecoveryFollowUp
from reelqueue.ui.settings import Settings, load_settings
from tests.gui.conftest import WindowHarness, on_qloop, save_screenshot, until


def test_success_and_info_fade_errors_and_warnings_stay(
        themed_app: QApplication, qtbot: QtBot) -> None:
    area = BannerArea()
    qtbot.addWidget(area)  # deleted on the GUI thread, not by a GC pass on a worker's
    area.show()
    shown = {kind: area.show_banner(kind, f"a {kind} banner", key=kind)
             for kind in ("success", "info", "warning", "error")}
    for kind in ("success", "info"):
        timer = shown[kind].fade_timer
        assert timer is not None and timer.isActive() and timer.isSingleShot()
        assert timer.interval() == FADE_MS == 6000
    assert shown["warning"].fade_timer is None and shown["error"].fade_timer is None

    # The pointer on a banner holds it; leaving starts the count again.
    info_timer = shown["info"].fade_timer
    assert info_timer is not None
    QApplication.sendEvent(shown["info"], QEvent(QEvent.Type.Enter))
    assert not info_timer.isActive()
    QApplication.sendEvent(shown["info"], QEvent(QEvent.Type.Leave))
    assert info_timer.isActive()

    success_timer = shown["success"].fade_timer
    assert success_timer is not None
    success_timer.timeout.emit()  # the timer runs out
    info_timer.timeout.emit()
    assert [b.kind for b in area.banners()] == ["warning", "error"]
    assert area.isVisible()


def test_a_faded_banner_never_takes_its_successor_with_it(
        themed_app: QApplication, qtbot: QtBot) -> None:
    area = BannerArea()
    qtbot.addWidget(area)  # deleted on the GUI thread, not by a GC pass on a worker's
    old = area.show_banner("info", "Moved 2 jobs to the front.", key="order")
    old_timer = old.fade_timer
    new = area.show_banner("info", "Moved 5 jobs to the front.", key="order")
    assert old_timer is not None and not old_timer.isActive()  # stopped when replaced
    old_timer.timeout.emit()
    assert area.get("order") is new


def test_faded_banners_go_to_the_notifications_list(
        themed_app: QApplication, qtbot: QtBot) -> None:
    """Issue 23: a banner that faded was gone for good; now it is kept in the toolbar's
    notifications list, with a count of those not seen yet."""
    area = BannerArea()
    qtbot.addWidget(area)  # deleted on the GUI thread, not by a GC pass on a worker's
    area.show()
    bell = area.bell
    assert bell.text() == "Notifications" and bell.unseen == 0
    first = area.show_banner("success", "Batch “shots” finished: 12 of 12 completed.")
    second = area.show_banner("info", "Moved 5 jobs to the front.", key="order")
    kept = area.show_banner("warning", "Account acme is out of credits.", key="stall")
    for banner in (first, second):
        assert banner.fade_timer is not None
        banner.fade_timer.timeout.emit()
    assert area.banners() == [kept]
    assert bell.unseen == 2 and bell.text() == "Notifications 2"
    lines = bell.lines()
    assert [line.split("  ", 1)[1] for line in lines] == [
        "Moved 5 jobs to the front.", "Batch “shots” finished: 12 of 12 completed."]
    kept.dismiss()  # closed by the user: seen, not a notification
    assert bell.unseen == 2
    emit_about_to_show(bell)  # the user opens the list
    assert bell.unseen == 0 and bell.text() == "Notifications"
    texts = [a.text() for a in bell.list.actions() if not a.isSeparator()]
    assert texts[:2] == lines and texts[-1] == "Clear"


def emit_about_to_show(bell: object) -> None:
    from reelqueue.ui.banner import NotificationBell

    assert isinstance(bell, NotificationBell)
    bell.list.aboutToShow.emit()


def test_at_most_two_warnings_show_the_others_fold(
        themed_app: QApplication, qtbot: QtBot) -> None:
    """Issue 23: three warnings left 3-4 table rows at 1280x720. The newest two show; the
    older fold under "N more warnings — Show" and come back when a shown one goes."""
    area = BannerArea()
    qtbot.addWidget(area)  # deleted on the GUI thread, not by a GC pass on a worker's
    area.show()
    loud = [area.show_banner("warning" if i % 2 else "error", f"problem {i}", key=f"p{i}")
            for i in range(4)]
    quiet = area.show_banner("info", "Imported 12 jobs.", key="imported")
    assert area.shown() == [loud[2], loud[3], quiet]
    assert area.more.isVisible() and area.more.text() == "2 more warnings — Show"
    area.more.click()
    assert area.shown() == [*loud, quiet] and area.more.text() == "Show fewer"
    area.more.click()
    assert area.shown() == [loud[2], loud[3], quiet]
    area.remove("p3")  # its cause went: an older one comes back
    assert area.shown() == [loud[1], loud[2], quiet]
    assert area.more.text() == "1 more warning — Show"
    area.remove("p0")
    assert area.shown() == [loud[1], loud[2], quiet] and not area.more.isVisible()
    assert area.get("p1") is loud[1]  # a folded banner is still there to be updated


def test_a_banner_with_a_button_stays_until_answered(
        themed_app: QApplication, qtbot: QtBot) -> None:
    """N3: "Also retry these 2…", "Retry (est. $…)" and the import's "Start" faded after
    6 s and the notifications list kept only their words. A banner that asks something
    stays until it is answered (the banner goes), dismissed, or no longer true."""
    area = BannerArea()
    qtbot.addWidget(area)
    area.show()
    pressed: list[str] = []
    start = area.show_banner("success", "Imported 12 new jobs.",
                             [("Start", lambda: pressed.append("start"))], key="imported")
    retry = area.show_banner("info", "Retry 2 failed: 1 re-render (est. $0.40).",
                             [("Retry (est. $0.40)", lambda: pressed.append("retry"))],
                             key="retry")
    assert start.fade_timer is None and retry.fade_timer is None
    start.buttons["Start"].click()
    assert pressed == ["start"] and area.get("imported") is None  # answered: gone
    assert area.bell.unseen == 0  # an answered question is no notification
    retry.dismiss()
    assert area.banners() == [] and not area.isVisible()
    # The button's work may show a newer banner of the same key: that one stays.
    first = area.show_banner("info", "Retry?", [("Retry", lambda: area.show_banner(
        "info", "Retrying 2 jobs.", key="retry"))], key="retry")
    first.buttons["Retry"].click()
    assert [b.text for b in area.banners()] == ["Retrying 2 jobs."]


def test_at_most_three_banners_show(themed_app: QApplication, qtbot: QtBot) -> None:
    area = BannerArea()
    qtbot.addWidget(area)
    area.show()
    asked = [area.show_banner("info", f"question {i}", [("Yes", lambda: None)], key=f"q{i}")
             for i in range(5)]
    assert area.shown() == asked[2:]
    assert area.more.isVisible() and area.more.text() == "2 more — Show"
    area.remove("q4")
    assert area.shown() == asked[1:4] and area.more.text() == "1 more — Show"


def test_the_table_never_moves_when_a_banner_comes_or_goes(
        themed_app: QApplication, qtbot: QtBot) -> None:
    """N3: the table jumped each time a banner went (it reflowed the window). The banners
    float over the bottom of the content, on top, inside the window."""
    from reelqueue.ui.main_window import MainWindow

    window = MainWindow()
    qtbot.addWidget(window)
    window.show()
    jobs = window.jobs_stack

    def place() -> tuple[int, int, int, int]:
        return QRect(jobs.mapTo(window, QPoint(0, 0)), jobs.size()).getRect()

    qtbot.waitUntil(lambda: jobs.height() > 0)
    before = place()
    area = window.banners
    first = area.show_banner("warning", "Account acme is out of credits.", key="stall")
    area.show_banner("success", "Imported 12 new jobs.", [("Start", lambda: None)],
                     key="imported")
    QApplication.processEvents()
    assert place() == before
    central = window.centralWidget()
    assert central.rect().contains(area.geometry())
    middle = first.mapTo(central, first.rect().center())
    hit = central.childAt(middle)
    assert hit is first or first.isAncestorOf(hit)  # on top, not under the table
    first.dismiss()
    QApplication.processEvents()
    assert place() == before
    area.remove("imported")
    QApplication.processEvents()
    assert place() == before and not area.isVisible()
    window.allow_close = True


def _free_port() -> int:
    with socket.socket() as probe:
        probe.bind(("127.0.0.1", 0))
        return int(probe.getsockname()[1])


@on_qloop
async def test_the_api_banner_is_shown_once_not_at_every_launch(windows: WindowHarness,
                                                               app_ctx) -> None:
    settings = Settings(theme="light", serve_api=True,
                        api_listen=f"127.0.0.1:{_free_port()}")
    first = await windows.open(app_ctx, start=False, settings=settings,
                               api_starter=start_window_api)
    banner = first.window.banners.get("api:serving")
    assert banner is not None and "HTTP API: Serving https://127.0.0.1:" in banner.text
    text = banner.text
    banner.dismiss()  # the user closes it
    await until(lambda: load_settings(app_ctx.data_dir).api_banner_seen == text, 10)
    await windows.close(first)

    again = await windows.open(app_ctx, start=False, settings=load_settings(app_ctx.data_dir),
                               api_starter=start_window_api)
    assert again.session.api is not None, "still served"
    assert again.window.banners.get("api:serving") is None, "not shown at every launch"
    # Asked for in Settings (the address changed): the user is told, once more.
    await again.keeper._save_settings(
        Settings(theme="light", serve_api=True, api_listen=f"127.0.0.1:{_free_port()}"))
    await until(lambda: again.window.banners.get("api:serving") is not None, 10)
    assert load_settings(app_ctx.data_dir).api_banner_seen == text, "kept through a save"


@on_qloop
async def test_the_crash_banner_stops_saying_the_renders_go_on_once_they_ended(
        windows: WindowHarness, app_ctx) -> None:
    controller = await windows.open(app_ctx, start=False)
    assert controller.window.paused
    # What start-up recovery reported after a crash: three renders handed back.
    recovery = RecoveryReport(reattached=[1, 2, 3])
    controller.report = OpenReport(unclean=True, kept_renders=0, paused=True,
                                   recovery=recovery)
    controller._show_open_report(controller.report)
    banner = controller.window.banners.get("recovery")
    assert banner is not None and banner.kind == "warning" and banner.fade_timer is None
    now = time.time()

    def event(job: int, state: str, **more: object) -> None:
        controller._on_job_event(JobEvent(job, state, now, account="studio",  # type: ignore[arg-type]
                                          **more))  # type: ignore[arg-type]

    for job in (1, 2, 3):
        event(job, "RENDERING", sub_status="running", progress=0.5)
    assert "3 renders picked up again" in banner.text
    assert "the 3 renders picked up go on." in banner.text, banner.text
    event(1, "COMPLETED")
    assert "go on" in banner.text
    assert "of the 3 renders picked up, 1 finished and 2 go on." in banner.text, banner.text
    event(2, "COMPLETED")
    event(3, "FAILED", error_label="render failed")
    assert "go on" not in banner.text, banner.text
    assert "the 3 renders picked up have ended (see the table)." in banner.text, banner.text
    # The longer text's layout (it wraps to one more line), before the picture.
    await until(lambda: banner.label.height()
                >= banner.label.heightForWidth(banner.label.width()), 5)
    save_screenshot(controller.window, "crash-banner-renders-ended")


def test_follow_up_counts_the_picked_up_renders_still_going() -> None:
    follow = RecoveryFollowUp(RecoveryReport(reattached=[1, 2], reconcile=[3]))
    at = 1.0
    assert follow.observe(JobEvent(1, "RENDERING", at, progress=0.1))  # type: ignore[arg-type]
    assert follow.observe(JobEvent(2, "DOWNLOADING", at))  # type: ignore[arg-type]
    assert follow.observe(JobEvent(3, "QUEUED", at))  # type: ignore[arg-type]
    assert follow.picked_up_going_on() == 2
    assert follow.observe(JobEvent(2, "COMPLETED", at))  # type: ignore[arg-type]
    assert not follow.observe(JobEvent(1, "RENDERING", at, progress=0.2))  # type: ignore[arg-type]
    assert not follow.observe(JobEvent(3, "COMPLETED", at))  # type: ignore[arg-type] # not picked up
    assert follow.picked_up_going_on() == 1 and follow.ended == {2: "COMPLETED"}


def _row(job: int, state: str) -> JobRow:
    return JobRow(id=job, batch_id=1, row_number=job, name=f"shot{job}", prompt="p",
                  provider="mock", account="studio", state=state, sub_status=None,
                  progress=None, attempts=1, max_attempts=3, output_path=f"/v/{job}.mp4",
                  error_label=None, error_message=None, attempt_started=1.0,
                  finished_at=2.0 if state == "COMPLETED" else None, updated_at=2.0,
                  cost=None, estimate=None)


def test_all_done_only_when_nothing_is_in_flight() -> None:
    table = JobTable()
    table.append([_row(1, "COMPLETED"), _row(2, "COMPLETED")])
    done = EngineStateEvent("done", 1.0)
    assert engine_words(done, table)[0] == "All done · 2 completed, 0 failed, 0 cancelled"
    # The engine still holds a render (its last word: running, one in flight) while the
    # mirror shows none open: not "All done" ahead of it.
    busy = EngineStateEvent("running", 1.0, running=1)
    assert engine_words(busy, table)[0] == "Running · finishing 1 render"
    # A row the mirror shows downloading: never "All done", whatever the engine said.
    table.append([_row(3, "DOWNLOADING")])
    assert engine_words(done, table)[0] == "Running · 1 rendering"


@on_qloop
async def test_the_window_s_toolbar_holds_the_notifications(windows: WindowHarness,
                                                            app_ctx) -> None:
    controller = await windows.open(app_ctx, start=False)
    window = controller.window
    bell = window.banners.bell
    assert bell.isVisibleTo(window) and bell.parentWidget() is not window.banners
    banner = window.banners.show_banner("info", "Moved 3 jobs to the front.", key="order")
    assert banner.fade_timer is not None
    banner.fade_timer.timeout.emit()
    assert window.banners.get("order") is None
    assert bell.text() == "Notifications 1"
    assert bell.lines()[0].endswith("Moved 3 jobs to the front.")
