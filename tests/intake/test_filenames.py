"""File names safe on every OS, from the template."""

from __future__ import annotations

import re

import pytest
from hypothesis import given, settings
from hypothesis import strategies as st

from reelqueue.domain.errors import InputError
from reelqueue.intake.filenames import (
    MAX_STEM_BYTES,
    MAX_STEM_CHARS,
    NameAllocator,
    check_template,
    name_from_prompt,
    render_template,
    sanitise_component,
)


@pytest.mark.parametrize(("text", "safe"), [
    ("../../etc/passwd", "etc_passwd"), ("..", "fallback"), ("", "fallback"),
    ("a/b\\c:d*e?f\"g<h>i|j", "a_b_c_d_e_f_g_h_i_j"), (".hidden", "hidden"),
    # A device name keeps its danger with an extension ("nul.txt" is NUL to Windows): the
    # "_" goes after the device word, not at the end (audit, issue 11 item 7).
    ("trailing. . ", "trailing"), ("CON", "CON_"), ("con.mp4", "con_.mp4"), ("LPT9", "LPT9_"),
    ("nul.txt", "nul_.txt"), ("NUL .tar.gz", "NUL_.tar.gz"), ("aux.", "aux_"),
    ("COM¹", "COM¹_"), ("console", "console"), ("tab\there", "tab_here"),
    ("line\nbreak", "line break"),
    # Invisible characters go: a right-to-left override makes "clip\u202egpj.exe" read as
    # "clipexe.jpg"; zero-width spaces and joiners, BOMs and C1 controls hide in names.
    ("clip\u202egpj.exe", "clipgpj.exe"), ("a\u200bb\u200dc\ufeffd", "abcd"),
    ("x\u2066y\u2069z\u00adw", "xyzw"), ("c1\x85\x9bcontrol", "c1control"),
])
def test_sanitise_component(text: str, safe: str) -> None:
    assert sanitise_component(text, "fallback") == safe


@settings(max_examples=300, deadline=None)
@given(st.text(max_size=60))
def test_no_name_is_a_windows_device_or_holds_invisible_characters(text: str) -> None:
    import unicodedata

    from reelqueue.intake.filenames import RESERVED

    safe = sanitise_component(text, "fallback")
    assert safe.split(".")[0].upper().rstrip(" ") not in RESERVED
    assert not any(unicodedata.category(ch) in ("Cc", "Cf", "Cs") for ch in safe)


def test_long_names_are_cut_by_characters_and_bytes() -> None:
    assert len(sanitise_component("x" * 500, "f")) == MAX_STEM_CHARS
    emoji = sanitise_component("🎬" * 100, "f")
    assert len(emoji.encode("utf-8")) <= MAX_STEM_BYTES


names = st.text(max_size=400)


@settings(max_examples=200, deadline=None)
@given(names)
def test_any_text_gives_a_safe_component(text: str) -> None:
    safe = sanitise_component(text, "row_1")
    assert safe and safe not in (".", "..")
    assert not re.search(r'[<>:"/\\|?*\x00-\x1f]', safe)
    assert not safe.startswith(".") and not safe.endswith((" ", "."))
    assert len(safe) <= MAX_STEM_CHARS + 1
    assert len(safe.encode("utf-8")) <= MAX_STEM_BYTES + 1


def test_collisions_resolve_in_order_ignoring_case() -> None:
    allocator = NameAllocator({"taken.mp4"})
    assert [allocator.take(s) for s in ("a", "A", "a", "taken", "a_2")] == [
        "a.mp4", "A_2.mp4", "a_3.mp4", "taken_2.mp4", "a_2_2.mp4"]


def test_template_fields_are_checked() -> None:
    assert check_template("{row:03}_{name}_{seed}_{model}_{provider}_{date}_{n}_{id}_{batch}")
    with pytest.raises(InputError, match=r"uses \{colour\}"):
        check_template("{colour}")
    with pytest.raises(InputError, match=r"uses \{name.__class__\}"):
        check_template("{name.__class__}")
    with pytest.raises(InputError, match="malformed"):
        check_template("{row")


def test_render_template_tolerates_specs_that_do_not_fit() -> None:
    assert render_template("{row:03}_{seed:05}", {"row": 7, "seed": ""}) == "007_"
    assert render_template("{name:03d}", {"name": "cat"}) == "cat"
    assert render_template("{n}-{missing}", {"n": 2}) == "2-"


def test_name_from_prompt_takes_the_first_words() -> None:
    assert name_from_prompt("A slow aerial shot over a misty pine forest, at sunrise") == (
        "A slow aerial shot over a misty pine")
    assert name_from_prompt("x" * 100) == "x" * 40
