"""The log file never carries a key (issue 23's helper found qasync writing each call it
hands to a worker thread, with its arguments, at DEBUG: with ``--verbose`` a key on its way
to the keyring reached the log file)."""

from __future__ import annotations

import logging
from collections.abc import Iterator
from pathlib import Path

import pytest

from reelqueue.application.logs import setup_logging

pytestmark = pytest.mark.unit

KEY = "sk-live-LOGSENTINEL-0b7e"


@pytest.fixture
def fresh_root() -> Iterator[logging.Logger]:
    root = logging.getLogger()
    saved = (root.handlers[:], root.level)
    loggers = {name: logging.getLogger(name).level for name in ("qasync", "httpx2", "httpcore2",
                                                          "httpx", "httpcore")}
    root.handlers = []
    try:
        yield root
    finally:
        for handler in root.handlers:
            handler.close()
        root.handlers, root.level = saved
        for name, level in loggers.items():
            logging.getLogger(name).setLevel(level)


def test_verbose_logging_keeps_qasync_s_call_arguments_out(fresh_root: logging.Logger,
                                                           tmp_path: Path) -> None:
    setup_logging(tmp_path, verbose=True)
    # What qasync's executor says at DEBUG when the window stores a key.
    logging.getLogger("qasync").debug("Submitting callable %s with args (%r,)",
                                      "set_key", KEY)
    logging.getLogger("reelqueue.test").debug("a debug line of our own")
    for handler in fresh_root.handlers:
        handler.flush()
    text = (tmp_path / "logs" / "reelqueue.log").read_text(encoding="utf-8")
    assert "a debug line of our own" in text  # verbose does log DEBUG
    assert KEY not in text
