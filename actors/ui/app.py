"""``orca ui``: the Textual application (a client only; docs/architecture.md §1).

The app owns no state that matters: everything it shows is a mirror
(``actors/ui/backend.py``) and everything it changes is a request. Its layout — tabs,
tab groups, pane trees, the active worktree, tab and pane — lives in the store's
workspace session for this host (``orca/model/tab_groups.py``), so a UI that is killed
(``kill -9``) loses nothing, and a second ``orca ui`` shows the same thing.

Threads and loops: one thread. Textual's asyncio loop hosts the trio runtime as a
guest (``actors/ui/runtime.py``); trio tasks (mirrors, pane feeds, requests) call back
into the app directly. A mirror change only marks the view dirty (:meth:`OrcaApp.poke`
schedules one :meth:`OrcaApp.refresh_view` per burst); nothing runs on a timer while
nothing changes (liveness is an actor's pidfd and its heartbeats, which an idle
publisher sends every 30 s; they render nothing unless health changed).

Keys: a focused pane gets every key (editors, shells and agents need Ctrl-C, Ctrl-Q,
Tab...). The leader key Ctrl-G hands the next key to the UI (``LEADER_ACTIONS``,
``actors/ui/commands.py``); in the sidebar the same letters work without it. The zoom
(leader ``z``) hands the real terminal to ``orca term attach`` for the pane (full
speed, raw); its detach key Ctrl-] returns to the UI.

Parts: :class:`OrcaApp` composes one mixin per thing a user does, each over the shared
state of ``actors/ui/base.py``: the sidebar (``sidebar.py``), what the UI tells
(``status.py``), tab groups and panes (``workspace.py``), launching (``launch.py``),
rename, remove and review (``worktree_actions.py``), the leader keys and the palette
(``commands.py``). This file lays the screen out and keeps the view current.
"""

from __future__ import annotations

import logging
import time
from collections.abc import Mapping
from functools import partial
from typing import TYPE_CHECKING, Any

from textual import events
from textual.app import ComposeResult
from textual.containers import Container, Horizontal, Vertical, VerticalScroll
from textual.css.query import NoMatches
from textual.widgets import OptionList, Static

from actors.ui import arrangement, runs_view, vault_view
from actors.ui.adoption import Adoptee, orphans
from actors.ui.approvals import Approvals
from actors.ui.commands import LEADER_ACTIONS, CommandsMixin
from actors.ui.fastpath import route_input
from actors.ui.frames import HEAP_SETTLE_S, settle_heap
from actors.ui.launch import LaunchMixin
from actors.ui.sidebar import SidebarMixin
from actors.ui.status import StatusMixin
from actors.ui.terminal_view import PaneHost, TerminalView
from actors.ui.view import build_remote_groups, build_sidebar
from actors.ui.widgets import FilterBox, Sidebar, WidgetHost
from actors.ui.workspace import DETACH_HINT, WorkspaceMixin
from actors.ui.worktree_actions import WorktreeActionsMixin
from orca.model import tab_groups
from orca.model.session import WorkspaceSessionState
from orca.wire.errors import OrcaError

__all__ = ["DETACH_HINT", "LEADER_ACTIONS", "OrcaApp"]
log = logging.getLogger(__name__)


