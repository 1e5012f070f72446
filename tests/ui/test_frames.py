"""When panes are drawn (``actors/ui/frames.py``): the focused pane at once, the others
one per tick, oldest first; a key holds the background until its echo; a forgotten
pane is never drawn. And in the app: a draw repaints only the rows that changed, and
the UI's ptyd mirror does not receive the sessions' output chunks."""

from __future__ import annotations

import asyncio
import gc
from typing import Any

import pytest
from support.ui_pilot import open_shell, ready
from textual._compositor import LayoutUpdate
from textual.geometry import Region
from textual.message import Message
from textual.screen import ModalScreen

from actors.ui import frames
from actors.ui.app import OrcaApp
from actors.ui.frames import FrameClock
from orca.model import tab_groups as layout
from orca.paths import resolve_paths


class FakePane:
    def __init__(self, name: str, log: list[str], done: asyncio.Event | None = None) -> None:
        self.name = name
        self.log = log
        self.done = done

    def draw(self) -> None:
        self.log.append(self.name)
        if self.done is not None:
            self.done.set()


def run(coro: Any) -> Any:
    async def bounded() -> Any:
        return await asyncio.wait_for(coro, 10)

    return asyncio.run(bounded())


def test_the_focused_pane_is_drawn_on_the_next_loop_turn_once_per_burst() -> None:
    async def main() -> list[str]:
        log: list[str] = []
        done = asyncio.Event()
        clock = FrameClock()
        pane = FakePane("focused", log, done)
        for _ in range(5):  # a burst of chunks: one draw
            clock.changed(pane, focused=True)
        await done.wait()
        return log

    assert run(main()) == ["focused"]


def test_background_panes_are_drawn_one_per_tick_oldest_first() -> None:
    async def main() -> list[tuple[str, int]]:
        clock = FrameClock()
        seen: list[tuple[str, int]] = []
        done = asyncio.Event()

        class Pane(FakePane):
            def draw(self) -> None:
                # what the clock has drawn when this pane's turn comes
                seen.append((self.name, clock.background_draws))
                if len(seen) == 3:
                    done.set()

        panes = [Pane(n, []) for n in ("a", "b", "c")]
        for pane in panes:
            clock.changed(pane, focused=False)
        clock.changed(panes[0], focused=False)  # already waiting: keeps its place
        await done.wait()
        assert clock.pending == 0
        # the last one waited two ticks (the figure bench/ui.py reports)
        assert clock.longest_wait >= 1.5 * frames.BACKGROUND_TICK_S
        return seen

    # one pane per tick: each draw is the tick's only one, in the order they changed
    assert run(main()) == [("a", 1), ("b", 2), ("c", 3)]


def test_a_key_holds_the_background_until_the_focused_pane_has_output(
    monkeypatch: pytest.MonkeyPatch,
) -> None:
    monkeypatch.setattr(frames, "ECHO_WAIT_S", 3600.0)  # only the echo can release it
    monkeypatch.setattr(frames, "MAX_WAIT_S", 3600.0)

    async def main() -> list[str]:
        log: list[str] = []
        done = asyncio.Event()
        clock = FrameClock()
        background = FakePane("background", log, done)
        focused = FakePane("focused", log)
        clock.typed()
        clock.changed(background, focused=False)
        tick = clock._tick
        assert tick is not None and tick.when() >= clock._hold_until > 0
        clock.changed(focused, focused=True)  # the echo: the hold ends
        await done.wait()
        return log

    assert run(main()) == ["focused", "background"]


def test_an_echo_is_drawn_when_its_chunks_are_in_not_a_loop_turn_later() -> None:
    """Output in the focused pane right after a key: drawn the moment the feed says
    its chunks are all applied (``flush``), once; without a key, ``flush`` draws
    nothing (a streaming pane keeps its frame rate)."""

    async def main() -> tuple[list[str], list[str], list[str]]:
        log: list[str] = []
        drawn = asyncio.Event()
        clock = FrameClock()
        pane = FakePane("focused", log, drawn)
        clock.changed(pane, focused=True)  # no key: a frame on the next turn
        clock.flush(pane)
        unkeyed = list(log)
        await drawn.wait()
        log.clear()
        clock.typed()
        clock.changed(pane, focused=True)  # the echo, in two chunks
        clock.changed(pane, focused=True)
        clock.flush(pane)
        at_once = list(log)
        for _ in range(3):  # and not drawn again on the next turns
            await asyncio.sleep(0)
        return unkeyed, at_once, log

    unkeyed, at_once, after = run(main())
    assert unkeyed == []
    assert at_once == ["focused"]
    assert after == ["focused"]


