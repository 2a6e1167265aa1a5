"""``python -m reelqueue`` runs the program (the window or the command line)."""

from __future__ import annotations

from reelqueue.entry import main

raise SystemExit(main())
