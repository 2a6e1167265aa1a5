"""Headless entry points: the ``reelqueue`` command."""
