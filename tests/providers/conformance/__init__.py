"""The provider conformance suite: one set of checks every adapter runs (test_suite.py),
each adapter bringing its fake and a table of its facts (one module per provider)."""
