<#
.SYNOPSIS
  Builds ReelQueue for Windows: dist\ReelQueue\ (one folder) and the Inno Setup installer
  dist\ReelQueue-<version>-windows-x64-setup.exe.

.DESCRIPTION
  Run from any folder, in Windows PowerShell 5.1 or PowerShell 7, on 64-bit Windows 10 1809+:

      powershell -ExecutionPolicy Bypass -File installer\windows\build.ps1 [-NoInstaller] [-NoSmoke]

  Needs: Python 3.11+ (x64, from python.org or `winget install Python.Python.3.11`) and,
  for the installer, Inno Setup 6 (`winget install JRSoftware.InnoSetup`; ISCC.exe is found
  on PATH or in its default folder). Uses the active virtual environment, else makes
  build\installer-venv. Steps:
    1. pip install -r installer\requirements-build.txt -e ".[gui]"
    2. PyInstaller installer\reelqueue.spec  -> dist\ReelQueue\ReelQueue.exe (window)
                                                and dist\ReelQueue\reelqueue-cli.exe (console)
    3. smoke test of the frozen app: --version, self-test (offscreen), and a key stored in
       and removed from Windows Credential Manager through the frozen keyring
    4. ISCC installer\windows\reelqueue.iss  -> dist\ReelQueue-<version>-windows-x64-setup.exe
  Signing (optional): set REELQUEUE_SIGNTOOL_ARGS to the arguments for signtool.exe sign
  (e.g. '/n "Your Company" /tr http://timestamp.digicert.com /td sha256 /fd sha256');
  the two .exe files and the installer are signed.
#>
[CmdletBinding()]
param(
    [switch]$NoInstaller,
    [switch]$NoSmoke,
    [string]$Python = "py"
)
$ErrorActionPreference = "Stop"
$Root = (Resolve-Path (Join-Path $PSScriptRoot "..\..")).Path
Set-Location $Root

function Invoke-Checked {
    param([string]$Exe, [string[]]$Arguments)
    & $Exe @Arguments
    if ($LASTEXITCODE -ne 0) { throw "$Exe $($Arguments -join ' ') failed with exit code $LASTEXITCODE" }
}

# --- Python -------------------------------------------------------------------------------
if ($env:VIRTUAL_ENV -and (Test-Path "$env:VIRTUAL_ENV\Scripts\python.exe")) {
    $Py = "$env:VIRTUAL_ENV\Scripts\python.exe"
} else {
    $Venv = Join-Path $Root "build\installer-venv"
    if (-not (Test-Path "$Venv\Scripts\python.exe")) {
        Write-Host "build.ps1: creating $Venv"
        if ($Python -eq "py") { Invoke-Checked "py" @("-3.11", "-m", "venv", $Venv) }
        else { Invoke-Checked $Python @("-m", "venv", $Venv) }
    }
    $Py = "$Venv\Scripts\python.exe"
}
Write-Host "build.ps1: python: $Py"
Invoke-Checked $Py @("-m", "pip", "install", "-q", "-r", "installer\requirements-build.txt", "-e", ".[gui]")
$Version = (& $Py -c "import sys; sys.path.insert(0, 'app'); import reelqueue; print(reelqueue.__version__)").Trim()

# --- PyInstaller --------------------------------------------------------------------------
$Started = Get-Date
Invoke-Checked $Py @("-m", "PyInstaller", "--noconfirm", "--clean", "--log-level", "WARN",
    "--distpath", "dist", "--workpath", "build\pyinstaller", "installer\reelqueue.spec")
$App = Join-Path $Root "dist\ReelQueue"
$Cli = Join-Path $App "reelqueue-cli.exe"
if (-not (Test-Path (Join-Path $App "ReelQueue.exe"))) { throw "dist\ReelQueue\ReelQueue.exe was not made" }
$Bytes = (Get-ChildItem $App -Recurse -File | Measure-Object -Property Length -Sum).Sum
Write-Host ("build.ps1: built dist\ReelQueue in {0:N0} s: {1:N1} MB" -f ((Get-Date) - $Started).TotalSeconds, ($Bytes / 1MB))

