; Inno Setup 6 script: the Windows installer around PyInstaller's dist\ReelQueue folder.
;
;   iscc /DAppVersion=0.1.0 installer\windows\reelqueue.iss
;
; installer\windows\build.ps1 builds the folder first and passes the version. The result is
; dist\ReelQueue-<version>-windows-x64-setup.exe.
;
; - Per-user install by default (no administrator rights, %LOCALAPPDATA%\Programs\ReelQueue);
;   the first page offers "Install for all users" to an administrator.
; - Start-menu entry; optional desktop shortcut.
; - "Open with ReelQueue" for .csv and .xlsx, without taking over the default program.
; - Uninstalling removes the program only. The journal, settings and logs
;   (%LOCALAPPDATA%\ReelQueue) and the videos (Videos\ReelQueue) are kept unless the user
;   ticks yes to each question; a silent uninstall never deletes them.

#ifndef AppVersion
  #define AppVersion "0.0.0"
#endif
#ifndef SourceDir
  #define SourceDir "..\..\dist\ReelQueue"
#endif
#ifndef OutputDir
  #define OutputDir "..\..\dist"
#endif
#define AppName "ReelQueue"
#define AppExe "ReelQueue.exe"
#define ProgId "ReelQueue.Sheet"

[Setup]
; The AppId identifies ReelQueue to Windows across versions (upgrades, uninstall entry):
; never change it.
AppId={{34A9D9E1-9C40-45DF-80FC-9C681D1288AC}
AppName={#AppName}
AppVersion={#AppVersion}
AppVerName={#AppName} {#AppVersion}
AppPublisher=ReelQueue
VersionInfoVersion={#AppVersion}
DefaultDirName={autopf}\{#AppName}
DefaultGroupName={#AppName}
DisableProgramGroupPage=yes
PrivilegesRequired=lowest
PrivilegesRequiredOverridesAllowed=dialog
ArchitecturesAllowed=x64compatible
ArchitecturesInstallIn64BitMode=x64compatible
MinVersion=10.0.17763
ChangesAssociations=yes
CloseApplications=yes
RestartApplications=no
UninstallDisplayIcon={app}\{#AppExe}
UninstallDisplayName={#AppName}
SetupIconFile=..\..\resources\icons\app\reelqueue.ico
WizardStyle=modern
Compression=lzma2/max
SolidCompression=yes
OutputDir={#OutputDir}
OutputBaseFilename={#AppName}-{#AppVersion}-windows-x64-setup

[Languages]
Name: "english"; MessagesFile: "compiler:Default.isl"

[Tasks]
Name: "desktopicon"; Description: "{cm:CreateDesktopIcon}"; GroupDescription: "{cm:AdditionalIcons}"; Flags: unchecked

[InstallDelete]
; A new version replaces the whole program folder (never the user's data, which is elsewhere).
Type: filesandordirs; Name: "{app}\_internal"

[Files]
Source: "{#SourceDir}\*"; DestDir: "{app}"; Flags: ignoreversion recursesubdirs createallsubdirs

[Icons]
Name: "{autoprograms}\{#AppName}"; Filename: "{app}\{#AppExe}"; Comment: "Turn a spreadsheet of prompts into AI videos"
Name: "{autodesktop}\{#AppName}"; Filename: "{app}\{#AppExe}"; Tasks: desktopicon

[Registry]
; The document type ReelQueue opens. HKA is HKCU for a per-user install, HKLM for all users.
Root: HKA; Subkey: "Software\Classes\{#ProgId}"; ValueType: string; ValueName: ""; ValueData: "Spreadsheet of prompts"; Flags: uninsdeletekey
Root: HKA; Subkey: "Software\Classes\{#ProgId}\DefaultIcon"; ValueType: string; ValueName: ""; ValueData: """{app}\{#AppExe}"",0"
Root: HKA; Subkey: "Software\Classes\{#ProgId}\shell\open"; ValueType: string; ValueName: "FriendlyAppName"; ValueData: "{#AppName}"
Root: HKA; Subkey: "Software\Classes\{#ProgId}\shell\open\command"; ValueType: string; ValueName: ""; ValueData: """{app}\{#AppExe}"" ""%1"""
; "Open with" for .csv and .xlsx: listed under OpenWithProgids, so Excel stays the default.
Root: HKA; Subkey: "Software\Classes\.csv\OpenWithProgids"; ValueType: string; ValueName: "{#ProgId}"; ValueData: ""; Flags: uninsdeletevalue
Root: HKA; Subkey: "Software\Classes\.xlsx\OpenWithProgids"; ValueType: string; ValueName: "{#ProgId}"; ValueData: ""; Flags: uninsdeletevalue
Root: HKA; Subkey: "Software\Classes\Applications\{#AppExe}"; ValueType: string; ValueName: "FriendlyAppName"; ValueData: "{#AppName}"; Flags: uninsdeletekey
Root: HKA; Subkey: "Software\Classes\Applications\{#AppExe}\SupportedTypes"; ValueType: string; ValueName: ".csv"; ValueData: ""
Root: HKA; Subkey: "Software\Classes\Applications\{#AppExe}\SupportedTypes"; ValueType: string; ValueName: ".xlsx"; ValueData: ""
Root: HKA; Subkey: "Software\Classes\Applications\{#AppExe}\shell\open\command"; ValueType: string; ValueName: ""; ValueData: """{app}\{#AppExe}"" ""%1"""

[Run]
Filename: "{app}\{#AppExe}"; Description: "{cm:LaunchProgram,{#AppName}}"; Flags: nowait postinstall skipifsilent

[Code]
{ Where ReelQueue keeps the user's things (platformdirs with appauthor=False):
  the journal, settings, logs and thumbnails in %LOCALAPPDATA%\ReelQueue, and the videos
  in the Videos folder's ReelQueue folder. Both are left alone unless the user says yes. }
function UserDataDir(): String;
begin
  Result := ExpandConstant('{localappdata}\{#AppName}');
end;

function UserVideosDir(): String;
begin
  Result := ExpandConstant('{%USERPROFILE}\Videos\{#AppName}');
end;

procedure CurUninstallStepChanged(CurUninstallStep: TUninstallStep);
begin
  if (CurUninstallStep <> usPostUninstall) or UninstallSilent() then
    Exit;
  if DirExists(UserDataDir()) then
    if MsgBox('Also delete your ReelQueue journal, settings and logs?' + #13#10 + #13#10 +
              UserDataDir() + #13#10 + #13#10 +
              'Keep them (No) to pick up your batches again after reinstalling. ' +
              'API keys stay in Windows Credential Manager either way.',
              mbConfirmation, MB_YESNO or MB_DEFBUTTON2) = IDYES then
      DelTree(UserDataDir(), True, True, True);
  if DirExists(UserVideosDir()) then
    if MsgBox('Also delete the videos ReelQueue rendered?' + #13#10 + #13#10 +
              UserVideosDir() + #13#10 + #13#10 +
              'They cannot be recovered (No keeps them).',
              mbConfirmation, MB_YESNO or MB_DEFBUTTON2) = IDYES then
      DelTree(UserVideosDir(), True, True, True);
end;
