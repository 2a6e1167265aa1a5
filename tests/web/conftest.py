"""The browser tests share the team tests' database fixture (tests/team/conftest.py)."""

from tests.team.conftest import team_url

__all__ = ["team_url"]