# --- Smoke test ---------------------------------------------------------------------------
if (-not $NoSmoke) {
    $Out = (& $Cli --version).Trim()
    if ($Out -ne "reelqueue $Version") { throw "--version printed '$Out', want 'reelqueue $Version'" }
    $Elapsed = (Measure-Command { & $Cli --version | Out-Null }).TotalSeconds
    Write-Host ("build.ps1: PASS --version ({0:N2} s)" -f $Elapsed)

    $Tmp = Join-Path ([System.IO.Path]::GetTempPath()) ("reelqueue-smoke-" + [guid]::NewGuid())
    New-Item -ItemType Directory -Path $Tmp | Out-Null
    try {
        $env:QT_QPA_PLATFORM = "offscreen"
        Invoke-Checked $Cli @("--data-dir", "$Tmp\data", "--videos-dir", "$Tmp\videos", "self-test")
        Remove-Item Env:\QT_QPA_PLATFORM
        Write-Host "build.ps1: PASS self-test"

        # The frozen keyring must find Windows Credential Manager (its backends are found
        # through entry points, which frozen builds have lost before).
        $Key = "rq-smoke-" + [guid]::NewGuid().ToString("N")
        $Key | & $Cli --data-dir "$Tmp\keys" accounts add smoke --provider mock --no-check
        if ($LASTEXITCODE -ne 0) { throw "keyring: 'accounts add' failed in the frozen app" }
        $Listed = cmdkey /list | Select-String -SimpleMatch "ReelQueue"
        if (-not $Listed) { Write-Warning "keyring: cmdkey /list shows no ReelQueue entry" }
        Invoke-Checked $Cli @("--data-dir", "$Tmp\keys", "accounts", "remove", "smoke")
        Write-Host "build.ps1: PASS keyring (Windows Credential Manager)"
    } finally {
        Remove-Item -Recurse -Force $Tmp -ErrorAction SilentlyContinue
    }
}

# --- Signing (optional) -------------------------------------------------------------------
function Invoke-Sign([string]$File) {
    if (-not $env:REELQUEUE_SIGNTOOL_ARGS) { return }
    $SignArgs = "sign $env:REELQUEUE_SIGNTOOL_ARGS `"$File`""
    $P = Start-Process signtool.exe -ArgumentList $SignArgs -NoNewWindow -Wait -PassThru
    if ($P.ExitCode -ne 0) { throw "signtool failed on $File" }
}
Invoke-Sign (Join-Path $App "ReelQueue.exe")
Invoke-Sign $Cli

# --- Inno Setup ---------------------------------------------------------------------------
if (-not $NoInstaller) {
    $Iscc = (Get-Command iscc.exe -ErrorAction SilentlyContinue).Source
    if (-not $Iscc) {
        foreach ($Candidate in @("${env:ProgramFiles(x86)}\Inno Setup 6\ISCC.exe",
                                 "$env:ProgramFiles\Inno Setup 6\ISCC.exe",
                                 "$env:LOCALAPPDATA\Programs\Inno Setup 6\ISCC.exe")) {
            if (Test-Path $Candidate) { $Iscc = $Candidate; break }
        }
    }
    if (-not $Iscc) { throw "ISCC.exe (Inno Setup 6) not found: winget install JRSoftware.InnoSetup" }
    Invoke-Checked $Iscc @("/Q", "/DAppVersion=$Version", "/DSourceDir=$App",
        "/DOutputDir=$(Join-Path $Root 'dist')", "installer\windows\reelqueue.iss")
    $Setup = Join-Path $Root "dist\ReelQueue-$Version-windows-x64-setup.exe"
    Invoke-Sign $Setup
    Write-Host ("build.ps1: installer {0}: {1:N1} MB" -f $Setup, ((Get-Item $Setup).Length / 1MB))
}
