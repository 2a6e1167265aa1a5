"""The engine's settings as the front ends give them (``run``'s flags, the window's
settings): :class:`~reelqueue.engine.config.EngineConfig`, re-exported here.
"""

from __future__ import annotations

from reelqueue.engine.config import EngineConfig

__all__ = ["EngineConfig"]
