"""The built-in mock provider: started in-process for ``mock`` accounts without a URL
(``reelqueue run``, ``reelqueue accounts add/test``, the window), stopped with them.

Its address reaches an engine as that engine's own registry
(:meth:`BuiltinMock.providers`: the given one with the mock's default URL set); no
registry is changed.
"""

from __future__ import annotations

import argparse
from collections.abc import Iterable, Iterator
from contextlib import contextmanager
from typing import Any

from reelqueue.application.compose import provider_registry
from reelqueue.providers.registry import ProviderRegistry
from reelqueue.store.base import Store

__all__ = ["MOCK_KIND", "BuiltinMock", "add_mock_server_arguments", "builtin_mock",
           "builtin_mock_accounts", "on_builtin_mock", "run_mock_server", "running_mock"]

MOCK_KIND = "mock"


def on_builtin_mock(provider: str, base_url: str | None) -> bool:
    """An account of ``provider`` at ``base_url`` renders on the built-in mock (the built-in
    demo's practice provider, no URL of its own): it needs no address and spends no money.
    The one place that says which accounts those are."""
    return provider == MOCK_KIND and not base_url


def builtin_mock_accounts(accounts: Iterable[Any]) -> list[str]:
    """Names of the accounts the built-in mock serves (kind ``mock``, no URL of their own)."""
    return [a.name for a in accounts if on_builtin_mock(a.provider, a.base_url)]


class BuiltinMock:
    """The in-process mock provider server, started on demand.

    Attributes:
        url: the server's address while it runs, else None.
    """

    def __init__(self, options: Any | None = None) -> None:
        self._options = options
        self._server: Any | None = None

    @property
    def url(self) -> str | None:
        return self._server.url if self._server is not None else None

    def ensure(self) -> str:
        """Start the server if it is not running (blocking: call on a worker thread)."""
        if self._server is not None:
            return str(self._server.url)
        from reelqueue.mockprovider.options import MockOptions
        from reelqueue.mockprovider.server import MockProviderServer

        self._server = MockProviderServer(self._options or MockOptions()).start()
        return str(self._server.url)

    def providers(self, base: ProviderRegistry | None = None) -> ProviderRegistry:
        """``base`` (default: the built-in providers) with the ``mock`` provider's default
        URL set to this server while it runs; ``base`` itself when it does not."""
        base = base or provider_registry()
        url = self.url
        return base if url is None else base.with_base_url(MOCK_KIND, url)

    def stop(self) -> None:
        """Stop the server; idempotent."""
        if self._server is not None:
            server, self._server = self._server, None
            server.stop()


@contextmanager
def builtin_mock(
    store: Store, base: ProviderRegistry | None = None
) -> Iterator[ProviderRegistry]:
    """Run the built-in mock while the block runs if an account of the journal needs it;
    yields the registry to render with (``base`` with the mock's URL when it runs)."""
    base = base or provider_registry()
    if not builtin_mock_accounts(store.list_accounts()):
        yield base
        return
    mock = BuiltinMock()
    try:
        mock.ensure()
        yield mock.providers(base)
    finally:
        mock.stop()


@contextmanager
def running_mock() -> Iterator[str]:
    """The built-in mock for the duration of the block (e.g. to check a key on it)."""
    mock = BuiltinMock()
    try:
        yield mock.ensure()
    finally:
        mock.stop()


def add_mock_server_arguments(parser: argparse.ArgumentParser) -> None:
    """``reelqueue mock-provider``'s options: the mock server's own command line."""
    from reelqueue.mockprovider import cli

    cli.add_arguments(parser)


def run_mock_server(args: argparse.Namespace) -> int:
    """Run the mock provider on loopback until interrupted (``reelqueue mock-provider``)."""
    from reelqueue.mockprovider import cli

    return cli.run(args)
