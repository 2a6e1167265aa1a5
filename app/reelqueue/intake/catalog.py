"""What the intake needs to know about providers: their kinds, declared parameters and
the extra rules a :class:`ParamSpec` cannot express.

The default catalog asks a provider registry (its :class:`ProviderInfo` carry the rules);
tests and tools pass a :class:`StaticCatalog` so that validation is exercised against
parameters (and rules) they choose.
"""

from __future__ import annotations

from collections.abc import Mapping
from typing import Protocol

from reelqueue.domain.errors import InputError
from reelqueue.providers.base import ParamSpec
from reelqueue.providers.builtin import builtin_registry
from reelqueue.providers.registry import ParamRules, ProviderRegistry, no_rules


class ProviderCatalog(Protocol):
    def params(self, kind: str) -> ParamSpec:
        """The provider's declared parameters; InputError for an unknown kind."""
        ...

    def kinds(self) -> list[str]: ...

    def rules(self, kind: str) -> ParamRules | None:
        """The provider's rules beyond its ParamSpec (each problem names its fields and
        what they would accept), or None when it has none."""
        ...


class RegistryCatalog:
    """The providers of a :class:`ProviderRegistry` (default: the built-in ones), with
    each provider's own row rules.

    Attributes:
        providers: the registry asked.
    """

    def __init__(self, providers: ProviderRegistry | None = None) -> None:
        self.providers = providers or builtin_registry()

    def params(self, kind: str) -> ParamSpec:
        return self.providers.get(kind).params

    def kinds(self) -> list[str]:
        return self.providers.kinds()

    def rules(self, kind: str) -> ParamRules | None:
        """The provider's rules; None for an unknown kind or one without rules."""
        info = self.providers.infos.get(kind)
        if info is None or info.rules is no_rules:
            return None
        return info.rules


class StaticCatalog:
    """A fixed set of providers.

    Attributes:
        specs: provider kind -> its parameters.
        validators: provider kind -> its rules beyond the ParamSpec (none by default).
    """

    def __init__(
        self, specs: Mapping[str, ParamSpec],
        validators: Mapping[str, ParamRules] | None = None,
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

    def rules(self, kind: str) -> ParamRules | None:
        return self.validators.get(kind)
