"""The UI's own widgets: the sidebar and its filter, a group's tab strip, and the rows
they show (pure text-making beside them); ``actors/ui/app.py`` lays them out."""

from __future__ import annotations

from collections.abc import Iterable, Mapping
from typing import Any, Protocol, runtime_checkable

from rich.text import Text
from textual import events
from textual.containers import Vertical
from textual.widgets import Input, OptionList, Static

from actors.ui.terminal_view import LEADER_KEY
from actors.ui.view import LIGHT_COLOURS, LIGHT_GLYPHS, WorktreeItem


@runtime_checkable
class WidgetHost(Protocol):
    """What the filter and a tab strip ask of the app (``OrcaApp``): the leader
    machine, the filter closed, a strip's click."""

    leader_pending: bool

    async def leader_key(self, key: str) -> bool: ...
    def close_filter(self) -> None: ...
    def click_strip(self, group_id: str, tab_id: str | None) -> None: ...


def _orca(widget: Any) -> WidgetHost | None:
    app = widget.app
    return app if isinstance(app, WidgetHost) else None


# OSC 9 (iTerm2's, also ConEmu, WezTerm, kitty, foot, Windows Terminal; tmux passes it
# through with ``allow-passthrough`` or as its own notification): "ESC ] 9 ; text BEL"
# posts a desktop notification. https://iterm2.com/documentation-escape-codes.html
OSC9_MAX_CHARS = 200


def osc9(text: str) -> str:
    """The OSC 9 notification for ``text``: controls dropped (an ESC or BEL would end
    the string early), bounded, never an empty or ``4;`` one (ConEmu's progress)."""
    clean = "".join(ch for ch in text if ch.isprintable())[:OSC9_MAX_CHARS]
    if not clean or clean.startswith("4;"):
        clean = "orca: " + clean
    return f"\x1b]9;{clean}\x07"


class FilterBox(Input):
    """The sidebar's filter (leader ``/``): Escape clears and closes it, Enter keeps it
    and returns to the sidebar; the leader works here as everywhere (the key after it
    is the UI's, not a letter of the filter)."""

    async def _on_key(self, event: events.Key) -> None:
        app = _orca(self)
        if app is not None and (app.leader_pending or event.key == LEADER_KEY):
            event.stop()
            event.prevent_default()
            await app.leader_key(event.key)
        elif event.key == "escape" and app is not None:
            event.stop()
            event.prevent_default()
            app.close_filter()
        else:
            await super()._on_key(event)


class Sidebar(OptionList):
    """Repos → worktrees with branch, dirty count, commits ahead/behind (↑/↓) and one
    light per pane."""

    # As wide as its column (``#side``), which the app sizes (``actors/ui/arrangement.py``).
    DEFAULT_CSS = "Sidebar { width: 1fr; height: 1fr; border: round $panel; } Sidebar:focus { border: round $accent; }"


def strip_text(
    tabs: Iterable[Any],
    active_tab_id: str | None,
    active_group: bool,
    notes: Mapping[str, str] | None = None,
) -> tuple[Text, list[tuple[int, int, str]]]:
    """One group's tab strip and where each tab sits on it: (text, [(start, end, tab id)]).
    ``notes``: a tab id's short note after its name (its agents' cost, ``vault_view``)."""
    text, spans = Text(), []
    for index, tab in enumerate(tabs, 1):
        note = (notes or {}).get(tab.id)
        label = (
            f" {index}:{tab.custom_label or tab.label or 'terminal'}{' ' + note if note else ''} "
        )
        style = ""
        if tab.id == active_tab_id:
            style = "reverse bold" if active_group else "reverse"
        spans.append((len(text), len(text) + len(label), tab.id))
        text.append(label, style=style)
    return text, spans


class TabStrip(Static):
    """One tab group's strip; a click on a tab selects it (and its group)."""

    def __init__(self, group_id: str | None) -> None:
        super().__init__("")
        self.group_id = group_id
        self.spans: list[tuple[int, int, str]] = []
        self.plain = ""

    def show(self, text: Text, spans: list[tuple[int, int, str]], active: bool) -> None:
        self.spans, self.plain = spans, text.plain
        self.update(text)
        self.set_class(active, "active")

    def tab_at(self, x: int) -> str | None:
        return next((tab for start, end, tab in self.spans if start <= x < end), None)

    def on_click(self, event: events.Click) -> None:
        offset = event.get_content_offset(self)
        app = _orca(self)
        if offset is None or self.group_id is None or app is None:
            return
        event.stop()
        app.click_strip(self.group_id, self.tab_at(offset.x))


class GroupView(Vertical):
    """One tab group: its strip over the pane tree of its active tab."""

    def __init__(self, group_id: str | None) -> None:
        self.group_id = group_id
        self.strip = TabStrip(group_id)
        self.panes = Vertical(classes="panes")
        super().__init__(self.strip, self.panes, classes="group")
        self.signature: Any = None


# The sidebar's cursor, drawn as a glyph too: a highlight made of colour alone is
# invisible on a monochrome terminal, under NO_COLOR, or in a plain capture.
CURSOR_MARK = "›"


def sidebar_prompt(item: WorktreeItem, stale: bool, cursor: bool = False) -> Text:
    text = Text()
    text.append(f"{CURSOR_MARK} " if cursor else "  ", style="bold")
    for light in item.lights or ():
        glyph = LIGHT_GLYPHS.get(light.state, "?")
        style = LIGHT_COLOURS.get(light.state, "white") + (" bold" if light.needs_me else "")
        text.append(glyph, style=style)
        if light.unread:
            text.append("*", style="bold magenta")
    if not item.lights:
        text.append("·", style="grey50")
    text.append(" ")
    text.append(item.name, style="bold" if item.needs_me else "")
    details = []
    if item.branch and item.branch != item.name:
        details.append(item.branch)
    if item.dirty:
        details.append(f"±{item.dirty}")
    ahead, behind = item.ahead_behind or (0, 0)
    if ahead:
        details.append(f"↑{ahead}")
    if behind:
        details.append(f"↓{behind}")
    if details:
        text.append("  " + " ".join(details), style="grey62")
    if stale:
        text.append(" (stale)", style="grey50 italic")
    if item.host:
        text.append(f"  @{item.host}", style="grey62")
    if item.unverifiable:
        text.append(f" ({item.unverifiable})", style="grey50 italic")
    return text
