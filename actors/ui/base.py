"""What every part of ``orca ui`` shares (``actors/ui/app.py`` composes the parts):
the app's state, the wake-ups (:meth:`AppBase.poke`), the worktrees the sidebar lists,
and the requests every part makes (a saved session edit, a reported error).

Each part is a mixin over :class:`AppBase`, named by what a user does there:
``sidebar.py`` (render, filter, select), ``status.py`` (health, banner, footer,
notifications, permission answers), ``workspace.py`` (tab groups, splits, zoom,
focus), ``launch.py`` (new agents, shells, spawns), ``worktree_actions.py`` (rename,
remove, review) and ``commands.py`` (the leader keys, the command palette). What one
part calls of another is declared below for the type checker only: every method is
defined once, so Textual, which looks a handler up along the class's MRO, finds each
exactly once, as when the app was one class.
"""

from __future__ import annotations

import asyncio
import os
from collections.abc import Callable, Iterable
from typing import TYPE_CHECKING, Any

from textual.app import App

from actors.ui.approvals import Approvals
from actors.ui.backend import Backend
from actors.ui.frames import FrameClock
from actors.ui.runtime import TrioGuest
from actors.ui.terminal_view import TerminalView
from actors.ui.view import FOLDER_PREFIX, RepoGroup, WorktreeItem
from actors.ui.widgets import GroupView
from orca.model import tab_groups
from orca.model.ids import split_worktree_id_for_filesystem
from orca.model.session import WorkspaceSessionState
from orca.paths import OrcaPaths
from orca.review import ChangedFile
from orca.wire.errors import Conflict, OrcaError


class AppBase(App[None]):
    """The app's state and the requests every part makes (one app: ``OrcaApp``)."""

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
        # The selection is this UI's own: the user picked a worktree, or the saved
        # session's active one was shown once at start. Until then the UI follows the
        # session's; after, another client's tab change (which moves the session's
        # active worktree) does not move what this user is looking at.
        self._chosen = False
        self._picks = 0  # how many times the user picked one
        self._renamed_to: str | None = None  # the new id of the worktree renamed here
        # The selected worktree when it went missing from the listing, and the user's
        # pick count then: shown again if it comes back before the user picks another.
        self._lost_selection: tuple[str, int] | None = None
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

    def pane_views(self) -> list[TerminalView]:
        return list(self.query(TerminalView))

    def pane_view(self, pane_key: str | None) -> TerminalView | None:
        return next((v for v in self.pane_views() if v.pane_key == pane_key), None)

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
            args = store.SessionPatchArgs(
                patch=tab_groups.layout_patch(edited), revision=view.revision
            )
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

    if TYPE_CHECKING:
        # What one part calls of another, for the type checker (each is defined once,
        # in the file named).

        # app.py
        async def refresh_view(self) -> None: ...
        def arrange(self, width: int | None = None) -> None: ...
        def _runtime_crashed(self, exc: BaseException) -> None: ...
        def _on_backend_change(self, what: str) -> None: ...
        def action_vault_search(self) -> None: ...
        def action_runs(self) -> None: ...

        # sidebar.py
        def highlighted_worktree(self) -> str | None: ...
        def _move_cursor(self, worktree_id: str | None) -> None: ...
        def action_toggle_order(self) -> None: ...

        # status.py
        def _render_health(self) -> None: ...
        def pane_name(self, pane_key: str) -> str: ...
        def action_answer_permission(self, request_id: str) -> None: ...

        # workspace.py
        def _pane_size(self, split: str | None = None) -> tuple[int, int]: ...
        def active_pane(self) -> str | None: ...
        def show_pane(self, pane_key: str) -> bool: ...
        def attach_raw(self, session_id: str) -> None: ...
        def action_split(self, direction: str) -> None: ...
        def action_split_group(self, direction: str) -> None: ...
        def action_move_tab(self) -> None: ...
        def action_focus_next_group(self) -> None: ...
        def action_close_pane(self) -> None: ...
        def action_zoom(self) -> None: ...
        def action_next_needs_me(self) -> None: ...

        # launch.py
        @staticmethod
        def check_hosts_terminals(worktree_id: str) -> None: ...
        async def spawn_in_pane(
            self,
            worktree_id: str,
            pane_key: str,
            argv: list[str],
            type_after: str = "",
            split: str | None = None,
        ) -> None: ...
        def shell(self) -> str: ...
        def action_new_agent(self) -> None: ...
        def action_new_tab(self) -> None: ...

        # worktree_actions.py
        async def _show_diff(self, path: str) -> None: ...
        def action_rename_worktree(self) -> None: ...
        def action_remove_worktree(self) -> None: ...
        def action_toggle_review(self) -> None: ...
