"""A reference image swapped after import is never sent (issue 11, item 5), end to end:
the real CLI, the journal, and the mock provider in its own process counting creates."""

from __future__ import annotations

import json
from pathlib import Path

import httpx2
import pytest

from tests.cli.test_cli_e2e import mock_process, rq

pytestmark = pytest.mark.integration

PNG = b"\x89PNG\r\n\x1a\n" + b"\x00" * 64
SECRET = b"-----BEGIN OPENSSH PRIVATE KEY-----\nb3BlbnNzaC1rZXktdjEAAAAA\n"


def test_an_image_swapped_after_import_fails_its_row_and_nothing_is_created(
    tmp_path: Path,
) -> None:
    data = tmp_path / "data"
    sheet_dir = tmp_path / "sheet"
    sheet_dir.mkdir()
    (sheet_dir / "kept.png").write_bytes(PNG)
    (sheet_dir / "swapped.png").write_bytes(PNG)
    sheet = sheet_dir / "shots.csv"
    sheet.write_text("name,prompt,image,duration\n"
                     "kept,a calm shot,kept.png,4\n"
                     "swapped,another calm shot,swapped.png,4\n", encoding="utf-8")
    with mock_process("--render-seconds-min", "0.1", "--render-seconds-max", "0.2") as url:
        added = rq(data, "accounts", "add", "m", "--provider", "mock", "--base-url", url)
        assert added.returncode == 0, added.stderr
        imported = rq(data, "import", str(sheet), "--provider", "mock")
        assert imported.returncode == 0, imported.stdout + imported.stderr
        # After the import: one image rewritten, still a PNG; then swapped for a link to
        # a secret (what the audit's create body carried).
        (sheet_dir / "swapped.png").unlink()
        secret = tmp_path / "id_ed25519"
        secret.write_bytes(SECRET)
        (sheet_dir / "swapped.png").symlink_to(secret)
        run = rq(data, "run", "--no-progress")
        assert run.returncode == 0, run.stdout + run.stderr
        counters = httpx2.get(f"{url}/_mock/counters").json()
        assert counters["creates_total"] == 1  # the kept row only
    status = json.loads(rq(data, "status", "--json").stdout)
    by_name = {job["name"]: job for job in status["jobs"]}
    assert by_name["kept"]["state"] == "COMPLETED"
    swapped = by_name["swapped"]
    assert swapped["state"] == "FAILED"
    assert swapped["error_label"] == "invalid input"
    assert "symbolic link" in swapped["last_error"]
    assert swapped["attempts"] == 1
    journal_bytes = (data / "journal.sqlite3").read_bytes()
    assert b"OPENSSH" not in journal_bytes and b"b3BlbnNzaC1rZXkt" not in journal_bytes


def test_an_image_rewritten_after_import_is_refused_by_its_hash(tmp_path: Path) -> None:
    data = tmp_path / "data"
    (tmp_path / "frame.png").write_bytes(PNG)
    sheet = tmp_path / "shots.csv"
    sheet.write_text("name,prompt,image,duration\nrow,a calm shot,frame.png,4\n",
                     encoding="utf-8")
    with mock_process("--render-seconds-min", "0.1", "--render-seconds-max", "0.2") as url:
        assert rq(data, "accounts", "add", "m", "--provider", "mock", "--base-url",
                  url).returncode == 0
        assert rq(data, "import", str(sheet), "--provider", "mock").returncode == 0
        (tmp_path / "frame.png").write_bytes(PNG + b"other frame")
        run = rq(data, "run", "--no-progress")
        assert run.returncode == 0, run.stdout + run.stderr
        assert httpx2.get(f"{url}/_mock/counters").json()["creates_total"] == 0
    job = json.loads(rq(data, "status", "--json").stdout)["jobs"][0]
    assert job["state"] == "FAILED"
    assert "changed after the sheet was imported" in job["last_error"]
