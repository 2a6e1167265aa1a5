"""``status`` and ``doctor`` list the provider plug-ins: each in use with its distribution
and version, each skipped one with the reason; ``--no-plugins`` starts without them
(issue 36 item 2). The plug-ins come from fake entry points given to the composition root."""

from __future__ import annotations

import json
import time
from collections.abc import Iterator
from dataclasses import replace
from pathlib import Path

import pytest
from reelqueue_sample.provider import INFO as SAMPLE

from reelqueue.application import compose
from reelqueue.cli import main as cli_main
from reelqueue.providers.plugins import PluginEntry
from reelqueue.store.sqlite import SqliteStore

BROKEN = PluginEntry("broken", "reelqueue_broken_plugin:INFO", "reelqueue-broken-plugin",
                     "0.3", lambda: replace(SAMPLE, kind="broken", contract=99))
WORKING = PluginEntry("sample", "reelqueue_sample.provider:INFO", "reelqueue-sample-provider",
                      "0.1.0", lambda: SAMPLE)


@pytest.fixture
def plugins(monkeypatch: pytest.MonkeyPatch) -> Iterator[None]:
    monkeypatch.delenv(compose.NO_PLUGINS_ENV, raising=False)
    compose.use_plugin_entries(lambda: [WORKING, BROKEN])
    yield
    monkeypatch.delenv(compose.NO_PLUGINS_ENV, raising=False)  # --no-plugins sets it
    compose.use_plugin_entries(None)


def cli(tmp_path: Path, *argv: str) -> int:
    return cli_main.main(["--data-dir", str(tmp_path / "data"), "--videos-dir",
                          str(tmp_path / "videos"), *argv])


@pytest.mark.expect_warnings("provider plug-in reelqueue-broken-plugin .* skipped")
def test_status_and_doctor_name_the_plug_ins_and_the_broken_one_is_skipped(
        tmp_path: Path, plugins: None, capsys: pytest.CaptureFixture[str]) -> None:
    (tmp_path / "data").mkdir()
    SqliteStore.open(tmp_path / "data" / "journal.sqlite3", now=time.time()).close()
    assert cli(tmp_path, "status") == 0
    out = capsys.readouterr().out
    assert "plug-in reelqueue-sample-provider 0.1.0: sample (Sample Video API)" in out
    assert ("plug-in reelqueue-broken-plugin 0.3 (broken): skipped: written for provider "
            "contract version 99; this ReelQueue has version 1") in out
    assert cli(tmp_path, "status", "--json") == 0
    said = json.loads(capsys.readouterr().out)["plugins"]
    assert [p["kind"] for p in said["loaded"]] == ["sample"]
    assert said["skipped"][0]["distribution"] == "reelqueue-broken-plugin"
    assert cli(tmp_path, "doctor") == 0  # a skipped plug-in is said, not a failed check
    assert "skipped: written for provider contract version 99" in capsys.readouterr().out


def test_no_plugins_starts_with_the_built_ins_only(
        tmp_path: Path, plugins: None, capsys: pytest.CaptureFixture[str]) -> None:
    assert cli(tmp_path, "--no-plugins", "status") == 0
    out = capsys.readouterr().out
    assert "plug-ins: off (--no-plugins)" in out and "sample" not in out
    assert "sample" not in compose.provider_registry()
