"""Scrollback browsing in the client-side model, and mouse reports for a program that
asked for them (issue 17: "mouse ... scrollback browsing"); the last tests through the
app against a real tree (Shift-PageUp in a real shell, a click reaching a real program)."""

from __future__ import annotations

import sys
from pathlib import Path
from typing import Any

from support.ui_pilot import open_shell, ready
from textual import events

from actors.ui.app import OrcaApp
from actors.ui.screen import (
    MOUSE_ANY_MOTION,
    MOUSE_BUTTON_MOTION,
    MOUSE_NORMAL,
    MOUSE_SGR,
    MOUSE_URXVT,
    MOUSE_X10,
    RELEASE,
    WHEEL_UP,
    PaneScreen,
    encode_mouse,
    mouse_modes,
)
from orca.paths import resolve_paths


def numbered(screen: PaneScreen, first: int, last: int) -> None:
    screen.feed(b"".join(b"line %d\r\n" % i for i in range(first, last + 1)))


def test_scrolling_back_shows_history_and_stays_put_while_output_arrives() -> None:
    screen = PaneScreen(20, 5)
    numbered(screen, 1, 40)
    assert screen.shown_text().splitlines()[-1] == "line 40"
    screen.scroll_by(10)
    assert screen.shown_text().splitlines() == [f"line {i}" for i in range(27, 32)]
    numbered(screen, 41, 45)  # new output below: the view keeps its lines
    assert screen.shown_text().splitlines() == [f"line {i}" for i in range(27, 32)]
    assert "line 45" in screen.text(), "the live screen moved on"
    screen.scroll_by(10_000)  # clamped at the oldest line kept
    assert screen.shown_text().splitlines()[0] == "line 1"
    screen.scroll_to_bottom()
    assert screen.scroll == 0 and screen.shown_text() == screen.text()


def test_the_alternate_screen_has_no_history_to_scroll() -> None:
    screen = PaneScreen(20, 5)
    numbered(screen, 1, 40)
    screen.feed(b"\x1b[?1049hfull screen")
    screen.scroll_by(5)
    assert screen.scroll == 0 and "full screen" in screen.shown_text()


def test_a_repaint_returns_to_the_live_screen() -> None:
    screen = PaneScreen(20, 5)
    numbered(screen, 1, 40)
    screen.scroll_by(3)
    screen.repaint(b"fresh")
    assert screen.scroll == 0 and screen.shown_text() == "fresh"


def test_mouse_modes_follow_what_the_program_set() -> None:
    screen = PaneScreen(20, 5)
    assert mouse_modes(screen.mode) == (None, None)
    screen.feed(b"\x1b[?1002h\x1b[?1006h")
    assert mouse_modes(screen.mode) == (MOUSE_BUTTON_MOTION, MOUSE_SGR)
    screen.feed(b"\x1b[?1002l\x1b[?1006l")
    assert mouse_modes(screen.mode) == (None, None)


def test_mouse_reports_per_encoding_and_tracking_mode() -> None:
    # SGR: 1-based cells, "M" press, "m" release with the button, modifiers added.
    assert encode_mouse(MOUSE_NORMAL, MOUSE_SGR, 0, 4, 2) == b"\x1b[<0;5;3M"
    assert encode_mouse(MOUSE_NORMAL, MOUSE_SGR, RELEASE, 4, 2, held=0) == b"\x1b[<0;5;3m"
    assert encode_mouse(MOUSE_NORMAL, MOUSE_SGR, 2, 0, 0, ctrl=True) == b"\x1b[<18;1;1M"
    assert encode_mouse(MOUSE_NORMAL, MOUSE_SGR, WHEEL_UP, 9, 9) == b"\x1b[<64;10;10M"
    # Default encoding: three bytes offset by 32; a release is button 3.
    assert encode_mouse(MOUSE_NORMAL, None, 0, 4, 2) == b"\x1b[M" + bytes([32, 37, 35])
    assert encode_mouse(MOUSE_NORMAL, None, RELEASE, 4, 2, held=0) == b"\x1b[M" + bytes(
        [35, 37, 35]
    )
    assert encode_mouse(MOUSE_NORMAL, None, 0, 300, 2) is None, "beyond what it can say"
    assert encode_mouse(MOUSE_NORMAL, MOUSE_URXVT, 1, 4, 2) == b"\x1b[33;5;3M"
    # Motion: only while a button is held (1002), any (1003), never (1000, X10).
    assert encode_mouse(MOUSE_NORMAL, MOUSE_SGR, 0, 1, 1, motion=True, held=0) is None
    assert encode_mouse(MOUSE_BUTTON_MOTION, MOUSE_SGR, 0, 1, 1, motion=True) is None
    drag = encode_mouse(MOUSE_BUTTON_MOTION, MOUSE_SGR, 0, 1, 1, motion=True, held=0)
    assert drag == b"\x1b[<32;2;2M"
    hover = encode_mouse(MOUSE_ANY_MOTION, MOUSE_SGR, 0, 1, 1, motion=True)
    assert hover == b"\x1b[<35;2;2M"
    # X10: presses only, no modifiers.
    assert encode_mouse(MOUSE_X10, None, RELEASE, 1, 1) is None
    assert encode_mouse(MOUSE_X10, None, 0, 1, 1, shift=True) == b"\x1b[M" + bytes([32, 34, 34])
    assert encode_mouse(None, None, 0, 1, 1) is None


