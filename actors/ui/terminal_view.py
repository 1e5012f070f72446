"""The embedded terminal: a Textual widget over a :class:`PaneScreen` and a :class:`PaneFeed`.

Rendering uses Textual's line API: a draw asks the pane's model for its styled lines
once (cached by the model's version and the focus, which draws the cursor) and hands
out one ``Strip`` per row. Output feeds the model at once and tells the app's
``FrameClock`` (``actors/ui/frames.py``) the pane changed: the focused pane is drawn on
the next loop turn, unfocused ones on a shared budget, so an agent printing megabytes
costs a model feed per chunk and at most one formatter pass per frame. A draw writes
only the rows that differ from what is shown, at once and by itself when nothing
covers them (``draw``, ``actors/ui/paint.py``): an echo redraws a line, not the pane.

Keys: everything typed goes to the PTY (``screen.encode_key``), written to the pane's
attach stream at once (``PaneFeed.send_now``), except the UI's leader key
(``LEADER_KEY``, Ctrl-G), which hands the next key to the app, and ``SCROLL_KEYS``
(Shift-PageUp/PageDown), which browse the model's history (as does the wheel); a key
sent to the program returns the view to the live screen. Pastes are sent bracketed
when the program asked for it. Mouse: when the program turned reporting on (modes
9/1000/1002/1003), presses, releases, drags and the wheel go to it
(``screen.encode_mouse``) instead of the UI. The model's answers to the queries in
chunks this pane must answer go back up the stream (``_answer``). A resize of the
widget resizes the model at once and the PTY shortly after (``RESIZE_SETTLE_S``: a
dragged split sends one TIOCSWINSZ, not fifty). The client that resized last sets the
size (docs/web.md): when another client (a phone's Fit, an attach) resizes the PTY, the
pane draws at that size, as the program now draws, and its subtitle says so
(``OTHER_SIZE_NOTE``) until the pane's own next resize takes the size back.
"""

from __future__ import annotations

import logging
import time
from typing import TYPE_CHECKING, Any, Protocol, cast

import trio
from rich.segment import Segment
from rich.style import Style
from textual import events
from textual.geometry import Region
from textual.strip import Strip
from textual.widget import Widget

from actors.ui.feed import PaneFeed
from actors.ui.paint import RowPainter, fit
from actors.ui.screen import (
    MODE_BRACKETED_PASTE,
    MODE_CURSOR_KEYS,
    RELEASE,
    WHEEL_DOWN,
    WHEEL_UP,
    PaneScreen,
    bracketed,
    encode_key,
    encode_mouse,
    mouse_modes,
    row_segments,
    row_text,
)
from orca.contracts import ptyd
from orca.wire.errors import OrcaError

if TYPE_CHECKING:
    from actors.ui.backend import Backend
    from actors.ui.frames import FrameClock
    from actors.ui.runtime import TrioGuest

log = logging.getLogger(__name__)


class PaneHost(Protocol):
    """What a pane asks of the app that shows it (``OrcaApp``): its runtime, mirrors
    and frame clock, the leader machine, and the few things a pane tells it."""

    guest: TrioGuest
    backend: Backend
    frames: FrameClock
    leader_pending: bool

    def poke(self, *, view: bool = False) -> None: ...
    def report(self, message: str) -> None: ...
    def pane_bell(self, pane_key: str) -> None: ...
    def pane_focused(self, pane_key: str) -> None: ...
    def rerun_in(self, pane_key: str) -> None: ...
    async def leader_key(self, key: str) -> bool: ...


LEADER_KEY = "ctrl+g"
NO_TERMINAL_NOTE = "no terminal in this pane - Enter starts a shell"
RESIZE_SETTLE_S = 0.15
# What a pane says when the PTY has another client's size (cols, rows).
OTHER_SIZE_NOTE = "{}×{}: sized by another client; resize this pane to take it"
# How long ptyd's word of an older size is taken for one sent before this pane's.
OWN_RESIZE_WAIT_S = 2.0
_PLACEHOLDER_STYLE = Style(color="grey50", italic=True)
_SCROLLED_STYLE = Style(color="black", bgcolor="yellow")
# Scrollback browsing: these keys page through the pane's history (a page = its height
# less a line); the wheel scrolls WHEEL_LINES (unless the program reports the mouse).
# Any key sent to the program returns to the live screen.
SCROLL_KEYS = {"shift+pageup": 1, "shift+pagedown": -1}
WHEEL_LINES = 3
# Keys typed into the pane the moment they are read (``type_now``), with the printable
# ones: none of them is the UI's.
TYPING_KEYS = {"enter", "backspace", "tab"}
# Textual's mouse buttons (1 left, 2 middle, 3 right) → the report's button numbers.
_BUTTONS = {1: 0, 2: 1, 3: 2}


