"""Hostile sheets (issue 11, items 1 and 2): each is refused with a clear message, or read
safely, by the real command line: exit 2, no traceback, the journal unchanged, and the
peak memory of the process under the documented bound.

The small workbooks are committed (tests/fixtures/sheets/hostile/, made by
tests/fixtures/make_hostile_sheets.py); the large CSVs are generated into tmp_path.
"""

from __future__ import annotations

import importlib.util
import subprocess
import sys
from pathlib import Path

import pytest

from reelqueue.store.sqlite import SqliteStore

HOSTILE = Path(__file__).parents[1] / "fixtures" / "sheets" / "hostile"

PEAK_RSS_BOUND_MB = 512
"""The documented bound on an import's peak memory within the default limits
(docs/intake.md, "Limits"; benchmarks/bench_import_hostile.py measures the largest
sheets that are imported)."""

pytestmark = [
    pytest.mark.integration,
    pytest.mark.skipif(sys.platform == "win32", reason="peak RSS from resource (POSIX)"),
]


def _maker():  # type: ignore[no-untyped-def]
    spec = importlib.util.spec_from_file_location(
        "make_hostile_sheets", HOSTILE.parents[1] / "make_hostile_sheets.py")
    assert spec and spec.loader
    module = importlib.util.module_from_spec(spec)
    spec.loader.exec_module(module)
    return module


# Runs the command line and, on the way out, reports the process's own peak RSS: VmHWM
# where /proc has it (ru_maxrss may carry the parent's peak across fork + exec).
WRAPPER = (
    "import atexit, resource, runpy, sys\n"
    "def peak():\n"
    "    try:\n"
    "        for line in open('/proc/self/status'):\n"
    "            if line.startswith('VmHWM:'):\n"
    "                return int(line.split()[1])\n"
    "    except OSError:\n"
    "        pass\n"
    "    return resource.getrusage(resource.RUSAGE_SELF).ru_maxrss\n"
    "atexit.register(lambda: sys.stderr.write('\\nPEAK_RSS_KB=%d\\n' % peak()))\n"
    "sys.argv = ['reelqueue', *sys.argv[1:]]\n"
    "runpy.run_module('reelqueue', run_name='__main__')\n"
)


def rq(data: Path, *args: str) -> tuple[int, str, str, float]:
    """Run ``reelqueue`` in a child; (exit code, stdout, stderr, peak RSS in MB)."""
    done = subprocess.run(
        [sys.executable, "-c", WRAPPER, "--data-dir", str(data),
         "--videos-dir", str(data / "videos"), *args],
        capture_output=True, text=True, timeout=300, check=False,
    )
    err, _, peak_line = done.stderr.rpartition("PEAK_RSS_KB=")
    assert peak_line.strip().isdigit(), done.stderr
    return done.returncode, done.stdout, err, int(peak_line) / 1024


@pytest.fixture
def journal(tmp_path: Path) -> Path:
    """A data folder whose journal already holds one imported job."""
    data = tmp_path / "data"
    sheet = tmp_path / "one.csv"
    sheet.write_text("prompt\na quiet harbour at dawn\n", encoding="utf-8")
    code, out, err, _ = rq(data, "import", str(sheet))
    assert code == 0, out + err
    return data


def jobs_in(data: Path) -> list[tuple[int, str]]:
    store = SqliteStore.open(journal_file(data), now=0.0)
    try:
        return [(job.id, job.job_key) for job in store.list_jobs()]
    finally:
        store.close()


def journal_file(data: Path) -> Path:
    found = [path for path in data.iterdir() if path.suffix in (".sqlite3", ".db", ".sqlite")]
    assert found, list(data.iterdir())
    return found[0]


