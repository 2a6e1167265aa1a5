"""The journal: one interface (``Store``), a SQLite implementation and an in-memory fake.

Only this package knows SQL. Every state change goes through a named method that takes
the current time as a parameter, so tests set the clock.
"""

from reelqueue.store.base import Store

__all__ = ["Store"]
