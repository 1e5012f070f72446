"""``orca ui``: the Textual application (a client only; ARCHITECTURE §1).

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
Tab...). The leader key Ctrl-G hands the next key to the UI (``LEADER_ACTIONS``); in
the sidebar the same letters work without it. The zoom (leader ``z``) hands the real
terminal to ``orca term attach`` for the pane (full speed, raw); its detach key
Ctrl-] returns to the UI.
"""

from __future__ import annotations

import asyncio
import logging
import os
import subprocess
import sys
import time
from collections.abc import Callable, Iterable, Mapping
from functools import partial
from pathlib import Path
from typing import Any

from rich.text import Text
from textual import events
from textual.app import App, ComposeResult, SystemCommand
from textual.containers import Container, Horizontal, Vertical, VerticalScroll
from textual.css.query import NoMatches
from textual.screen import Screen
from textual.widget import Widget
from textual.widgets import Input, OptionList, Static
from textual.widgets.option_list import Option

from actors.ui import arrangement, health, runs_view, vault_view
from actors.ui.adoption import Adoptee, orphans, tab_label
from actors.ui.approvals import Approvals, answer_dialog
from actors.ui.backend import ACTORS, Backend
from actors.ui.dialogs import AskScreen, ChoiceScreen, ConfirmScreen, LaunchRequest, LaunchScreen
from actors.ui.fastpath import route_input
from actors.ui.frames import HEAP_SETTLE_S, FrameClock, settle_heap
from actors.ui.hook_offers import hook_offers
from actors.ui.removal import loss_details, refusal_text, removal_question
from actors.ui.runtime import TrioGuest
from actors.ui.terminal_view import LEADER_KEY, TerminalView, ended_note
from actors.ui.view import (
    FOLDER_PREFIX,
    RepoGroup,
    WorktreeItem,
    build_remote_groups,
    build_sidebar,
    next_needing_me,
)
from actors.ui.widgets import (
    FilterBox,
    GroupView,
    Sidebar,
    osc9,
    sidebar_prompt,
    strip_text,
)
from orca.model import tab_groups
from orca.model.ids import split_worktree_id_for_filesystem
from orca.model.panes import make_pane_key, parse_pane_key
from orca.model.session import WorkspaceSessionState
from orca.paths import OrcaPaths
from orca.review import ChangedFile, changed_files, file_diff, uncommitted
from orca.wire.errors import Conflict, OrcaError

# Leader (Ctrl-G) + key → action; the same keys work bare while the sidebar has focus.
LEADER_ACTIONS: dict[str, str] = {
    "n": "new_agent",
    "t": "new_tab",
    "v": "split('vertical')",
    "h": "split('horizontal')",
    "x": "close_pane",
    "z": "zoom",
    "j": "next_needs_me",
    "a": "ack",
    "r": "rename_worktree",
    "w": "remove_worktree",
    "o": "toggle_order",
    "d": "toggle_review",
    "f": "vault_search",
    "e": "runs",
    "slash": "filter",
    "b": "focus_sidebar",
    "tab": "focus_next_pane",
    "s": "split_group('vertical')",
    "u": "split_group('horizontal')",
    "m": "move_tab",
    "g": "focus_next_group",
    "right_square_bracket": "next_tab",
    "left_square_bracket": "previous_tab",
    "p": "command_palette",
    "q": "quit",
    LEADER_KEY: "send_leader",
}
log = logging.getLogger(__name__)
DETACH_HINT = "Ctrl-] returns to orca ui"


