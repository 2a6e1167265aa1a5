"""File names safe on every OS, from the template."""

from __future__ import annotations

import re
import unicodedata

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
    safe_output_name,
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


# -- issue 34: one function makes every output name safe, wherever the name came from ----
HOSTILE_NAMES = {
    "html page": ("page.html", "page.html.mp4"),
    "desktop entry": ("launcher.desktop", "launcher.desktop.mp4"),
    "program": ("setup.exe", "setup.exe.mp4"),
    "ansi escapes": ("\x1b[31mred\x1b[0m\x1b]0;title\x07.mp4", "red.mp4"),
    "control characters": ("a\x00b\x07c.mp4", "a_b_c.mp4"),
    "c1 controls": ("a\x85b\x9bc.mp4", "abc.mp4"),
    "right-to-left override": ("clip\u202egpj.exe", "clipgpj.exe.mp4"),
    "reserved device": ("COM1.mp4", "COM1_.mp4"),
    "reserved device, no suffix": ("nul", "nul_.mp4"),
    "trailing dots and spaces": ("clip.mp4. . ", "clip.mp4"),
    "fullwidth dots and solidus": ("\uff0e\uff0e\uff0fetc\uff3cpasswd", "etc_passwd.mp4"),
    "two-dot leader and division slash": ("\u2025\u2215x.mp4", "x.mp4"),
    "only dots": ("..", "video.mp4"),
}


@pytest.mark.parametrize("case", list(HOSTILE_NAMES))
def test_safe_output_name_cleans_each_class_of_hostile_name(case: str) -> None:
    name, expected = HOSTILE_NAMES[case]
    assert safe_output_name(name) == expected
    assert safe_output_name(expected) == expected  # a safe name is kept as it is


def test_safe_output_name_keeps_safe_names_and_video_suffixes() -> None:
    for name in ("001_row1.mp4", "clip (2).mp4", "take (1).webm", "a.MOV", "é.m4v"):
        assert safe_output_name(name) == name


def test_safe_output_name_cuts_long_names_after_nfc() -> None:
    decomposed = "e\u0301" * 300 + ".mp4"  # 300 characters after NFC, 600 bytes
    cleaned = safe_output_name(decomposed)
    assert cleaned.endswith(".mp4") and len(cleaned.encode()) <= 255
    assert cleaned == unicodedata.normalize("NFC", cleaned)


def test_the_sheet_cleaning_takes_out_ansi_escapes_and_look_alikes() -> None:
    """The sheet's names go through the same rules (sanitise_component)."""
    assert sanitise_component("\x1b[1mbold\x1b[0m", "x") == "bold"
    assert sanitise_component("a\uff0fb\u2215c", "x") == "a_b_c"
