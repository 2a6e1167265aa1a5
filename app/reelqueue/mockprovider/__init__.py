"""The mock video provider: a local HTTP server that simulates renders and faults.

See :mod:`reelqueue.mockprovider.server` for the server, :mod:`.directives` for the
``[[mock:...]]`` fault directives and :mod:`.cli` for ``reelqueue mock-provider``.
The list of an account's renders, for the reconciliation by search, is described in
:mod:`.handler` and :mod:`.options` (and docs/reconciliation/mock.md).
"""

from __future__ import annotations

from reelqueue.mockprovider.directives import Directive, DirectiveError, parse_directives
from reelqueue.mockprovider.options import ForeignRender, MockOptions
from reelqueue.mockprovider.server import MockProviderServer, serve_forever

__all__ = [
    "Directive",
    "DirectiveError",
    "ForeignRender",
    "MockOptions",
    "MockProviderServer",
    "parse_directives",
    "serve_forever",
]
