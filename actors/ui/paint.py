"""A pane that writes its own changed rows to the terminal, at once.

Essay: why a pane paints itself.

Textual paints a refresh a few message hops later (the widget's idle, an Update
message to the screen, the screen's idle), on a 60 Hz timer, and each paint
composites every widget under the dirty region: 18 of them under a pane, ~3 ms for
one row on these machines, ~5 ms for a pane. An echo drawn that way appeared 5-20 ms
after its bytes, and the paints of the panes printing in the background were the
steps that keys and echoes waited behind (bench/ui.py).

So :meth:`RowPainter.paint` renders the rows of its pane alone, with the styles and
filters Textual's own paint applies to them (``Widget.render_lines`` on the content
columns), and hands them to the app's display as one ``LayoutUpdate``, the update
class Textual's compositor itself emits (synchronized output, the cursor put back,
nothing in headless mode). The rows' style cache is marked stale first, so they are
rendered from the frame just drawn, and whatever Textual paints over them later is
rendered the same way.

Only when nothing can cover the rows: one screen (no dialog, no palette), no widget
but the pane and its ancestors over the pane (a toast, a tooltip: checked once per
compositor map, which Textual replaces on any change), the rows not clipped. Otherwise
the pane falls back to ``refresh`` and Textual paints. A layout in flight (a sidebar
line that changed length) does not stop it: if the layout moves the pane, Textual
repaints every region that changed, old and new.

A row's painted strip is kept by the strip the pane made for it (the same object while
the row's text is unchanged; Textual's styling of a content row does not depend on
which row it is), so a screen that scrolled renders its new rows only. The kept strips
are dropped when the pane's width, theme or colours change (the painter's key) or
its CSS is applied anew (``forget``, from ``notify_style_update``).

This uses Textual internals (the compositor's map, ``App._display``, the widget's
styles cache): textual is pinned below 9, and tests/ui/test_frames.py checks that a
draw is written this way, and not under a dialog.
"""

from __future__ import annotations

from rich.style import Style as RichStyle
from textual._compositor import LayoutUpdate
from textual.color import Color
from textual.geometry import Offset, Region
from textual.strip import Strip
from textual.style import Style
from textual.widget import Widget

# How many painted rows a pane keeps, in panes' worth of rows (rows scrolled away are
# dropped past this).
KEEP_SCREENS = 4


