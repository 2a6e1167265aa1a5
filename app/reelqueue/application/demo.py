"""The demo's fixed parts, shared by ``reelqueue demo`` and the window's "Run it again",
and the demo's two commands: :func:`prepare_demo` (its accounts and its sheet) and
:func:`reset_demo` (its journal and videos gone).

Both are plain blocking calls on their own journal connection, not coroutines: the
window's tests call ``prepare`` while a qasync loop is set (an ``asyncio.run`` inside
would refuse), and the command line calls them before any loop runs.
"""

from __future__ import annotations

import contextlib
from dataclasses import dataclass
from pathlib import Path

from reelqueue.application.context import AppContext
from reelqueue.domain.models import AccountSpec
from reelqueue.store.base import Store

__all__ = ["DEMO_ACCOUNTS", "DEMO_BATCH", "DEMO_RENDER_SECONDS", "DemoPrepared", "prepare_demo",
           "reset_demo"]

DEMO_ACCOUNTS = (("mock-small", 2), ("mock-medium", 3), ("mock-large", 4))
DEMO_RENDER_SECONDS = (20.0, 26.0)
"""How long each demo render takes at the built-in mock (the accounts' own setting)."""
DEMO_BATCH = "demo"
"""The demo batch's name, and its folder's under the videos folder (``Videos/ReelQueue/demo``)."""


def _remove_demo_files(store: Store, videos: Path) -> int:
    """The demo journal's own files: each job's video, the manifests and partial files
    in its batch folders (each inside ``videos``), then the folder if it is empty. A
    user's file in the folder stays."""
    from reelqueue.engine.outputs import located_output

    removed = 0
    folders: set[Path] = set()
    files: set[Path] = set()
    for batch in store.list_batches():
        folder = located_output(batch.output_dir, videos)
        if folder is None or folder.resolve() == videos or not folder.is_dir():
            continue
        folders.add(folder)
        files.update(folder.glob("manifest-*.json"))
        files.update(folder.glob(".*.part"))
        for job in store.list_jobs(batch_id=batch.id):
            path = located_output(job.output_path, videos)
            if path is not None and path.parent == folder:
                files.add(path)
    for path in files:
        if path.is_file() and not path.is_symlink():
            path.unlink()
            removed += 1
    for folder in folders:
        with contextlib.suppress(OSError):
            folder.rmdir()  # only when empty
    return removed


@dataclass(frozen=True)
class DemoPrepared:
    """Attributes: added: new jobs from the sheet. already_present: its rows already
    there. unpaced: demo accounts made by an older version (renders of 0.2-2 s)."""

    added: int
    already_present: int
    unpaced: tuple[str, ...]


def prepare_demo(ctx: AppContext, sheet: Path,
                 render_seconds: tuple[float, float] | None = DEMO_RENDER_SECONDS,
                 ) -> DemoPrepared:
    """Create the demo accounts and import ``sheet`` into the demo batch (idempotent),
    holding the data-folder lock. ``render_seconds``: the accounts' pace (None: the
    mock's own, fast; for tests)."""
    from reelqueue.intake import ImportOptions, apply_import, plan_import

    settings = {"render_seconds": list(render_seconds)} if render_seconds else {}
    unpaced = []
    with ctx.open_store() as store:
        for name, capacity in DEMO_ACCOUNTS:
            account = store.get_account(name)
            if account is None:
                store.add_account(AccountSpec(name, "mock", capacity, settings=settings),
                                  ctx.clock.now())
            elif render_seconds and "render_seconds" not in account.settings:
                unpaced.append(name)
        plan = plan_import(sheet, ImportOptions(provider="mock", output_root=ctx.videos_dir,
                                                batch_name=DEMO_BATCH),
                           existing_keys=store.existing_job_keys)
        result = apply_import(store, plan, ctx.clock.now())
    return DemoPrepared(result.added, result.already_present, tuple(unpaced))


def reset_demo(ctx: AppContext) -> int:
    """Clear the demo: its journal and the videos of its batches; how many files went.
    Only the demo's own folders are touched (``ctx`` is the demo's context), behind the
    data-folder lock, so a demo open in a window is refused, not pulled from under it."""
    from reelqueue.store.lockfile import DataDirLock, make_private_dir

    make_private_dir(ctx.data_dir)
    lock = DataDirLock(ctx.data_dir)
    lock.acquire()
    try:
        removed = 0
        if ctx.journal_path.exists():
            with ctx.open_store(lock=False) as store:
                removed = _remove_demo_files(store, ctx.videos_dir.resolve())
        for suffix in ("", "-wal", "-shm", "-journal"):
            ctx.journal_path.with_name(ctx.journal_path.name + suffix).unlink(missing_ok=True)
    finally:
        lock.release()
    return removed
