"""Qt's X11 plugin is checked before the Qt application exists (issue 23, "start
anywhere"): a desktop without ``libxcb-cursor0`` gets the packages to install, not Qt's
abort. The verdict's logic with a faked loader; the real loader in tests/cli."""

from __future__ import annotations

from pathlib import Path

import pytest

import reelqueue.ui.platform_check as check
from reelqueue.domain.errors import WindowUnavailable
from reelqueue.ui.platform_check import (
    ensure_window_can_open,
    load_error,
    missing_libraries,
    window_problem,
    xcb_plugin,
)

pytestmark = pytest.mark.unit

PLUGIN = Path("/qt/plugins/platforms/libqxcb.so")
NOT_FOUND = ("libxcb-cursor.so.0: cannot open shared object file: No such file or "
             "directory libxcb-icccm.so.4 => not found")


class FakeLoader:
    def __init__(self, error: str | None) -> None:
        self.error = error
        self.asked: list[Path] = []

    def __call__(self, library: Path) -> str | None:
        self.asked.append(library)
        return self.error


def test_a_missing_xcb_library_is_named_with_its_packages(
        monkeypatch: pytest.MonkeyPatch) -> None:
    loader = FakeLoader(NOT_FOUND)
    env = {"DISPLAY": ":0"}
    message = window_problem(env, loader=loader, plugin=PLUGIN, platform="linux")
    assert loader.asked == [PLUGIN]
    assert message is not None
    assert "libxcb-cursor.so.0, libxcb-icccm.so.4" in message
    assert "Debian/Ubuntu: sudo apt install libxcb-cursor0 libxcb-icccm4" in message
    assert "Fedora:        sudo dnf install xcb-util-cursor xcb-util-wm" in message
    monkeypatch.setattr(check, "xcb_plugin", lambda: PLUGIN)
    monkeypatch.setattr(check, "load_error", loader)
    monkeypatch.setattr(check.sys, "platform", "linux")
    with pytest.raises(WindowUnavailable, match="libxcb-cursor0"):
        ensure_window_can_open(env)


def test_words_naming_no_known_library_give_qts_whole_list() -> None:
    message = window_problem({"DISPLAY": ":0", "QT_QPA_PLATFORM": "xcb"},
                             loader=FakeLoader("libfoo.so.9: file too short"),
                             plugin=PLUGIN, platform="linux")
    assert message is not None and "needs libfoo.so.9" in message
    assert "libxcb-cursor0" in message and "libxkbcommon-x11-0" in message


@pytest.mark.parametrize("env, platform", [
    ({"DISPLAY": ":0", "QT_QPA_PLATFORM": "offscreen"}, "linux"),
    ({"DISPLAY": ":0", "QT_QPA_PLATFORM": "wayland"}, "linux"),
    ({}, "linux"),  # no display: the command line says so and runs headless
    ({"DISPLAY": ":0"}, "win32"),
    ({"DISPLAY": ":0"}, "darwin"),
])
def test_only_the_x11_plugin_on_linux_is_checked(env: dict[str, str], platform: str) -> None:
    loader = FakeLoader(NOT_FOUND)
    assert window_problem(env, loader=loader, plugin=PLUGIN, platform=platform) is None
    assert loader.asked == []


def test_a_wayland_session_uses_qts_wayland_plugin_when_xcb_cannot_load() -> None:
    env = {"DISPLAY": ":0", "WAYLAND_DISPLAY": "wayland-0"}
    assert window_problem(env, loader=FakeLoader(NOT_FOUND), plugin=PLUGIN,
                          platform="linux") is None
    assert env["QT_QPA_PLATFORM"] == "wayland"
    fine = {"DISPLAY": ":0", "WAYLAND_DISPLAY": "wayland-0"}
    assert window_problem(fine, loader=FakeLoader(None), plugin=PLUGIN,
                          platform="linux") is None
    assert "QT_QPA_PLATFORM" not in fine


def test_the_loader_words_name_the_library() -> None:
    assert missing_libraries("/tmp/x/libxcb-cursor.so.0: file too short") == [
        "libxcb-cursor.so.0"]
    assert missing_libraries("libQt6XcbQpa.so.6: cannot open shared object file") == []


def test_the_real_plugin_loads_on_this_machine_and_a_missing_file_does_not(
        tmp_path: Path) -> None:
    plugin = xcb_plugin()
    assert plugin is not None and plugin.name == "libqxcb.so"
    assert load_error(plugin) is None
    assert load_error(tmp_path / "libnothing.so.1") is not None