class OrcaApp(App[None], inherit_bindings=False):
    """The terminal UI over one Orca home."""

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

    def __init__(self, paths: OrcaPaths, *, bell: bool = True, settle_heap: bool = False) -> None:
        super().__init__()
        self.paths = paths
        self.bell_enabled = bell
        self._settle_heap = settle_heap  # the process is this app's own (``orca ui``)
        self.guest = TrioGuest(on_crash=self._runtime_crashed)
        self.frames = FrameClock()  # when each pane's output is drawn (actors/ui/frames.py)
        self.backend = Backend(paths, self._on_backend_change)
        self.approvals: Approvals | None = None  # issue 27: held permission requests
        self.leader_pending = False
        self.filter_text = ""
        self.needs_me_first = False
        self.selected_worktree: str | None = None
        self._chosen = False  # the user picked a worktree (else: the session's active one)
        self._picks = 0  # how many times the user picked one
        self._renamed_to: str | None = None  # the new id of the worktree renamed here
        self._focus_terminal = False
        self.focused_pane: str | None = None
        self.groups: list[RepoGroup] = []
        # Remote hosts' groups (read-only rows, never selectable; issue 18).
        self.remote_groups: list[RepoGroup] = []
        self._groups_shape: Any = None  # (worktree, tab-group tree) the widgets show
        self.group_views: dict[str | None, GroupView] = {}
        self._focus_target: str | None = None  # a pane to focus once it is shown
        self._repairing = False  # a normalize_groups write is on its way
        self._adopting = False  # an adoption write is on its way (actors/ui/adoption.py)
        self._adoption_refused: set[str] = set()  # pane keys the store would not take
        # (worktree, store revision) a repair was refused at: not tried again until the
        # session changes (a read-only store would otherwise be asked on every render)
        self._repair_refused: tuple[str, int] | None = None
        self._edit_lock: Any = None  # trio.Lock: this UI's session edits, one at a time
        self._sidebar_signature: Any = None
        self._cursor: str | None = None  # the sidebar row the cursor is on
        self._cursor_request: str | None = None  # where the UI moves it (it opened one)
        self._rendered_highlight: int | None = None  # the sidebar index a render left
        self._lights: dict[str, str] | None = None
        self._refresh_scheduled = False
        self._refreshing = False
        self._again = False
        self._tick = asyncio.Event()
        self.renders = 0
        self._health: dict[str, str] = {}
        self.health_log: list[tuple[str, str]] = []  # (actor, new state), in order seen
        self.last_error = ""
        self.zoom_command: Callable[[list[str]], int] | None = None  # tests swap the raw attach
        self.review_shown = False
        self._review_stale = False
        self._review_for: str | None = None
        self._review_point: str | None = None
        self.review_files: list[ChangedFile] = []
        self.review_diff = ""

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

    def poke(self, *, view: bool = False) -> None:
        """Wake waiters (tests, bench); with ``view``, schedule one view refresh."""
        self._tick.set()
        if view and not self._refresh_scheduled:
            self._refresh_scheduled = True
            self.call_later(self.refresh_view)

    async def wait_for(self, predicate: Callable[[], bool], timeout: float = 10.0) -> None:
        """Wait until ``predicate()`` holds, re-checked after every change (no polling)."""
        loop = asyncio.get_running_loop()
        deadline = loop.time() + timeout
        while not predicate():
            self._tick.clear()
            remaining = deadline - loop.time()
            if remaining <= 0:
                raise TimeoutError("condition not met")
            try:
                # asyncio.timeout, not wait_for: no task per wait (a wake-up is one loop
                # turn, not three; bench/ui.py times echoes through this)
                async with asyncio.timeout(remaining):
                    await self._tick.wait()
            except TimeoutError:
                if not predicate():
                    raise TimeoutError("condition not met") from None

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
        if not self._chosen and self._known(session.active_worktree_id):
            # Until the user picks one, show the worktree the saved session had active.
            self.selected_worktree = session.active_worktree_id
        elif self._known(self.selected_worktree):
            if self.selected_worktree == self._renamed_to:
                self._renamed_to = None  # listed now under the new id
        elif self.selected_worktree is None or self.selected_worktree != self._renamed_to:
            # Gone (removed, or renamed by another client): the session's active one
            # (the store moves it with a rename), else the first. Not a worktree this
            # UI just renamed: gitwatch lists its new id in a moment.
            active = session.active_worktree_id
            self.selected_worktree = active if self._known(active) else self._first_worktree()
        self._render_sidebar()
        self._render_health()
        await self._render_layout(session)
        if self.review_shown and (
            self._review_stale or self._review_for != self.highlighted_worktree()
        ):
            self._review_stale = False
            self._load_review()

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

    def _known(self, worktree_id: str | None) -> bool:
        return worktree_id is not None and any(
            w.worktree_id == worktree_id for g in self.groups for w in g.worktrees
        )

    def _first_worktree(self) -> str | None:
        for group in self.groups:
            for item in group.worktrees:
                return item.worktree_id
        return None

    def items(self) -> Iterable[WorktreeItem]:
        for group in self.groups:
            yield from group.worktrees

    def item(self, worktree_id: str | None) -> WorktreeItem | None:
        return next((w for w in self.items() if w.worktree_id == worktree_id), None)

    # -- sidebar -------------------------------------------------------------------------
    def _render_sidebar(self) -> None:
        stale = self._sidebar_stale()
        # The cursor stays where the user put it; it moves when the UI opens a worktree
        # itself (``_move_cursor``), or when its row is gone (to the one open).
        cursor = self._cursor_request or self._cursor or None
        if self._cursor_request is None and self._sidebar_moved():
            # A key that moved the cursor whose highlight message is not handled yet:
            # the list's own highlight is the user's (a rebuild in between put the
            # cursor back on the old row, issue 39: under load).
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
        old, self._cursor = self._cursor, event.option.id
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

    # -- health --------------------------------------------------------------------------
    def actor_health(self) -> dict[str, str]:
        """Per actor the UI follows: ``up``, ``down`` (silent), or orcad's word for it
        (``backoff``, ``starting``, ``failed``) while orcad answers and says it is not
        running (``actors/ui/health.py``)."""
        backend = self.backend
        return health.followed_health(ACTORS, backend.alive, backend.service)

    def service_health(self) -> dict[str, str]:
        """Every process ``orca status`` reports (orcad, the keeper, orcad's children)
        and its state: what the footer shows."""
        backend = self.backend
        return health.service_health(ACTORS, backend.alive, backend.service)

    def _render_health(self) -> None:
        every = self.service_health()
        for actor, state in every.items():
            previous = self._health.get(actor)
            if previous is not None and previous != state:
                self.health_log.append((actor, state))
            self._health[actor] = state
        # The banner is about what the UI shows: the actors it follows.
        followed = {actor: every[actor] for actor in ACTORS}
        banner = self.query_one("#banner", Static)
        down = [a for a, state in followed.items() if state != "up"]
        if len(down) == len(ACTORS):
            message = (
                "Orca service is not running (start it with `orca up`); reconnecting by itself…"
            )
        elif down:
            names = ", ".join(f"{health.shown_name(a)} ({followed[a]})" for a in down)
            message = f"{names}: showing what the UI last saw (stale); reconnecting…"
        else:
            message = ""
        if self.guest.error is not None and not self.guest.stopping:
            message = "orca ui: internal error, the view is frozen (see ui.log); restart orca ui"
        banner.update(message)
        banner.set_class(bool(message), "shown")
        needing = sum(1 for w in self.items() for light in w.lights if light.needs_me)
        hint = (
            "^G: leader (n new, v/h split, t tab, x close, z zoom, j next, a ack, d review,"
            " f search, e runs, p palette, s/u group, m move tab, g next group)"
        )
        leader = "LEADER… " if self.leader_pending else ""
        need = f"{needing} need you · " if needing else ""
        asks = self.approvals.status_text(self.pane_name) if self.approvals else ""
        asks = f"{asks} · " if asks else ""
        error = f" · {self.last_error}" if self.last_error else ""
        # Text, not markup: an error or a command in an ask may hold brackets.
        self.query_one("#status", Static).update(
            Text.assemble(
                f"{leader}{need}{asks}", health.footer_health(every), f"{error} · {hint}"
            )
        )

    # -- permission requests (issue 27; actors/ui/approvals.py) --------------------------------
    def pane_name(self, pane_key: str) -> str:
        """The worktree whose agent runs in ``pane_key`` (the pane key if none shows it)."""
        for item in self.items():
            if any(light.pane_key == pane_key for light in item.lights):
                return item.name
        return pane_key

    def action_answer_permission(self, request_id: str) -> None:
        approvals = self.approvals
        request = next((r for r in approvals.pending if r.request_id == request_id), None) if approvals else None
        if approvals is None or request is None:
            return

        def answered(behavior: Any) -> None:
            if behavior is not None:
                self.guest.start_soon(self._answer_permission, approvals, request_id, behavior)

        self.push_screen(answer_dialog(request, self.pane_name(request.pane_key)), answered)

    async def _answer_permission(self, approvals: Approvals, request_id: str, behavior: Any) -> None:
        try:
            self.notify(await approvals.answer(request_id, behavior))
        except OrcaError as exc:
            self.report(exc.message)

    def banner_text(self) -> str:
        return str(self.query_one("#banner", Static).render())

    def _notify_transitions(self) -> None:
        """Notify (and ring) when an agent *becomes* blocked or done. What the agents
        were doing when the UI started is the baseline, taken once hooks' rows are in:
        before, the first refresh (no rows yet) was the baseline, so every agent left
        blocked or done was announced again at every start."""
        if not self.backend.loaded("hooks"):
            return
        lights = {light.pane_key: light.state for w in self.items() for light in w.lights}
        previous, self._lights = self._lights, lights
        if previous is None:
            return
        for w in self.items():
            for light in w.lights:
                if (
                    light.state in ("blocked", "done")
                    and previous.get(light.pane_key) != light.state
                ):
                    message = f"{light.agent} in {w.name} is {light.state}"
                    if light.state == "blocked" and light.detail:  # where to answer it
                        message += f": {light.detail}"
                    self.notify(
                        message,
                        severity="warning" if light.state == "blocked" else "information",
                    )
                    if self.bell_enabled:
                        self.bell()
                        self.write_to_terminal(osc9(f"orca: {message}"))

    def write_to_terminal(self, data: str) -> None:
        """Raw output for the real terminal (a desktop notification), between frames."""
        driver = self._driver
        if driver is not None:
            driver.write(data)
            driver.flush()

    def pane_bell(self, pane_key: str) -> None:
        if pane_key != self.focused_pane and self.bell_enabled:
            self.bell()

    # -- layout --------------------------------------------------------------------------
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
            tab_groups.terminal_tabs(session, worktree_id, group_id) if worktree_id and group_id else []
        )
        tab = (
            tab_groups.active_tab(session, worktree_id, group_id) if worktree_id and group_id else None
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

    def pane_views(self) -> list[TerminalView]:
        return list(self.query(TerminalView))

    def pane_view(self, pane_key: str | None) -> TerminalView | None:
        return next((v for v in self.pane_views() if v.pane_key == pane_key), None)

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

    # -- requests (trio side) --------------------------------------------------------------
    async def _quiet(self, coro: Any) -> None:
        try:
            await coro
        except OrcaError as exc:
            self.report(exc.message)

    def report(self, message: str) -> None:
        self.last_error = message
        self.notify(message, severity="error")
        self.poke(view=True)

    def edit_session(self, edit: Callable[[WorkspaceSessionState], WorkspaceSessionState]) -> None:
        self.guest.start_soon(self._quiet, self.backend_edit(edit))

    async def backend_edit(
        self, edit: Callable[[WorkspaceSessionState], WorkspaceSessionState]
    ) -> WorkspaceSessionState:
        """Apply ``edit`` to the store's current session and save it (``session.patch``)."""
        import trio

        if self._edit_lock is None:
            self._edit_lock = trio.Lock()
        async with self._edit_lock:  # this UI's edits never overwrite each other
            return await self._edit_once(edit)

    async def _edit_once(
        self, edit: Callable[[WorkspaceSessionState], WorkspaceSessionState]
    ) -> WorkspaceSessionState:
        from orca.contracts import store

        for _attempt in range(3):
            view: store.SessionView = await self.backend.invoke(
                "store", store.SESSION_GET, store.SessionGetArgs()
            )
            edited = edit(view.session)
            if edited is view.session:
                return edited
            args = store.SessionPatchArgs(patch=tab_groups.layout_patch(edited), revision=view.revision)
            written = await self.backend.invoke("store", store.SESSION_PATCH, args)
            if written.applied == "full":
                return edited
        raise Conflict("the layout changed under us three times; try again")

    def worktree_cwd(self, worktree_id: str) -> str:
        facts = self.backend.git.get(worktree_id)
        if facts is not None:
            return facts.path
        if worktree_id.startswith(FOLDER_PREFIX):
            folder = self.backend.store.folders.get(worktree_id.removeprefix(FOLDER_PREFIX))
            if folder is not None:
                return folder.folder_path
        parts = split_worktree_id_for_filesystem(worktree_id)
        return parts.path if parts is not None else os.getcwd()

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

    @staticmethod
    def check_hosts_terminals(worktree_id: str) -> None:
        """ptyd files a session under a worktree id or a folder workspace's
        ``folder:<id>`` (orca.model.panes); anything else cannot hold a terminal: say
        so before any tab is made for it."""
        from orca.model.ids import is_terminal_owner_id

        if not is_terminal_owner_id(worktree_id):
            raise Conflict(f"{worktree_id!r} cannot hold a terminal (not a worktree or folder)")

    async def spawn_in_pane(
        self,
        worktree_id: str,
        pane_key: str,
        argv: list[str],
        type_after: str = "",
        split: str | None = None,
    ) -> None:
        self.check_hosts_terminals(worktree_id)
        cols, rows = self._pane_size(split)
        result = await self.backend.spawn(
            worktree_id, self.worktree_cwd(worktree_id), argv, pane_key, cols, rows
        )
        if type_after:
            from orca.contracts import ptyd

            await self.backend.invoke(
                "ptyd", ptyd.WRITE, ptyd.WriteArgs(session_id=result.session_id, text=type_after)
            )

    def shell(self) -> str:
        return os.environ.get("SHELL") or "/bin/sh"

    async def launch(self, request: LaunchRequest, worktree_id: str | None) -> None:
        """A new worktree (when named) and a new tab running the preset in it."""
        try:
            if request.worktree_name:
                repo_id = self._repo_for_new_worktree(worktree_id)
                if repo_id is None:
                    raise Conflict("add a repo first (`orca repo add PATH`)")
                created = await self.backend.create_worktree(
                    repo_id, request.worktree_name, request.base
                )
                worktree_id = created.worktree_id
            if worktree_id is None:
                raise Conflict("select a worktree first")
            self.check_hosts_terminals(worktree_id)
            argv, type_after = request.argv(self.shell())
            target = worktree_id
            result: dict[str, str] = {}

            def add(s: WorkspaceSessionState) -> WorkspaceSessionState:
                s, tab, leaf = tab_groups.add_terminal_tab(
                    s, target, request.label, int(time.time() * 1000)
                )
                result["pane"] = make_pane_key(tab, leaf)
                return s

            await self.backend_edit(add)
            self._chosen = True
            self._picks += 1
            self.selected_worktree = target
            self._move_cursor(target)
            self._focus_target = result["pane"]
            await self.spawn_in_pane(target, result["pane"], argv, type_after)
        except OrcaError as exc:
            self.report(exc.message)

    def _repo_for_new_worktree(self, worktree_id: str | None) -> str | None:
        item = self.item(worktree_id)
        if item is not None and item.repo_id in self.backend.store.repos:
            return item.repo_id
        repos = list(self.backend.store.repos)
        return repos[0] if repos else None

    def rerun_in(self, pane_key: str) -> None:
        """Start the pane's terminal again: the command of the one that ended there, or
        a shell in a pane that never had one."""
        worktree_id = self.selected_worktree
        if worktree_id is None:
            return
        row = self.backend.session_for_pane(pane_key)
        argv = list(row.argv) if row is not None and not row.running and row.argv else []
        self.guest.start_soon(
            self._quiet, self.spawn_in_pane(worktree_id, pane_key, argv or [self.shell()])
        )

    # -- actions -------------------------------------------------------------------------
    def action_new_agent(self) -> None:
        item = self.item(self.selected_worktree)
        target = self.selected_worktree

        def launched(request: LaunchRequest | None) -> None:
            if request is not None:
                self.guest.start_soon(self.launch, request, target)

        self.push_screen(LaunchScreen(item.name if item else "no worktree"), launched)

    def action_new_tab(self) -> None:
        if self.selected_worktree is not None:
            request = LaunchRequest("", "", "shell", (), "")
            self.guest.start_soon(self.launch, request, self.selected_worktree)

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
            (w.worktree_id for w in self.items() if any(li.pane_key == pane_key for li in w.lights)),
            None,
        )
        if worktree_id is None:
            worktree_id = next(
                (w for w, key in tab_groups.all_pane_keys(self.backend.session()) if key == pane_key), None
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
                s = tab_groups.select_tab(tab_groups.select_worktree(s, worktree_id), worktree_id, tab_id)
                return tab_groups.focus_pane(s, tab_id, leaf_id)

            self.edit_session(show)
        self.poke(view=True)
        return True

    def action_vault_search(self) -> None:
        vault_view.open_search(self)

    def action_runs(self) -> None:
        runs_view.open_runs(self)

    def action_ack(self) -> None:
        pane = self.active_pane()
        self.guest.start_soon(self._quiet, self.backend.ack(pane))

    def action_rename_worktree(self) -> None:
        item = self.item(self.highlighted_worktree())
        if item is None:
            return

        def renamed(name: str | None) -> None:
            if name:
                self.guest.start_soon(self._rename, item.worktree_id, name)

        self.push_screen(AskScreen(f"Rename worktree {item.name} to:", item.name), renamed)

    async def _rename(self, worktree_id: str, name: str) -> None:
        # Whether it was shown, asked now: gitwatch's events may reach a refresh before
        # the reply does, and the refresh moves the selection off an id that is gone.
        shown, picks = self.selected_worktree == worktree_id, self._picks
        try:
            renamed = await self.backend.rename_worktree(worktree_id, name)
        except OrcaError as exc:
            self.report(exc.message)
            return
        if shown and self._picks == picks:  # the user picked no other one meanwhile
            # The same worktree under its new id: keep showing it (and its terminals).
            self.selected_worktree = self._renamed_to = renamed.new_worktree_id
            self._move_cursor(renamed.new_worktree_id)
            self.poke(view=True)

    def highlighted_worktree(self) -> str | None:
        """The worktree the sidebar's cursor is on (what its keys act on), else the one
        open."""
        option = self.query_one(Sidebar).highlighted_option
        if option is not None and option.id is not None and self.item(option.id) is not None:
            return option.id
        return self.selected_worktree

    async def ask(self, screen: ChoiceScreen[Any]) -> Any:
        """Show ``screen`` and wait for its answer (from a trio task)."""
        import trio

        answered, answer = trio.Event(), []

        def got(value: Any) -> None:
            answer.append(value)
            self.guest.run_sync_soon(answered.set)

        self.push_screen(screen, got)
        await answered.wait()
        return answer[0]

    def action_remove_worktree(self) -> None:
        item = self.item(self.highlighted_worktree())
        if item is not None:
            self.guest.start_soon(self._ask_removal, item)

    async def _ask_removal(self, item: WorktreeItem) -> None:
        """The CLI's rules, asked (``actors/ui/removal.py``)."""
        live = [
            s
            for s in (self.backend.sessions or {}).values()
            if s.worktree_id == item.worktree_id and s.running
        ]
        commands = [tab_label(list(s.argv)) for s in live]
        if item.worktree_id.startswith(FOLDER_PREFIX):
            question = removal_question(
                item.name, "the folder workspace (the folder stays)", commands
            )
            if await self.ask(ConfirmScreen(question)):
                await self._remove(item, live, force=False)
            return
        lost = await uncommitted(self.worktree_cwd(item.worktree_id))
        if lost:
            await self._offer_force(item, live, refusal_text(item.name, len(lost), commands), lost)
        elif await self.ask(ConfirmScreen(removal_question(item.name, "the worktree", commands))):
            await self._remove(item, live, force=False)

    async def _offer_force(
        self, item: WorktreeItem, live: list[Any], why: str, lost: list[str]
    ) -> None:
        """A refused removal: kept unless ``f`` and then yes (the only forced path)."""
        choices: list[tuple[str, str, bool]] = [
            ("n", "keep it", False),
            ("f", "remove it anyway...", True),
        ]
        details = loss_details(lost)
        if not await self.ask(
            ChoiceScreen(why, choices, default=False, cancel=False, details=details)
        ):
            return
        sure = ConfirmScreen(
            f"Delete {item.name} and the changes listed for good? This cannot be undone.",
            details=details,
        )
        if await self.ask(sure):
            await self._remove(item, live, force=True)

    async def _remove(self, item: WorktreeItem, live: list[Any], force: bool) -> None:
        worktree_id = item.worktree_id
        try:
            # Its terminals end first (their panes retired), those no layout shows too.
            session = self.backend.session()
            for wt, pane_key in list(tab_groups.all_pane_keys(session)):
                if wt == worktree_id:
                    await self.backend.retire_pane(pane_key)
            for row in live:
                await self.backend.close_session(row.session_id)
            if worktree_id.startswith(FOLDER_PREFIX):
                # A folder workspace is the store's record, not a git worktree (its
                # terminals left are reaped by ptyd's GC once the record is gone).
                from orca.contracts import store

                folder_id = worktree_id.removeprefix(FOLDER_PREFIX)
                await self.backend.invoke(
                    "store", store.FOLDER_WORKSPACE_REMOVE, store.IdArgs(id=folder_id)
                )
                return
            await self.backend.remove_worktree(worktree_id, force=force)
        except Conflict as exc:
            if force:
                self.report(exc.message)
                return
            # gitwatch found what the UI did not (changes made since, a lock): its
            # refusal, with the same explicit way to force it.
            lost = await uncommitted(self.worktree_cwd(worktree_id)) or []
            await self._offer_force(item, [], f"{item.name} is not removed: {exc.message}", lost)
        except OrcaError as exc:
            self.report(exc.message)

    # -- review ----------------------------------------------------------------------------
    def action_toggle_review(self) -> None:
        """The review of the highlighted row (as ``r`` and ``w`` act on it), else of the
        one open; closed when it already shows that one."""
        target = self.highlighted_worktree()
        self.review_shown = not self.review_shown or self._review_for != target
        self.arrange()
        if self.review_shown:
            self._load_review()

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

    def review_base(self, worktree_id: str) -> str:
        item = self.item(worktree_id)
        repo = self.backend.store.repos.get(item.repo_id) if item else None
        if repo is not None and repo.worktree_base_ref:
            return repo.worktree_base_ref
        main = next(
            (
                f
                for f in self.backend.git.values()
                if item and f.repo_id == item.repo_id and f.is_main
            ),
            None,
        )
        return main.branch if main is not None and main.branch else "HEAD"

    def _load_review(self) -> None:
        worktree_id = self.highlighted_worktree()
        if worktree_id is None:
            return
        self._review_for = worktree_id
        self.guest.start_soon(self._review, worktree_id)

    async def _review(self, worktree_id: str) -> None:
        cwd, base = self.worktree_cwd(worktree_id), self.review_base(worktree_id)
        point, files, error = await changed_files(cwd, base)
        if worktree_id != self._review_for:
            return  # the cursor moved on meanwhile: that row's review is on its way
        self._review_point, self.review_files = point, files
        item = self.item(worktree_id)
        title = f"{item.name if item else worktree_id} vs {base}: {len(files)} changed"
        self.query_one("#review-title", Static).update(error or title)
        listing = self.query_one("#review-files", OptionList)
        listing.clear_options()
        listing.add_options([Option(f"{f.status} {f.path}", id=f.path) for f in files])
        if files:
            await self._show_diff(files[0].path)
        else:
            self.review_diff = ""
            self.query_one("#review-diff", Static).update("")
        self.poke()

    async def _show_diff(self, path: str) -> None:
        from rich.syntax import Syntax

        worktree_id = self._review_for
        if worktree_id is None or self._review_point is None:
            return
        diff = await file_diff(self.worktree_cwd(worktree_id), self._review_point, path)
        if worktree_id != self._review_for:
            return
        self.review_diff = diff
        # Wrapped: a line longer than the pane is shown whole, not cut at its edge.
        self.query_one("#review-diff", Static).update(
            Syntax(self.review_diff, "diff", theme="monokai", word_wrap=True)
        )
        self.poke()

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

    def action_restart_actor(self, name: str) -> None:
        self.guest.start_soon(self._quiet, self.backend.restart_actor(name))

    def action_install_hooks(self, agent: str) -> None:
        self.guest.start_soon(self._install_hooks, agent)

    async def _install_hooks(self, agent: str) -> None:
        import trio

        argv = [sys.executable, "-m", "orca.cli.main", "hooks", "install", agent]
        result = await trio.run_process(argv, capture_stdout=True, capture_stderr=True, check=False)
        text = (result.stdout or result.stderr).decode("utf-8", "replace").strip()
        if result.returncode:
            self.report(f"hooks install {agent}: {text}")
        else:
            self.notify(text or f"hooks installed for {agent}")
            self.poke()

    async def action_quit(self) -> None:
        self.exit()

    def get_system_commands(self, screen: Screen[Any]) -> Iterable[SystemCommand]:
        yield SystemCommand(
            "New agent", "new worktree (optional) + launch an agent", self.action_new_agent
        )
        yield SystemCommand("New shell tab", "a shell in a new tab", self.action_new_tab)
        yield SystemCommand(
            "Split side by side", "split the pane", lambda: self.action_split("vertical")
        )
        yield SystemCommand(
            "Split stacked", "split the pane", lambda: self.action_split("horizontal")
        )
        yield SystemCommand(
            "New tab group side by side",
            "split the tab strip: a new group on the right, a shell in it",
            lambda: self.action_split_group("vertical"),
        )
        yield SystemCommand(
            "New tab group below",
            "split the tab strip: a new group below, a shell in it",
            lambda: self.action_split_group("horizontal"),
        )
        yield SystemCommand(
            "Move tab to next group", "a group left empty closes", self.action_move_tab
        )
        yield SystemCommand("Next tab group", "focus it", self.action_focus_next_group)
        yield SystemCommand(
            "Close pane", "retire the pane (ends its terminal)", self.action_close_pane
        )
        yield SystemCommand("Zoom", f"raw attach to the pane; {DETACH_HINT}", self.action_zoom)
        yield SystemCommand("Next agent that needs me", "jump", self.action_next_needs_me)
        yield SystemCommand("Acknowledge", "mark the pane's agent as seen", self.action_ack)
        yield SystemCommand(
            "Rename worktree", "git branch + folder + name", self.action_rename_worktree
        )
        yield SystemCommand(
            "Remove worktree",
            "refuses with live agents unless confirmed",
            self.action_remove_worktree,
        )
        yield SystemCommand(
            "Review changes",
            "the worktree's changed files and their diff against its base (^G d)",
            self.action_toggle_review,
        )
        yield SystemCommand(
            "Search transcripts", "every agent's words, newest first (^G f)", self.action_vault_search
        )
        yield SystemCommand(
            "Runs", "one task, N agents: compare the variants, merge the best (^G e)", self.action_runs
        )
        yield SystemCommand("Toggle needs-me order", "sidebar order", self.action_toggle_order)
        # Every child orcad reports (orca restart NAME's names), not a list of our own.
        for actor in self.backend.actors:
            yield SystemCommand(
                f"Restart {actor}",
                "ask orcad to restart it",
                lambda a=actor: self.action_restart_actor(a),
            )
        for request in self.approvals.pending if self.approvals else ():
            yield SystemCommand(
                f"Answer: {self.pane_name(request.pane_key)} wants {request.tool_name}",
                request.summary or "a permission request",
                lambda r=request.request_id: self.action_answer_permission(r),
            )
        # Only agents whose hooks are not in place (as `orca hooks status` reads them).
        for offer in hook_offers(Path.home()):
            yield SystemCommand(
                offer.title, offer.help, lambda a=offer.agent: self.action_install_hooks(a)
            )
        yield SystemCommand("Quit", "leave orca ui (agents keep running)", self.exit)

    # -- keys ----------------------------------------------------------------------------
    async def leader_key(self, key: str) -> bool:
        """Feed one key to the leader machine; True when it was the UI's."""
        if key == LEADER_KEY and not self.leader_pending:
            self.leader_pending = True
            self._render_health()
            return True
        if not self.leader_pending:
            return False
        self.leader_pending = False
        self._render_health()
        action = LEADER_ACTIONS.get(key)
        if action is not None:
            await self.run_action(action)
        return True

    async def on_key(self, event: events.Key) -> None:
        if await self.leader_key(event.key):
            event.stop()
            event.prevent_default()
            return
        if isinstance(self.focused, Sidebar) and event.key in LEADER_ACTIONS:
            event.stop()
            await self.run_action(LEADER_ACTIONS[event.key])
