"""Proof tests (issue 3): real processes, real SIGKILL, real loopback HTTP.

See docs/proof.md for what each test proves and the figures measured.
"""
