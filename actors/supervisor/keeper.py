"""``orcad``'s side of the fd keeper: start one if none answers, watch it, reap orphans.

The keeper itself is ``actors/keeper`` (a process of its own, so that ``orcad``'s death
ends no agent; see ``orca/contracts/fd_keeper.py`` for the protocol and the survival
argument). ``orcad``:

- starts it (``ensure``) when its socket does not answer: ``posix_spawn`` with
  ``setsid``, so it is in a session and process group of its own, and no signal meant
  for ``orcad``'s group or terminal reaches it; it ignores SIGHUP;
- asks it, once one answers (started or adopted), to watch this orcad
  (``watch_orcad``): the keeper brings orcad back if it dies without stopping on
  purpose (``actors/keeper/orcad_watch.py``);
- restarts it (``watch``) if it dies while ``orcad`` runs; ``ptyd`` re-seeds the new
  one with every session it holds (``actors/ptyd/handoff.py``);
- is the *child subreaper* (``PR_SET_CHILD_SUBREAPER``): agents orphaned by a ``ptyd``
  crash are re-parented to it (only an ancestor can adopt them, and the keeper is
  none); ``reap_orphans`` collects their status and hands it to the keeper
  (``exited {pid, status}``) for the restarted ``ptyd``, never touching the actors,
  which trio waits for itself;
- on ``orca down`` (unless ``--keep-terminals``) sends ``stop``: the keeper closes the
  kept masters and exits; the terminals hang up.
"""

from __future__ import annotations

import ctypes
import logging
import os
import signal
import socket
import sys
from collections.abc import Callable

import trio
import trio.lowlevel

from orca.client.keeper import keeper_answers, keeper_hello, launch_keeper
from orca.contracts.fd_keeper import (
    KEEPER_LOCK_NAME,
    KEEPER_SOCKET_NAME,
    WATCH_ORCAD,
    Exited,
    KeeperHello,
    Message,
    Stop,
    WatchOrcad,
    read_keeper_lock,
    send_packet,
)
from orca.paths import OrcaPaths

log = logging.getLogger(__name__)

_PR_SET_CHILD_SUBREAPER = 36
# How long a new keeper may take to bind its socket (a Python start: well under 1 s).
KEEPER_START_TIMEOUT_S = 10.0
# How long a stopping keeper may take to close its fds and exit before SIGKILL.
KEEPER_STOP_GRACE_S = 5.0
# Restart delay after a keeper died, doubled per death in a row up to the cap, so a
# keeper that cannot start does not spin orcad.
KEEPER_RESTART_INITIAL_S = 0.05
KEEPER_RESTART_MAX_S = 5.0


def become_subreaper() -> bool:
    """Adopt orphaned descendants (Linux); False where the kernel has no such notion."""
    if not sys.platform.startswith("linux"):
        return False
    libc = ctypes.CDLL(None, use_errno=True)
    return bool(libc.prctl(_PR_SET_CHILD_SUBREAPER, 1, 0, 0, 0) == 0)


class KeeperStartFailed(RuntimeError):
    """No keeper answers and a new one did not start (its log says why)."""


