"""``orca`` in every new shell (issue 40 item 3): a link in ``~/.local/bin``.

The README installs Orca into a virtualenv of its own and runs ``orca up`` from a shell
where that venv is active. A new shell has no such venv, so ``orca`` was "command not
found" there. ``orca up`` therefore links ``~/.local/bin/orca`` to the venv's console
script. Why a link there and not pipx or ``uv tool``: neither is on a fresh Debian or
Ubuntu machine, and ``pip install --user`` is refused there (PEP 668), while
``~/.local/bin`` is the user's own executables folder (the XDG base directory spec) that
Debian's and Ubuntu's ``~/.profile`` put on a login shell's ``PATH`` once it exists.
The console script's ``#!`` names the venv's interpreter, so the link runs Orca's
Python without putting anything of the venv on the user's ``PATH``: agents started from
that shell still never see Orca's interpreter (``orca/user_env.py``).

The link is made only when Orca runs from a virtualenv, and never replaces a file or a
link of the user's that still works (another Orca install, a wrapper); a dangling link
left by a removed checkout is replaced.
"""

from __future__ import annotations

import os
import sys
from collections.abc import Mapping
from pathlib import Path


def local_bin(environ: Mapping[str, str]) -> Path | None:
    home = environ.get("HOME")
    return Path(home) / ".local" / "bin" if home else None


def ensure_shim(environ: Mapping[str, str], prefix: str | None = None) -> str | None:
    """Link ``~/.local/bin/orca`` to this venv's ``orca`` when nothing working is there;
    a line to tell the user, or None when there is nothing to say."""
    prefix = sys.prefix if prefix is None else prefix
    if prefix == sys.base_prefix:
        return None  # not a virtualenv: orca is where the installer put it
    script = Path(prefix) / "bin" / "orca"
    folder = local_bin(environ)
    if folder is None or not os.access(script, os.X_OK):
        return None
    link = folder / "orca"
    if link.is_symlink() or link.exists():
        if link.exists():  # a working orca of the user's (or this one): left alone
            return None
        link.unlink()  # dangling: its checkout was removed
    try:
        folder.mkdir(parents=True, exist_ok=True)
        link.symlink_to(script)
    except OSError as exc:
        return f"orca: could not link {link} (for `orca` in new shells): {exc.strerror}"
    on_path = any(
        d and os.path.realpath(d) == os.path.realpath(folder)
        for d in environ.get("PATH", "").split(os.pathsep)
    )
    hint = "" if on_path else f" (a new login shell has it on PATH; or add {folder} to PATH)"
    return f"orca: linked {link} -> {script}: `orca` works in new shells{hint}"
