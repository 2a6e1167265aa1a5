"""Reading a workbook that cannot be measured first (XLS, XLSB) in a child process.

XLS and XLSB are binary formats with no cheap pre-scan, and calamine aborts the whole
process when an allocation fails. So they are read by ``python -m
reelqueue.intake.workbook_child`` with a memory limit: on POSIX ``RLIMIT_AS`` (the
address space: an allocation past it fails, calamine aborts, and only the child dies); on
Windows, which has no such limit, only the file-size cap and the timeout apply.

The child gets its request as JSON on stdin and answers with one pickle on stdout:
``("ok", sheet name, numbered rows)`` or ``("error", message)``. The parent unpickles
it with a loader that accepts plain data and the ``datetime`` types only, and refuses an
answer above the size the child could hold.
"""

from __future__ import annotations

import io
import json
import os
import pickle
import subprocess
import sys
from pathlib import Path
from typing import Any

from reelqueue.domain.errors import InputError

DEFAULT_CHILD_MEMORY_BYTES = 1024 * 1024 * 1024
"""The child's address space (virtual memory, not RSS: the interpreter and calamine
already map ~150 MB of it before reading)."""

CHILD_TIMEOUT_SECONDS = 120.0
ALLOWED_GLOBALS = {("datetime", "datetime"), ("datetime", "date"), ("datetime", "time"),
                   ("datetime", "timedelta")}


class _DataOnly(pickle.Unpickler):
    def find_class(self, module: str, name: str) -> Any:
        if (module, name) in ALLOWED_GLOBALS:
            return super().find_class(module, name)
        raise pickle.UnpicklingError(f"{module}.{name} is not plain data")


def read_in_child(
    path: Path, fmt: str, *, sheet: str | None, max_rows: int,
    max_answer_bytes: int = 100 * 1024 * 1024,
    memory_bytes: int = DEFAULT_CHILD_MEMORY_BYTES,
    timeout: float = CHILD_TIMEOUT_SECONDS,
) -> tuple[str, list[tuple[int, list[Any]]]]:
    """(sheet name, numbered non-empty rows) read by a memory-limited child; InputError if not.

    The child refuses to answer with more than ``max_answer_bytes`` of pickled rows (the
    text budget), so the parent never unpickles more than a text sheet could hold.
    """
    request = json.dumps({"path": str(path), "fmt": fmt, "sheet": sheet,
                          "max_rows": max_rows, "memory_bytes": memory_bytes,
                          "max_answer_bytes": max_answer_bytes})
    package_root = str(Path(__file__).resolve().parents[2])
    env = dict(os.environ)
    env["PYTHONPATH"] = os.pathsep.join(
        part for part in (package_root, env.get("PYTHONPATH", "")) if part)
    try:
        done = subprocess.run(
            [sys.executable, "-m", "reelqueue.intake.workbook_child"],
            input=request.encode(), capture_output=True, timeout=timeout, env=env,
            check=False,
        )
    except subprocess.TimeoutExpired:
        raise InputError(
            f"{path.name}: reading it took longer than {timeout:.0f} s, so ReelQueue stopped. "
            "Save the sheet as XLSX or CSV and import that."
        ) from None
    if done.returncode != 0 or not done.stdout:
        raise InputError(
            f"{path.name} needs more than {memory_bytes / 1_048_576:,.0f} MB of memory to read "
            f"as {fmt.upper()} (the reader stopped, code {done.returncode}); it is damaged or "
            "far larger than a sheet of prompts. Save it as XLSX or CSV and import that, "
            "which ReelQueue can measure before reading."
        )
    try:
        answer = _DataOnly(io.BytesIO(done.stdout)).load()
    except (pickle.UnpicklingError, EOFError, ValueError, TypeError) as exc:
        raise InputError(f"{path.name}: the reader's answer was unreadable ({exc}).") from None
    if answer[0] == "error":
        raise InputError(str(answer[1]))
    _, name, rows = answer
    return str(name), rows


def _limit_memory(memory_bytes: int) -> None:
    if sys.platform == "win32":  # no resource module: the file-size cap and the timeout
        return                   # are the bounds
    try:
        import resource
    except ImportError:  # Windows: the file-size cap and the timeout are the bounds
        return
    resource.setrlimit(resource.RLIMIT_AS, (memory_bytes, memory_bytes))


def main() -> None:
    request = json.loads(sys.stdin.read())
    _limit_memory(int(request["memory_bytes"]))
    from reelqueue.intake.workbook_cells import load_cells

    try:
        name, rows = load_cells(
            Path(request["path"]), request["fmt"], sheet=request["sheet"],
            max_rows=int(request["max_rows"]),
        )
        answer: tuple[Any, ...] = ("ok", name, rows)
    except InputError as exc:
        answer = ("error", str(exc))
    except MemoryError:
        sys.exit(3)
    data = pickle.dumps(answer, protocol=pickle.HIGHEST_PROTOCOL)
    limit = int(request["max_answer_bytes"])
    if len(data) > limit:
        data = pickle.dumps(("error", (
            f"{Path(request['path']).name}: its sheet holds more than "
            f"{limit / 1_048_576:,.0f} MB of text; ReelQueue reads at most that much of a "
            "sheet. Split the sheet, or raise the limit with --max-text-mb.")))
    sys.stdout.buffer.write(data)
    sys.stdout.flush()


if __name__ == "__main__":
    main()