def test_while_the_user_types_the_background_is_drawn_in_an_echos_shadow(
    monkeypatch: pytest.MonkeyPatch,
) -> None:
    """A key, its echo, then the background right after it; output that comes in
    the gaps between keys waits for the next echo, or for the typing to stop."""
    monkeypatch.setattr(frames, "ECHO_WAIT_S", 3600.0)  # only the echo releases a hold
    monkeypatch.setattr(frames, "TYPING_S", 3600.0)  # the user types on
    monkeypatch.setattr(frames, "MAX_WAIT_S", 3600.0)

    async def main() -> list[str]:
        log: list[str] = []
        first_drawn, second_drawn = asyncio.Event(), asyncio.Event()
        clock = FrameClock()
        focused = FakePane("echo", log)
        clock.typed()
        clock.changed(FakePane("background-1", log, first_drawn), focused=False)
        clock.changed(focused, focused=True)  # the echo: its shadow opens
        await first_drawn.wait()
        clock._shadow_until = float("-inf")  # the shadow passed: output waits for an echo
        clock.changed(FakePane("background-2", log, second_drawn), focused=False)
        tick = clock._tick
        assert tick is not None and tick.when() >= clock._typing_until
        clock.typed()
        clock.changed(focused, focused=True)
        await second_drawn.wait()
        return log

    assert run(main()) == ["echo", "background-1", "echo", "background-2"]


def test_a_forgotten_pane_is_never_drawn() -> None:
    async def main() -> list[str]:
        log: list[str] = []
        done = asyncio.Event()
        clock = FrameClock()
        gone, waiting, sentinel = (
            FakePane("gone", log),
            FakePane("gone-too", log),
            FakePane("sentinel", log, done),
        )
        clock.changed(gone, focused=True)
        clock.changed(waiting, focused=False)
        clock.forget(gone)
        clock.forget(waiting)
        clock.changed(sentinel, focused=True)  # scheduled after the forgotten one
        await done.wait()
        assert clock.pending == 0
        return log

    assert run(main()) == ["sentinel"]


def rendered(view: Any) -> str:
    """What Textual was handed for the pane (the last draw's rows), as text."""
    rows = (view._frame if view is not None else None) or []
    return "\n".join(strip.text for strip in rows)


