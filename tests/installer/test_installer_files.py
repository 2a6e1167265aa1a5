"""Fast checks of the installer's files: the icon set, the .desktop file, the Inno Setup
script, the PyInstaller spec and the frozen entry point (no build needed)."""

from __future__ import annotations

import configparser
import re
import shutil
import struct
import subprocess
from pathlib import Path

import pytest

ROOT = Path(__file__).resolve().parents[2]
INSTALLER = ROOT / "installer"
ICONS = ROOT / "resources" / "icons" / "app"
DESKTOP = INSTALLER / "linux" / "app.reelqueue.ReelQueue.desktop"

pytestmark = pytest.mark.unit

PNG_SIZES = (16, 24, 32, 48, 64, 128, 256, 512, 1024)
XLSX_MIME = "application/vnd.openxmlformats-officedocument.spreadsheetml.sheet"
APP_ID = "{{34A9D9E1-9C40-45DF-80FC-9C681D1288AC}"


def png_size(path: Path) -> tuple[int, int]:
    data = path.read_bytes()[:24]
    assert data[:8] == b"\x89PNG\r\n\x1a\n", f"{path.name} is not a PNG"
    width, height = struct.unpack(">II", data[16:24])
    return width, height


def test_icon_is_the_windows_icon_rendered_in_every_size() -> None:
    assert (ICONS / "reelqueue.svg").read_bytes() == (
        ROOT / "resources" / "icons" / "app.svg").read_bytes(), "run installer/make-icons.sh"
    for size in PNG_SIZES:
        assert png_size(ICONS / f"reelqueue-{size}.png") == (size, size)


def test_ico_holds_16_to_256_pixels() -> None:
    data = (ICONS / "reelqueue.ico").read_bytes()
    reserved, kind, count = struct.unpack("<HHH", data[:6])
    assert (reserved, kind) == (0, 1)
    sizes = {data[6 + 16 * i] or 256 for i in range(count)}  # 0 means 256
    assert {16, 24, 32, 48, 256} <= sizes


def test_icns_holds_retina_sizes() -> None:
    data = (ICONS / "reelqueue.icns").read_bytes()
    assert data[:4] == b"icns" and struct.unpack(">I", data[4:8])[0] == len(data)
    kinds, offset = set(), 8
    while offset < len(data):
        kinds.add(data[offset:offset + 4])
        offset += struct.unpack(">I", data[offset + 4:offset + 8])[0]
    assert {b"ic08", b"ic09", b"ic10"} <= kinds  # 256, 512, 1024 (512@2x)


def test_desktop_file_opens_sheets_with_the_icon() -> None:
    parser = configparser.ConfigParser(interpolation=None, strict=True)
    parser.optionxform = str  # type: ignore[assignment, method-assign]
    parser.read(DESKTOP, encoding="utf-8")
    entry = parser["Desktop Entry"]
    assert entry["Type"] == "Application" and entry["Icon"] == "reelqueue"
    assert entry["Exec"].split()[-1] == "%f"
    mime = set(entry["MimeType"].rstrip(";").split(";"))
    assert {"text/csv", XLSX_MIME} <= mime
    if shutil.which("desktop-file-validate"):
        result = subprocess.run(["desktop-file-validate", str(DESKTOP)], capture_output=True,
                                text=True, check=False)
        assert result.returncode == 0, result.stdout + result.stderr


def test_inno_setup_script_keeps_its_app_id_and_the_users_data() -> None:
    text = (INSTALLER / "windows" / "reelqueue.iss").read_text(encoding="utf-8")
    assert f"AppId={APP_ID}" in text, "the AppId must never change (upgrades, uninstall)"
    assert "PrivilegesRequired=lowest" in text
    for ext in (".csv", ".xlsx"):
        assert f'Subkey: "Software\\Classes\\{ext}\\OpenWithProgids"' in text
    assert "UninstallSilent()" in text and text.count("MB_DEFBUTTON2") == 2
    assert "{localappdata}\\{#AppName}" in text


