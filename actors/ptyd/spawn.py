"""Starting a child on a new PTY without ``fork()``, and controlling it afterwards.

Why no fork: ``ptyd`` has ZeroMQ I/O threads. ``fork()`` in a threaded process copies
only the calling thread, and any lock another thread held (malloc's, libzmq's) stays
locked forever in the child; ``pty.fork`` and ptyprocess both fork, and a child that
deadlocks before ``exec`` is a hung terminal. ``posix_spawn`` (vfork/clone-based in
glibc) runs no Python code in the child, so there is nothing to deadlock.

How the child gets its controlling terminal without code of ours running in it:
``posix_spawn(setsid=True)`` makes the child a session leader *before* the file
actions run; the first file action opens the slave by path without ``O_NOCTTY``,
and on Linux a session leader without a controlling terminal acquires the first
tty it opens. Further actions dup it onto fds 1 and 2. Every fd Python opens is
close-on-exec (PEP 446), so the master and our copy of the slave never leak into the
child.

ptyprocess's ``terminate``/``close`` sleep between signals; nothing here blocks: the
exit is observed through a pidfd (readable when the child exits) and collected with
``waitpid(WNOHANG)``.
"""

from __future__ import annotations

import fcntl
import hashlib
import os
import secrets
import signal
import struct
import termios
from collections.abc import Mapping, Sequence
from dataclasses import dataclass
from pathlib import Path

from orca.user_env import user_environment, which

# Children get a modern terminal type; agents colour their output by it.
CHILD_TERM = "xterm-256color"
# Bytes of entropy in a launch token: 256 bits, unguessable by another local user.
_LAUNCH_TOKEN_BYTES = 32


class SpawnFailed(OSError):
    """The child could not be started (bad argv, cwd or a system limit)."""


@dataclass(frozen=True)
class PaneIdentity:
    """Who a child is, exported in its environment for hook scripts and OSC emitters."""

    pane_key: str
    tab_id: str
    worktree_id: str


@dataclass(frozen=True)
class LaunchToken:
    """A fresh secret for one launch; only :attr:`sha256` may leave this process's memory."""

    secret: str = ""

    @classmethod
    def fresh(cls) -> LaunchToken:
        return cls(secrets.token_urlsafe(_LAUNCH_TOKEN_BYTES))

    @property
    def sha256(self) -> str:
        return hashlib.sha256(self.secret.encode()).hexdigest()

    def __repr__(self) -> str:  # never print the secret into logs
        return f"LaunchToken(sha256={self.sha256[:12]}...)"


@dataclass
class SpawnedChild:
    """A running child: its pid, the PTY master (non-blocking) and its launch token hash."""

    pid: int
    master_fd: int
    launch_token_sha256: str


def child_environment(
    base: Mapping[str, str],
    extra: Mapping[str, str] | None,
    identity: PaneIdentity,
    token: LaunchToken,
    hook_endpoint_file: Path,
) -> dict[str, str]:
    """The environment of every child: ``base`` (the caller's, or ptyd's own) as the user
    has it (``orca.user_env.user_environment``: no Orca virtualenv, no Orca-internal
    variables), then ``extra`` (the caller's ``-e``, as given), then the pane's identity
    variables."""
    env = user_environment(base)
    if extra:
        env.update(extra)
    # For the hook script (orca/hook_script.py) and OSC 9999 emitters: the pane's
    # identity, the launch token that proves it to hooks, and the endpoint file the
    # script reads the port and secret from.
    env.update(
        {
            "TERM": CHILD_TERM,
            "ORCA_PANE_KEY": identity.pane_key,
            "ORCA_TAB_ID": identity.tab_id,
            "ORCA_WORKTREE_ID": identity.worktree_id,
            "ORCA_AGENT_LAUNCH_TOKEN": token.secret,
            "ORCA_AGENT_HOOK_ENDPOINT": str(hook_endpoint_file),
        }
    )
    return env


def set_window_size(fd: int, cols: int, rows: int) -> None:
    """Set the PTY's size (``TIOCSWINSZ``); the kernel sends SIGWINCH to the foreground group."""
    fcntl.ioctl(fd, termios.TIOCSWINSZ, struct.pack("HHHH", rows, cols, 0, 0))


def get_window_size(fd: int) -> tuple[int, int]:
    """(cols, rows) of the PTY behind ``fd``."""
    rows, cols, _, _ = struct.unpack("HHHH", fcntl.ioctl(fd, termios.TIOCGWINSZ, b"\0" * 8))
    return cols, rows


