"""Provider plug-ins: providers from installed distributions, through the entry-point group
``reelqueue.providers`` (docs/providers/writing.md).

An entry point names a :class:`~reelqueue.providers.registry.ProviderInfo` (or a function
without arguments that returns one) written for :data:`~reelqueue.providers.registry.
CONTRACT_VERSION`. Plug-ins come only from installed distributions, never from the data
folder or the team database: whoever can install a package on the machine already runs
code there; the team database is not trusted with code (DESIGN.md invariant 15).

:func:`load_plugins` never raises for a plug-in's fault: a broken one (it does not import,
its function raises, its metadata is wrong, it was written for another contract version,
its adapter cannot be built, it names a built-in's kind) is skipped, and the reason is in
the :class:`PluginReport` the front ends show (``status``, ``doctor``, the window's About).
The built-in providers are declared in the same group by ReelQueue's own distribution
(pyproject.toml); they are taken from :mod:`reelqueue.providers.builtin`, so a build that
was never installed (a checkout on PYTHONPATH, the frozen app) has them all the same.
"""

from __future__ import annotations

import logging
import re
from collections.abc import Callable, Iterable, Mapping
from contextlib import AbstractAsyncContextManager
from dataclasses import dataclass, replace
from typing import Any

from reelqueue.domain.errors import ReelQueueError
from reelqueue.providers.base import ParamProblem, ParamSpec, ProviderConfig
from reelqueue.providers.http import (
    DEFAULT_MAX_ANSWER_BYTES,
    HttpConnectError,
    HttpResponse,
    HttpStream,
)
from reelqueue.providers.registry import (
    CONTRACT_VERSION,
    ParamRules,
    ProviderInfo,
    ProviderRegistry,
)

log = logging.getLogger(__name__)

ENTRY_POINT_GROUP = "reelqueue.providers"
OWN_DISTRIBUTION = "reelqueue"
KIND_PATTERN = re.compile(r"[a-z0-9][a-z0-9_-]{0,39}")
_ADAPTER_METHODS = ("check_key", "submit", "poll", "lookup", "download", "cancel")
_REASON_CHARS = 300


@dataclass(frozen=True)
class PluginEntry:
    """One entry point of the group, as the loader reads it.

    Attributes:
        name: the entry point's name; value: what it points at (``module:attribute``).
        distribution, version: the installed distribution that declares it.
        load: imports and returns what it points at.
    """

    name: str
    value: str
    distribution: str
    version: str
    load: Callable[[], object]


@dataclass(frozen=True)
class LoadedPlugin:
    """A plug-in in use: its distribution, version and the provider kind it adds."""

    distribution: str
    version: str
    kind: str
    title: str

    def __str__(self) -> str:
        return f"{self.distribution} {self.version}: {self.kind} ({self.title})"


@dataclass(frozen=True)
class SkippedPlugin:
    """A plug-in not loaded, and why (in words the user can act on)."""

    distribution: str
    version: str
    entry: str
    reason: str

    def __str__(self) -> str:
        version = f" {self.version}" if self.version else ""
        return f"{self.distribution}{version} ({self.entry}): skipped: {self.reason}"


@dataclass(frozen=True)
class PluginReport:
    """What the plug-ins are on this machine.

    Attributes:
        loaded: the plug-ins in use; skipped: the broken ones, with the reason.
        disabled: True when started with ``--no-plugins`` (nothing was looked at).
    """

    loaded: tuple[LoadedPlugin, ...] = ()
    skipped: tuple[SkippedPlugin, ...] = ()
    disabled: bool = False

    def lines(self) -> list[str]:
        """One line per plug-in, for ``status``, ``doctor`` and the About box."""
        if self.disabled:
            return ["plug-ins: off (--no-plugins)"]
        if not self.loaded and not self.skipped:
            return ["plug-ins: none installed"]
        return [f"plug-in {p}" for p in self.loaded] + [f"plug-in {p}" for p in self.skipped]

    def as_dict(self) -> dict[str, Any]:
        return {"disabled": self.disabled,
                "loaded": [{"distribution": p.distribution, "version": p.version,
                            "kind": p.kind, "title": p.title} for p in self.loaded],
                "skipped": [{"distribution": p.distribution, "version": p.version,
                             "entry": p.entry, "reason": p.reason} for p in self.skipped]}


