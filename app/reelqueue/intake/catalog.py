"""What the intake needs to know about providers: their kinds and declared parameters.

The default catalog asks the provider registry; tests and tools pass a
:class:`StaticCatalog` so that validation is exercised against parameters they choose.
"""

from __future__ import annotations

from collections.abc import Mapping
from typing import Protocol

from reelqueue.domain.errors import InputError
from reelqueue.providers.base import ParamSpec


class ProviderCatalog(Protocol):
    def params(self, kind: str) -> ParamSpec:
        """The provider's declared parameters; InputError for an unknown kind."""
        ...

    def kinds(self) -> list[str]: ...


class RegistryCatalog:
    """The providers registered in :mod:`reelqueue.providers.registry`."""

    def params(self, kind: str) -> ParamSpec:
        from reelqueue.providers import registry

        return registry.get(kind).params

    def kinds(self) -> list[str]:
        from reelqueue.providers import registry

        return registry.kinds()


class StaticCatalog:
    """A fixed set of providers.

    Attributes:
        specs: provider kind -> its parameters.
    """

    def __init__(self, specs: Mapping[str, ParamSpec]) -> None:
        self.specs = dict(specs)

    def params(self, kind: str) -> ParamSpec:
        try:
            return self.specs[kind]
        except KeyError:
            known = ", ".join(sorted(self.specs))
            raise InputError(f"Unknown provider {kind!r}. Known providers: {known}.") from None

    def kinds(self) -> list[str]:
        return sorted(self.specs)