def spawn_on_pty(
    argv: Sequence[str], cwd: str, env: Mapping[str, str], cols: int, rows: int
) -> tuple[int, int]:
    """Start ``argv`` in ``cwd`` on a new PTY; returns ``(pid, master_fd)``.

    The master is close-on-exec and non-blocking. Raises :class:`SpawnFailed` for an
    empty argv, a missing cwd, an executable not found on the child's PATH, or a
    system error.
    """
    if not argv:
        raise SpawnFailed("argv must not be empty")
    if not os.path.isdir(cwd):
        raise SpawnFailed(f"cwd is not a directory: {cwd!r}")
    executable = resolve_executable(argv[0], env)
    master, slave = os.openpty()
    try:
        set_window_size(master, cols, rows)
        slave_path = os.ttyname(slave)
        pid = os.posix_spawn(
            _SH,
            [_SH, "-c", _CD_THEN_EXEC, "orca-spawn", cwd, executable, *argv[1:]],
            dict(env),
            setsid=True,
            setsigdef=_DEFAULT_SIGNALS,
            setsigmask=(),
            file_actions=[
                (os.POSIX_SPAWN_OPEN, 0, slave_path, os.O_RDWR, 0),
                (os.POSIX_SPAWN_DUP2, 0, 1),
                (os.POSIX_SPAWN_DUP2, 0, 2),
            ],
        )
    except OSError as exc:
        os.close(master)
        raise SpawnFailed(f"cannot start {argv[0]!r} in {cwd!r}: {exc}") from exc
    finally:
        os.close(slave)
    os.set_blocking(master, False)
    return pid, master


# A program in a terminal starts with every signal at its default and none blocked, as
# in a terminal emulator or tmux, whatever its spawner had: Python ignores SIGPIPE and
# SIGXFSZ (an agent's `yes | head -1` then printed "Broken pipe"), and an Orca started
# under `nohup` ignores SIGHUP (an agent's shell would outlive its closed terminal).
# The standard signals and the real-time ones; not glibc's internal 32 and 33.
_DEFAULT_SIGNALS = tuple(
    sig
    for sig in sorted(signal.valid_signals())
    if sig not in (signal.SIGKILL, signal.SIGSTOP)
    and (sig < 32 or signal.SIGRTMIN <= sig <= signal.SIGRTMAX)
)

# posix_spawn has no chdir file action before Python 3.14 and changing the daemon's
# own cwd around the call is process-global state, so the child runs a fixed
# POSIX-shell trampoline that changes directory and execs the target in place (same
# pid). Arguments travel as positional parameters: nothing is ever re-parsed.
_SH = "/bin/sh"
_CD_THEN_EXEC = 'cd -- "$1" || exit 126; shift; exec "$@"'


def resolve_executable(name: str, env: Mapping[str, str]) -> str:
    """Absolute path of ``name`` on the child's PATH (or ``name`` if it has a slash)."""
    if "/" in name:
        if os.access(name, os.X_OK) and not os.path.isdir(name):
            return name
        raise SpawnFailed(f"not an executable file: {name!r}")
    found = which(name, env.get("PATH", os.defpath))
    if found is None:
        raise SpawnFailed(f"{name!r} not found on PATH={env.get('PATH', os.defpath)}")
    return found


def signal_group(pid: int, signum: int) -> bool:
    """Send ``signum`` to the child's process group (its session); False if it is gone."""
    try:
        os.killpg(pid, signum)  # the child is a session and group leader: pgid == pid
    except ProcessLookupError:
        return False
    return True


def ignored_signals(pid: int) -> set[int]:
    """The signals ``pid`` ignores (``SigIgn`` in /proc/<pid>/status); empty if unknown."""
    try:
        with open(f"/proc/{pid}/status", "rb") as status:
            for line in status:
                if line.startswith(b"SigIgn:"):
                    mask = int(line.split()[1], 16)
                    return {n for n in range(1, 65) if mask >> (n - 1) & 1}
    except (OSError, ValueError, IndexError):
        pass
    return set()


def resize(master_fd: int, pid: int, cols: int, rows: int) -> None:
    """Resize the PTY and tell the child's group (the kernel signals only the foreground)."""
    set_window_size(master_fd, cols, rows)
    signal_group(pid, signal.SIGWINCH)


def open_exit_watch(pid: int) -> int | None:
    """A pidfd that becomes readable when ``pid`` exits; None if it already went away."""
    try:
        return os.pidfd_open(pid)
    except ProcessLookupError:
        return None


def collect_exit(pid: int) -> int | None:
    """Reap ``pid`` without blocking: its wait status, or None if still running.

    Returns -1 if ``pid`` is not our child (after a ``ptyd`` restart the supervisor,
    as subreaper, collects the status instead).
    """
    try:
        reaped, status = os.waitpid(pid, os.WNOHANG)
    except ChildProcessError:
        return -1
    return status if reaped == pid else None


def exit_code_of(status: int) -> int:
    """Shell-style exit code: the code, or 128 + signal number for a signalled child."""
    code = os.waitstatus_to_exitcode(status)
    return code if code >= 0 else 128 - code
