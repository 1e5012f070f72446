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

import os
from pathlib import Path

# hashlib, tempfile, platformdirs and orca.fsio are imported where they are used: a CLI command
# with ORCA_HOME set and a short runtime dir needs none of them (bench/cli.py).

APP_NAME = "orca"
ORCA_HOME_ENV = "ORCA_HOME"
# Longest socket name we put in the runtime dir ("supervisor.rpc") plus slack; the
# kernel's sun_path holds 107 bytes plus the NUL.
_MAX_IPC_PATH = 100
_LONGEST_SOCKET_NAME = len("supervisor.rpc.sock")


class OrcaPaths:
    """Every directory Orca uses, resolved once. Immutable, equal by value.

    Written out rather than a frozen dataclass: every CLI command builds one, and
    ``dataclasses`` (which loads ``inspect``) costs ~6 ms of start-up (bench/cli.py).
    """

    __slots__ = ("config_dir", "data_dir", "home", "log_dir", "runtime_dir")
    home: Path | None
    data_dir: Path
    runtime_dir: Path
    log_dir: Path
    config_dir: Path

    def __init__(
        self,
        home: Path | None,
        data_dir: Path,
        runtime_dir: Path,
        log_dir: Path,
        config_dir: Path,
    ) -> None:
        for key, value in (
            ("home", home),
            ("data_dir", data_dir),
            ("runtime_dir", runtime_dir),
            ("log_dir", log_dir),
            ("config_dir", config_dir),
        ):
            object.__setattr__(self, key, value)

    def _fields(self) -> tuple[Path | None, Path, Path, Path, Path]:
        return (self.home, self.data_dir, self.runtime_dir, self.log_dir, self.config_dir)

    def __setattr__(self, name: str, value: object) -> None:
        raise AttributeError(f"OrcaPaths is frozen: cannot set {name!r}")

    def __eq__(self, other: object) -> bool:
        if not isinstance(other, OrcaPaths):
            return NotImplemented
        return self._fields() == other._fields()

    def __hash__(self) -> int:
        return hash(self._fields())

    def __reduce__(self) -> tuple[type[OrcaPaths], tuple[Path | None, Path, Path, Path, Path]]:
        return (OrcaPaths, self._fields())  # pickle and copy rebuild through __init__

    def __repr__(self) -> str:
        return (
            f"OrcaPaths(home={self.home!r}, data_dir={self.data_dir!r},"
            f" runtime_dir={self.runtime_dir!r}, log_dir={self.log_dir!r},"
            f" config_dir={self.config_dir!r})"
        )

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
        from orca import fsio

        for d in (self.data_dir, self.runtime_dir, self.log_dir, self.config_dir):
            fsio.verify_ancestors(d)
            fsio.ensure_private_dir(d)
        return self


def waker_of(socket_path: str) -> tuple[str, str] | None:
    """For an actor's RPC socket (``<runtime>/<actor>.rpc``): the actor's name and
    orcad's socket beside it, which starts a dormant actor when asked (``sup.wake``).
    None for orcad's own socket or any other kind."""
    folder, _, name = socket_path.rpartition("/")
    actor, dot, kind = name.partition(".")
    if not dot or kind != "rpc" or actor == "supervisor":
        return None
    return actor, f"{folder}/supervisor.rpc"


def user_tmp_root() -> Path:
    """``/tmp/orca-<uid>`` (``$TMPDIR`` if set): the per-user parent of runtime dirs
    that cannot live elsewhere. Not ``tempfile.gettempdir()``: importing tempfile (it
    imports shutil, random...) cost every command run under a long ``ORCA_HOME`` ~2 ms;
    the directory made here is checked for owner and mode anyway (``ensure``)."""
    return Path(os.environ.get("TMPDIR") or "/tmp") / f"orca-{os.getuid()}"


def _short_runtime_dir(natural: Path) -> Path:
    if len(str(natural)) + 1 + _LONGEST_SOCKET_NAME <= _MAX_IPC_PATH:
        return natural
    from orca.digests import sha256_hex  # not hashlib: OpenSSL in every process (the keeper)

    digest = sha256_hex(str(natural).encode())[:16]
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
    import platformdirs

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