class OrcaApp(
    SidebarMixin,
    StatusMixin,
    WorkspaceMixin,
    LaunchMixin,
    WorktreeActionsMixin,
    CommandsMixin,
    inherit_bindings=False,
):
    """The terminal UI over one Orca home: the parts composed, the screen laid out, the
    view refreshed."""

    TITLE = "orca"
    COMMAND_PALETTE_BINDING = "f1"
    CSS = """
    Screen { layout: vertical; }
    #banner { height: auto; background: $error; color: $text; padding: 0 1; display: none; }
    #banner.shown { display: block; }
    #body { height: 1fr; }
    #side { height: 1fr; }
    #filter { display: none; height: 3; }
    #filter.shown { display: block; }
    #work { width: 1fr; height: 1fr; layout: horizontal; }
    #work.stacked { layout: vertical; }
    #main { width: 1fr; height: 1fr; }
    #groups { height: 1fr; }
    TabStrip { height: 1; padding: 0 1; background: $panel; }
    TabStrip.active { background: $primary-darken-2; }
    .panes { height: 1fr; }
    .panes > Horizontal, .panes > Vertical { height: 1fr; width: 1fr; }
    #status { height: 1; background: $panel; padding: 0 1; }
    #review { height: 1fr; display: none; border: round $panel; }
    #review.shown { display: block; }
    #review-title { height: auto; }
    #review-files { height: auto; max-height: 10; }
    #work.stacked #review-files { max-height: 5; }
    #review-scroll { height: 1fr; }
    """

    # -- composition ---------------------------------------------------------------------
    def compose(self) -> ComposeResult:
        yield Static("", id="banner")
        with Horizontal(id="body"):
            with Vertical(id="side"):
                yield FilterBox(placeholder="filter worktrees (Esc closes)", id="filter")
                yield Sidebar(id="sidebar")
            # The terminal panes and the review: side by side, or the review below
            # the panes on a narrow terminal (``arrange``).
            with Container(id="work"):
                with Vertical(id="main"):
                    yield Vertical(id="groups")
                with Vertical(id="review"):
                    yield Static("", id="review-title")
                    yield OptionList(id="review-files")
                    with VerticalScroll(id="review-scroll"):
                        yield Static("", id="review-diff")
        yield Static("", id="status")

    async def on_mount(self) -> None:
        async def start_backend(nursery: Any) -> None:
            await nursery.start(self.backend.run)
            # an ask or its answer changes the status bar: a view refresh, not only a wake
            # (the ask can come after the light's own refresh; CI saw the bar stay stale)
            self.approvals = Approvals(
                self.paths, self.backend.clients["hooks"], partial(self.poke, view=True)
            )
            nursery.start_soon(self.approvals.run)

        await self.guest.start(start_backend)
        route_input(self, self._take_key)
        self.arrange()
        self.query_one(Sidebar).focus()
        self.poke()
        if self._settle_heap:
            self.set_timer(HEAP_SETTLE_S, settle_heap)

    def _take_key(self, event: events.Key) -> bool:
        """A key just read from the terminal (``fastpath.route_input``): typed into the
        focused pane now when nothing else may claim it first; False: Textual
        dispatches it. Nothing may: no dialog, no leader sequence, and no event read
        earlier still queued for the app or the pane (this key must not pass it). A
        key goes to the pane focused when it is handled, as Textual's own dispatch
        does (a click the screen has not handled yet has not moved the focus there
        either)."""
        view = self.focused
        if (
            not isinstance(view, TerminalView)
            or self.leader_pending
            or len(self.screen_stack) != 1
            or not self._message_queue.empty()
            or not view._message_queue.empty()
        ):
            return False
        return view.type_now(event)

    async def on_unmount(self) -> None:
        self.frames.close()
        await self.guest.stop()

    def _runtime_crashed(self, exc: BaseException) -> None:
        # A bug of ours in a trio task ended the client runtime: nothing updates any
        # more, so say it plainly instead of showing a frozen picture as live.
        log.error("the UI's trio runtime ended", exc_info=exc)
        banner = self.query_one("#banner", Static)
        banner.update("orca ui: internal error, the view is frozen (see ui.log); restart orca ui")
        banner.set_class(True, "shown")

    # -- change propagation ------------------------------------------------------------
    def _on_backend_change(self, what: str) -> None:
        if what == "gitwatch" and self.review_shown:
            self._review_stale = True
        if what == "ptyd":
            for view in self.query(TerminalView):
                view.follow_pty_size()  # the client that resized last sets the size
        self.poke(view=True)

    async def refresh_view(self) -> None:
        self._refresh_scheduled = False
        if self._refreshing:
            self._again = True
            return
        self._refreshing = True
        try:
            while self.is_running:
                self._again = False
                try:
                    await self._refresh_once()
                except NoMatches:
                    if self.is_running:
                        raise
                    return  # the app shut down under this refresh: its widgets are gone
                if not self._again:
                    break
        finally:
            self._refreshing = False
        self.renders += 1
        self.poke()

    async def _refresh_once(self) -> None:
        backend = self.backend
        now_ms = time.time_ns() // 1_000_000
        status = backend.status
        self.groups = build_sidebar(
            repos=backend.store.repos,
            git=backend.git,
            display_names=backend.store.display_names,
            rows=status.rows,
            fates=status.fates,
            sessions=backend.sessions if backend.alive["ptyd"] else None,
            now_ms=now_ms,
            filter_text=self.filter_text,
            needs_me_first=self.needs_me_first,
            folders=backend.store.folders,
            group_names=backend.store.group_names,
        )
        self.remote_groups = build_remote_groups(backend.remote, now_ms, self.filter_text)
        self._notify_transitions()
        session = backend.session()
        self._adopt_orphans(session)
        lost = self._lost_selection
        if lost is not None and lost[1] == self._picks and self._known(lost[0]):
            # Listed again (a restarted gitwatch lists worktrees as it finds them), and
            # the user picked none since: the UI goes back to it.
            self._select_itself(lost[0])
            self._lost_selection = None
        if not self._chosen and self._known(session.active_worktree_id):
            # At start, until the user picks one: the worktree the saved session had
            # active, once it is listed. Once only (``_chosen``).
            self._select_itself(session.active_worktree_id)
            self._chosen = True
        elif self._known(self.selected_worktree):
            if self.selected_worktree == self._renamed_to:
                self._renamed_to = None  # listed now under the new id
        elif self.selected_worktree is None or self.selected_worktree != self._renamed_to:
            # Gone (removed, or renamed by another client): the session's active one
            # (the store moves it with a rename), else the first. Not a worktree this
            # UI just renamed: gitwatch lists its new id in a moment.
            active = session.active_worktree_id
            if self.selected_worktree is not None and self._lost_selection is None:
                self._lost_selection = (self.selected_worktree, self._picks)
            self._select_itself(active if self._known(active) else self._first_worktree())
        self._render_sidebar()
        self._render_health()
        await self._render_layout(session)
        if self.review_shown and (
            self._review_stale or self._review_for != self.highlighted_worktree()
        ):
            self._review_stale = False
            self._load_review()

    def _select_itself(self, worktree_id: str | None) -> None:
        """A selection the UI makes (the saved one restored, one listed again, one gone):
        the sidebar's cursor goes with it unless the user moved it elsewhere. It stayed
        on the row first drawn, and ``^G w`` (which acts on the cursor's row) then asked
        to remove that one (CI: test_folders_notify)."""
        if self._cursor is None or self._cursor == self.selected_worktree:
            self._move_cursor(worktree_id)
        self.selected_worktree = worktree_id

    def _adopt_orphans(self, session: WorkspaceSessionState) -> None:
        """Give every running terminal no layout shows its pane (``actors/ui/adoption.py``),
        saved in the store: one write for all of them, one at a time."""
        backend = self.backend
        if self._adopting or not (backend.alive["store"] and backend.alive["ptyd"]):
            return
        shown = {key for _wt, key in tab_groups.all_pane_keys(session)}
        found = orphans((backend.sessions or {}).values(), shown, self._adoption_refused)
        if found:
            self._adopting = True
            self.guest.start_soon(self._adopt, found)

    async def _adopt(self, found: Mapping[str, list[Adoptee]]) -> None:
        def adopt(s: WorkspaceSessionState) -> WorkspaceSessionState:
            for worktree_id, terminals in found.items():
                s = tab_groups.adopt_terminals(s, worktree_id, terminals)
            return s

        from orca.contracts import store

        try:
            await self.backend_edit(adopt)
            # What the store did not take (a retired pane whose terminal is ending) is
            # not asked for again.
            view: store.SessionView = await self.backend.invoke(
                "store", store.SESSION_GET, store.SessionGetArgs()
            )
        except OrcaError as exc:
            self.report(f"a terminal's pane could not be saved: {exc.message}")
        else:
            kept = {key for _wt, key in tab_groups.all_pane_keys(view.session)}
            self._adoption_refused.update(
                key for terminals in found.values() for key, _l, _c in terminals if key not in kept
            )
        finally:
            self._adopting = False

    def on_resize(self, event: events.Resize) -> None:
        self.arrange(event.size.width)

    def arrange(self, width: int | None = None) -> None:
        """The sidebar's width and the review's place for the terminal's width
        (``actors/ui/arrangement.py``)."""
        plan = arrangement.arrange(self.size.width if width is None else width, self.review_shown)
        self.query_one("#side").styles.width = plan.sidebar_width
        self.query_one("#work").set_class(plan.review == "below", "stacked")
        review = self.query_one("#review")
        review.set_class(plan.review != "hidden", "shown")
        review.styles.width = plan.review_width if plan.review == "beside" else "1fr"

    def action_vault_search(self) -> None:
        vault_view.open_search(self)

    def action_runs(self) -> None:
        runs_view.open_runs(self)

    async def action_quit(self) -> None:
        self.exit()


if TYPE_CHECKING:

    def _hosts(app: OrcaApp) -> tuple[PaneHost, WidgetHost]:
        """The app is what its panes and widgets ask of it (checked by mypy only)."""
        return app, app
