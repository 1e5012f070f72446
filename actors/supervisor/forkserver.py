"""``python -m actors.supervisor.forkserver``: the actors' common parent image.

Every actor imports the same trio, pyzmq, msgspec and orca runtime (about 20 MiB
each when it starts as a fresh interpreter). orcad starts this one process first; it
imports the actors' modules once, freezes what it holds out of the garbage collector's
reach (``gc.freeze``, so no collection in a child writes to those pages), and from then
on forks each actor from that image instead of orcad starting a new interpreter: the
pages stay shared between all of them until one writes to them, which most never do.

Each actor still ends up a child of orcad, as one started with ``python -m`` is: this
process forks an intermediate, which forks the actor and exits at once; orcad is the
child subreaper (``PR_SET_CHILD_SUBREAPER``), so the kernel hands the actor to it. The
actor waits for that hand-over (a pidfd on the intermediate) before it does anything,
so ``os.getppid()`` is orcad's pid from its first line of its own code on, and orcad
waits for its exit and reads its status exactly as for any other child.

The wire is one ``SOCK_SEQPACKET`` socket (fd 0 here), msgpack both ways:
``{"ready": true}`` once the image is loaded; then for each request
``{"module", "args", "env"}`` with the actor's log pipe as ``SCM_RIGHTS``, the answer
``{"pid": N}`` (or ``{"error": "..."}``). The socket's end (orcad gone) ends this process;
the actors it forked carry on, as orcad's children always did.
"""

from __future__ import annotations

import atexit
import gc
import importlib
import os
import select
import socket
import sys
import threading
import traceback
from typing import Any

import msgspec

from orca.wire.codec import FrameDecoder, encode
from orca.wire.errors import BadRequest

MAX_REQUEST = 1 << 20
# The modules to load (comma-separated): not on the command line, where ``pgrep -f
# actors.ptyd`` would take this process for the actor.
PRELOAD_ENV = "ORCA_FORKSERVER_PRELOAD"


class Request(msgspec.Struct, frozen=True):
    module: str
    args: list[str]
    env: dict[str, str]


_REQUESTS: FrameDecoder[Request] = FrameDecoder(Request, what="fork request", max_bytes=MAX_REQUEST)


class Preload(msgspec.Struct, frozen=True):
    """The first message to a fork server orcad forked from itself (``forks.prefork``)."""

    preload: list[str]


_PRELOAD: FrameDecoder[Preload] = FrameDecoder(Preload, what="preload", max_bytes=MAX_REQUEST)


def preload(modules: list[str]) -> list[str]:
    """Import every actor's entry module (guarded by ``__name__``, so nothing runs);
    the names that failed, which their actors will import (and fail) on their own."""
    failed: list[str] = []
    for module in modules:
        try:
            importlib.import_module(f"{module}.__main__")
        except Exception:
            failed.append(module)
    return failed


def _arg_area() -> tuple[int, int] | None:
    """Where this process's command line lives in its memory (start, end), if known."""
    try:
        with open("/proc/self/stat", "rb") as f:
            fields = f.read().rsplit(b")", 1)[1].split()
        return int(fields[45]), int(fields[46])  # proc(5) fields 48, 49
    except (OSError, ValueError, IndexError):
        return None


def _cmdline(argv: list[str]) -> bytes:
    return b"\0".join(a.encode() for a in argv) + b"\0"


def fits_cmdline(argv: list[str]) -> bool:
    """Whether ``set_cmdline(argv)`` can show it (it fits where the original was)."""
    area = _arg_area()
    return area is not None and len(_cmdline(argv)) <= area[1] - area[0]


def set_cmdline(argv: list[str]) -> None:
    """Show ``argv`` as this process's command line (``ps``, ``/proc/PID/cmdline``):
    the bytes the kernel reads it from are ours to write, up to their original length."""
    area, data = _arg_area(), _cmdline(argv)
    if area is None or len(data) > area[1] - area[0]:
        return  # only cosmetic
    start, end = area
    try:
        with open("/proc/self/mem", "r+b", buffering=0) as mem:
            mem.seek(start)
            mem.write(data.ljust(end - start, b"\0"))
    except OSError:
        pass


def _wait_for_adoption(parent: int) -> None:
    """Until the intermediate that forked us has exited (so we are orcad's child)."""
    if os.getppid() != parent:
        return
    try:
        fd = os.pidfd_open(parent)
    except OSError:
        return  # already gone
    try:
        select.select([fd], [], [])
    finally:
        os.close(fd)


