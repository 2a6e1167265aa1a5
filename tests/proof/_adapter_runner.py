"""The real ``reelqueue`` command line with a test's settle time for provider lists.

Usage: ``python tests/proof/_adapter_runner.py SETTLE_SECONDS -- REELQUEUE-ARGS...``

The adapters' settle times (how long after a create a provider's list is assumed to show
it: 120 s for Replicate and Luma, 300 s for an OpenAI-compatible gateway) are product
defaults, never changed; the engine's documented test override
(``EngineConfig.reconcile_settle_seconds``, "tests whose fakes list a render at once set
it lower") has no command-line option, so this wrapper sets it in the config ``reelqueue
run`` builds. The fakes of ``provider_server.py`` list a render within less than it.
"""

from __future__ import annotations

import sys
from dataclasses import replace
from typing import Any


def main(argv: list[str]) -> int:
    settle, separator, *rest = argv
    assert separator == "--", "usage: _adapter_runner.py SETTLE_SECONDS -- REELQUEUE-ARGS"
    from reelqueue.cli import cmd_run

    built = cmd_run.engine_config

    def engine_config(args: Any) -> Any:
        return replace(built(args), reconcile_settle_seconds=float(settle))

    cmd_run.engine_config = engine_config
    from reelqueue.cli.main import main as reelqueue_main

    return reelqueue_main(rest)


if __name__ == "__main__":
    raise SystemExit(main(sys.argv[1:]))
