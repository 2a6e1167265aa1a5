"""The guard in tests/conftest.py fails a test that logs an unexpected WARNING, and lets
through the ones a test declares: run on a small test file in a pytest subprocess."""

from __future__ import annotations

import os
import subprocess
import sys
from pathlib import Path

import pytest

CONFTEST = Path(__file__).with_name("conftest.py")
REPO = Path(__file__).resolve().parents[1]

TESTS = '''
import logging

import pytest

log = logging.getLogger("reelqueue.somewhere")


def test_quiet():
    log.info("nothing to see")


def test_unexpected():
    log.warning("the disk is on fire")


def test_unexpected_error():
    log.error("a bug")


@pytest.mark.expect_warnings("on fire")
def test_declared_by_marker():
    log.warning("the disk is on fire")


def test_declared_by_fixture(expect_warnings):
    expect_warnings.add(r"job \\d+ fenced out")
    log.warning("job 12 fenced out")


@pytest.mark.expect_warnings("on fire")
def test_declared_other_text():
    log.warning("the network is down")


def test_other_logger():
    logging.getLogger("somebody.else").warning("not ours")
'''


@pytest.mark.integration
def test_the_guard_fails_only_unexpected_warnings(tmp_path: Path) -> None:
    (tmp_path / "conftest.py").write_text(CONFTEST.read_text())
    (tmp_path / "test_sample.py").write_text(TESTS)
    (tmp_path / "pytest.ini").write_text("[pytest]\n")
    # The copied conftest imports helpers from the tests package: the repository on the path.
    path = os.pathsep.join(p for p in (str(REPO), os.environ.get("PYTHONPATH", "")) if p)
    run = subprocess.run(
        [sys.executable, "-m", "pytest", "-p", "no:cacheprovider", "-rA", "-q", str(tmp_path)],
        cwd=tmp_path, capture_output=True, text=True, timeout=120,
        env=dict(os.environ, PYTHONPATH=path))
    out = run.stdout
    assert run.returncode == 1, out + run.stderr
    failed = {line.split("::")[-1].split()[0] for line in out.splitlines()
              if line.startswith("ERROR ") and "::" in line}
    passed = {line.split("::")[-1].split()[0] for line in out.splitlines()
              if line.startswith("PASSED ") and "::" in line}
    assert failed == {"test_unexpected", "test_unexpected_error", "test_declared_other_text"}
    # A test the guard fails at teardown is also listed PASSED (its call passed).
    assert passed - failed == {"test_quiet", "test_declared_by_marker", "test_declared_by_fixture",
                      "test_other_logger"}
    assert "1 unexpected WARNING log(s)" in out
    assert "WARNING reelqueue.somewhere: the disk is on fire" in out
    assert "ERROR reelqueue.somewhere: a bug" in out