class KeeperControl:
    """Start, watch, tell and stop the keeper of one profile."""

    def __init__(self, paths: OrcaPaths, is_actor_pid: Callable[[int], bool]) -> None:
        self.paths = paths
        self.path = str(paths.runtime_dir / KEEPER_SOCKET_NAME)
        self._lock_path = paths.runtime_dir / KEEPER_LOCK_NAME
        self._is_actor_pid = is_actor_pid
        self._stopping = False
        self._hello: tuple[int, KeeperHello | None] | None = None  # (pid, its hello)

    async def hello(self) -> KeeperHello | None:
        """The running keeper's ``hello`` (version, build), asked once per keeper pid;
        None while none answers or from a keeper that predates ``hello``."""
        pid = self.pid
        if pid is None:
            return None
        if self._hello is None or self._hello[0] != pid:
            hello = await trio.to_thread.run_sync(keeper_hello, self.path)
            if hello is not None and hello.pid != pid:
                return hello  # replaced between the two looks: ask again next time
            self._hello = (pid, hello)
        return self._hello[1]

    @property
    def pid(self) -> int | None:
        """The running keeper's pid (from its lock), None if none holds it."""
        info = read_keeper_lock(self._lock_path)
        return None if info is None else info.pid

    async def ensure(self) -> int | None:
        """A keeper answering on ``path`` (the running one, or one started now), asked to
        watch this orcad."""
        if not keeper_answers(self.path):
            await self._start()
        await self._ask_to_watch()
        return self.pid

    async def _ask_to_watch(self) -> None:
        """``watch_orcad`` to a keeper that understands it (an older one would log the
        packet as refused): it brings this orcad back if it dies unannounced."""
        hello = await self.hello()
        if hello is not None and WATCH_ORCAD in hello.capabilities:
            self.tell(WatchOrcad())

    async def _start(self) -> None:
        env = dict(os.environ)
        if self.paths.home is not None:
            env["ORCA_HOME"] = str(self.paths.home)
        # posix_spawn returns once the child exists (vfork-like): nothing to wait for.
        # setsid: its own session and group, so orcad's death does not reach it.
        pid, read_fd = launch_keeper(sys.executable, env, self.paths.log_file("keeper"))
        try:
            with trio.move_on_after(KEEPER_START_TIMEOUT_S):
                await trio.lowlevel.wait_readable(read_fd)
            ready = os.read(read_fd, 64) if _readable(read_fd) else b""
        finally:
            trio.lowlevel.notify_closing(read_fd)
            os.close(read_fd)
        if ready.startswith(b"ready") or keeper_answers(self.path):
            # A concurrent orcad may have won the lock (ours exited 3): either way one answers.
            log.info("fd keeper ready (pid %s)", self.pid)
            return
        raise KeeperStartFailed(
            f"the fd keeper (pid {pid}) did not start; see {self.paths.log_file('keeper')}"
        )

    async def watch(self) -> None:
        """Restart the keeper whenever it dies (until ``stop``)."""
        delay = KEEPER_RESTART_INITIAL_S
        while not self._stopping:
            pid = self.pid
            pidfd = _pidfd(pid)
            if pidfd is not None:
                try:
                    await trio.lowlevel.wait_readable(pidfd)
                finally:
                    trio.lowlevel.notify_closing(pidfd)
                    os.close(pidfd)
                delay = KEEPER_RESTART_INITIAL_S
                if self._stopping:
                    return
                log.warning("fd keeper (pid %s) died: starting a new one", pid)
            else:
                await trio.sleep(delay)
                delay = min(delay * 2, KEEPER_RESTART_MAX_S)
            self.reap_orphans()  # the dead keeper was our child if we started it
            try:
                await self.ensure()
            except (KeeperStartFailed, OSError) as exc:
                log.error("%s", exc)

    async def stop(self) -> None:
        """``orca down``: the keeper closes every kept master and exits."""
        self._stopping = True
        pid = self.pid
        if pid is None:
            return
        pidfd = _pidfd(pid)
        if not self.tell(Stop()):
            _kill(pid, signal.SIGTERM)
        if pidfd is None:
            return
        try:
            with trio.move_on_after(KEEPER_STOP_GRACE_S) as scope:
                await trio.lowlevel.wait_readable(pidfd)
            if scope.cancelled_caught:
                log.warning("fd keeper (pid %d) did not stop: SIGKILL", pid)
                _kill(pid, signal.SIGKILL)
        finally:
            trio.lowlevel.notify_closing(pidfd)
            os.close(pidfd)
        self.reap_orphans()

    def leave_running(self) -> None:
        """``orca down --keep-terminals``: stop watching; the keeper stays."""
        self._stopping = True

    def tell(self, message: Message) -> bool:
        """Send one message on a connection of its own; False if no keeper took it."""
        sock = socket.socket(socket.AF_UNIX, socket.SOCK_SEQPACKET)
        try:
            sock.settimeout(1.0)
            sock.connect(self.path)
            send_packet(sock, message)
        except OSError:
            return False
        finally:
            sock.close()
        return True

    def reap_orphans(self) -> list[int]:
        """Reap exited adopted processes (never the actors); the keeper gets their status."""
        import psutil

        reaped: list[int] = []
        try:
            children = psutil.Process().children()
        except psutil.Error:
            return reaped
        for child in children:
            if self._is_actor_pid(child.pid):
                continue
            try:
                pid, status = os.waitpid(child.pid, os.WNOHANG)
            except ChildProcessError:
                continue
            if pid:
                reaped.append(pid)
                self.tell(Exited(pid=pid, status=status))
        return reaped


def _pidfd(pid: int | None) -> int | None:
    if pid is None:
        return None
    try:
        return os.pidfd_open(pid)
    except OSError:
        return None


def _readable(fd: int) -> bool:
    import select

    return bool(select.select([fd], [], [], 0)[0])


def _kill(pid: int, sig: int) -> None:
    try:
        os.kill(pid, sig)
    except ProcessLookupError:
        pass
