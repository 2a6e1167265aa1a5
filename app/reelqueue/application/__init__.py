"""The application layer: what every front end (the window, the command line, next the
HTTP API) needs and shares, Qt-free. Front ends import this package, never each other.

Today it holds the context (folders, clock, journal), logging, the key check and the
built-in mock's start-up; the commands and the session that owns an engine move here next
(issue 12).
"""
