"""Helpers for the intake tests: a fixed provider catalog and sheet writers."""

from __future__ import annotations

import random
from pathlib import Path
from typing import Any

import pytest

from reelqueue.intake import ImportOptions, ImportPlan, StaticCatalog, plan_import
from reelqueue.providers.base import ParamSpec

NOW = 1_800_000_000.0

FLEXIBLE = ParamSpec(
    models=("mock-1", "mock-2"),
    duration_range=(1, 20),
    aspect_ratios=("16:9", "9:16", "1:1"),
    resolutions=("480p", "720p"),
    seed=True,
    negative_prompt=True,
    reference_image=True,
    max_prompt_chars=1000,
    price_per_second={"mock-1": 0.01, "mock-2": 0.02},
    price_source="test prices",
)
"""Like the mock provider: a duration range, seeds, images."""

FIXED = ParamSpec(
    models=("fixed-a",),
    durations=(5.0, 10.0),
    aspect_ratios=("16:9",),
    max_prompt_chars=100,
)
"""A strict provider: two durations, no seed, no resolution, no image, no prices."""


@pytest.fixture
def catalog() -> StaticCatalog:
    return StaticCatalog({"mock": FLEXIBLE, "fixed": FIXED})


def write_sheet(folder: Path, name: str, text: str, encoding: str = "utf-8") -> Path:
    path = folder / name
    path.write_bytes(text.encode(encoding))
    return path


def plan_text(
    folder: Path, text: str, catalog: StaticCatalog, *, name: str = "sheet.csv",
    existing: set[str] | None = None, rng: random.Random | None = None, **options: Any,
) -> ImportPlan:
    """Plan an import of ``text`` written to ``folder/name`` (``rng``: draws the seeds of
    takes without one)."""
    path = write_sheet(folder, name, text)
    options.setdefault("output_root", folder / "videos")
    return plan_import(
        path, ImportOptions(**options),
        existing_keys=(lambda keys: set(keys) & existing) if existing is not None else None,
        catalog=catalog, now=NOW, rng=rng or random.Random(35),
    )
