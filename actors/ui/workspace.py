"""The workspace: a worktree's tab groups and their strips, each active tab's pane tree,
the splits, moves, zoom and focus (the rules: ``orca/model/tab_groups.py``; the
layout lives in the store's workspace session, edited through
:meth:`AppBase.edit_session`).
"""

from __future__ import annotations

import subprocess
import sys
import time
from typing import Any

from textual.containers import Horizontal, Vertical
from textual.widget import Widget

from actors.ui import vault_view
from actors.ui.base import AppBase
from actors.ui.dialogs import ConfirmScreen
from actors.ui.terminal_view import TerminalView, ended_note
from actors.ui.view import next_needing_me
from actors.ui.widgets import GroupView, strip_text
from orca.model import tab_groups
from orca.model.panes import make_pane_key, parse_pane_key
from orca.model.session import WorkspaceSessionState
from orca.wire.errors import OrcaError

DETACH_HINT = "Ctrl-] returns to orca ui"


class WorkspaceMixin(AppBase):
    """Tab groups, splits, zoom and focus."""

    def current_tab(self, session: WorkspaceSessionState | None = None) -> str | None:
        if self.selected_worktree is None:
            return None
        tab = tab_groups.active_tab(session or self.backend.session(), self.selected_worktree)
        return tab.id if tab else None

    async def _render_layout(self, session: WorkspaceSessionState) -> None:
        worktree_id = self.selected_worktree
        if worktree_id is not None:
            repaired = tab_groups.normalize_groups(session, worktree_id)
            attempt = (worktree_id, self.backend.store.revision)
            if (
                repaired is not session
                and self.backend.alive["store"]
                and not self._repairing
                and attempt != self._repair_refused
            ):
                # A group left without tabs (its last one retired) is closed, the sibling
                # promoted: save it, so every reader and the next start see the same.
                self._repairing = True
                self.guest.start_soon(self._repair_groups, worktree_id)
            session = repaired
        tree = session.tab_group_layouts.get(worktree_id) if worktree_id else None
        groups = tab_groups.groups_of(session, worktree_id) if worktree_id else []
        active_group = tab_groups.group_of(session, worktree_id) if worktree_id else None
        container = self.query_one("#groups", Vertical)
        kept = self._focused_view()
        shape = (worktree_id, repr(tree))
        if shape != self._groups_shape:
            self._groups_shape = shape
            if kept is not None:
                # Not Textual's pick of a neighbour when the focused pane is unmounted:
                # the same pane, rebuilt, gets it back below.
                kept.screen.set_focus(None)
            await container.remove_children()
            self.group_views = {g.id: GroupView(g.id) for g in groups} or {None: GroupView(None)}
            await container.mount(self._build_groups(tree))
        for group_id, group_view in self.group_views.items():
            await self._render_group(session, worktree_id, group_id, group_view, active_group)
        wanted = self.pane_view(self._focus_target) if self._focus_target else None
        lost = kept is not None and self._focused_view() is None
        again = self.pane_view(kept.pane_key) if lost and kept is not None else None
        if wanted is not None:
            # Kept until the pane says it has the focus (pane_focused): a rebuild of
            # its group may unmount it before Textual's deferred focus lands.
            self._focus_terminal = False
            if wanted.has_focus:
                self._focus_target = None
            else:
                wanted.focus()
        elif again is not None:
            again.focus()
        elif self._focus_terminal and self._focus_target is None and active_group is not None:
            tab = tab_groups.active_tab(session, worktree_id or "", active_group.id)
            key = tab_groups.active_pane_key(session, tab.id) if tab else None
            view = self.pane_view(key) if key else None
            if view is not None:
                self._focus_terminal = False
                view.focus()

    async def _render_group(
        self,
        session: WorkspaceSessionState,
        worktree_id: str | None,
        group_id: str | None,
        view: GroupView,
        active_group: Any,
    ) -> None:
        """One group's strip, and its active tab's pane tree when that changed."""
        tabs = (
            tab_groups.terminal_tabs(session, worktree_id, group_id)
            if worktree_id and group_id
            else []
        )
        tab = (
            tab_groups.active_tab(session, worktree_id, group_id)
            if worktree_id and group_id
            else None
        )
        is_active = active_group is not None and active_group.id == group_id
        notes = vault_view.tab_notes(session, tabs, self.backend.vault.by_pane)
        strip, spans = strip_text(tabs, tab.id if tab else None, is_active, notes)
        if group_id is None:
            item = self.item(worktree_id)
            name = item.name if item else "no worktree"
            strip.append(f" {name}: no terminals - ^G n launches an agent, ^G t opens a shell ")
        view.strip.show(strip, spans, is_active and len(self.group_views) > 1)
        snap = tab_groups.pane_tree(session, tab.id) if tab else None
        root = snap.root if snap else None
        bound = []
        handles = self.backend.terminal_handles() if tab is not None else {}
        for key in [] if tab is None else tab_groups.pane_keys(session, tab.id):
            row = self.backend.session_for_pane(key)
            note = "" if row is None or row.running else ended_note(row)
            ended = row if row is not None and row.archived else None
            bound.append((key, row.session_id if row else None, note, ended))
        titles = tuple(handles.get(sid or "", "") for _key, sid, _note, _ended in bound)
        signature = (tab.id if tab else None, repr(root), tuple(bound), titles)
        if signature == view.signature:
            return
        view.signature = signature
        focused = self._focused_view()
        if focused is not None and focused in view.panes.walk_children():
            focused.screen.set_focus(None)
        await view.panes.remove_children()
        if tab is not None and root is not None:
            views = {key: TerminalView(key, sid, note, ended) for key, sid, note, ended in bound}
            for (key, _sid, _note, _ended), title in zip(bound, titles, strict=True):
                views[key].border_title = title  # the terminal's handle (`orca term ls`)
            await view.panes.mount(self._build(tab.id, root, views))

    def _focused_view(self) -> TerminalView | None:
        """The pane that has the focus on the main screen (under any dialog)."""
        focused = self.query_one("#groups").screen.focused
        return focused if isinstance(focused, TerminalView) else None

    def _build_groups(self, node: Any) -> Widget:
        from orca.model.tabs import TabGroupLeaf

        if node is None or isinstance(node, TabGroupLeaf):
            return self.group_views[None if node is None else node.group_id]
        first, second = self._build_groups(node.first), self._build_groups(node.second)
        if node.ratio is not None and 0 < node.ratio < 1:
            size = "width" if node.direction == "vertical" else "height"
            setattr(first.styles, size, f"{round(node.ratio * 1000)}fr")
            setattr(second.styles, size, f"{round((1 - node.ratio) * 1000)}fr")
        return (
            Horizontal(first, second) if node.direction == "vertical" else Vertical(first, second)
        )

    async def _repair_groups(self, worktree_id: str) -> None:
        revision = self.backend.store.revision
        try:
            await self.backend_edit(lambda s: tab_groups.normalize_groups(s, worktree_id))
        except OrcaError as exc:
            self._repair_refused = (worktree_id, revision)
            self.report(f"the layout could not be saved: {exc.message}")
        finally:
            self._repairing = False

    def _build(self, tab_id: str, node: Any, views: dict[str, TerminalView]) -> Widget:
        from orca.model.tabs import TerminalPaneLeaf

        if isinstance(node, TerminalPaneLeaf):
            return views[make_pane_key(tab_id, node.leaf_id)]
        first = self._build(tab_id, node.first, views)
        second = self._build(tab_id, node.second, views)
        # "vertical": a vertical divider, panes side by side; "horizontal": stacked.
        return (
            Horizontal(first, second) if node.direction == "vertical" else Vertical(first, second)
        )

    def pane_focused(self, pane_key: str) -> None:
        self.focused_pane = pane_key
        if pane_key == self._focus_target:
            self._focus_target = None
        parts = parse_pane_key(pane_key)
        if parts is None:
            return
        session = self.backend.session()
        worktree_id = self.selected_worktree
        tab_id, leaf_id = parts.tab_id, parts.leaf_id

        def focus(s: WorkspaceSessionState) -> WorkspaceSessionState:
            # The pane's tab and group become the active ones (a click or Tab into
            # another group moves the focus there), then the pane in its tab.
            if worktree_id is not None and tab_groups.group_of_tab(s, worktree_id, tab_id):
                s = tab_groups.select_tab(s, worktree_id, tab_id)
            return tab_groups.focus_pane(s, tab_id, leaf_id)

        if focus(session) is not session:
            self.edit_session(focus)
        row = self.backend.session_for_pane(pane_key)
        status = self.backend.status.rows.get(pane_key)
        if row is not None and status is not None and status.unread:
            self.guest.start_soon(self._quiet, self.backend.ack(pane_key))

    def _pane_size(self, split: str | None = None) -> tuple[int, int]:
        """The size a new pane of the active group gets (a guess the pane corrects once
        laid out); ``split``: the pane is in a new group splitting the active one."""
        session, worktree_id = self.backend.session(), self.selected_worktree
        group = tab_groups.group_of(session, worktree_id) if worktree_id else None
        shown = self.group_views.get(group.id if group else None)
        # A group not drawn yet (or just mounted, not laid out): where one was drawn,
        # else the whole area less one strip.
        boxes = [v.panes.content_size for v in (shown, *self.group_views.values()) if v]
        laid_out = [b for b in boxes if b.width > 0 and b.height > 0]
        if laid_out:
            width, height = laid_out[0].width, laid_out[0].height
        else:
            area = self.query_one("#groups").content_size
            width, height = area.width, area.height - 1
        if split == "vertical":
            width //= 2
        elif split == "horizontal":
            height = height // 2 - 1  # and the new group's strip
        return max(20, width - 2), max(5, height - 2)

    def action_split_group(self, direction: str) -> None:
        """A new tab group beside (``vertical``) or below (``horizontal``) the active
        one, with a shell in its one tab."""
        worktree_id = self.selected_worktree
        if worktree_id is not None and direction in ("vertical", "horizontal"):
            self.guest.start_soon(self._split_group, worktree_id, direction)

    async def _split_group(self, worktree_id: str, direction: str) -> None:
        created: dict[str, str] = {}

        def split(s: WorkspaceSessionState) -> WorkspaceSessionState:
            now = int(time.time() * 1000)
            s, _group, tab, leaf = tab_groups.split_group(s, worktree_id, direction, "shell", now)  # type: ignore[arg-type]
            created["pane"] = make_pane_key(tab, leaf)
            return s

        try:
            self.check_hosts_terminals(worktree_id)
            await self.backend_edit(split)
            self._focus_target = created["pane"]
            await self.spawn_in_pane(worktree_id, created["pane"], [self.shell()], split=direction)
        except OrcaError as exc:
            self.report(exc.message)

    def action_move_tab(self) -> None:
        """The active tab to the next tab group (a group left empty closes)."""
        worktree_id = self.selected_worktree
        if worktree_id is None:
            return
        session = self.backend.session()
        if tab_groups.move_tab_to_next_group(session, worktree_id) is session:
            self.notify("one tab group: ^G s or ^G u splits the strip first")
            return
        tab = tab_groups.active_tab(session, worktree_id)
        self._focus_target = tab_groups.active_pane_key(session, tab.id) if tab else None
        self.edit_session(lambda s: tab_groups.move_tab_to_next_group(s, worktree_id))

    def action_focus_next_group(self) -> None:
        worktree_id = self.selected_worktree
        if worktree_id is None:
            return
        session = self.backend.session()
        moved = tab_groups.focus_next_group(session, worktree_id)
        group = tab_groups.group_of(moved, worktree_id)
        tab = tab_groups.active_tab(moved, worktree_id, group.id) if group else None
        key = tab_groups.active_pane_key(moved, tab.id) if tab else None
        view = self.pane_view(key)
        if view is not None:
            view.focus()  # pane_focused saves the group, tab and pane as the active ones
        elif moved is not session:
            self.edit_session(lambda s: tab_groups.focus_next_group(s, worktree_id))

    def click_strip(self, group_id: str, tab_id: str | None) -> None:
        """A click on a group's strip: that tab (or just that group) becomes active."""
        worktree_id = self.selected_worktree
        if worktree_id is None:
            return
        session = self.backend.session()
        if tab_id is None:
            tab = tab_groups.active_tab(session, worktree_id, group_id)
            tab_id = tab.id if tab else None
        if tab_id is None:
            return
        self._focus_target = tab_groups.active_pane_key(session, tab_id)
        target = tab_id
        self.edit_session(lambda s: tab_groups.select_tab(s, worktree_id, target))
        self.poke(view=True)

    def active_pane(self) -> str | None:
        if self.focused_pane and self.pane_view(self.focused_pane) is not None:
            return self.focused_pane
        session = self.backend.session()
        tab_id = self.current_tab(session)
        if tab_id is None:
            return None
        snap = tab_groups.pane_tree(session, tab_id)
        if snap is not None and snap.active_leaf_id:
            return make_pane_key(tab_id, snap.active_leaf_id)
        keys = tab_groups.pane_keys(session, tab_id)
        return keys[0] if keys else None

    def action_split(self, direction: str) -> None:
        pane = self.active_pane()
        worktree_id = self.selected_worktree
        parts = parse_pane_key(pane) if pane else None
        if parts is None or worktree_id is None:
            return
        self.guest.start_soon(self._split, worktree_id, parts.tab_id, parts.leaf_id, direction)

    async def _split(self, worktree_id: str, tab_id: str, leaf_id: str, direction: str) -> None:
        created: dict[str, str] = {}

        def split(s: WorkspaceSessionState) -> WorkspaceSessionState:
            s, new_leaf = tab_groups.split_pane(s, tab_id, leaf_id, direction)  # type: ignore[arg-type]
            created["pane"] = make_pane_key(tab_id, new_leaf)
            return s

        try:
            await self.backend_edit(split)
            self._focus_target = created["pane"]
            await self.spawn_in_pane(worktree_id, created["pane"], [self.shell()])
        except (OrcaError, KeyError) as exc:
            self.report(getattr(exc, "message", str(exc)))

    def action_close_pane(self) -> None:
        pane = self.active_pane()
        if pane is None:
            return

        def confirmed(yes: bool | None) -> None:
            if yes:
                self.focused_pane = None
                self._focus_terminal = True
                self.guest.start_soon(self._quiet, self.backend.retire_pane(pane))

        self.push_screen(ConfirmScreen("Close this pane? Its terminal is ended."), confirmed)

    def action_zoom(self) -> None:
        pane = self.active_pane()
        row = self.backend.session_for_pane(pane) if pane else None
        if row is None or not row.running:
            return
        self.attach_raw(row.session_id)

    def attach_raw(self, session_id: str) -> None:
        """Hand the real terminal to ``orca term attach`` for a session (its detach key
        returns here): the zoom, and the run view's attach to a variant's agent."""
        argv = [sys.executable, "-m", "orca.cli.main", "term", "attach", session_id]
        run = self.zoom_command or (lambda a: subprocess.run(a, check=False).returncode)
        with self.suspend():
            sys.stdout.write(f"\x1b[H\x1b[2J[orca ui: zoomed; {DETACH_HINT}]\r\n")
            sys.stdout.flush()
            run(argv)
        self.refresh(layout=True)

    def action_next_needs_me(self) -> None:
        light = next_needing_me(self.groups, self.focused_pane)
        if light is None:
            self.notify("nothing needs you")
            return
        self.show_pane(light.pane_key)

    def show_pane(self, pane_key: str) -> bool:
        """Select the worktree and tab of ``pane_key`` and focus it; False if no
        worktree of the sidebar holds it."""
        worktree_id = next(
            (
                w.worktree_id
                for w in self.items()
                if any(li.pane_key == pane_key for li in w.lights)
            ),
            None,
        )
        if worktree_id is None:
            worktree_id = next(
                (
                    w
                    for w, key in tab_groups.all_pane_keys(self.backend.session())
                    if key == pane_key
                ),
                None,
            )
        if worktree_id is None:
            return False
        parts = parse_pane_key(pane_key)
        self._chosen = True
        self._picks += 1
        self.selected_worktree = worktree_id
        self._move_cursor(worktree_id)
        # Only a pane of the layout can take the focus (an agent started with `orca term
        # new` has a light but no pane here): a target never shown would block the next.
        shown = {key for _wt, key in tab_groups.all_pane_keys(self.backend.session())}
        self._focus_target = pane_key if pane_key in shown else None
        self.focused_pane = pane_key
        if parts is not None:
            tab_id, leaf_id = parts.tab_id, parts.leaf_id

            def show(s: WorkspaceSessionState) -> WorkspaceSessionState:
                s = tab_groups.select_tab(
                    tab_groups.select_worktree(s, worktree_id), worktree_id, tab_id
                )
                return tab_groups.focus_pane(s, tab_id, leaf_id)

            self.edit_session(show)
        self.poke(view=True)
        return True

    def action_focus_next_pane(self) -> None:
        views = self.pane_views()
        if not views:
            return
        keys = [v.pane_key for v in views]
        index = keys.index(self.focused_pane) + 1 if self.focused_pane in keys else 0
        views[index % len(views)].focus()

    def _cycle_tab(self, step: int) -> None:
        worktree_id = self.selected_worktree
        if worktree_id is None:
            return
        session = self.backend.session()
        tabs = tab_groups.terminal_tabs(session, worktree_id)
        current = self.current_tab(session)
        if not tabs:
            return
        ids = [t.id for t in tabs]
        index = (ids.index(current) + step) % len(ids) if current in ids else 0
        target = ids[index]
        self._focus_target = tab_groups.active_pane_key(session, target)
        self.edit_session(lambda s: tab_groups.select_tab(s, worktree_id, target))

    def action_next_tab(self) -> None:
        self._cycle_tab(1)

    def action_previous_tab(self) -> None:
        self._cycle_tab(-1)

    def action_send_leader(self) -> None:
        view = self.pane_view(self.focused_pane)
        if view is not None:
            view.send(b"\x07")
