"""Where Orca keeps its files.

``platformdirs`` decides the data, runtime, log and config directories; ``ORCA_HOME``
overrides all of them (tests and multiple profiles use it), so nothing a test does can
touch the user's real home.

The runtime dir (sockets, the orcad lock) is ``$XDG_RUNTIME_DIR/orca`` when the
session has one; without it (ssh, root, containers) it is the per-user
``/tmp/orca-<uid>/default`` rather than platformdirs' shared fallback (which also warns on
every command). With ``ORCA_HOME`` it is ``$ORCA_HOME/run``, so two profiles never share
sockets.

ZeroMQ ``ipc://`` endpoints are Unix socket paths, limited to 107 bytes by the kernel
(``sun_path``). A deep ``ORCA_HOME`` (pytest's temp dirs are deep) would overflow it, so
when the natural runtime dir is too long the sockets move to
``/tmp/orca-<uid>/<hash of the natural dir>``; the mapping stays deterministic, so every
process of one profile finds the same sockets.

Every directory is created 0700 and checked at every start (``ensure``): it must be a
real directory we own, and no ancestor may be writable by another user unless it is
sticky (``/tmp``). The per-user ``/tmp/orca-<uid>`` is predictable, so another local
user could create it first: that is refused with a clear error, never used.
"""

from __future__ import annotations

import hashlib
import os
import tempfile
from dataclasses import dataclass
from pathlib import Path

import platformdirs

from orca import fsio

APP_NAME = "orca"
ORCA_HOME_ENV = "ORCA_HOME"
# Longest socket name we put in the runtime dir ("supervisor.rpc") plus slack; the
# kernel's sun_path holds 107 bytes plus the NUL.
_MAX_IPC_PATH = 100
_LONGEST_SOCKET_NAME = len("supervisor.rpc.sock")


@dataclass(frozen=True)
class OrcaPaths:
    """Every directory Orca uses, resolved once."""

    home: Path | None
    data_dir: Path
    runtime_dir: Path
    log_dir: Path
    config_dir: Path

    @property
    def state_file(self) -> Path:
        return self.data_dir / "orca-data.json"

    @property
    def hooks_dir(self) -> Path:
        return self.data_dir / "agent-hooks"

    @property
    def terminal_history_dir(self) -> Path:
        return self.data_dir / "terminal-history"

    @property
    def lock_file(self) -> Path:
        return self.runtime_dir / "orcad.lock"

    def ipc_endpoint(self, actor: str, kind: str) -> str:
        """The ``ipc://`` endpoint of ``actor``'s ``kind`` socket (``rpc`` or ``pub``)."""
        return f"ipc://{self.runtime_dir / f'{actor}.{kind}'}"

    def log_file(self, actor: str) -> Path:
        return self.log_dir / f"{actor}.log"

    def ensure(self) -> OrcaPaths:
        """Create and check every directory (0700, ours, safe ancestors); raises
        ``fsio.UnsafeDirectory`` for one that fails the check."""
        for d in (self.data_dir, self.runtime_dir, self.log_dir, self.config_dir):
            fsio.verify_ancestors(d)
            fsio.ensure_private_dir(d)
        return self


def user_tmp_root() -> Path:
    """``/tmp/orca-<uid>``: the per-user parent of runtime dirs that cannot live elsewhere."""
    return Path(tempfile.gettempdir()) / f"orca-{os.getuid()}"


def _short_runtime_dir(natural: Path) -> Path:
    if len(str(natural)) + 1 + _LONGEST_SOCKET_NAME <= _MAX_IPC_PATH:
        return natural
    digest = hashlib.sha256(str(natural).encode()).hexdigest()[:16]
    return user_tmp_root() / digest


def resolve_paths(environ: dict[str, str] | None = None) -> OrcaPaths:
    """Resolve the directories from ``ORCA_HOME`` or, without it, from platformdirs."""
    env = os.environ if environ is None else environ
    home = env.get(ORCA_HOME_ENV)
    if home:
        root = Path(home).expanduser().absolute()
        return OrcaPaths(
            home=root,
            data_dir=root / "data",
            runtime_dir=_short_runtime_dir(root / "run"),
            log_dir=root / "logs",
            config_dir=root / "config",
        )
    dirs = platformdirs.PlatformDirs(APP_NAME, appauthor=False)
    xdg_runtime = env.get("XDG_RUNTIME_DIR", "")
    runtime = (
        Path(xdg_runtime) / APP_NAME if os.path.isabs(xdg_runtime) else user_tmp_root() / "default"
    )
    return OrcaPaths(
        home=None,
        data_dir=Path(dirs.user_data_dir),
        runtime_dir=_short_runtime_dir(runtime),
        log_dir=Path(dirs.user_log_dir),
        config_dir=Path(dirs.user_config_dir),
    )
