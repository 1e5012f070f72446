"""Keys typed into a remote terminal arrive once each and in order, however fast.

A user types into ``orca term attach buildbox:HANDLE`` from a terminal of their own
(here a pseudo-terminal, as a user's terminal emulator gives one), each key as soon as
the previous one's echo is drawn: a key repeat, or a fast typist on a fast link. Every
key costs the attach a write and its echo a new wait for output, several hundred
requests a second; at the gateway's old per-peer rate (100/s) writes were refused
after the first second and their keys were lost, and the attach drew nothing more.
The buildbox's ``cat`` writes what it was sent to a file: it must be exactly what was
typed, and the attach must report nothing undelivered.
"""

from __future__ import annotations

import os
import re
import select
import signal
import time
from pathlib import Path

from support.journey import make_git_repo
from support.remote import Tree, loopback_pair, wait_until

from actors.ptyd.spawn import spawn_on_pty

KEYS = 400
LINE = 40  # a return after this many keys: cat's line stays short
LETTERS = b"abcdefghijklmnopqrstuvwxyz"
CLEAR_SCREEN = b"\x1b[H\x1b[2J"  # the attach's first drawing: its terminal is raw by then
ESCAPES = re.compile(rb"\x1b\[[0-?]*[ -/]*[@-~]|\x1b\][^\x07\x1b]*(?:\x07|\x1b\\)|\x1b[ -/]*[0-~]")


class Screen:
    """What the attach draws on its terminal, read as it comes."""

    def __init__(self, master: int) -> None:
        self.master = master
        self.seen = bytearray()

    def plain(self) -> bytes:
        """What it drew, escape sequences left out (their letters are not echoes)."""
        return ESCAPES.sub(b"", bytes(self.seen))

    def _more(self, left: float) -> bool:
        """Read what it draws next, ``left`` seconds at most; False once it drew nothing
        in that time or ended."""
        if not select.select([self.master], [], [], max(left, 0.0))[0]:
            return False
        try:
            chunk = os.read(self.master, 65536)
        except OSError:  # EIO: the attach ended
            return False
        self.seen += chunk
        return bool(chunk)

    def until(
        self, needle: bytes, after: int = 0, timeout: float = 20.0, *, raw: bool = False
    ) -> int:
        """Read until ``needle`` shows past ``after`` in ``plain()`` (``raw``: in what it
        drew as is); the offset just past it, in the same terms."""
        deadline = time.monotonic() + timeout
        while (at := (bytes(self.seen) if raw else self.plain()).find(needle, after)) < 0:
            if not self._more(deadline - time.monotonic()):
                raise AssertionError(
                    f"the attach drew no {needle!r} in {timeout:g}s (or ended);"
                    f" it last drew {bytes(self.seen[-300:])!r}"
                )
        return at + len(needle)

    def rest(self, timeout: float = 20.0) -> bytes:
        """Everything until the attach closes its terminal."""
        deadline = time.monotonic() + timeout
        while self._more(deadline - time.monotonic()):
            pass
        return bytes(self.seen)


def _remote_handle(laptop: Tree, session: str) -> str:
    rows = wait_until(
        lambda: [s for s in laptop.json("term", "ls")["sessions"] if s["sessionId"] == session],
        "the buildbox terminal listed on the laptop",
    )
    return str(rows[0]["handle"])


def test_keys_typed_as_fast_as_their_echo_all_arrive_in_order(tmp_path: Path) -> None:
    with loopback_pair(tmp_path) as (laptop, buildbox):
        repo = make_git_repo(tmp_path / "repo")
        buildbox.ok("repo", "add", str(repo))
        typed_file = tmp_path / "typed.txt"
        session = buildbox.new_terminal("repo", "/bin/sh", "-c", f"exec cat > {typed_file}")[
            "sessionId"
        ]
        handle = _remote_handle(laptop, session)
        pid, master = spawn_on_pty(
            laptop.argv("term", "attach", handle), str(tmp_path), laptop.env, 80, 24
        )
        typed = bytearray()
        try:
            screen = Screen(master)
            screen.until(CLEAR_SCREEN, timeout=30.0, raw=True)  # its first screen
            at = len(screen.plain())
            for i in range(KEYS):
                key = LETTERS[i % len(LETTERS) : i % len(LETTERS) + 1]
                os.write(master, key)
                typed += key
                at = screen.until(key, at)  # the remote tty's echo, drawn by the attach
                if i % LINE == LINE - 1:
                    os.write(master, b"\r")
                    typed += b"\n"  # the remote tty turns the return into a newline
            os.write(master, b"\x1d")  # Ctrl-]: detach
            drawn = screen.rest()
        finally:
            try:
                os.kill(pid, signal.SIGKILL)
            except ProcessLookupError:
                pass
            os.close(master)
            os.waitpid(pid, 0)
        assert b"[detached;" in drawn, drawn[-300:]
        assert b"not delivered" not in drawn, drawn[-300:]
        # cat writes a line as its return arrives: every full line typed, in order
        complete = bytes(typed[: typed.rfind(b"\n") + 1])
        got = wait_until(
            lambda: (
                typed_file.exists()
                and len(data := typed_file.read_bytes()) >= len(complete)
                and data
            ),
            "cat to write every line typed",
        )
        assert got == complete