async def shell_pane(app: OrcaApp, pilot: Any, worktree_id: str) -> Any:
    view = await open_shell(app, pilot, worktree_id)
    view.focus()
    return view


def test_shift_pageup_browses_a_real_shells_history(tree: Any, drive: Any) -> None:
    """200 lines printed: Shift-PageUp shows earlier ones, the wheel scrolls, a key
    typed returns to the live screen (and reaches the shell)."""
    alpha = tree.worktrees["alpha"]

    async def scenario(app: OrcaApp, pilot: Any) -> None:
        await ready(app)
        view = await shell_pane(app, pilot, alpha)
        view.send(b"for i in $(seq 1 200); do echo row-$i; done; echo over\r")
        await app.wait_for(lambda: "\nover" in view.screen_text(), 20)
        rows = view.model.size[1]
        await pilot.press("shift+pageup")
        assert view.model.scroll == rows - 1
        shown = view.shown_text()
        assert "over" not in shown and "row-1" in shown, shown
        await pilot.press("shift+pageup", "shift+pagedown")
        assert view.model.scroll == rows - 1
        view.post_message(
            events.MouseScrollUp(view, 2, 2, 0, 0, 0, False, False, False, screen_x=2)
        )
        await app.wait_for(lambda: view.model.scroll == rows - 1 + 3)
        await pilot.press("e")
        assert view.model.scroll == 0
        await pilot.press(*"cho live-$((6*7))", "enter")
        await app.wait_for(lambda: "live-42" in view.shown_text(), 20)

    drive(OrcaApp(resolve_paths(), bell=False), scenario)


# Turns on button reporting in SGR encoding, prints what the mouse sent, then turns it off.
MOUSER = r"""
import os, sys, termios, tty
fd = sys.stdin.fileno()
saved = termios.tcgetattr(fd)
tty.setraw(fd)
os.write(1, b"\x1b[?1000h\x1b[?1006hmouser ready\r\n")
got = b""
try:
    while got.count(b"m") < 1 or not got.endswith(b"m"):
        got += os.read(fd, 100)
finally:
    os.write(1, b"\x1b[?1000l\x1b[?1006l")
    termios.tcsetattr(fd, termios.TCSADRAIN, saved)
print("mouse=" + got.hex(), flush=True)
sys.stdin.readline()  # stay: an exited pane is redrawn as such
"""


def test_a_click_reaches_a_program_that_enabled_mouse_reporting(
    tree: Any, drive: Any, tmp_path: Path
) -> None:
    """The program sets 1000+1006; a click in the pane reaches it as SGR reports at the
    cell clicked (content-relative, 1-based)."""
    script = tmp_path / "mouser.py"
    script.write_text(MOUSER)
    beta = tree.worktrees["beta"]
    seen: dict[str, str] = {}

    async def scenario(app: OrcaApp, pilot: Any) -> None:
        await ready(app)
        view = await shell_pane(app, pilot, beta)
        view.send(f"exec {sys.executable} {script}\r".encode())
        await app.wait_for(lambda: "mouser ready" in view.screen_text(), 20)
        await app.wait_for(lambda: view.model.mode(1000))
        # Click at content cell (5, 3): the widget's border is one cell wide.
        await pilot.click(view, offset=(6, 4))
        await app.wait_for(lambda: "mouse=" in view.screen_text(), 20)
        seen["screen"] = view.screen_text()

    drive(OrcaApp(resolve_paths(), bell=False), scenario)
    line = next(x for x in seen["screen"].splitlines() if x.startswith("mouse="))
    assert bytes.fromhex(line.removeprefix("mouse=")) == b"\x1b[<0;6;4M\x1b[<0;6;4m"
