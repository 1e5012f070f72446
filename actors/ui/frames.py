"""When each embedded pane is drawn: the focused pane at once, the others on a budget.

Essay: why a frame clock of our own.

A pane's model takes every byte as it arrives (``PaneScreen.feed``, cheap); drawing it
(formatting the screen, building strips, Textual's compositor) is the expensive part,
and it runs on the one thread that also carries the keystrokes and their echoes. A
frame in progress is what an echo waits behind (bench/ui.py: input-to-echo p99 while
4 visible panes print). So, as a terminal multiplexer does:

- The focused pane (where the user types) is drawn at once, on the next loop turn,
  and at most every ``FOCUSED_FRAME_S`` while it streams.
- Unfocused panes with new output wait in a queue, oldest first; one tick every
  ``BACKGROUND_TICK_S`` draws one of them (the one waiting longest), and none more
  often than every ``BACKGROUND_FRAME_S``. However many panes print, the background
  costs at most one pane per tick, and each frame stays short.
- A key sent to the focused pane holds the background back until its echo arrives
  (or ``ECHO_WAIT_S`` passed): the echo is not queued behind another pane's frame.
  The focused pane's output in that window is drawn at once, not at the 60 fps pace.
- While the user types (a key in the last ``TYPING_S``), the background is drawn
  only in the ``SHADOW_S`` after each echo (or after a hold that saw none), the
  waiting panes one after another: the moment the next key is least likely to come
  (keys come tens of ms apart; a pane's frame takes a few ms on these machines).
  A frame that starts just before a key arrives was the longest wait an echo had
  (bench/ui.py). When the typing stops, the ticks resume; and however the user
  types (into a program that echoes nothing, faster than ``ECHO_WAIT_S``), no
  pane's output waits more than ``MAX_WAIT_S``.
- Panes that are not mounted (other tabs, other worktrees) have no view and draw
  nothing; a pane that is mounted or focused draws its current screen at once
  (``TerminalView`` redraws on mount, resize and focus).
- A draw writes the pane's changed rows to the terminal itself, in that step
  (``actors/ui/paint.py``), instead of leaving them to Textual's next screen
  update, a 60 Hz timer a few message hops away that composites every widget under
  the rows: that is what made an echo 5-20 ms late, and what the frames of the
  panes printing in the background cost.

The other pause an echo meets is the cyclic garbage collector. Textual's strips cache
themselves (``Strip.divide``), so every row drawn becomes a reference cycle, and with
CPython's default young generation (700 allocations) they live long enough to be
promoted and reach full passes, which walk every object alive (a 100-worktree UI
holds ~10^5). ``settle_heap`` moves what the started UI holds into the permanent
generation once (``gc.freeze``) and widens the young generation (``GC_YOUNG``) so the
cycles die young (bench/ui.py, under load: no older-generation pass, the longest
pause ~7 ms instead of ~50). ``orca ui`` runs it a few seconds in; it is
process-wide, so tests, which run many apps in one process, leave it off.

The clock runs on the host asyncio loop (``loop.call_at``: no Textual timer task per
frame) and arms itself only while a pane has something undrawn: idle costs nothing.
"""

from __future__ import annotations

import asyncio
import gc
from typing import Protocol

# The focused pane: drawn on the next loop turn, then at most this often while it
# streams (Textual's own frame rate, 60 fps).
FOCUSED_FRAME_S = 1 / 60
# Unfocused panes: one drawn per tick, each at most this often.
BACKGROUND_TICK_S = 1 / 20
BACKGROUND_FRAME_S = 1 / 10
# How long a key holds the background draws back, waiting for the echo (a local echo
# takes a few ms; a program that does not echo, a password prompt, costs this once).
ECHO_WAIT_S = 0.03
# While the user types (a key within TYPING_S), the background is drawn only in the
# SHADOW_S after each echo: the moment the next key is least likely to come.
TYPING_S = 0.5
SHADOW_S = 0.01
# However the user types (keys into a program that echoes nothing, faster than
# ECHO_WAIT_S), no pane's output waits longer than this to be drawn.
MAX_WAIT_S = 0.25


# When ``orca ui`` settles its heap: after the first snapshots and paint.
HEAP_SETTLE_S = 3.0
# The young generation's threshold then (CPython's default: 700; older ones unchanged
# but the middle one, so the drawn rows' cycles are collected there, young).
GC_YOUNG = 5000
GC_MIDDLE = 20


def settle_heap() -> None:
    """Collect once, keep what survives out of later collections, and let the cycles
    each frame leaves behind be collected young."""
    gc.collect()
    gc.freeze()
    _young, _middle, old = gc.get_threshold()
    gc.set_threshold(GC_YOUNG, GC_MIDDLE, old)


class Pane(Protocol):
    def draw(self) -> None: ...


