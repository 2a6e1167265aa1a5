"""Unit tests: the ``[[mock:...]]`` directive syntax, options and the bundled video."""

from __future__ import annotations

import pytest

from reelqueue.mockprovider import Directive, DirectiveError, MockOptions, parse_directives
from reelqueue.mockprovider.directives import ALL_NAMES

pytestmark = pytest.mark.unit


def test_no_directives() -> None:
    assert parse_directives("a fox in the snow [not one] [[other:thing]]") == {}


def test_plain_counted_and_valued() -> None:
    found = parse_directives(
        "fox [[mock:rate_limit*2]] and [[mock:render_fail, slow_download=0.25*1]] "
        "[[mock:render_seconds=3]]"
    )
    assert found == {
        "rate_limit": Directive("rate_limit", times=2),
        "render_fail": Directive("render_fail"),
        "slow_download": Directive("slow_download", times=1, value=0.25),
        "render_seconds": Directive("render_seconds", value=3.0),
    }


def test_every_listed_name_parses() -> None:
    for name in ALL_NAMES:
        assert parse_directives(f"[[mock:{name}*1]]")[name].times == 1


@pytest.mark.parametrize("bad", ["[[mock:nope]]", "[[mock:rate_limit*x]]", "[[mock:Rate]]"])
def test_bad_directive_is_refused(bad: str) -> None:
    with pytest.raises(DirectiveError):
        parse_directives(bad)


def test_options_validate() -> None:
    with pytest.raises(ValueError):
        MockOptions(render_seconds_min=2, render_seconds_max=1)
    with pytest.raises(ValueError):
        MockOptions(fail_rate=1.5)
    keys = MockOptions(accept_keys={"a"})  # type: ignore[arg-type]
    assert keys.accept_keys == frozenset({"a"})


def test_bundled_video_is_a_small_mp4() -> None:
    data = MockOptions().video_path.read_bytes()
    assert 1_000 < len(data) < 150_000
    assert data[4:8] == b"ftyp"
    assert b"moov" in data and b"avc1" in data
