"""The window's switch for the HTTP API (issue 14): Settings -> "Serve the HTTP API" serves
the window's own engine (one process owns a data folder) with the starter the entry module
gives the window; the window says truthfully whether it serves (the address and the
certificate fingerprint to pin, or why not) and stops serving when asked or closed."""

from __future__ import annotations

import asyncio
import hashlib
import socket
import ssl
from pathlib import Path

import httpx2
import pytest

from reelqueue.application.tokens import ClientTokens
from reelqueue.entry import start_window_api
from reelqueue.ui.controller import AppController

from .conftest import WindowHarness, on_qloop, until


def _add_token(journal: Path) -> str:
    tokens = ClientTokens(journal)
    try:
        return tokens.add("window-client", "read", 0.0)
    finally:
        tokens.close()


def _get(base: str, cafile: Path, token: str, path: str) -> httpx2.Response:
    """One HTTPS request, verifying the server against the pinned certificate only."""
    pinned = ssl.create_default_context(cafile=str(cafile))
    with httpx2.Client(base_url=base, verify=pinned, timeout=10.0,
                      headers={"Authorization": f"Bearer {token}"}) as client:
        return client.get(path)


def _turn(controller: AppController, on: bool, listen: str = "127.0.0.1:0") -> None:
    dialog = controller.keeper.show_settings()
    dialog.serve_api.setChecked(on)
    dialog.api_listen.setText(listen)
    dialog._save()


@on_qloop
async def test_settings_serve_the_windows_engine_over_pinned_https(
        windows: WindowHarness, app_ctx) -> None:
    controller = await windows.open(app_ctx, start=False)
    session = controller.session
    session.api_starter = start_window_api  # what entry.open_window gives run_app
    token = await asyncio.to_thread(_add_token, app_ctx.journal_path)
    assert session.api is None and session.api_status() == "Not serving."

    _turn(controller, True)
    await until(lambda: session.api is not None)
    api = session.api
    assert api is not None and api.url.startswith("https://127.0.0.1:")
    banner = controller.window.banners.get("api:serving")
    assert banner is not None and api.url in banner.text
    cert = app_ctx.data_dir / "api-cert.pem"
    der = ssl.PEM_cert_to_DER_cert(cert.read_text())
    fingerprint = hashlib.sha256(der).hexdigest()
    assert api.fingerprint is not None
    assert api.fingerprint.replace(":", "").lower() == fingerprint
    assert api.fingerprint in banner.text  # what the user pins is what is served

    base = api.url.removesuffix("/v1")
    health = await asyncio.to_thread(_get, base, cert, token, "/v1/health")
    assert health.status_code == 200
    assert health.json()["engine"] == "paused"  # the window's engine, opened paused
    listed = await asyncio.to_thread(_get, base, cert, token, "/v1/jobs")
    assert listed.status_code == 200 and listed.json() == {"jobs": [], "next_cursor": None}
    refused = await asyncio.to_thread(_get, base, cert, "rq_wrong", "/v1/jobs")
    assert refused.status_code == 401
    page = await asyncio.to_thread(_get, base, cert, token, "/")  # the dashboard (issue 37)
    assert page.status_code == 200 and page.headers["content-type"].startswith("text/html")
    assert "default-src 'none'" in page.headers["content-security-policy"]
    assert token not in session.api_status()

    dialog = controller.keeper.show_settings()
    assert dialog.api_status.text() == session.api_status()
    assert api.url in dialog.api_status.text()
    dialog.close()

    _turn(controller, False)
    await until(lambda: session.api is None)
    assert controller.window.banners.get("api:serving") is None
    assert session.api_status() == "Not serving."
    with pytest.raises(httpx2.ConnectError):
        await asyncio.to_thread(_get, base, cert, token, "/v1/health")


@pytest.mark.expect_warnings("the HTTP API could not be served")
@on_qloop
async def test_a_taken_port_is_shown_not_hidden(windows: WindowHarness, app_ctx) -> None:
    controller = await windows.open(app_ctx, start=False)
    session = controller.session
    session.api_starter = start_window_api
    with socket.socket() as taken:
        taken.bind(("127.0.0.1", 0))
        taken.listen()
        port = taken.getsockname()[1]
        _turn(controller, True, listen=f"127.0.0.1:{port}")
        await until(lambda: session.api_error is not None)
    assert session.api is None
    banner = controller.window.banners.get("api:error")
    assert banner is not None and banner.text.startswith("HTTP API: Not serving:")
    assert str(port) in banner.text or "in use" in banner.text
