"""The embedded terminal: a Textual widget over a :class:`PaneScreen` and a :class:`PaneFeed`.

Rendering uses Textual's line API: each frame asks the pane's model for its styled
lines once (cached by the model's version and the focus, which draws the cursor) and
hands out one ``Strip`` per row. Output only marks the widget dirty (``refresh``);
Textual coalesces bursts into its frame rate, so an agent printing megabytes costs a
model feed per chunk and at most one formatter pass per frame.

Keys: everything typed goes to the PTY (``screen.encode_key``) except the UI's leader
key (``LEADER_KEY``, Ctrl-G), which hands the next key to the app. Pastes are sent
bracketed when the program asked for it. A resize of the widget resizes the model at
once and the PTY shortly after (``RESIZE_SETTLE_S``: a dragged split sends one
TIOCSWINSZ, not fifty).
"""

from __future__ import annotations

import logging
import time
from typing import TYPE_CHECKING, Any

import trio
from rich.segment import Segment
from rich.style import Style
from textual import events
from textual.strip import Strip
from textual.widget import Widget

from actors.ui.feed import PaneFeed
from actors.ui.screen import (
    MODE_BRACKETED_PASTE,
    MODE_CURSOR_KEYS,
    PaneScreen,
    bracketed,
    encode_key,
)

if TYPE_CHECKING:
    from actors.ui.app import OrcaApp

log = logging.getLogger(__name__)

LEADER_KEY = "ctrl+g"
RESIZE_SETTLE_S = 0.15
# The embedded screen's frame time under streaming output (30 fps): what a person can
# read; the rest of the CPU stays for typing (bench/ui.py measures the echo).
FRAME_S = 1 / 30
# After keys took the slow path, later keys take it too for this long (ordering).
SLOW_PATH_HOLD_S = 2.0
_PLACEHOLDER_STYLE = Style(color="grey50", italic=True)