def ended_note(row: ptyd.SessionRow) -> str:
    """What a pane whose terminal ended says under its last screen."""
    import shlex

    how = "lost (it ran when Orca stopped)" if row.lost else f"exited {row.exit_code}"
    command = shlex.join(row.argv) if row.argv else "a shell"
    return f"[{how}] Enter runs {command} again · ^G x closes the pane"


class TerminalView(Widget, can_focus=True):
    """One pane: its key, its session (if any), its screen."""

    DEFAULT_CSS = """
    TerminalView { width: 1fr; height: 1fr; border: round $panel; }
    TerminalView:focus { border: round $accent; }
    """

    def __init__(
        self,
        pane_key: str,
        session_id: str | None,
        note: str = "",
        ended: ptyd.SessionRow | None = None,
    ) -> None:
        """``ended``: the pane's terminal ended before ptyd's start (``archived``): its
        last screen is shown, from its history on disk, and nothing streams."""
        # writes the changed rows out (actors/ui/paint.py); first: styles may come early
        self.painter = RowPainter(self)
        super().__init__(classes="pane")
        self.pane_key = pane_key
        self.session_id = session_id
        self.note = note
        self.ended = ended
        self.model = PaneScreen(80, 24, on_reply=self._answer)
        self.feed: PaneFeed | None = None
        self._scope: trio.CancelScope | None = None
        self._strips: tuple[int, bool, list[Strip]] | None = None
        # The rows Textual shows (None: a full redraw is due, from the model as it is).
        self._frame: list[Strip] | None = None
        self._row_strips: dict[tuple[str, int, int], Strip] = {}
        self.draws = 0
        self.typed_now = 0  # keys sent as they were read (``type_now``)
        self.repainted_rows: int | None = None  # the last draw's (None: the whole pane)
        self._resize_timer: Any = None
        self._resnap = False
        self._snap_size: tuple[int, int] | None = None
        # The size this pane last asked of the PTY, until ptyd's word of it arrives (or
        # OWN_RESIZE_WAIT_S passes): older sizes seen meanwhile are not another client's.
        self._own_size: tuple[int, int] | None = None
        self._own_size_until = 0.0
        self._held: int | None = None  # the mouse button down, while reported

    @property
    def orca(self) -> PaneHost:
        return cast("PaneHost", self.app)

    # -- feed ------------------------------------------------------------------------
    def on_mount(self) -> None:
        self._adopt_colors()
        if self.ended is not None:
            self.orca.guest.start_soon(self._show_last_screen, self.ended)
        elif self.session_id is not None:
            backend = self.orca.backend
            self.feed = PaneFeed(
                self.session_id,
                backend.paths,
                self._on_output,
                backend.resize,
                backend.screen,
                # an echo is drawn once its chunks are all in, not a loop turn later
                lambda: self.orca.frames.flush(self),
            )
            self.orca.guest.start_soon(self._run_feed, self.feed)

    async def _show_last_screen(self, row: ptyd.SessionRow) -> None:
        """The screen an ended terminal left (``term.attach`` of its history)."""
        try:
            data, _end = await self.orca.backend.screen(row.session_id)
        except OrcaError as exc:
            self.note = f"{self.note} ({exc.message})"
            self._strips = None
        else:
            self.model.resize(row.cols, row.rows)
            self.model.repaint(data)
        self._redraw()
        self.orca.poke()

    @property
    def has_ended(self) -> bool:
        """The pane's terminal ended (or it never had one): Enter starts it again."""
        feed = self.feed
        return (
            self.session_id is None
            or self.ended is not None
            or (feed is not None and feed.exit_code is not None)
        )

    def _adopt_colors(self) -> None:
        """OSC 10/11 answers: the colours this pane draws a program's default cells in."""
        try:
            _base_bg, _base_fg, bg, fg = self.colors
            self.model.set_colors(fg.rgb, bg.rgb)
        except Exception:  # a theme without solid colours: keep the defaults
            log.debug("pane %s: no solid colours to report", self.pane_key, exc_info=True)

    def on_unmount(self) -> None:
        self.orca.frames.forget(self)
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
                self._redraw()

    def _on_output(self, data: bytes, repaint: bool) -> None:
        if not self.is_attached:
            return
        if repaint:
            # The screen is drawn for the session's size: shown at its own size, then
            # the PTY is resized to the pane's and ptyd's model redraws the screen at
            # that size (``resnap``): the pane shows ptyd's reflow, not a guess of its own.
            row = self.orca.backend.session_for_pane(self.pane_key)
            drawn = self._snap_size
            if drawn is None and row is not None:
                drawn = (row.cols, row.rows)
            snapped, self._snap_size = self._snap_size is not None, None
            if drawn is not None:
                self.model.resize(*drawn)
            self.model.repaint(data)
            if self._laid_out() and self._grid_size() != self.model.size:
                self._schedule_pty_resize(resnap=True)
            elif snapped:
                # ptyd's word of a size that came while the snap was on its way was set
                # aside (``follow_pty_size``): another client may have resized after us
                self.follow_pty_size()
        else:
            bells = self.model.bells
            self.model.feed(data)
            if self.model.bells != bells:
                self.orca.pane_bell(self.pane_key)
        # The model took every byte (waiters are told first); the screen is drawn when
        # the frame clock says (the focused pane at once, the others on a budget; a
        # fresh screen, a pane just shown or re-attached, at once too).
        self.orca.poke()
        self.orca.frames.changed(self, focused=repaint or self.has_focus)

    def _redraw(self) -> None:
        """Draw the whole pane from its model as it is now (on the next frame)."""
        self._frame = None
        self.refresh()

    def draw(self) -> None:
        """Show the model's current screen, writing out only the rows that changed."""
        if not self.is_attached:
            return
        shown = self._frame
        lines = self._lines()
        self._frame = lines
        self.draws += 1
        self.repainted_rows = None
        if shown is None or len(shown) != len(lines):
            self.refresh()  # a first frame or a new size: the border too, by Textual
        else:
            changed = [y for y, row in enumerate(lines) if row is not shown[y] and row != shown[y]]
            if len(changed) * 2 <= len(lines):
                self.repainted_rows = len(changed)
            if changed and not self.painter.paint(lines, changed[0], changed[-1] + 1):
                if self.repainted_rows is None:
                    self.refresh()
                else:
                    width = self.content_size.width
                    self.refresh(*(Region(0, y, width, 1) for y in changed))
        self.orca.poke()

    # -- size ------------------------------------------------------------------------
    def _grid_size(self) -> tuple[int, int]:
        size = self.content_size
        return max(2, size.width), max(1, size.height)

    def _laid_out(self) -> bool:
        size = self.content_size
        return size.width > 0 and size.height > 0

    def follow_pty_size(self) -> None:
        """ptyd's sessions changed: if another client resized this pane's PTY, draw at
        its size and say so; once the PTY has this pane's size again, say nothing."""
        row = (self.orca.backend.sessions or {}).get(self.session_id or "")
        if row is None or not row.running or self._snap_size is not None:
            return  # (a snap on its way: looked at again once its repaint is drawn)
        size = (row.cols, row.rows)
        if self._own_size is not None:
            left = self._own_size_until - time.monotonic()
            if size != self._own_size and left > 0:
                # ptyd's word of an earlier size, before ours; or another client's after
                # ours, folded with it by the mirror: decided again once the wait is over
                self.set_timer(left, self.follow_pty_size)
                return
            self._own_size = None
        if self._resize_timer is not None:
            return  # this pane is about to take the size
        note = "" if size == self._grid_size() else OTHER_SIZE_NOTE.format(*size)
        if size != self.model.size:
            self.model.resize(*size)
            self._redraw()
        if self.border_subtitle != note:
            self.border_subtitle = note

    def on_resize(self, _event: events.Resize) -> None:
        if not self._laid_out():
            return
        if self.model.size != self._grid_size():
            self._schedule_pty_resize()
        self._redraw()

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
        row = (self.orca.backend.sessions or {}).get(self.session_id or "")
        if row is not None and (row.cols, row.rows) != size:  # ptyd will say so: wait for it
            self._own_size, self._own_size_until = size, time.monotonic() + OWN_RESIZE_WAIT_S
        self.border_subtitle = ""
        if self._resnap:
            self._resnap = False
            self._snap_size = size
            self.orca.guest.run_sync_soon(feed.resize_nowait, *size, True)
        else:
            self.model.resize(*size)
            self._redraw()
            self.orca.guest.run_sync_soon(feed.resize_nowait, *size)

    # -- input -----------------------------------------------------------------------
    def send(self, data: bytes) -> None:
        """Keys for the PTY, written to the pane's attach stream now (this thread)."""
        feed = self.feed
        if not data or feed is None:
            return
        sent = feed.send_now(data)  # the key first: the bookkeeping can wait for it
        if self.has_focus:
            self.orca.frames.typed()  # its echo first, then the other panes' frames
        if not sent:
            self.orca.report(f"typing failed: {feed.error or 'ptyd takes no input'}")

    def _answer(self, data: bytes) -> None:
        # The model answered a query in a chunk ptyd gave this pane to answer (it typed
        # last): the answer goes to the program, as a real terminal's would.
        if self.feed is not None:
            self.feed.send_now(data)

    async def on_key(self, event: events.Key) -> None:
        event.stop()
        event.prevent_default()
        if self.orca.leader_pending or event.key == LEADER_KEY:
            # The app's, handled here and now: bubbling would let the next key, already
            # queued for this widget, reach the PTY before the app saw the leader.
            await self.orca.leader_key(event.key)
            return
        if event.key in SCROLL_KEYS:
            self.scroll_history(SCROLL_KEYS[event.key] * max(1, self.model.size[1] - 1))
            return
        if self.has_ended:
            if event.key == "enter":
                self.orca.rerun_in(self.pane_key)
            return
        data = encode_key(event.key, event.character, app_cursor=self.model.mode(MODE_CURSOR_KEYS))
        if data is not None:
            self._back_to_live()
            self.send(data)

    def type_now(self, event: events.Key) -> bool:
        """Send a typing key (a printable one, Enter, Backspace, Tab) to the program
        now, as ``on_key`` would; False for any other key, or when this pane has no
        live program or shows its history (``on_key`` handles those)."""
        feed = self.feed
        if (
            not (event.is_printable or event.key in TYPING_KEYS)
            or event.key == LEADER_KEY
            or self.model.scroll
            or self.has_ended
            or feed is None
        ):
            return False
        data = encode_key(event.key, event.character, app_cursor=self.model.mode(MODE_CURSOR_KEYS))
        if data is None:
            return False
        self.typed_now += 1
        self.send(data)
        return True

    def on_paste(self, event: events.Paste) -> None:
        event.stop()
        self._back_to_live()
        self.send(bracketed(event.text, self.model.mode(MODE_BRACKETED_PASTE)))

    # -- scrollback and mouse ------------------------------------------------------------
    def scroll_history(self, lines: int) -> None:
        """Browse the pane's history: ``lines`` back (negative: forward)."""
        before = self.model.scroll
        self.model.scroll_by(lines)
        if self.model.scroll != before:
            self._redraw()

    def _back_to_live(self) -> None:
        if self.model.scroll:
            self.model.scroll_to_bottom()
            self._redraw()

    def _cell(self, event: events.MouseEvent) -> tuple[int, int] | None:
        offset = event.get_content_offset(self)
        if offset is None:
            return None
        cols, rows = self.model.size
        if 0 <= offset.x < cols and 0 <= offset.y < rows:
            return offset.x, offset.y
        return None

    def _report_mouse(self, event: events.MouseEvent, button: int, *, motion: bool = False) -> bool:
        """Send the program a mouse report if it asked for them; True when it did (the
        event is the program's, not the UI's)."""
        tracking, encoding = mouse_modes(self.model.mode)
        if tracking is None or self.feed is None or self.model.scroll:
            return False
        cell = self._cell(event)
        if cell is not None:
            data = encode_mouse(
                tracking,
                encoding,
                button,
                *cell,
                motion=motion,
                held=self._held,
                shift=event.shift,
                meta=event.meta,
                ctrl=event.ctrl,
            )
            if data is not None:
                self.send(data)
        return True

    def on_mouse_down(self, event: events.MouseDown) -> None:
        button = _BUTTONS.get(event.button)
        if button is not None and self._report_mouse(event, button):
            self._held = button
            self.capture_mouse()
            event.stop()

    def on_mouse_up(self, event: events.MouseUp) -> None:
        if self._held is not None:
            self._report_mouse(event, RELEASE)
            self._held = None
            self.release_mouse()
            event.stop()

    def on_mouse_move(self, event: events.MouseMove) -> None:
        if self._report_mouse(event, 0, motion=True):
            event.stop()

    def on_mouse_scroll_up(self, event: events.MouseScrollUp) -> None:
        event.stop()
        if not self._report_mouse(event, WHEEL_UP):
            self._wheel(WHEEL_LINES)

    def on_mouse_scroll_down(self, event: events.MouseScrollDown) -> None:
        event.stop()
        if not self._report_mouse(event, WHEEL_DOWN):
            self._wheel(-WHEEL_LINES)

    def _wheel(self, lines: int) -> None:
        if self.model.alternate_screen and self.feed is not None:
            # A full-screen program without mouse reporting (less, man): the wheel
            # moves it as arrow keys do (xterm's alternateScroll).
            arrow = "up" if lines > 0 else "down"
            key = encode_key(arrow, None, app_cursor=self.model.mode(MODE_CURSOR_KEYS)) or b""
            self.send(key * abs(lines))
        else:
            self.scroll_history(lines)

    def notify_style_update(self) -> None:
        super().notify_style_update()
        self.painter.forget()  # a theme or CSS change: rows painted before are stale

    def on_focus(self, _event: events.Focus) -> None:
        self.orca.pane_focused(self.pane_key)
        self._redraw()

    def on_blur(self, _event: events.Blur) -> None:
        self._redraw()

    # -- render ----------------------------------------------------------------------
    def _lines(self) -> list[Strip]:
        focused = self.has_focus
        if self._strips is not None and self._strips[:2] == (self.model.version, focused):
            return self._strips[2]
        cols, _rows = self.model.size
        console = self.app.console
        cursor = self.model.shown_cursor() if focused else None
        known, kept = self._row_strips, {}
        strips = []
        for y, row in enumerate(self.model.rows()):
            # A row's strip is cached by its text: output that scrolls moves rows up
            # unchanged, so a draw parses the new rows only.
            key = (row, cols, cursor[0] if cursor is not None and cursor[1] == y else -1)
            strip = known.get(key)
            if strip is None:
                at = None if key[2] < 0 else key[2]
                segments = row_segments(row, cols, at)
                if segments is None:
                    segments = list(row_text(row, cols, at).render(console))
                strip = Strip(segments, cols)
            kept[key] = strip
            strips.append(strip)
        self._row_strips = kept
        if self.session_id is None or self.note:
            note = self.note or NO_TERMINAL_NOTE
            strips[-1:] = [Strip([Segment(note[:cols].ljust(cols), _PLACEHOLDER_STYLE)], cols)]
        if self.model.scroll and strips:
            mark = f" history -{self.model.scroll} (Shift-PgDn, or type to return) "[:cols]
            strips[0] = Strip(
                [*strips[0].crop(0, cols - len(mark)), Segment(mark, _SCROLLED_STYLE)], cols
            )
        self._strips = (self.model.version, focused, strips)
        return strips

    def render_line(self, y: int) -> Strip:
        # The rows of the last draw: Textual repaints some rows of a frame (the changed
        # ones, ``draw``), so every row must come from the same screen.
        lines = self._frame
        if lines is None:
            lines = self._frame = self._lines()
            # a new frame (after a resize's redraw): waiters re-check what is shown
            self.orca.poke()
        width = self.content_size.width
        if 0 <= y < len(lines):
            return fit(lines[y], width)
        return Strip.blank(width)

    def screen_text(self) -> str:
        return self.model.text()

    def shown_text(self) -> str:
        """What the pane shows (the live screen, or the history scrolled back to)."""
        return self.model.shown_text()