class RowPainter:
    """Writes content rows of ``pane`` to the terminal (see the module's essay)."""

    def __init__(self, pane: Widget) -> None:
        self.pane = pane
        self.paints = 0
        # Each row's painted strip by the id of the pane's strip for it (kept with it:
        # the id stays its own), for the width, theme and colours in ``_key``.
        self._painted: dict[int, tuple[Strip, Strip]] = {}
        self._key: object = None
        # The compositor map nothing covers the pane in, and in it the pane's clip,
        # content region and content offset (None: look again).
        self._placed: tuple[object, Region, Region, Offset] | None = None
        self._plain: tuple[RichStyle, Color] | None = None  # ``plain_style``, for ``_key``

    def forget(self) -> None:
        """The pane's size or styles changed: render every row afresh."""
        self._painted.clear()
        self._key = None
        self._plain = None
        self._placed = None  # its gutter may have changed too

    def paint(self, frame: list[Strip], top: int, bottom: int) -> bool:
        """Write rows ``top``..``bottom`` of ``frame`` (the pane's content rows) now;
        False when Textual must paint them."""
        pane = self.pane
        app = pane.app
        if app._batch_count or app.is_inline or len(app.screen_stack) != 1:
            return False
        screen = app.screen
        shown = screen._compositor.visible_widgets
        if self._placed is None or self._placed[0] is not shown:
            # A new compositor map (Textual makes one on any layout change): where the
            # pane is in it, and that nothing covers it. Kept until the next map.
            placed = shown.get(pane)
            if placed is None:  # not on the screen shown (or not visible)
                return False
            content = pane.content_region
            if self._covered(shown, content):
                return False
            self._placed = (shown, placed[1], content, pane.content_offset)
        _map, clip, content, offset = self._placed
        band = Region(content.x, content.y + top, content.width, bottom - top)
        if not clip.contains_region(band):
            return False
        pane._styles_cache.set_dirty(Region(offset.x, offset.y + top, content.width, bottom - top))
        key = (content.width, app.theme, app.ansi_color, pane.styles.background, pane.styles.color)
        if key != self._key:
            self.forget()
            self._key = key
            self._plain = plain_style(pane)
        painted = self._painted
        new = [y for y in range(top, bottom) if id(frame[y]) not in painted]
        plain = self._plain
        if plain is not None and pane.auto_links and pane.hover_style._link_id:
            plain = None  # a link under the mouse: Textual styles it
        if new and plain is not None:
            # What Textual's styles cache does to a content row of a plain pane (see
            # ``plain_style``), without its per-call pass over the pane's styles.
            inner, background = plain
            filters = pane.get_line_filters()
            width = content.width
            for y in new:
                # what the pane's ``render_line`` gives for row ``y`` (``fit``), then
                # the styles cache's fit with the padding style
                strip = fit(frame[y], width).adjust_cell_length(width, inner)
                for line_filter in filters:
                    strip = strip.apply_filter(line_filter, background)
                painted[id(frame[y])] = (frame[y], strip)
        elif new:
            first, last = new[0], new[-1] + 1
            rows = Region(offset.x, offset.y + first, content.width, last - first)
            for y, strip in zip(range(first, last), pane.render_lines(rows), strict=False):
                painted[id(frame[y])] = (frame[y], strip)
        if len(painted) > KEEP_SCREENS * len(frame):
            shown_ids = {id(row) for row in frame}
            for stale in [k for k in painted if k not in shown_ids]:
                del painted[stale]
        kept = [painted.get(id(frame[y])) for y in range(top, bottom)]
        strips = [row[1] for row in kept if row is not None]
        if len(strips) != len(kept) or any(s.cell_length != band.width for s in strips):
            return False  # not rows of this width: Textual paints them
        self.paints += 1
        app._display(screen, LayoutUpdate([[strip] for strip in strips], band))
        return True

    def _covered(self, shown: dict[Widget, tuple[Region, Region]], area: Region) -> bool:
        """Whether a widget other than the pane and its ancestors shows over ``area``."""
        pane = self.pane
        ancestors = set(pane.ancestors)
        for widget, (region, clip) in shown.items():
            if widget is pane or widget in ancestors or not clip.overlaps(area):
                continue
            if clip.intersection(region).overlaps(area):
                return True
        return False


def plain_style(pane: Widget) -> tuple[RichStyle, Color] | None:
    """For a pane whose styles do nothing to its content rows but fit them to the
    content width and run the app's line filters (no tint, opacity, text opacity, hatch
    or outline): the style of the padding that fit adds and the background the filters
    are given, as Textual's styles cache computes them (``StylesCache.render_line``,
    "content with border and padding"); None otherwise (Textual renders the rows)."""
    styles = pane.styles
    if styles.tint.a or styles.text_opacity != 1.0 or pane.opacity != 1.0:
        return None
    if styles.has_rule("hatch") and styles.hatch != "none":
        return None
    if any(edge for edge, _color in styles.outline):
        return None
    base, background = pane.background_colors
    return Style(background=base + background).rich_style, background


def fit(line: Strip, width: int) -> Strip:
    """A content row ``width`` cells wide, padding unstyled (a pane's ``render_line``).
    Not ``crop_extend`` on a strip of the right width: it caches the strip in its own
    cache (a reference cycle per row per draw, left to the cyclic GC, whose full passes
    are the longest pauses under load)."""
    return line if line.cell_length == width else line.crop_extend(0, width, None)
