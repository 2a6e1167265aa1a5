"""The dashboard's files (issue 37) keep to what the CSP and the issue allow, checked on
the source: no HTML is ever parsed from a string in the scripts, the page has no inline
script, style or handler (the CSP would refuse them), every script is a module of the
package, nothing is fetched from another origin, and the files ship as package data."""

from __future__ import annotations

import re
import tomllib
from pathlib import Path

import pytest

pytestmark = pytest.mark.unit

ROOT = Path(__file__).resolve().parents[2]
WEB = ROOT / "app" / "reelqueue" / "api" / "web"


def code_of(path: Path) -> str:
    """The script without its comments (a comment may name what the code avoids)."""
    text = path.read_text(encoding="utf-8")
    text = re.sub(r"/\*.*?\*/", "", text, flags=re.S)
    return "\n".join(line.split("//", 1)[0] if "//" in line and "://" not in line else line
                     for line in text.splitlines())


def test_no_script_parses_html_or_evaluates_text() -> None:
    scripts = sorted(WEB.glob("*.js"))
    assert {p.name for p in scripts} == {"app.js", "api.js", "dom.js", "stream.js"}
    for path in scripts:
        code = code_of(path)
        for banned in ("innerHTML", "outerHTML", "insertAdjacentHTML", "document.write",
                       "eval(", "new Function", "setAttribute(\"on", "javascript:",
                       "EventSource", "setInterval"):
            assert banned not in code, (path.name, banned)


def test_the_page_has_no_inline_code_and_no_other_origin() -> None:
    page = (WEB / "index.html").read_text(encoding="utf-8")
    assert '<html lang="en">' in page
    assert re.findall(r"<script\b[^>]*>", page) == [
        '<script type="module" src="/static/app.js">']
    assert "<style" not in page and " style=" not in page
    assert not re.search(r"\son[a-z]+=", page)
    for path in [WEB / "index.html", *WEB.glob("*.js"), *WEB.glob("*.css")]:
        text = path.read_text(encoding="utf-8")
        assert not re.search(r"https?://(?!127\.0\.0\.1)", code_of(path)
                             if path.suffix == ".js" else text), path.name
        assert "@import" not in text and "url(" not in text, path.name


def test_the_files_ship_as_package_data() -> None:
    config = tomllib.loads((ROOT / "pyproject.toml").read_text(encoding="utf-8"))
    patterns = config["tool"]["setuptools"]["package-data"]["reelqueue.api"]
    for path in WEB.iterdir():
        assert any(path.match(p.removeprefix("web/")) for p in patterns), path.name