class TerminalView(Widget, can_focus=True):
    """One pane: its key, its session (if any), its screen."""

    DEFAULT_CSS = """
    TerminalView { width: 1fr; height: 1fr; border: round $panel; }
    TerminalView:focus { border: round $accent; }
    """

    def __init__(self, pane_key: str, session_id: str | None, note: str = "") -> None:
        super().__init__(classes="pane")
        self.pane_key = pane_key
        self.session_id = session_id
        self.note = note
        self.model = PaneScreen(80, 24)
        self.feed: PaneFeed | None = None
        self._scope: trio.CancelScope | None = None
        self._strips: tuple[int, bool, list[Strip]] | None = None
        self._resize_timer: Any = None
        self._repaint_pending = False
        self._slow_until = 0.0
        self._resnap = False
        self._snap_size: tuple[int, int] | None = None

    @property
    def orca(self) -> OrcaApp:
        from actors.ui.app import OrcaApp

        assert isinstance(self.app, OrcaApp)
        return self.app

    # -- feed ------------------------------------------------------------------------
    def on_mount(self) -> None:
        if self.session_id is not None:
            backend = self.orca.backend
            self.feed = PaneFeed(
                self.session_id,
                backend.paths,
                self._on_output,
                backend.write,
                backend.resize,
                backend.screen,
            )
            self.orca.guest.start_soon(self._run_feed, self.feed)

    def on_unmount(self) -> None:
        if self._scope is not None:
            self.orca.guest.run_sync_soon(self._scope.cancel)
        self.model.close()

    async def _run_feed(self, feed: PaneFeed) -> None:
        with trio.CancelScope() as scope:
            self._scope = scope
            try:
                await feed.run()
            except Exception as exc:
                # Our bug, not the peer's (the client maps every peer fault to OrcaError):
                # this pane stops, the runtime and every other pane keep going.
                log.exception("pane %s: the terminal feed failed", self.pane_key)
                self.note = f"terminal feed failed: {exc!r} (see ui.log)"
                self._strips = None
                self.refresh()

    def _on_output(self, data: bytes, repaint: bool) -> None:
        if not self.is_attached:
            return
        if repaint:
            # The screen is drawn for the session's size. Reflowing it to another width
            # would break it (the redraw writes every cell, blanks too, so each row is
            # a full line that wraps): show it at its own size, resize the PTY to the
            # pane's, and let ptyd redraw the screen at that size (``resnap``).
            row = self.orca.backend.session_for_pane(self.pane_key)
            drawn = self._snap_size
            if drawn is None and row is not None:
                drawn = (row.cols, row.rows)
            self._snap_size = None
            if drawn is not None:
                self.model.resize(*drawn)
            self.model.repaint(data)
            if self._laid_out() and self._grid_size() != self.model.size:
                self._schedule_pty_resize(resnap=True)
        else:
            bells = self.model.bells
            self.model.feed(data)
            if self.model.bells != bells:
                self.orca.pane_bell(self.pane_key)
        if not self._repaint_pending:
            # At most one repaint per frame however fast the program prints: the model
            # takes every byte at once, the screen is drawn FRAME_S later, once.
            self._repaint_pending = True
            self.set_timer(FRAME_S, self._repaint)
        self.orca.poke()

    def _repaint(self) -> None:
        self._repaint_pending = False
        self.refresh()

    # -- size ------------------------------------------------------------------------
    def _grid_size(self) -> tuple[int, int]:
        size = self.content_size
        return max(2, size.width), max(1, size.height)

    def _laid_out(self) -> bool:
        size = self.content_size
        return size.width > 0 and size.height > 0

    def on_resize(self, _event: events.Resize) -> None:
        if not self._laid_out():
            return
        if self.model.size != self._grid_size():
            self._schedule_pty_resize()
        self.refresh()

    def _schedule_pty_resize(self, *, resnap: bool = False) -> None:
        self._resnap = self._resnap or resnap
        if self._resize_timer is not None:
            self._resize_timer.stop()
        self._resize_timer = self.set_timer(RESIZE_SETTLE_S, self._send_resize)

    def _send_resize(self) -> None:
        self._resize_timer = None
        feed = self.feed
        if feed is None or not self._laid_out():
            return
        size = self._grid_size()
        if self._resnap:
            self._resnap = False
            self._snap_size = size
            self.orca.guest.run_sync_soon(feed.resize_nowait, *size, True)
        else:
            self.model.resize(*size)
            self.orca.guest.run_sync_soon(feed.resize_nowait, *size)

    # -- input -----------------------------------------------------------------------
    def send(self, data: bytes) -> None:
        feed = self.feed
        if not data or feed is None:
            return
        fast = feed.attached.is_set() and time.monotonic() >= self._slow_until
        if fast and self.orca.keys.send(feed.current_session(), data):
            return  # the asyncio fast path
        # Not attached yet, or ptyd not connected: the ordered trio path (waits for ptyd),
        # and keep to it a moment so later keys cannot overtake these.
        self._slow_until = time.monotonic() + SLOW_PATH_HOLD_S
        self.orca.guest.run_sync_soon(self._queue_input, data)

    def _queue_input(self, data: bytes) -> None:
        if self.feed is not None:
            self.feed.send_nowait(data)

    async def on_key(self, event: events.Key) -> None:
        event.stop()
        event.prevent_default()
        if self.orca.leader_pending or event.key == LEADER_KEY:
            # The app's, handled here and now: bubbling would let the next key, already
            # queued for this widget, reach the PTY before the app saw the leader.
            await self.orca.leader_key(event.key)
            return
        if self.session_id is None or (self.feed is not None and self.feed.exit_code is not None):
            if event.key == "enter":
                self.orca.start_shell_in(self.pane_key)
            return
        data = encode_key(event.key, event.character, app_cursor=self.model.mode(MODE_CURSOR_KEYS))
        if data is not None:
            self.send(data)

    def on_paste(self, event: events.Paste) -> None:
        event.stop()
        self.send(bracketed(event.text, self.model.mode(MODE_BRACKETED_PASTE)))

    def on_focus(self, _event: events.Focus) -> None:
        self.orca.pane_focused(self.pane_key)
        self.refresh()

    def on_blur(self, _event: events.Blur) -> None:
        self.refresh()

    # -- render ----------------------------------------------------------------------
    def _lines(self) -> list[Strip]:
        focused = self.has_focus
        if self._strips is not None and self._strips[:2] == (self.model.version, focused):
            return self._strips[2]
        cols, _rows = self.model.size
        console = self.app.console
        strips = []
        for line in self.model.lines(show_cursor=focused):
            strips.append(Strip(list(line.render(console)), cols))
        if self.session_id is None or self.note:
            note = self.note or "no terminal in this pane - Enter starts a shell"
            strips[-1:] = [Strip([Segment(note[:cols].ljust(cols), _PLACEHOLDER_STYLE)], cols)]
        self._strips = (self.model.version, focused, strips)
        return strips

    def render_line(self, y: int) -> Strip:
        lines = self._lines()
        width = self.content_size.width
        if 0 <= y < len(lines):
            return lines[y].crop_extend(0, width, None)
        return Strip.blank(width)

    def screen_text(self) -> str:
        return self.model.text()
