"""The built-in mock provider: started in-process for ``mock`` accounts without a URL
(``reelqueue run``, ``reelqueue accounts add/test``, the window), stopped with them."""

from __future__ import annotations

from collections.abc import Iterable, Iterator
from contextlib import contextmanager
from dataclasses import replace
from typing import Any

from reelqueue.providers import registry
from reelqueue.store.base import Store


def builtin_mock_accounts(accounts: Iterable[Any]) -> list[str]:
    """Names of the accounts the built-in mock serves (kind ``mock``, no URL of their own)."""
    return [a.name for a in accounts if a.provider == "mock" and not a.base_url]


class BuiltinMock:
    """The in-process mock provider server, started on demand.

    While it runs, the ``mock`` provider's default URL points at it (the registry patch
    issue 12 replaces by a per-engine override).
    """

    def __init__(self, options: Any | None = None) -> None:
        self._options = options
        self._server: Any | None = None
        self._original: registry.ProviderInfo | None = None

    @property
    def url(self) -> str | None:
        return self._server.url if self._server is not None else None

    def ensure(self) -> str:
        """Start the server if it is not running (blocking: call on a worker thread)."""
        if self._server is not None:
            return str(self._server.url)
        from reelqueue.mockprovider.options import MockOptions
        from reelqueue.mockprovider.server import MockProviderServer

        server = MockProviderServer(self._options or MockOptions()).start()
        self._server = server
        self._original = registry.get("mock")
        registry.register(replace(self._original, default_base_url=server.url))
        return str(server.url)

    def stop(self) -> None:
        """Restore the registry and stop the server; idempotent."""
        if self._original is not None:
            registry.register(self._original)
            self._original = None
        if self._server is not None:
            server, self._server = self._server, None
            server.stop()


@contextmanager
def builtin_mock(store: Store) -> Iterator[str | None]:
    """Run the built-in mock while the block runs if an account of the journal needs it;
    yields its URL, or None when no account does."""
    if not builtin_mock_accounts(store.list_accounts()):
        yield None
        return
    with running_mock() as url:
        yield url


@contextmanager
def running_mock() -> Iterator[str]:
    """The built-in mock for the duration of the block (e.g. to check a key on it)."""
    mock = BuiltinMock()
    try:
        yield mock.ensure()
    finally:
        mock.stop()
