"""The live provider adapters, one module each; importing this package registers them all.

``EXTRA_VALIDATORS`` maps a provider kind to the rules its :class:`ParamSpec` cannot say
(e.g. Veo's 1080p needs 8 s); the intake calls ``EXTRA_VALIDATORS[kind](params)`` and gets a
list of problems in words a user understands, empty when the row is fine.
"""

from __future__ import annotations

from collections.abc import Callable, Mapping
from typing import Any

from reelqueue.providers.adapters import (
    fal,
    kling,
    luma,
    luma_legacy,
    minimax,
    openai_compat,
    replicate,
    runway,
    veo,
)

ExtraValidator = Callable[[Mapping[str, Any]], list[str]]

EXTRA_VALIDATORS: dict[str, ExtraValidator] = {
    runway.KIND: runway.extra_validation,
    veo.KIND: veo.extra_validation,
    luma.KIND: luma.extra_validation,
    luma_legacy.KIND: luma_legacy.extra_validation,
    fal.KIND: fal.extra_validation,
    replicate.KIND: replicate.extra_validation,
    minimax.KIND: minimax.extra_validation,
    kling.KIND: kling.extra_validation,
    openai_compat.KIND: openai_compat.extra_validation,
}

__all__ = ["EXTRA_VALIDATORS", "ExtraValidator"]
