"""The application layer: what every front end (the window, the command line, the HTTP
API) needs and shares, Qt-free, and the front ends' only way in (issue 20): they import
this package's modules, ``domain`` and ``resources``, nothing below. Each module lists what
it offers in its ``__all__`` (``tests/test_layers.py`` checks that a front end takes
nothing else).

- The session and its commands: :mod:`.session` (the journal and, while it runs, an
  engine; :meth:`Session.changed <.session.Session.changed>` is the one wake),
  :mod:`.accounts`, :mod:`.imports`, :mod:`.jobs`, :mod:`.status`, :mod:`.views`,
  :mod:`.team`, :mod:`.demo`, :mod:`.submit`, :mod:`.batch_upload`, :mod:`.gallery`
  (the results gallery's tiles and export), :mod:`.cut` (the picks of a batch as one
  video and an editor's timeline), :mod:`.account_manage` (the Manage dialog),
  :mod:`.account_views` (each account's balance, limits and usage: refreshed, and worded
  in one place), :mod:`.account_figures` (those figures with the limit in force and the
  balance gate, under one set of field names for every front end), :mod:`.review` (takes
  by row, decisions, the re-roll; its words in :mod:`.review_words`).
- The one set of words for job states and account conditions (issue 34): :mod:`.words`
  (every front end names a state through it; ``ui/format.py`` keeps only layout).
- What the front ends show, re-exported from below: :mod:`.events`, :mod:`.config`,
  :mod:`.providers` (and the view rows in :mod:`.views`, the intake's types and
  defaults in :mod:`.imports`, the retry plan in :mod:`.jobs`).
- The composition root: :mod:`.compose` builds the journal, the provider registry and
  the engine; nothing else does.
- The rest: :mod:`.context` (folders, clock), :mod:`.logs`, :mod:`.keys`, :mod:`.trust`,
  :mod:`.builtin_mock`, :mod:`.migrate`, :mod:`.serving`, :mod:`.remote`, :mod:`.feed`,
  :mod:`.tokens`, :mod:`.selftest`, :mod:`.worker`, :mod:`.team_store`, :mod:`.team_wait`
  (a worker's or a serve's wait for a team database that cannot be reached yet).
- Cost reconciliation and the evidence for an unknown create (issue 32 items 5, 6):
  :mod:`.spend_reconcile`.
"""

__all__ = ["account_figures", "account_manage", "account_views", "accounts", "batch_upload",
           "builtin_mock", "compose", "config", "context", "cut", "demo", "events", "feed",
           "gallery", "imports", "jobs", "keys", "logs", "migrate", "providers", "remote",
           "review", "review_words", "selftest", "serving", "session", "spend_reconcile", "status",
           "submit",
           "team", "team_store", "team_wait", "tokens", "trust", "views", "words", "worker"]
