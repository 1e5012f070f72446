"""orcad's side of the fork server (``actors/supervisor/forkserver.py``).

orcad starts the fork server before its actors and asks it for each actor it starts;
what it gets back is the pid of a process that is orcad's own child (the fork server
forks it through an intermediate, and orcad is the child subreaper) and the read end
of the pipe its output goes to. Waiting for it is a pidfd, then ``waitpid`` for its
status, as for any child. Whenever the fork server is not there (it failed to load,
it died, orcad is no subreaper, ``ORCA_FORKSERVER=0``) orcad starts the actor as a
fresh ``python -m`` instead: the fork server only saves memory, nothing depends on it.
"""

from __future__ import annotations

import array
import gc
import logging
import os
import signal
import socket
import sys
import traceback
from collections.abc import Sequence

import trio
import trio.lowlevel

from actors.supervisor.forkserver import PRELOAD_ENV, fits_cmdline, preforked, set_cmdline
from orca.build import package_roots, source_stamp
from orca.wire.codec import decode_map, encode
from orca.wire.errors import BadRequest

log = logging.getLogger(__name__)

FORKSERVER_ENV = "ORCA_FORKSERVER"  # "0": every actor a fresh interpreter
# Loading every actor's modules takes about a second on a slow machine; past this the
# tree starts without the fork server rather than wait.
READY_TIMEOUT_S = 20.0
# One request's answer: a fork and a pipe write, milliseconds.
ANSWER_TIMEOUT_S = 10.0
STOP_GRACE_S = 2.0


class ForkServerGone(Exception):
    """The fork server did not answer: start the actor the plain way."""


def wanted(env: dict[str, str] | os._Environ[str]) -> bool:
    return env.get(FORKSERVER_ENV, "1") != "0"


FORKSERVER_ARGV = [sys.executable, "-P", "-m", "actors.supervisor.forkserver"]


def prefork() -> tuple[int, socket.socket] | None:
    """Fork the fork server from orcad itself, first thing, before orcad opens a file,
    starts a thread or runs trio: orcad's own pages (trio, pyzmq, msgspec, the orca
    runtime: most of what it holds) are then shared with the fork server and every
    actor forked from it, where a fork server started as a new interpreter shares
    nothing with orcad. (its pid, orcad's end of its socket), or None: turned off, or
    no room to show it as ``actors.supervisor.forkserver`` in ``ps`` (orcad started
    with a shorter command line), or the fork failed. ``ForkServer.adopt`` takes it."""
    if not wanted(os.environ):
        return None
    if not fits_cmdline(FORKSERVER_ARGV):
        return None
    gc.collect()
    gc.freeze()  # no collection in orcad writes to the pages it shares
    ours, theirs = socket.socketpair(socket.AF_UNIX, socket.SOCK_SEQPACKET)
    try:
        pid = os.fork()
    except OSError:
        ours.close()
        theirs.close()
        return None
    if pid == 0:  # the fork server: nothing of orcad's but its image
        code = 1
        try:
            os.setsid()
            # As a fork server started later by a new interpreter would have them (orcad
            # catches these then, and an exec resets caught signals): an orcad started
            # with SIGHUP ignored (`nohup`) must not hand that on to its actors.
            for sig in (signal.SIGHUP, signal.SIGTERM, signal.SIGCHLD):
                signal.signal(sig, signal.SIG_DFL)
            signal.signal(signal.SIGINT, signal.default_int_handler)
            os.dup2(theirs.fileno(), 0)
            ours.close()
            theirs.close()
            os.closerange(3, os.sysconf("SC_OPEN_MAX"))
            set_cmdline(FORKSERVER_ARGV)
            sys.argv = FORKSERVER_ARGV[3:]
            code = preforked(socket.socket(fileno=0))
        except BaseException:
            traceback.print_exc()
        finally:
            os._exit(code)
    theirs.close()
    return pid, ours


