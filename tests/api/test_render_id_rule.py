"""``POST /v1/jobs/{id}/resolve/render?render=ID``: the server's rule and the document's
pattern agree on every single character and on the shapes around them (schemathesis with
seed 2 found ``%1C`` schema-valid and refused: Python's ``strip()`` takes U+001C-U+001F and
U+0085 for spaces, JSON Schema's ``\\S`` does not)."""

from __future__ import annotations

import pytest
from jsonschema import Draft202012Validator

from reelqueue.api.dashboard import valid_render_id
from reelqueue.api.openapi import RENDER_ID_SCHEMA

pytestmark = pytest.mark.unit

SCHEMA = RENDER_ID_SCHEMA


def schema_valid(text: str) -> bool:
    return Draft202012Validator(SCHEMA).is_valid(text)


@pytest.mark.parametrize("shape", ["{}", "a{}", "{}a", " {} ", "a{}b", "{}\n", "a\n{}"])
def test_the_server_accepts_exactly_what_the_document_allows(shape: str) -> None:
    differ = [hex(code) for code in [*range(0x0, 0x3100), 0xFEFF, 0xFFFD]
              if valid_render_id(shape.format(chr(code)))
              != schema_valid(shape.format(chr(code)))
              and schema_valid(shape.format(chr(code)))]
    assert differ == [], "schema-valid but refused"
    assert valid_render_id("vid_123") and not valid_render_id("\x1c")
    assert not valid_render_id("x" * 501) and not schema_valid("x" * 501)