class FrameClock:
    """Schedules :meth:`Pane.draw` for panes whose model changed."""

    def __init__(self) -> None:
        # unfocused panes with undrawn output, oldest first: since when each waits
        self._waiting: dict[Pane, float] = {}
        self._last: dict[Pane, float] = {}  # when each pane was last drawn (loop time)
        self._soon: dict[Pane, asyncio.Handle] = {}  # focused panes' scheduled draws
        self._echoes: set[Pane] = set()  # of those, the ones drawn unthrottled (``flush``)
        self._tick: asyncio.TimerHandle | None = None
        self._last_tick = float("-inf")
        self._hold_until = float("-inf")  # background draws wait for an echo until then
        self._echo_until = float("-inf")  # the focused pane's output is drawn unthrottled
        self._typing_until = float("-inf")  # the user is typing until then
        self._shadow_until = float("-inf")  # the background may draw until then (typing)
        self._armed_in_shadow = False  # the armed tick was armed in a shadow
        self.draws = 0
        self.background_draws = 0
        self.longest_wait = 0.0  # the longest an unfocused pane's output waited (s)

    @staticmethod
    def _loop() -> asyncio.AbstractEventLoop:
        return asyncio.get_running_loop()

    def changed(self, pane: Pane, *, focused: bool) -> None:
        """``pane``'s screen changed; ``focused``: draw it at once (the user is typing
        into it, or it is a fresh screen)."""
        if focused:
            self._waiting.pop(pane, None)
            if self._hold_until > float("-inf"):  # the echo (or other output) is here
                self._hold_until = float("-inf")
                self._shadow_until = self._loop().time() + SHADOW_S
                self._rearm()
            loop = self._loop()
            now = loop.time()
            if now < self._echo_until:  # the answer to a key: drawn and written now
                handle = self._soon.pop(pane, None)
                if handle is not None:
                    handle.cancel()  # a streaming pane's next frame, or this one
                self._soon[pane] = loop.call_soon(self._draw_soon, pane)
                self._echoes.add(pane)
                return
            if pane in self._soon:
                return
            due = self._last.get(pane, float("-inf")) + FOCUSED_FRAME_S
            if due <= now:
                self._soon[pane] = loop.call_soon(self._draw_soon, pane)
            else:
                self._soon[pane] = loop.call_at(due, self._draw_soon, pane)
            return
        if pane not in self._soon:
            self._waiting.setdefault(pane, self._loop().time())
            self._arm()

    def flush(self, pane: Pane) -> None:
        """``pane``'s output read so far is all applied: an echo waiting for its draw
        on the next loop turn is drawn now (not behind whatever else is ready)."""
        if pane in self._echoes:
            self._echoes.discard(pane)
            handle = self._soon.pop(pane, None)
            if handle is not None:
                handle.cancel()
                self._draw(pane)

    def typed(self) -> None:
        """A key went to the focused pane: hold the background until its output."""
        now = self._loop().time()
        self._hold_until = self._echo_until = now + ECHO_WAIT_S
        self._typing_until = now + TYPING_S
        self._rearm()

    def _rearm(self) -> None:
        if self._tick is not None:
            self._tick.cancel()
            self._tick = None
        self._arm()

    def forget(self, pane: Pane) -> None:
        """``pane`` is gone (unmounted): nothing of it is drawn any more."""
        self._waiting.pop(pane, None)
        self._last.pop(pane, None)
        self._echoes.discard(pane)
        handle = self._soon.pop(pane, None)
        if handle is not None:
            handle.cancel()
        if not self._waiting and self._tick is not None:
            self._tick.cancel()
            self._tick = None

    def close(self) -> None:
        for pane in list(self._soon):
            self.forget(pane)
        self._waiting.clear()
        if self._tick is not None:
            self._tick.cancel()
            self._tick = None

    @property
    def pending(self) -> int:
        """Panes with output not drawn yet."""
        return len(self._waiting) + len(self._soon)

    def _draw(self, pane: Pane) -> None:
        self._last[pane] = self._loop().time()
        self.draws += 1
        pane.draw()

    def _draw_soon(self, pane: Pane) -> None:
        self._soon.pop(pane, None)
        self._echoes.discard(pane)
        self._draw(pane)

    def _arm(self) -> None:
        if self._tick is not None or not self._waiting:
            return
        loop = self._loop()
        now = loop.time()
        eligible = min(self._last.get(p, float("-inf")) for p in self._waiting)
        # in an echo's shadow the waiting panes are drawn one after another
        gap = 0.0 if now < self._shadow_until else BACKGROUND_TICK_S
        due = max(
            now,
            self._last_tick + gap,
            eligible + BACKGROUND_FRAME_S,
            self._background_due(now),
        )
        self._armed_in_shadow = now < self._shadow_until
        self._tick = loop.call_at(due, self._on_tick)

    def _background_due(self, now: float) -> float:
        """When the background may draw: after the echo a key waits for, and while
        the user types, only in an echo's shadow; never later than ``MAX_WAIT_S``
        after the oldest waiting output. (A hold that expired with no echo is settled
        here: its shadow opens.)"""
        if float("-inf") < self._hold_until <= now:
            # no echo came (a program that does not echo): its shadow starts anyway
            self._hold_until = float("-inf")
            self._shadow_until = now + SHADOW_S
        if now < self._hold_until:
            blocked = self._hold_until
        elif self._shadow_until <= now < self._typing_until:
            blocked = self._typing_until
        else:
            return now
        if self._waiting:
            blocked = min(blocked, next(iter(self._waiting.values())) + MAX_WAIT_S)
        return max(now, blocked)

    def _on_tick(self) -> None:
        self._tick = None
        now = self._loop().time()
        # Armed in an echo's shadow: it draws even if the shadow passed meanwhile (the
        # echo's own paint took it), unless a new key waits for its echo; otherwise
        # only when the background is due (a key may have come since it was armed).
        in_shadow, self._armed_in_shadow = self._armed_in_shadow, False
        if self._background_due(now) > now and (not in_shadow or now < self._hold_until):
            self._arm()
            return
        self._last_tick = now
        try:
            for pane in self._waiting:  # oldest first
                if now - self._last.get(pane, float("-inf")) >= BACKGROUND_FRAME_S:
                    since = self._waiting.pop(pane)
                    self.longest_wait = max(self.longest_wait, now - since)
                    self.background_draws += 1
                    self._draw(pane)
                    break
        finally:
            self._arm()  # a pane's failing draw must not stop the others