class ForkServer:
    def __init__(self) -> None:
        self._sock: trio.socket.SocketType | None = None
        self._proc: trio.Process | None = None
        self._gone = trio.Event()
        self._lock = trio.Lock()
        self.pid: int | None = None  # while it runs
        self.stamp = ""  # ``source_stamp`` of the code it loaded (taken just before)
        # ``prefork``'s fork server until ``start`` hands it its modules (one never
        # started ends when ``close`` closes this socket).
        self._preforked: socket.socket | None = None

    def adopt(self, forked: tuple[int, socket.socket] | None, nursery: trio.Nursery) -> None:
        """Take the fork server ``prefork`` made, if it made one: watched from now on."""
        if forked is not None:
            self.pid, self._preforked = forked
            nursery.start_soon(self._watch_pid, self.pid)

    async def _watch_pid(self, pid: int) -> None:
        code: int | str = "?"
        try:
            code = await wait_for_exit(pid)
        finally:
            self._ended(pid, code)

    @property
    def ready(self) -> bool:
        return self._sock is not None

    async def start(
        self, modules: Sequence[str], env: dict[str, str], nursery: trio.Nursery
    ) -> bool:
        """Start it and wait until it holds ``modules``; False (and none) if it fails."""
        self.stamp = source_stamp(package_roots())
        if self._preforked is not None:
            sock = trio.socket.from_stdlib_socket(self._preforked)
            self._preforked = None
            try:
                await sock.send(encode({"preload": list(modules)}))
            except OSError as exc:
                log.warning("the fork server is gone (%s)", exc)
                sock.close()
                await self.close()
                return False
            return await self._hello(sock)
        ours, theirs = socket.socketpair(socket.AF_UNIX, socket.SOCK_SEQPACKET)
        env = {
            **env,
            "PYTHONUNBUFFERED": env.get("PYTHONUNBUFFERED") or "1",
            PRELOAD_ENV: ",".join(modules),
        }
        argv = [sys.executable, "-P", "-m", "actors.supervisor.forkserver"]
        try:
            self._proc = await trio.lowlevel.open_process(
                argv, stdin=theirs.fileno(), start_new_session=True, env=env
            )
        except OSError as exc:
            log.warning("no fork server (%s): every actor starts as a fresh interpreter", exc)
            ours.close()
            return False
        finally:
            theirs.close()
        self.pid = self._proc.pid
        nursery.start_soon(self._watch, self._proc)
        return await self._hello(trio.socket.from_stdlib_socket(ours))

    async def _hello(self, sock: trio.socket.SocketType) -> bool:
        with trio.move_on_after(READY_TIMEOUT_S):
            hello = await sock.recv(65536)
            try:
                answer = decode_map(hello) if hello else None
            except BadRequest:
                answer = None
            if isinstance(answer, dict) and answer.get("ready") is True:
                self._sock = sock
                if answer.get("failed"):
                    log.warning("fork server could not load %s", answer["failed"])
                return True
        log.warning("the fork server did not load: every actor starts as a fresh interpreter")
        sock.close()
        await self.close()
        return False

    async def _watch(self, proc: trio.Process) -> None:
        """The only wait for its exit: from then on, no fork server."""
        try:
            await proc.wait()
        finally:
            self._ended(proc.pid, proc.returncode if proc.returncode is not None else "?")

    def _ended(self, pid: int, code: int | str) -> None:
        if self._sock is not None:
            log.warning(
                "the fork server (pid %d) exited (%s): actors start as fresh interpreters",
                pid,
                code,
            )
            self._sock.close()
            self._sock = None
        if self._preforked is not None:
            self._preforked.close()
            self._preforked = None
        self.pid = None
        self._gone.set()

    async def spawn(self, module: str, args: Sequence[str], env: dict[str, str]) -> tuple[int, int]:
        """Fork an actor; its pid and the read end of its output pipe."""
        async with self._lock:
            sock = self._sock
            if sock is None:
                raise ForkServerGone("no fork server")
            request = encode({"module": module, "args": list(args), "env": env})
            read_end, write_end = os.pipe()
            os.set_inheritable(read_end, False)
            answer: object = None
            # Shielded: a request sent and its answer left unread would be the next
            # request's answer.
            with trio.CancelScope(shield=True), trio.move_on_after(ANSWER_TIMEOUT_S):
                try:
                    fds = array.array("i", [write_end])
                    await sock.sendmsg([request], [(socket.SOL_SOCKET, socket.SCM_RIGHTS, fds)])
                    data = await sock.recv(65536)
                    answer = decode_map(data) if data else None
                except (OSError, BadRequest) as exc:
                    log.warning("fork server: %s", exc)
            os.close(write_end)
            if isinstance(answer, dict) and isinstance(answer.get("pid"), int):
                return int(answer["pid"]), read_end
            os.close(read_end)
            if isinstance(answer, dict) and "error" in answer:
                raise OSError(str(answer["error"]))
            self._sock = None  # no answer, or garbage: not asked again
            sock.close()
            raise ForkServerGone("the fork server did not answer")

    async def close(self) -> None:
        """Close its socket (it exits on that) and wait for it, briefly; then kill it."""
        for sock in (self._sock, self._preforked):
            if sock is not None:
                sock.close()
        self._sock = self._preforked = None
        pid = self.pid  # None once its watch saw it exit
        if pid is None:
            return
        with trio.move_on_after(STOP_GRACE_S):
            await self._gone.wait()
        if not self._gone.is_set():
            os.kill(pid, signal.SIGKILL)  # our child, not yet reaped: the pid is still its
            await self._gone.wait()


async def wait_for_exit(pid: int) -> int:
    """The exit code of our child ``pid`` once it has exited, as ``Popen.returncode``
    gives it (negative: the signal that ended it); -1 if its status was taken elsewhere."""
    try:
        fd = os.pidfd_open(pid)
    except OSError:
        fd = None
    if fd is not None:
        try:
            await trio.lowlevel.wait_readable(fd)  # readable once it exited
        finally:
            trio.lowlevel.notify_closing(fd)
            os.close(fd)
    try:
        if fd is None:  # no pidfd (a kernel before 5.3): a thread waits
            _, status = await trio.to_thread.run_sync(os.waitpid, pid, 0)
        else:
            _, status = os.waitpid(pid, 0)  # noqa: ASYNC222 - a zombie by now: no wait
    except ChildProcessError:
        return -1
    return os.waitstatus_to_exitcode(status)
