"""A key is never bound to an address that cannot be read (issue 34: U+FF20 in a team
database's base URL made urlsplit raise ValueError, an exit 70, where a key was bound)."""

from __future__ import annotations

import pytest

from reelqueue.credentials.binding import OWN_HOST, api_origin
from reelqueue.domain.errors import InputError

pytestmark = pytest.mark.unit


def test_an_unreadable_address_is_an_input_error_naming_what_to_do() -> None:
    with pytest.raises(InputError, match=r"cannot be read.*accounts set NAME --base-url"):
        api_origin("https://api.example.com\uff20evil.example")
    assert api_origin(None) == OWN_HOST
    assert api_origin("https://API.example.com:443/v1") == "https://api.example.com"