def test_output_is_drawn_and_an_echo_repaints_only_its_rows(tree: Any, drive: Any) -> None:
    """A pane printing without the focus is drawn (on the background budget); in the
    focused pane an echo repaints the rows that changed, not the pane; ptyd's output
    chunks never reach the UI's sessions mirror (they come on the attach streams)."""
    alpha = tree.worktrees["alpha"]
    seen: dict[str, Any] = {}

    async def scenario(app: OrcaApp, pilot: Any) -> None:
        await app.wait_for(lambda: all(app.backend.alive.values()))
        await app.wait_for(lambda: any(w.worktree_id == alpha for w in app.items()))
        app.select_worktree(alpha, focus_terminal=True)
        await pilot.press("ctrl+g", "t")
        await app.wait_for(lambda: len(app.pane_views()) == 1)
        await pilot.press("ctrl+g", "v")  # a split: a second shell beside it
        await app.wait_for(lambda: len(app.pane_views()) == 2)
        # By pane key, never by widget: a pane's view is rebuilt when its terminal
        # binds (a waiter holding the old widget would wait on one that is gone).
        typing_key, printing_key = (v.pane_key for v in app.pane_views())

        def view(key: str) -> Any:
            return app.pane_view(key)

        await app.wait_for(
            lambda: all(
                (v := view(k)) is not None and v.feed is not None and v.feed.attached.is_set()
                for k in (typing_key, printing_key)
            ),
            20,
        )
        view(typing_key).focus()
        await app.wait_for(lambda: (v := view(typing_key)) is not None and v.has_focus)
        ptyd_mirror = app.backend.mirrors["ptyd"]

        def sized(key: str) -> bool:
            """The pane's resize reached ptyd and came back (term.resized, an event
            the sessions mirror does take): none is left to count below."""
            v = view(key)
            row = (app.backend.sessions or {}).get(v.session_id or "") if v else None
            return row is not None and (row.cols, row.rows) == v.model.size == tuple(v.content_size)

        await app.wait_for(lambda: sized(typing_key) and sized(printing_key), 20)
        applied = ptyd_mirror.applied
        view(printing_key).send(
            b"for i in $(seq 1 300); do echo bg-line-$i; done; echo bg-$((6*7))\r"
        )
        await app.wait_for(lambda: "bg-42" in rendered(view(printing_key)), 20)
        seen["output_events"] = ptyd_mirror.applied - applied
        typing = view(typing_key)
        # A draw against the frame Textual shows: the rows that differ, and only they.
        # (The model fed here directly, and drawn twice in one callback: no focus
        # change or resize can come between the two draws.)
        typing.draw()
        shown = rendered(typing).split("\n")
        typing.model.feed(b"\r\n\x1b[2K\x1b[1;31mzq\x1b[0;44m9\x1b[0m")
        written: list[str] = []
        updates: list[LayoutUpdate] = []
        display = app._display

        def capture(screen: Any, update: Any) -> None:
            if isinstance(update, LayoutUpdate):  # a pane's rows, written by the pane
                written.extend(strip.text for line in update.strips for strip in line)
                updates.append(update)
            display(screen, update)

        app._display = capture  # type: ignore[method-assign]
        typing.draw()
        seen["written"] = list(written)
        # Styled as Textual's own paint styles them (the painter's shortcut for a
        # plain pane, ``paint.plain_style``), segment for segment.
        seen["plain"] = typing.painter._plain is not None
        content = typing.content_region
        offset = typing.content_offset
        seen["as_textual"] = [
            (
                [strip for line in update.strips for strip in line],
                typing.render_lines(
                    Region(
                        offset.x,
                        offset.y + update.region.y - content.y,
                        update.region.width,
                        update.region.height,
                    )
                ),
            )
            for update in updates
        ]
        seen["rows"] = len(shown)
        seen["repainted"] = typing.repainted_rows
        now = rendered(typing).split("\n")
        # Under a dialog the rows are not written past it: Textual composites them.
        await app.push_screen(ModalScreen())
        written.clear()
        typing.model.feed(b"\r\nzq10")
        typing.draw()
        seen["under_dialog"] = list(written)
        app._display = display  # type: ignore[method-assign]
        app.pop_screen()
        seen["changed"] = sum(1 for a, b in zip(shown, now, strict=True) if a != b)
        seen["token"] = any("zq9" in row for row in now)

    drive(OrcaApp(resolve_paths(), bell=False), scenario)
    assert seen["output_events"] == 0, "ptyd's output chunks reached the sessions mirror"
    # the draw repainted the rows that changed (the token's, the cursor's), not the
    # whole pane (None)
    assert seen["token"]
    assert seen["repainted"] is not None and 1 <= seen["repainted"] <= 3, seen
    assert seen["repainted"] >= seen["changed"] >= 1, seen
    # and the draw wrote them out itself, then and there (not on Textual's next
    # screen update): the changed rows and nothing else
    assert any("zq9" in row for row in seen["written"]), seen
    assert 1 <= len(seen["written"]) < seen["rows"], seen
    assert seen["under_dialog"] == [], seen
    assert seen["plain"]
    assert seen["as_textual"] and all(ours == textual for ours, textual in seen["as_textual"])


def test_settling_the_heap_freezes_it_and_widens_the_young_generation() -> None:
    saved = gc.get_threshold()
    try:
        frames.settle_heap()
        assert gc.get_freeze_count() > 0
        assert gc.get_threshold()[:2] == (frames.GC_YOUNG, frames.GC_MIDDLE)
        assert gc.get_threshold()[2] == saved[2]
    finally:
        gc.unfreeze()
        gc.set_threshold(*saved)


class Noted(Message):
    """Any message, for the app's queue."""