def installed_entries() -> list[PluginEntry]:
    """The group's entry points of every installed distribution."""
    from importlib.metadata import entry_points

    found: list[PluginEntry] = []
    for point in entry_points(group=ENTRY_POINT_GROUP):
        dist = point.dist
        found.append(PluginEntry(
            name=point.name, value=point.value,
            distribution=str(dist.name) if dist is not None else "(unknown distribution)",
            version=str(dist.version) if dist is not None else "?", load=point.load))
    return found


def load_installed(builtins: ProviderRegistry,
                   source: Callable[[], Iterable[PluginEntry]] = installed_entries,
                   ) -> tuple[ProviderRegistry, PluginReport]:
    """:func:`load_plugins` over ``source``'s entries; when they cannot even be read (a
    distribution's metadata is damaged), the built-ins alone and the reason."""
    try:
        entries = list(source())
    except Exception as exc:
        reason = f"the installed plug-ins could not be listed ({_said(exc)})"
        log.warning("provider plug-ins skipped: %s", reason)
        return builtins, PluginReport(skipped=(
            SkippedPlugin("(installed distributions)", "", ENTRY_POINT_GROUP, reason),))
    return load_plugins(builtins, entries)


class _PlugInBroken(Exception):
    """Why a plug-in is skipped (its text is the reason shown)."""


def load_plugins(builtins: ProviderRegistry, entries: Iterable[PluginEntry],
                 ) -> tuple[ProviderRegistry, PluginReport]:
    """``builtins`` with every plug-in of ``entries`` that works; the report says which
    were loaded and which skipped (and why). Never raises for a plug-in's fault."""
    infos = list(builtins)
    loaded: list[LoadedPlugin] = []
    skipped: list[SkippedPlugin] = []
    by_kind: dict[str, str] = {}
    for entry in sorted(entries, key=lambda e: (e.distribution.lower(), e.name)):
        if _is_own(entry):
            continue  # a built-in's declaration: builtin.py holds the same list
        try:
            info = _checked(entry, builtins, by_kind)
        except _PlugInBroken as broken:
            reason = str(broken)
            log.warning("provider plug-in %s (%s) skipped: %s", entry.distribution,
                        entry.name, reason)
            skipped.append(SkippedPlugin(entry.distribution, entry.version, entry.name,
                                         reason))
            continue
        by_kind[info.kind] = entry.distribution
        infos.append(replace(info, rules=_guarded(info)))
        loaded.append(LoadedPlugin(entry.distribution, entry.version, info.kind, info.title))
    return ProviderRegistry(infos), PluginReport(tuple(loaded), tuple(skipped))


def _guarded(info: ProviderInfo) -> ParamRules:
    """The plug-in's row rules, its bug turned into a problem of the row: a sheet is
    checked with them at import, and an exception there must not end the import."""
    rules = info.rules

    def checked(params: Mapping[str, Any]) -> list[ParamProblem]:
        try:
            return list(rules(params))
        except Exception as exc:
            log.warning("provider plug-in %s: its row rules failed (%s)", info.kind,
                        type(exc).__name__)
            return [ParamProblem(f"{info.title} (a plug-in) could not check this row "
                                 f"({type(exc).__name__}); update or remove the plug-in.",
                                 ())]

    return checked


def _is_own(entry: PluginEntry) -> bool:
    return (entry.distribution == OWN_DISTRIBUTION
            and entry.value.startswith(f"{OWN_DISTRIBUTION}."))


def _said(exc: BaseException) -> str:
    text = " ".join(str(exc).split())
    if len(text) > _REASON_CHARS:
        text = text[:_REASON_CHARS] + "…"
    return f"{type(exc).__name__}: {text}" if text else type(exc).__name__


