"""``orca service install | uninstall``: a systemd user unit that keeps the tree up.

``install`` writes ``~/.config/systemd/user/orca.service`` (``$XDG_CONFIG_HOME`` if
set): ``orcad`` in the foreground for this profile (``ORCA_HOME`` when set),
``Restart=always`` so the tree comes back on its own after a crash, and
``WantedBy=default.target`` so it starts at login. ``KillMode=process``: when systemd
stops or restarts the unit it signals ``orcad`` only; the fd keeper and the agents it
holds are not in orcad's process group and must outlive a restart (``orcad`` stops its
actors itself). Where systemd runs (``/run/systemd/system`` exists and ``systemctl`` is
on PATH) it then runs ``systemctl --user daemon-reload`` and ``enable`` (``disable``
before ``uninstall``); elsewhere it writes the file and says that nothing was enabled.

Exit codes as every command: 0 done, 1 a file or ``systemctl`` failed, 2 bad usage.
"""

from __future__ import annotations

import argparse
import os
import sys
from pathlib import Path

from orca.cli.output import EXIT_FAILED, EXIT_OK, fail

UNIT_NAME = "orca.service"
# How long one systemctl call may take before it counts as failed.
SYSTEMCTL_TIMEOUT_S = 30.0
# systemd's own test for "booted with systemd" (sd_booted(3)).
SYSTEMD_RUNTIME_DIR = Path("/run/systemd/system")


def unit_path(environ: dict[str, str] | os._Environ[str] | None = None) -> Path:
    env = os.environ if environ is None else environ
    config = env.get("XDG_CONFIG_HOME") or str(Path(env.get("HOME", "~")).expanduser() / ".config")
    return Path(config) / "systemd" / "user" / UNIT_NAME


def _quote(arg: str) -> str:
    """One argument of a unit's command line (systemd.service(5) "Command lines")."""
    if arg and all(c.isalnum() or c in "/._-=:+," for c in arg):
        return arg
    escaped = arg.replace("\\", "\\\\").replace('"', '\\"').replace("%", "%%")
    return f'"{escaped}"'


def render_unit(python: str, orca_home: str | None) -> str:
    """The unit's text: orcad in the foreground for this profile, restarted always."""
    exec_start = " ".join(_quote(a) for a in (python, "-P", "-m", "actors.supervisor"))
    env = f"Environment={_quote('ORCA_HOME=' + orca_home)}\n" if orca_home else ""
    return (
        "# Written by `orca service install`; `orca service uninstall` removes it.\n"
        "[Unit]\n"
        "Description=Orca: coding agents' terminals, worktrees and status\n"
        "\n"
        "[Service]\n"
        "Type=simple\n"
        f"ExecStart={exec_start}\n"
        f"{env}"
        "Restart=always\n"
        "RestartSec=1\n"
        "# Only orcad: the fd keeper and the agents must outlive a restart of the unit.\n"
        "KillMode=process\n"
        "\n"
        "[Install]\n"
        "WantedBy=default.target\n"
    )


def systemd_available() -> bool:
    import shutil  # here: every `orca up/down/status` builds this module's parser

    return SYSTEMD_RUNTIME_DIR.is_dir() and shutil.which("systemctl") is not None


def _systemctl(*args: str) -> str | None:
    """Run ``systemctl --user ARGS``; the error text, or None on success."""
    import subprocess

    try:
        done = subprocess.run(
            ["systemctl", "--user", *args],
            capture_output=True,
            text=True,
            timeout=SYSTEMCTL_TIMEOUT_S,
        )
    except (OSError, subprocess.TimeoutExpired) as exc:
        return str(exc)
    return None if done.returncode == 0 else (done.stderr.strip() or f"exit {done.returncode}")


def cmd_install(args: argparse.Namespace) -> int:
    from orca.fsio import write_atomic

    path = unit_path()
    home = os.environ.get("ORCA_HOME")
    text = render_unit(sys.executable, str(Path(home).resolve()) if home else None)
    try:
        path.parent.mkdir(parents=True, exist_ok=True)
        write_atomic(path, text.encode(), mode=0o644)
    except OSError as exc:
        return fail(f"cannot write {path}: {exc}")
    print(f"wrote {path}")
    if not systemd_available():
        print("systemd is not running here: nothing enabled (the unit file is ready for it)")
        return EXIT_OK
    for step in (("daemon-reload",), ("enable", "--now", UNIT_NAME)):
        error = _systemctl(*step)
        if error is not None:
            return fail(f"systemctl --user {' '.join(step)} failed: {error}", EXIT_FAILED)
        print(f"ran systemctl --user {' '.join(step)}")
    return EXIT_OK


def cmd_uninstall(args: argparse.Namespace) -> int:
    path = unit_path()
    if systemd_available() and path.exists():
        error = _systemctl("disable", UNIT_NAME)
        if error is not None:
            return fail(f"systemctl --user disable {UNIT_NAME} failed: {error}", EXIT_FAILED)
        print(f"ran systemctl --user disable {UNIT_NAME}")
    try:
        path.unlink()
    except FileNotFoundError:
        print(f"no unit at {path}: nothing to remove")
        return EXIT_OK
    except OSError as exc:
        return fail(f"cannot remove {path}: {exc}")
    print(f"removed {path}")
    if systemd_available():
        error = _systemctl("daemon-reload")
        if error is not None:
            return fail(f"systemctl --user daemon-reload failed: {error}", EXIT_FAILED)
        print("ran systemctl --user daemon-reload")
    else:
        print("systemd is not running here: nothing to disable")
    return EXIT_OK


def add_service_parser(sub: argparse._SubParsersAction[argparse.ArgumentParser]) -> None:
    service = sub.add_parser("service", help="install a systemd user unit that keeps orca up")
    actions = service.add_subparsers(dest="service_command", metavar="ACTION", required=True)
    install = actions.add_parser(
        "install", help=f"write and enable ~/.config/systemd/user/{UNIT_NAME}"
    )
    install.set_defaults(func=cmd_install)
    uninstall = actions.add_parser("uninstall", help="disable and remove the unit")
    uninstall.set_defaults(func=cmd_uninstall)