def test_keys_read_from_the_terminal_are_typed_at_once_and_in_order(tree: Any, drive: Any) -> None:
    """Keys handed to Textual's driver as its input thread hands them: typing keys go
    into the focused pane the moment they arrive (``route_input``); the leader key and
    what follows it still reach the app; a key never passes one read before it."""
    alpha = tree.worktrees["alpha"]
    seen: dict[str, Any] = {}

    async def scenario(app: OrcaApp, pilot: Any) -> None:
        from textual import events
        from textual.keys import _character_to_key

        await ready(app)
        view = await open_shell(app, pilot, alpha)
        view.focus()
        await app.wait_for(lambda: view.has_focus)
        driver = app._driver
        assert driver is not None

        def read(*keys: tuple[str, str | None]) -> None:  # as the input thread does
            for name, char in keys:
                driver.process_message(events.Key(name, char))

        line = [(_character_to_key(char), char) for char in "echo fast-$((6*7))"]
        await asyncio.to_thread(read, *line, ("enter", "\r"))
        await app.wait_for(lambda: "fast-42" in view.screen_text(), 20)
        seen["typed_now"] = view.typed_now
        # The leader and its key are the app's: a second tab opens, nothing typed.
        before = view.typed_now
        await asyncio.to_thread(read, ("ctrl+g", None), ("t", "t"))
        await app.wait_for(
            lambda: len(layout.all_terminal_tabs(app.backend.session(), alpha)) == 2, 20
        )
        seen["typed_after_leader"] = view.typed_now - before
        # While an event read earlier waits in the app's queue, a key waits behind it.
        app.post_message(Noted())  # (not a key: it must not be the app's last)
        seen["taken_behind_queued"] = app._take_key(events.Key("x", "x"))

    drive(OrcaApp(resolve_paths(), bell=False), scenario)
    assert seen["typed_now"] > 0, seen  # the line's keys went straight in (when nothing
    # else was queued: an app message in the queue sends a key the usual way)
    assert seen["typed_after_leader"] == 0, seen
    assert seen["taken_behind_queued"] is False, seen


def test_typing_that_never_echoes_does_not_starve_the_background(
    monkeypatch: pytest.MonkeyPatch,
) -> None:
    """Keys faster than the echo wait into a program that echoes nothing: the other
    panes' output is still drawn, at most ``MAX_WAIT_S`` late."""
    monkeypatch.setattr(frames, "ECHO_WAIT_S", 3600.0)
    monkeypatch.setattr(frames, "TYPING_S", 3600.0)
    monkeypatch.setattr(frames, "MAX_WAIT_S", 0.05)

    async def main() -> list[str]:
        log: list[str] = []
        drawn = asyncio.Event()
        clock = FrameClock()
        clock.typed()
        clock.changed(FakePane("background", log, drawn), focused=False)
        while not drawn.is_set():  # a key every 10 ms, never an echo
            clock.typed()
            await asyncio.sleep(0.01)
        return log

    assert run(main()) == ["background"]


class _OneChunkStream:
    """A pane's stream with one chunk of output waiting (what ``PaneFeed.drain`` reads)."""

    links = 0
    connected = True
    exit_code = None

    def __init__(self) -> None:
        self.written: list[bytes] = []
        self.errors: list[str] = []
        self.chunks = [(b"echo", False)]

    def write(self, data: bytes) -> None:
        self.written.append(data)

    def poll_output(self, _timeout_ms: int = 0) -> list[tuple[bytes, bool]]:
        out, self.chunks = self.chunks, []
        return out


def test_a_draw_that_fails_does_not_fail_the_key_whose_send_drained_it(
    caplog: pytest.LogCaptureFixture,
) -> None:
    """An echo is drawn inside the drain a send makes (``FrameClock.flush``): a bug in
    that draw is logged, and the key counts as sent (else it would be sent again the
    slow way, typed twice)."""
    from actors.ui.feed import PaneFeed

    def broken_draw() -> None:
        raise RuntimeError("a bug in a draw")

    async def unused(*_args: Any) -> Any:
        raise AssertionError("not called")

    applied: list[bytes] = []
    feed = PaneFeed(
        "s",
        resolve_paths(),
        lambda data, _repaint: applied.append(data),
        unused,
        unused,
        broken_draw,
    )
    stream = _OneChunkStream()
    feed.stream = stream  # type: ignore[assignment]
    assert feed.send_now(b"k") is True
    assert stream.written == [b"k"] and applied == [b"echo"]
    assert "a bug in a draw" in caplog.text
