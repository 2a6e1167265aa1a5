"""The window starts with a broken provider plug-in installed, renders with the working
one, and its About box (F1) lists both: the working one with its version, the broken one
with the reason it was skipped (issue 36 item 2)."""

from __future__ import annotations

from collections.abc import Iterator
from dataclasses import replace

import pytest
from PySide6.QtWidgets import QApplication
from reelqueue_sample.provider import INFO as SAMPLE

from reelqueue.application import compose
from reelqueue.cli.context import CliContext
from reelqueue.providers.plugins import PluginEntry
from reelqueue.ui.about import AboutDialog
from tests.gui.conftest import WindowHarness, on_qloop, save_screenshot, until


def _no_module() -> object:
    raise ModuleNotFoundError("No module named 'reelqueue_broken_plugin'")


@pytest.fixture
def broken_plugin(monkeypatch: pytest.MonkeyPatch) -> Iterator[None]:
    monkeypatch.delenv(compose.NO_PLUGINS_ENV, raising=False)
    compose.use_plugin_entries(lambda: [
        PluginEntry("sample", "reelqueue_sample.provider:INFO", "reelqueue-sample-provider",
                    "0.1.0", lambda: SAMPLE),
        PluginEntry("broken", "reelqueue_broken_plugin:INFO", "reelqueue-broken-plugin",
                    "0.3", _no_module),
        PluginEntry("shadow", "reelqueue_shadow:INFO", "reelqueue-shadow", "1.0",
                    lambda: replace(SAMPLE, kind="runway"))])
    yield
    compose.use_plugin_entries(None)


@pytest.mark.expect_warnings("provider plug-in reelqueue-(broken-plugin|shadow) .* skipped")
@on_qloop
async def test_the_window_starts_with_a_broken_plug_in_and_about_names_it(
        windows: WindowHarness, app_ctx: CliContext, broken_plugin: None) -> None:
    controller = await windows.open(app_ctx, start=True)
    assert "sample" in controller.session.app.providers
    assert controller.session.app.providers.get("runway").title != SAMPLE.title  # not shadowed
    controller.window.about_action.trigger()
    await until(lambda: any(isinstance(w, AboutDialog) and w.isVisible()
                            for w in QApplication.topLevelWidgets()))
    about = next(w for w in QApplication.topLevelWidgets() if isinstance(w, AboutDialog))
    text = about.text.toPlainText()
    assert "plug-in reelqueue-sample-provider 0.1.0: sample (Sample Video API)" in text
    assert ("plug-in reelqueue-broken-plugin 0.3 (broken): skipped: it could not be "
            "imported (ModuleNotFoundError: No module named 'reelqueue_broken_plugin')"
            ) in text
    assert "'runway' is a built-in provider's" in text
    save_screenshot(about, "about-plugins-light")
    about.close()
