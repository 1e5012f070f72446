"""The ssh master of one SSH host: the connection the gateway's link rides in.

Runs the system ``ssh`` (``orca.remote.ssh`` builds its command line) as a child of
the gateway: ControlMaster on the host's control socket, the forward from the host's
local socket to the remote gateway's Unix socket, BatchMode (no prompt can reach a
daemon), ServerAlive from the link's heartbeats. Its remote command prints the remote
Orca's state in one line and then waits on stdin: that line is the event "connected,
forward and control socket bound" (ssh binds both before it opens the session), and
stdin's end is the gateway's own end (a killed gateway closes the pipe, the remote
``cat`` ends, so does the connection: no orphaned ssh).

``run`` reports ``started`` with the remote state once the forward is usable (the
socket checked: ours, 0600), then waits for ssh to exit, and raises
:class:`SshLinkDown` saying why (``orca.remote.ssh.classify``). Cancelled, it ends
ssh by its pid (SIGTERM, then SIGKILL after ``STOP_GRACE_S``). Nothing here kills
anything on the remote host: its agents belong to its own tree.
"""

from __future__ import annotations

import logging
import math
import os
import subprocess
from pathlib import Path

import trio

from orca.paths import OrcaPaths
from orca.remote.hosts import Heartbeats, RemoteHost
from orca.remote.ssh import (
    ORCA_MISSING,
    REMOTE_TREE_DOWN,
    RemoteInfo,
    SshConfigError,
    check_forward_socket,
    classify,
    control_path,
    forward_path,
    link_command,
    ssh_argv,
    ssh_dir,
)

log = logging.getLogger(__name__)

# ssh gets this long to connect, authenticate and hear from the remote Orca (its own
# ConnectTimeout bounds the TCP part; a remote `orca` start-up takes ~0.3 s).
CONNECT_TIMEOUT_S = 30.0
STOP_GRACE_S = 2.0
# The remote Orca's one line, and ssh's last words kept for the diagnosis.
MAX_INFO_LINE = 64 * 1024
STDERR_TAIL = 4096


class SshLinkDown(Exception):
    """The ssh connection could not be made or ended; ``what`` names why."""

    def __init__(self, what: str, detail: str) -> None:
        super().__init__(f"{what}: {detail}")
        self.what = what
        self.detail = detail


def alive_options(beats: Heartbeats) -> tuple[int, int]:
    """ServerAliveInterval / CountMax from the link's heartbeats (whole seconds)."""
    interval = max(1, round(beats.interval_s))
    return interval, max(1, math.ceil(beats.timeout_s / interval))


class SshLink:
    def __init__(self, paths: OrcaPaths, host: RemoteHost, beats: Heartbeats) -> None:
        assert host.ssh is not None
        self.paths = paths
        self.host = host
        self.target = host.ssh
        self.beats = beats
        self.pid: int | None = None
        self._stderr = bytearray()
        self._stderr_done = trio.Event()
        self._stdout_seen = ""

    def argv(self, control: Path, forward: Path) -> list[str]:
        return [
            *ssh_argv(self.target, control, batch=True, master=True, alive=alive_options(self.beats)),
            "-L", f"{forward}:{self.target.remote_socket}",
            self.target.destination,
            link_command(self.target.orca),
        ]  # fmt: skip

    @property
    def stderr_text(self) -> str:
        return self._stderr.decode("utf-8", "replace")

    async def run(
        self, *, task_status: trio.TaskStatus[RemoteInfo] = trio.TASK_STATUS_IGNORED
    ) -> None:
        if not self.target.remote_socket:
            raise SshLinkDown("not set up", f"run `orca host add {self.host.name} …` again")
        ssh_dir(self.paths)
        control = control_path(self.paths, self.host.name)
        forward = forward_path(self.paths, self.host.name)
        # A master killed with -9 leaves its control socket; ssh would then run without
        # one ("already exists, disabling multiplexing"). The directory is ours alone.
        for stale in (control, forward):
            try:
                os.unlink(stale)
            except FileNotFoundError:
                pass
        self._stderr.clear()
        self._stderr_done = trio.Event()
        proc = await trio.lowlevel.open_process(
            self.argv(control, forward),
            stdin=subprocess.PIPE,
            stdout=subprocess.PIPE,
            stderr=subprocess.PIPE,
            start_new_session=True,  # our signals only, never the tree's process group
        )
        self.pid = proc.pid
        try:
            async with trio.open_nursery() as nursery:
                assert proc.stderr is not None and proc.stdout is not None
                nursery.start_soon(self._drain_stderr, proc.stderr)
                with trio.move_on_after(CONNECT_TIMEOUT_S) as waited:
                    line = await self._first_line(proc.stdout)
                if waited.cancelled_caught:
                    raise SshLinkDown(
                        "unreachable", f"no answer from ssh in {CONNECT_TIMEOUT_S:g}s"
                    )
                if line is None or line.strip() == ORCA_MISSING:
                    code = await self._exited(proc)
                    raise SshLinkDown(*classify(code, self._stdout_seen, self.stderr_text))
                try:
                    info = RemoteInfo.parse(line)
                except SshConfigError as exc:
                    raise SshLinkDown("remote orca", str(exc)) from None
                if not info.up:
                    raise SshLinkDown(
                        REMOTE_TREE_DOWN,
                        f"Orca is not running on {self.target.destination} (`orca up` there)",
                    )
                if info.socket != self.target.remote_socket:
                    raise SshLinkDown(
                        "remote gateway moved",
                        f"its socket is now {info.socket} (run `orca host add` again)",
                    )
                try:
                    check_forward_socket(forward)
                except (OSError, SshConfigError) as exc:
                    raise SshLinkDown("forward refused", str(exc)) from None
                task_status.started(info)
                code = await self._exited(proc)
                nursery.cancel_scope.cancel()
            what, detail = classify(code, "", self.stderr_text)
            if code < 0:
                detail = f"ssh was killed (signal {-code})"
            raise SshLinkDown(what, detail)
        finally:
            with trio.CancelScope(shield=True):
                await self._stop(proc)

    async def _exited(self, proc: trio.Process) -> int:
        """ssh's exit status, once its last words on stderr are read (bounded)."""
        code = await proc.wait()
        with trio.move_on_after(1.0):
            await self._stderr_done.wait()
        return code

    async def _first_line(self, stream: trio.abc.ReceiveStream) -> str | None:
        """The remote Orca's line, or None if ssh closed its output first."""
        buf = bytearray()
        while b"\n" not in buf and len(buf) < MAX_INFO_LINE:
            chunk = await stream.receive_some(4096)
            if not chunk:
                self._stdout_seen = buf.decode("utf-8", "replace")
                return None
            buf += chunk
        text = buf.decode("utf-8", "replace")
        self._stdout_seen = text
        lines = [ln for ln in text.splitlines() if ln.strip()]
        return lines[-1] if lines else None

    async def _drain_stderr(self, stream: trio.abc.ReceiveStream) -> None:
        try:
            while chunk := await stream.receive_some(4096):
                self._stderr += chunk
                del self._stderr[:-STDERR_TAIL]
        except (trio.BrokenResourceError, trio.ClosedResourceError):
            pass
        finally:
            self._stderr_done.set()

    async def _stop(self, proc: trio.Process) -> None:
        if proc.returncode is None:
            proc.terminate()
            with trio.move_on_after(STOP_GRACE_S):
                await proc.wait()
            if proc.returncode is None:
                proc.kill()
                await proc.wait()
        for stream in (proc.stdin, proc.stdout, proc.stderr):
            if stream is not None:
                await stream.aclose()
        self.pid = None
