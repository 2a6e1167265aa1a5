"""Each adapter declares when its provider charges and, where published, its unit (issue
32 item 4); Runway's prices carry its own unit, credits per second per model, and agree
with its USD table at $0.01 a credit."""

from __future__ import annotations

import pytest

from reelqueue.domain.account_view import CHARGED_AT
from reelqueue.providers.builtin import builtin_registry

pytestmark = pytest.mark.unit


def test_every_adapter_declares_when_it_charges() -> None:
    registry = builtin_registry()
    for kind in registry.kinds():
        charging = registry.get(kind).params.charging
        assert charging.charged_at in CHARGED_AT, kind
        assert (charging.unit is None) == (charging.usd_per_unit is None), kind


def test_runway_prices_carry_credits_per_second() -> None:
    params = builtin_registry().get("runway").params
    assert params.charging.unit == "credits" and params.charging.usd_per_unit == 0.01
    assert set(params.unit_price_per_second) == set(params.price_per_second)
    for model, credits in params.unit_price_per_second.items():
        assert credits * 0.01 == pytest.approx(params.price_per_second[model]), model