def test_spec_bundles_resources_keyring_backends_and_document_types() -> None:
    text = (INSTALLER / "reelqueue.spec").read_text(encoding="utf-8")
    compile(text, "reelqueue.spec", "exec")
    for module in ("keyring.backends.SecretService", "keyring.backends.Windows",
                   "keyring.backends.macOS", "secretstorage", "jeepney.io.blocking"):
        assert f'"{module}"' in text
    assert 'copy_metadata("keyring")' in text
    assert '(str(ROOT / "resources"), "resources")' in text
    assert '"NSHighResolutionCapable": True' in text
    assert '"CFBundleTypeExtensions": ["csv"]' in text
    assert '"CFBundleTypeExtensions": ["xlsx"]' in text


@pytest.mark.parametrize("script", sorted(p.relative_to(ROOT).as_posix()
                                          for p in INSTALLER.rglob("*.sh")))
def test_shell_scripts_parse(script: str) -> None:
    result = subprocess.run(["bash", "-n", str(ROOT / script)], capture_output=True,
                            text=True, check=False)
    assert result.returncode == 0, result.stderr


def _entry_module():  # type: ignore[no-untyped-def]
    import importlib.util

    spec = importlib.util.spec_from_file_location(
        "reelqueue_frozen_entry", INSTALLER / "reelqueue_entry.py")
    assert spec is not None and spec.loader is not None
    module = importlib.util.module_from_spec(spec)
    spec.loader.exec_module(module)
    return module


def test_entry_point_runs_a_python_m_child_command_line(
        monkeypatch: pytest.MonkeyPatch, capsys: pytest.CaptureFixture[str]) -> None:
    # self-test's crash check starts `sys.executable -m reelqueue ...`: in the frozen app
    # sys.executable is the program itself.
    from reelqueue import __version__

    entry = _entry_module()
    monkeypatch.delenv("REELQUEUE_FROZEN_SMOKE", raising=False)
    monkeypatch.setattr("sys.argv", ["reelqueue", "-m", "reelqueue", "--version"])
    with pytest.raises(SystemExit) as exited:
        entry.main()
    assert exited.value.code == 0
    assert capsys.readouterr().out.strip() == f"reelqueue {__version__}"


def test_entry_point_leaves_other_arguments_alone(monkeypatch: pytest.MonkeyPatch) -> None:
    entry = _entry_module()
    monkeypatch.setattr("sys.argv", ["reelqueue", "status", "-m", "reelqueue"])
    entry._drop_python_m()
    import sys

    assert sys.argv == ["reelqueue", "status", "-m", "reelqueue"]


def test_entry_point_thumbnail_probe_decodes_the_sample_video(
        monkeypatch: pytest.MonkeyPatch, capsys: pytest.CaptureFixture[str]) -> None:
    # The frozen smoke test's thumbnail step, run here from the source tree.
    av = pytest.importorskip("av")
    from reelqueue.resources import resource
    from reelqueue.ui.thumbnails import THUMB_WIDTH

    with av.open(str(resource("sample.mp4"))) as video:
        stream = video.streams.video[0]
        width, height = stream.codec_context.width, stream.codec_context.height
    assert width <= THUMB_WIDTH  # smaller than a thumbnail: kept at its own size

    entry = _entry_module()
    monkeypatch.setenv("REELQUEUE_FROZEN_SMOKE", "thumbnail")
    monkeypatch.setattr("sys.argv", ["reelqueue"])
    assert entry.main() == 0
    size = re.fullmatch(r"reelqueue-smoke: thumbnail (\d+)x(\d+)",
                        capsys.readouterr().out.strip())
    assert size is not None
    assert (int(size.group(1)), int(size.group(2))) == (width, height)


def test_version_resource_names_the_version() -> None:
    text = (INSTALLER / "reelqueue.spec").read_text(encoding="utf-8")
    assert re.search(r"StringStruct\('ProductVersion', '\{__version__\}'\)", text)
