"""The sidebar: its rows rendered (the cursor kept where the user put it), the filter,
the needs-me order, and the worktree a user picks (``actors/ui/view.py`` builds the
rows).
"""

from __future__ import annotations

from rich.text import Text
from textual.widgets import Input, OptionList
from textual.widgets.option_list import Option

from actors.ui.base import AppBase
from actors.ui.widgets import Sidebar, sidebar_prompt
from orca.model import tab_groups


class SidebarMixin(AppBase):
    """Render, filter and select in the sidebar."""

    def _render_sidebar(self) -> None:
        stale = self._sidebar_stale()
        # The cursor stays where the user put it; it moves when the UI opens a worktree
        # itself (``_move_cursor``), or when its row is gone (to the one open).
        cursor = self._cursor_request or self._cursor or None
        if self._sidebar_moved():
            # A key that moved the cursor whose highlight message is not handled yet:
            # the list's own highlight is the user's (a rebuild in between put the
            # cursor back on the old row, issue 39: under load). It wins over a move the
            # UI asked for before this render too: the user's key came after it (CI: a
            # selection's pending move put the cursor back after `down`).
            cursor = self._sidebar_cursor() or cursor
        self._cursor_request = None
        if self.item(cursor) is None:
            cursor = self.selected_worktree
        prompts: list[tuple[str | None, Text]] = []
        for group in self.groups:
            prompts.append((None, Text(group.name, style="bold underline")))
            for item in group.worktrees:
                mark = item.worktree_id == cursor
                prompts.append((item.worktree_id, sidebar_prompt(item, stale, mark)))
        for group in self.remote_groups:
            # Read-only: a remote worktree's terminals are reached with
            # `orca term attach HOST:HANDLE`, not from this sidebar.
            prompts.append((None, Text(group.name, style="bold underline")))
            for item in group.worktrees:
                prompts.append((None, sidebar_prompt(item, False)))
        signature = tuple((k, p.markup) for k, p in prompts)
        if signature == self._sidebar_signature:
            return
        self._sidebar_signature = signature
        sidebar = self.query_one(Sidebar)
        sidebar.clear_options()
        sidebar.add_options(
            [Option(prompt, id=key, disabled=key is None) for key, prompt in prompts]
        )
        self._cursor = cursor
        if cursor is not None:
            try:
                sidebar.highlighted = sidebar.get_option_index(cursor)
            except Exception:
                pass
        # What this render left highlighted (the list may choose a row itself): only a
        # highlight that differs from it later was moved by the user.
        self._rendered_highlight = sidebar.highlighted

    def _sidebar_moved(self) -> bool:
        """Whether the sidebar's highlight moved since the last render (a key or a click)."""
        return self.query_one(Sidebar).highlighted != self._rendered_highlight

    def _sidebar_cursor(self) -> str | None:
        """The worktree row the sidebar's list highlights now, if any."""
        sidebar = self.query_one(Sidebar)
        index = sidebar.highlighted
        if index is None or not 0 <= index < sidebar.option_count:
            return None
        key = sidebar.get_option_at_index(index).id
        return key if self.item(key) is not None else None

    def _sidebar_stale(self) -> bool:
        return not (self.backend.alive["hooks"] and self.backend.alive["gitwatch"])

    def _move_cursor(self, worktree_id: str | None) -> None:
        """The sidebar's cursor goes to ``worktree_id`` at the next render."""
        self._cursor_request = worktree_id

    def on_option_list_option_highlighted(self, event: OptionList.OptionHighlighted) -> None:
        """The user moved the cursor: the mark moves with it (two rows redrawn)."""
        if not isinstance(event.option_list, Sidebar) or event.option.id == self._cursor:
            return
        if event.option_list.highlighted_option is not event.option:
            # Stale: the list highlights another row (or rebuilt its rows) since this
            # message was posted. A render's own highlights post these too, and one
            # handled after a later render moved the cursor back to where that render
            # had put it (CI: `down` then went from the wrong row). A later render
            # already kept a key's move (``_sidebar_moved``).
            return
        old, self._cursor = self._cursor, event.option.id
        self._cursor_request = None  # the user's move is the newer one
        self._sidebar_signature = None  # the rows drawn now are not the last render's
        if self.review_shown:
            self.poke(view=True)  # the review follows the highlighted row
        stale = self._sidebar_stale()
        for key, mark in ((old, False), (self._cursor, True)):
            item = self.item(key)
            if item is not None and key is not None:
                event.option_list.replace_option_prompt(key, sidebar_prompt(item, stale, mark))

    def on_option_list_option_selected(self, event: OptionList.OptionSelected) -> None:
        if event.option_list.id == "review-files":
            if event.option.id is not None:
                self.guest.start_soon(self._show_diff, event.option.id)
            return
        if event.option.id is not None:
            self.select_worktree(event.option.id, focus_terminal=True)

    def select_worktree(self, worktree_id: str, *, focus_terminal: bool) -> None:
        self._move_cursor(worktree_id)
        self._chosen = True
        self._picks += 1
        self.selected_worktree = worktree_id
        self._focus_terminal = focus_terminal
        self._focus_target = None
        self.poke(view=True)
        self.edit_session(lambda s: tab_groups.select_worktree(s, worktree_id))

    def highlighted_worktree(self) -> str | None:
        """The worktree the sidebar's cursor is on (what its keys act on), else the one
        open."""
        option = self.query_one(Sidebar).highlighted_option
        if option is not None and option.id is not None and self.item(option.id) is not None:
            return option.id
        return self.selected_worktree

    def action_toggle_order(self) -> None:
        self.needs_me_first = not self.needs_me_first
        self.poke(view=True)

    def action_filter(self) -> None:
        box = self.query_one("#filter", Input)
        box.add_class("shown")
        box.focus()

    def on_input_changed(self, event: Input.Changed) -> None:
        if event.input.id == "filter":
            self.filter_text = event.value
            self.poke(view=True)

    def on_input_submitted(self, event: Input.Submitted) -> None:
        if event.input.id == "filter":
            if not event.value:
                event.input.remove_class("shown")
            self.query_one(Sidebar).focus()

    def close_filter(self) -> None:
        box = self.query_one("#filter", Input)
        box.value = ""
        self.filter_text = ""
        self.poke(view=True)
        box.remove_class("shown")
        self.query_one(Sidebar).focus()

    def action_focus_sidebar(self) -> None:
        self.query_one(Sidebar).focus()
