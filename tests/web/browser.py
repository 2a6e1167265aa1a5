"""Debian's ``chromium`` headless, driven by Selenium with the system ``chromedriver``
(issue 37's browser tests). Selenium, not Playwright: Playwright's Python package wants
its own browser build (a download at install time, which CI's offline runs and a Debian
machine do not have), while Selenium talks to the chromium and chromedriver that
``apt-get install chromium chromium-driver`` puts in /usr/bin, with no download at all.

The server's self-signed certificate is trusted by its public key's fingerprint
(``--ignore-certificate-errors-spki-list``: this one key, not "any certificate").

Without chromium the tests skip, unless ``REELQUEUE_REQUIRE_BROWSER=1`` (CI sets it:
there they must run), as the PostgreSQL tests do.
"""

from __future__ import annotations

import base64
import hashlib
import json
import os
import shutil
from pathlib import Path
from typing import Any

import pytest

REQUIRE_ENV = "REELQUEUE_REQUIRE_BROWSER"
CHROMIUM = ("/usr/bin/chromium", "/usr/bin/chromium-browser")
CHROMEDRIVER = ("/usr/bin/chromedriver",)


def _first(paths: tuple[str, ...]) -> str | None:
    return next((p for p in paths if Path(p).exists()), None)


def unavailable(reason: str) -> None:
    message = f"the browser tests need Debian's chromium and chromium-driver: {reason}"
    if os.environ.get(REQUIRE_ENV) == "1":
        pytest.fail(f"{message} ({REQUIRE_ENV}=1)")
    pytest.skip(message)


def spki_fingerprint(cert_pem: Path) -> str:
    """base64(sha256(SubjectPublicKeyInfo)) of the certificate: chromium's pin."""
    from cryptography import x509
    from cryptography.hazmat.primitives import serialization

    cert = x509.load_pem_x509_certificate(cert_pem.read_bytes())
    spki = cert.public_key().public_bytes(serialization.Encoding.DER,
                                          serialization.PublicFormat.SubjectPublicKeyInfo)
    return base64.b64encode(hashlib.sha256(spki).digest()).decode()


def start_chromium(cert_pem: Path, downloads: Path) -> Any:
    """A headless chromium trusting only ``cert_pem``'s key, with the browser's console
    and network logs kept (the tests read them)."""
    chromium, driver_path = _first(CHROMIUM), _first(CHROMEDRIVER)
    if chromium is None or driver_path is None or shutil.which("chromedriver") is None:
        unavailable("not installed (apt-get install -y chromium chromium-driver)")
    try:
        from selenium import webdriver
        from selenium.webdriver.chrome.service import Service
    except ImportError:
        unavailable("the selenium package is missing (pip install -e '.[test]')")
    options = webdriver.ChromeOptions()
    options.binary_location = chromium
    for flag in ("--headless=new", "--no-sandbox", "--disable-gpu", "--disable-dev-shm-usage",
                 "--no-first-run", "--disable-extensions", "--disable-background-networking",
                 "--disable-component-update", "--disable-sync", "--mute-audio",
                 "--window-size=1280,720", "--lang=en-US",
                 f"--ignore-certificate-errors-spki-list={spki_fingerprint(cert_pem)}"):
        options.add_argument(flag)
    options.set_capability("goog:loggingPrefs", {"performance": "ALL", "browser": "ALL"})
    options.add_experimental_option("prefs", {"download.default_directory": str(downloads)})
    service = Service(executable_path=driver_path, log_output=os.devnull)
    driver = webdriver.Chrome(service=service, options=options)
    driver.set_script_timeout(60)
    # Before any script of the page runs: count CSP violations and keep the sentinel.
    driver.execute_cdp_cmd("Page.addScriptToEvaluateOnNewDocument", {"source": """
        window.__csp = [];
        document.addEventListener('securitypolicyviolation',
            (e) => window.__csp.push(e.violatedDirective + ' ' + e.blockedURI));
    """})
    return driver


def requests_sent(driver: Any) -> list[str]:
    """The URLs the page asked for since the last call (the network log is drained)."""
    urls = []
    for entry in driver.get_log("performance"):
        message = json.loads(entry["message"])["message"]
        if message.get("method") == "Network.requestWillBeSent":
            urls.append(str(message["params"]["request"]["url"]))
    return urls


def console_errors(driver: Any) -> list[str]:
    return [entry["message"] for entry in driver.get_log("browser")
            if entry.get("level") == "SEVERE"]
