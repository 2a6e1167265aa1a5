"""Tests of the team queue on PostgreSQL (issue 15): workers, kill tests, migrate-to."""
