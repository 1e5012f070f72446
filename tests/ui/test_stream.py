"""The embedded pane on ptyd's attach stream: it types on the stream, and as the client
that typed last it answers the program's terminal queries, once, with its own colours
(docs/protocols.md §4; the rule ``orca term attach`` follows with a real terminal)."""

from __future__ import annotations

import os
import signal
import sys
from pathlib import Path
from typing import Any

from support.ui_pilot import open_shell, ready

from actors.ui.app import OrcaApp
from orca.paths import resolve_paths

# Waits for a line (so the UI has typed and is the answerer), asks for the cursor
# position and the background colour, and prints what came back, then anything that
# came back after the two answers (a second answer would show there).
ASKER = r"""
import os, select, sys, termios, tty
print("asker " + "ready", flush=True)
sys.stdin.readline()
fd = sys.stdin.fileno()
saved = termios.tcgetattr(fd)
tty.setraw(fd)
def read_until(end):
    got = b""
    while not got.endswith(end):
        if not select.select([fd], [], [], 10)[0]:
            break
        got += os.read(fd, 1)
    return got
try:
    os.write(1, b"\x1b[6n")
    cpr = read_until(b"R")
    os.write(1, b"\x1b]11;?\x07")
    osc = read_until(b"\x07")
    extra = b""
    while select.select([fd], [], [], 0.5)[0]:
        extra += os.read(fd, 100)
finally:
    termios.tcsetattr(fd, termios.TCSADRAIN, saved)
print("cpr=" + cpr.hex(), "osc=" + osc.hex(), "extra=" + extra.hex() + ".")
sys.stdin.readline()
"""


def test_the_pane_that_typed_answers_queries_once(tree: Any, drive: Any, tmp_path: Path) -> None:
    """The UI's keys reach the program over the attach stream; its DSR and OSC 11 are
    answered by the pane (with the pane's own background, not ptyd's default), once."""
    script = tmp_path / "asker.py"
    script.write_text(ASKER)
    alpha = tree.worktrees["alpha"]
    seen: dict[str, Any] = {}

    async def scenario(app: OrcaApp, pilot: Any) -> None:
        await ready(app)
        # (the view once its terminal is bound: the one before is replaced when it binds)
        view = await open_shell(app, pilot, alpha)
        assert view.model.colors[1] != (0, 0, 0), "indistinguishable from ptyd's answer"
        seen["bg"] = view.model.colors[1]
        view.focus()
        view.send(f"exec {sys.executable} {script}\r".encode())
        await app.wait_for(lambda: "asker ready" in view.screen_text())
        view.send(b"go\r")
        await app.wait_for(lambda: "extra=" in view.screen_text(), 20)
        seen["screen"] = view.screen_text()

    drive(OrcaApp(resolve_paths(), bell=False), scenario)
    line = next(x for x in seen["screen"].splitlines() if "extra=" in x)
    fields = dict(part.split("=", 1) for part in line.split())
    cpr, osc = bytes.fromhex(fields["cpr"]), bytes.fromhex(fields["osc"])
    assert cpr.startswith(b"\x1b[") and cpr.endswith(b"R"), cpr
    r, g, b = seen["bg"]
    assert osc == b"\x1b]11;rgb:%02x%02x/%02x%02x/%02x%02x\x07" % (r, r, g, g, b, b), osc
    assert fields["extra"] == ".", "a query was answered twice"


def test_keys_typed_while_ptyd_is_down_reach_the_shell_when_it_returns(
    tree: Any, drive: Any
) -> None:
    """kill -9 of ptyd; once the UI shows it down, typing: the keys wait on the stream
    (they carry the session id) and the shell runs them when ptyd is back. (Keys sent
    in the instant of the crash, before the connection is seen gone, can be lost: the
    transport delivers at most once.)"""
    alpha = tree.worktrees["alpha"]

    async def scenario(app: OrcaApp, pilot: Any) -> None:
        await ready(app)
        await app.wait_for(lambda: "ptyd" in app.backend.actors)
        view = await open_shell(app, pilot, alpha)
        view.send(b"echo before-$((20+1))\r")
        await app.wait_for(lambda: "before-21" in view.screen_text(), 20)
        pid = app.backend.actors["ptyd"].pid
        assert pid is not None
        since = len(app.health_log)
        os.kill(pid, signal.SIGKILL)
        await app.wait_for(
            lambda: any(a == "ptyd" and s != "up" for a, s in app.health_log[since:]), 20
        )
        view.send(b"echo while-down-$((40+2))\r")
        await app.wait_for(lambda: app.backend.actors["ptyd"].pid not in (None, pid), 30)
        await app.wait_for(lambda: "while-down-42" in view.screen_text(), 30)

    drive(OrcaApp(resolve_paths(), bell=False), scenario)


def test_output_that_outruns_a_resize_snapshot_is_not_drawn_over(tree: Any, drive: Any) -> None:
    """A resize redraws the pane from ptyd's screen (``term.attach``, an RPC), while
    output comes on the attach stream, which is faster: a line the program printed
    after the screen was taken can be on the pane before the screen is. The screen
    must not wipe it (it did, in the tmux test: the line typed after a zoom never
    showed). Here the screen the resize gets is one taken before the line."""
    alpha = tree.worktrees["alpha"]

    async def scenario(app: OrcaApp, pilot: Any) -> None:
        await ready(app)
        view = await open_shell(app, pilot, alpha)
        feed = view.feed
        assert feed is not None and view.session_id is not None
        view.send(b"echo before-$((20+1))\r")
        await app.wait_for(lambda: "before-21" in view.screen_text(), 20)
        screens: list[tuple[bytes, int]] = []

        async def take(session_id: str) -> None:  # on the UI's trio runtime
            screens.append(await app.backend.screen(session_id))

        app.guest.start_soon(take, view.session_id)  # the screen, then the line
        await app.wait_for(lambda: bool(screens), 20)
        earlier = screens[0]
        view.send(b"echo after-$((40+2))\r")
        await app.wait_for(lambda: "after-42" in view.screen_text(), 20)
        taken: list[str] = []

        async def stale_screen(session_id: str) -> tuple[bytes, int]:
            taken.append(session_id)
            return earlier

        feed._read_screen = stale_screen
        feed.resize_nowait(*view.model.size, resnap=True)
        await app.wait_for(lambda: bool(taken) and "after-42" in view.screen_text(), 20)

    drive(OrcaApp(resolve_paths(), bell=False), scenario)
