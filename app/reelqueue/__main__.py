"""``python -m reelqueue`` runs the command line."""

from __future__ import annotations

from reelqueue.cli.main import main

raise SystemExit(main())
