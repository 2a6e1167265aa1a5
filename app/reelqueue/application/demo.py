"""The demo's fixed parts, shared by ``reelqueue demo`` and the window's "Run it again"."""

from __future__ import annotations

DEMO_ACCOUNTS = (("mock-small", 2), ("mock-medium", 3), ("mock-large", 4))
DEMO_RENDER_SECONDS = (20.0, 26.0)
"""How long each demo render takes at the built-in mock (the accounts' own setting)."""
DEMO_BATCH = "demo"