def _checked(entry: PluginEntry, builtins: ProviderRegistry,
             by_kind: Mapping[str, str]) -> ProviderInfo:
    """The entry's ProviderInfo, or _PlugInBroken saying what is wrong with it."""
    try:
        found = entry.load()
    except (Exception, SystemExit) as exc:  # its import is its code: anything may happen
        raise _PlugInBroken(f"it could not be imported ({_said(exc)})") from None
    if not isinstance(found, ProviderInfo) and callable(found):
        try:
            found = found()
        except (Exception, SystemExit) as exc:
            raise _PlugInBroken(f"its function {entry.value} raised {_said(exc)}") from None
    if not isinstance(found, ProviderInfo):
        raise _PlugInBroken(f"bad metadata: {entry.value} is a {type(found).__name__}, "
                            "not a ProviderInfo")
    info = found
    if info.contract != CONTRACT_VERSION:
        raise _PlugInBroken(f"written for provider contract version {info.contract!r}; "
                            f"this ReelQueue has version {CONTRACT_VERSION}")
    problem = _metadata_problem(info)
    if problem:
        raise _PlugInBroken(f"bad metadata: {problem}")
    if info.kind in builtins:
        raise _PlugInBroken(f"its kind {info.kind!r} is a built-in provider's; a plug-in "
                            "never replaces a built-in (give it a kind of its own)")
    if info.kind in by_kind:
        raise _PlugInBroken(f"its kind {info.kind!r} is already given by the plug-in "
                            f"{by_kind[info.kind]}")
    _try_factory(info)
    return info


def _metadata_problem(info: ProviderInfo) -> str | None:
    # Read as plain objects: a plug-in's dataclass holds whatever it was given.
    field: dict[str, object] = dict(vars(info))
    kind, title, url = field["kind"], field["title"], field["default_base_url"]
    if not isinstance(kind, str) or not KIND_PATTERN.fullmatch(kind):
        return f"the kind {kind!r} is not 1-40 lower-case letters, digits, '-' or '_'"
    if not isinstance(title, str) or not title.strip() or len(title) > 80:
        return "the title is empty or longer than 80 characters"
    if not callable(field["factory"]):
        return "the factory cannot be called"
    if not isinstance(field["params"], ParamSpec):
        return "params is not a ParamSpec"
    if url is not None and not isinstance(url, str):
        return "default_base_url is not text"
    if not callable(field["rules"]):
        return "rules cannot be called"
    return None


class _NothingSent:
    """The answer of :class:`_NoNetwork`'s ``stream``: entering it raises."""

    async def __aenter__(self) -> HttpStream:
        raise HttpConnectError("nothing is sent while a plug-in is checked")

    async def __aexit__(self, *exc: object) -> None:
        return None


class _NoNetwork:
    """The session a plug-in's factory is tried with at load: it sends nothing."""

    async def request(self, method: str, url: str, *,
                      headers: Mapping[str, str] | None = None,
                      params: Mapping[str, str] | None = None,
                      json: Any = None, content: bytes | None = None,
                      max_bytes: int = DEFAULT_MAX_ANSWER_BYTES) -> HttpResponse:
        raise HttpConnectError("nothing is sent while a plug-in is checked")

    def stream(self, method: str, url: str, *,
               headers: Mapping[str, str] | None = None,
               params: Mapping[str, str] | None = None,
               ) -> AbstractAsyncContextManager[HttpStream]:
        return _NothingSent()


def _try_factory(info: ProviderInfo) -> None:
    """Build one adapter with a session that sends nothing: a factory that fails with
    anything but a ReelQueue error (a setting it needs and was not given is fine) or
    returns something that is no adapter is a broken plug-in."""
    config = ProviderConfig(account="plug-in check",
                            base_url=info.default_base_url or "https://plugin-check.invalid",
                            api_key="plug-in-check-key", settings={})
    try:
        adapter = info.factory(_NoNetwork(), config)
    except (ReelQueueError, ValueError):
        return
    except (Exception, SystemExit) as exc:
        raise _PlugInBroken(f"its factory raised {_said(exc)}") from None
    missing = [name for name in _ADAPTER_METHODS if not callable(getattr(adapter, name, None))]
    if getattr(adapter, "kind", None) != info.kind:
        missing.append(f"kind == {info.kind!r}")
    if missing:
        raise _PlugInBroken("bad metadata: its factory's adapter lacks "
                            + ", ".join(missing))
