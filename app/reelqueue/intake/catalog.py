"""What the intake needs to know about providers: their kinds, declared parameters and
the extra rules a :class:`ParamSpec` cannot express.

The default catalog asks the provider registry and the adapters' ``EXTRA_VALIDATORS``;
tests and tools pass a :class:`StaticCatalog` so that validation is exercised against
parameters (and rules) they choose.
"""

from __future__ import annotations

import importlib
from collections.abc import Callable, Mapping
from typing import Any, Protocol

from reelqueue.domain.errors import InputError
from reelqueue.providers.base import ParamSpec

ExtraValidator = Callable[[Mapping[str, Any]], list[str]]
"""``params -> problems``: a provider's rules beyond its ParamSpec, in words a user
understands; empty when the row is fine."""

ADAPTERS_MODULE = "reelqueue.providers.adapters"


class ProviderCatalog(Protocol):
    def params(self, kind: str) -> ParamSpec:
        """The provider's declared parameters; InputError for an unknown kind."""
        ...

    def kinds(self) -> list[str]: ...

    def extra_validator(self, kind: str) -> ExtraValidator | None:
        """The provider's extra rules, or None when it has none. Optional: a catalog
        without this method has no extra rules."""
        ...


class RegistryCatalog:
    """The providers registered in :mod:`reelqueue.providers.registry`."""

    def params(self, kind: str) -> ParamSpec:
        from reelqueue.providers import registry

        return registry.get(kind).params

    def kinds(self) -> list[str]:
        from reelqueue.providers import registry

        return registry.kinds()

    def extra_validator(self, kind: str) -> ExtraValidator | None:
        """``EXTRA_VALIDATORS[kind]`` of the live adapters. The registry loads them lazily
        and they land separately from the intake, so a build without them (or without
        the table) simply has no extra rules; any other import error is a real bug."""
        try:
            adapters = importlib.import_module(ADAPTERS_MODULE)
        except ModuleNotFoundError as exc:
            if exc.name != ADAPTERS_MODULE:
                raise
            return None
        validators = getattr(adapters, "EXTRA_VALIDATORS", None)
        if not isinstance(validators, Mapping):
            return None
        validator = validators.get(kind)
        return validator if callable(validator) else None


class StaticCatalog:
    """A fixed set of providers.

    Attributes:
        specs: provider kind -> its parameters.
        validators: provider kind -> its extra rules (none by default).
    """

    def __init__(
        self, specs: Mapping[str, ParamSpec],
        validators: Mapping[str, ExtraValidator] | None = None,
    ) -> None:
        self.specs = dict(specs)
        self.validators = dict(validators or {})

    def params(self, kind: str) -> ParamSpec:
        try:
            return self.specs[kind]
        except KeyError:
            known = ", ".join(sorted(self.specs))
            raise InputError(f"Unknown provider {kind!r}. Known providers: {known}.") from None

    def kinds(self) -> list[str]:
        return sorted(self.specs)

    def extra_validator(self, kind: str) -> ExtraValidator | None:
        return self.validators.get(kind)