REFUSED = {
    "sparse.xlsx": "spans 1,048,576 rows x 16,384 columns",
    "wide_tall.xlsx": "spans 1,048,576 rows x 16,384 columns",
    "lying_dimension.xlsx": "declares the size A1:XFD1048576",
    "no_reference.xlsx": "spans 1,048,576 rows x 16,384 columns",
    "huge_cell.xlsx": "holds a cell of more than 2,097,152 characters",
    "zip_bomb.xlsx": "unpacks to 300 MB or more",
    "lying_bomb.xlsx": "unpacks to more than the 1,024 bytes its directory declares",
    "duplicate_names.xlsx": "holds two parts named 'xl/worksheets/sheet1.xml'",
    "shared_strings_count.xlsx": "declares 4,000,000,000 different texts",
    "repeated.ods": "spans 1,048,576 rows x 16,384 columns",
}
SETTING = {
    "sparse.xlsx": "--max-cells", "wide_tall.xlsx": "--max-cells",
    "lying_dimension.xlsx": "--max-cells", "no_reference.xlsx": "--max-cells",
    "huge_cell.xlsx": "--max-cell-kb", "zip_bomb.xlsx": "--max-text-mb",
    "repeated.ods": "--max-cells", "shared_strings_count.xlsx": "--max-cells",
}


@pytest.mark.parametrize("name", sorted(REFUSED))
def test_hostile_workbook_is_refused_before_it_is_loaded(name: str, journal: Path) -> None:
    before = jobs_in(journal)
    journal_bytes = journal_file(journal).read_bytes()
    code, out, err, peak = rq(journal, "import", str(HOSTILE / name))
    assert code == 2, out + err
    assert REFUSED[name] in err, err
    if name in SETTING:
        assert SETTING[name] in err, err  # the message names the setting to raise it
    assert "Traceback" not in out + err
    assert jobs_in(journal) == before
    assert journal_file(journal).read_bytes() == journal_bytes
    assert peak < PEAK_RSS_BOUND_MB, f"{name}: peak RSS {peak:.0f} MB"


def test_the_same_files_through_run_are_refused_too(journal: Path) -> None:
    code, out, err, _ = rq(journal, "run", str(HOSTILE / "sparse.xlsx"), "--provider", "mock")
    assert code == 2, out + err
    assert "--max-cells" in err and "Traceback" not in out + err


def test_trailing_empty_repeats_as_libreoffice_writes_them_import(tmp_path: Path) -> None:
    code, out, err, peak = rq(tmp_path / "data", "import", str(HOSTILE / "trailing_empty.ods"))
    assert code == 0, out + err
    assert "1 new jobs" in out
    assert peak < PEAK_RSS_BOUND_MB


def test_a_million_row_csv_stops_at_the_queue_limit(journal: Path, tmp_path: Path) -> None:
    sheet = _maker().write_million_rows(tmp_path / "million.csv")
    before = jobs_in(journal)
    code, out, err, peak = rq(journal, "import", str(sheet))
    assert code == 2, out + err
    assert "more than 100,000 rows" in err and "--max-waiting" in err
    assert "Traceback" not in out + err
    assert jobs_in(journal) == before
    assert peak < PEAK_RSS_BOUND_MB, f"peak RSS {peak:.0f} MB"


def test_a_25_mb_single_cell_csv_is_refused(journal: Path, tmp_path: Path) -> None:
    sheet = _maker().write_one_huge_cell(tmp_path / "huge.csv")
    before = jobs_in(journal)
    code, out, err, peak = rq(journal, "import", str(sheet))
    assert code == 2, out + err
    assert "line 2: a cell is longer than 2,097,152 characters" in err
    assert "--max-cell-kb" in err and "Traceback" not in out + err
    assert jobs_in(journal) == before
    assert peak < PEAK_RSS_BOUND_MB, f"peak RSS {peak:.0f} MB"


@pytest.mark.parametrize("name", ["sparse.xlsx", "shared_strings_count.xlsx"])
def test_the_file_really_kills_an_unguarded_reader(name: str) -> None:
    """Proof the fixture is hostile: calamine on it, in a child limited to 2 GB of address
    space, dies (the 549 GB range or the 96 GB string table fails and Rust aborts)."""
    script = (
        "import resource, python_calamine as pc, sys\n"
        "resource.setrlimit(resource.RLIMIT_AS, (2 << 30, 2 << 30))\n"
        "book = pc.CalamineWorkbook.from_path(sys.argv[1])\n"
        "book.get_sheet_by_name(book.sheet_names[0]).to_python()\n"
        "print('read')\n"
    )
    done = subprocess.run([sys.executable, "-c", script, str(HOSTILE / name)],
                          capture_output=True, timeout=120, check=False)
    assert done.returncode != 0 and b"read" not in done.stdout