def _exit_code(exc: SystemExit) -> int:
    code = exc.code
    if code is None:
        return 0
    if isinstance(code, int):
        return code
    print(code, file=sys.stderr)
    return 1


def _become_actor(request: Request, log_fd: int, parent: int) -> int:
    """In the forked actor: its session, its stdio, its environment, then its module."""
    os.setsid()
    _wait_for_adoption(parent)
    null = os.open(os.devnull, os.O_RDONLY)  # fd 0 itself when the socket is closed
    if null != 0:
        os.dup2(null, 0)
        os.close(null)
    os.dup2(log_fd, 1)
    os.dup2(log_fd, 2)
    os.close(log_fd)
    os.environ.clear()
    os.environ.update(request.env)
    set_cmdline([sys.executable, "-P", "-m", request.module, *request.args])
    sys.argv = [request.module, *request.args]
    # The entry module was preloaded for its imports; run as ``__main__`` it is executed
    # afresh (what it imports stays shared). Left in sys.modules, runpy warned about it
    # on every actor's first log line.
    sys.modules.pop(f"{request.module}.__main__", None)
    import runpy

    try:
        runpy.run_module(request.module, run_name="__main__", alter_sys=True)
        code = 0
    except SystemExit as exc:
        code = _exit_code(exc)
    except BaseException:
        traceback.print_exc()
        code = 1
    # What the interpreter does at exit: wait for non-daemon threads, run atexit.
    try:
        threading._shutdown()  # type: ignore[attr-defined]
        atexit._run_exitfuncs()
        sys.stdout.flush()
        sys.stderr.flush()
    except BaseException:
        pass
    return code


def fork_actor(request: Request, log_fd: int, server: socket.socket) -> int:
    """Fork the intermediate, which forks the actor and exits; the actor's pid."""
    read_end, write_end = os.pipe()
    intermediate = os.fork()
    if intermediate == 0:
        try:
            os.close(read_end)
            server.close()
            me = os.getpid()
            actor = os.fork()
            if actor == 0:
                code = 1
                try:
                    os.close(write_end)
                    code = _become_actor(request, log_fd, me)
                except BaseException:
                    traceback.print_exc()
                finally:
                    os._exit(code)
            os.write(write_end, str(actor).encode())
        finally:
            os._exit(0)
    os.close(write_end)
    try:
        data = b""
        while chunk := os.read(read_end, 32):
            data += chunk
    finally:
        os.close(read_end)
        os.waitpid(intermediate, 0)
    if not data:
        raise OSError("the intermediate fork died before the actor's fork")
    return int(data)


def serve(server: socket.socket) -> None:
    while True:
        try:
            message, fds, _flags, _addr = socket.recv_fds(server, MAX_REQUEST, 1)
        except InterruptedError:
            continue
        if not message:
            return  # orcad closed its end: it is gone
        answer: dict[str, Any]
        try:
            request = _REQUESTS.decode(message)
            if len(fds) != 1:
                raise ValueError("a request carries exactly one log descriptor")
            answer = {"pid": fork_actor(request, fds[0], server)}
        except (BadRequest, ValueError, OSError) as exc:
            answer = {"error": str(exc)}
        finally:
            for fd in fds:
                os.close(fd)
        server.send(encode(answer))


def run(server: socket.socket, modules: list[str]) -> int:
    """Load ``modules``, freeze, say ready, then fork actors until orcad goes."""
    failed = preload(modules)
    gc.collect()
    gc.freeze()
    server.send(encode({"ready": True, "failed": failed}))
    serve(server)
    return 0


def preforked(server: socket.socket) -> int:
    """In the child orcad forked from itself before it started anything (``forks.prefork``):
    its pages (trio, pyzmq, the orca runtime) are then shared with orcad too. The modules
    to load come as the first message, ``{"preload": [...]}``; orcad closing its end
    instead (it runs no fork server after all) ends this process."""
    message = server.recv(MAX_REQUEST)
    if not message:
        return 0
    try:
        return run(server, _PRELOAD.decode(message).preload)
    except BadRequest:
        return 2


def main() -> int:
    server = socket.socket(fileno=0)
    if server.type != socket.SOCK_SEQPACKET:
        print("forkserver: fd 0 must be orcad's SOCK_SEQPACKET socket", file=sys.stderr)
        return 2
    return run(server, [m for m in os.environ.pop(PRELOAD_ENV, "").split(",") if m])


if __name__ == "__main__":
    sys.exit(main())
