"""The installed provider plug-ins, for the conformance suite: their registry (the built-in
providers and every plug-in that loads) and the facts tables they bring through the
entry-point group ``reelqueue.providers.conformance`` (the sample plug-in,
tests/plugins/sample/, brings one). A plug-in that loads but brings no table is not run
here; one whose table names a kind that did not load fails at collection, loudly."""

from __future__ import annotations

from importlib.metadata import entry_points

from conformance.facts import AdapterFacts
from reelqueue.providers.builtin import builtin_registry
from reelqueue.providers.plugins import installed_entries, load_plugins

FACTS_GROUP = "reelqueue.providers.conformance"

PLUGIN_REGISTRY, PLUGIN_REPORT = load_plugins(builtin_registry(), installed_entries())


def _plugin_facts() -> list[AdapterFacts]:
    found: list[AdapterFacts] = []
    for point in sorted(entry_points(group=FACTS_GROUP), key=lambda p: p.name):
        facts = point.load()
        assert isinstance(facts, AdapterFacts), point.value
        assert facts.kind in PLUGIN_REGISTRY, (
            f"{point.value}: the plug-in of kind {facts.kind!r} did not load: "
            f"{[str(s) for s in PLUGIN_REPORT.skipped]}")
        found.append(facts)
    return found


PLUGIN_FACTS = _plugin_facts()
