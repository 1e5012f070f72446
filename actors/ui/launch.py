"""Launching: an agent (in a new worktree when one is named) or a shell in a new tab,
a terminal started again in a pane whose one ended, and the spawn every one of them
asks ptyd for.
"""

from __future__ import annotations

import os
import time

from actors.ui.base import AppBase
from actors.ui.dialogs import LaunchRequest, LaunchScreen
from orca.model import tab_groups
from orca.model.panes import make_pane_key
from orca.model.session import WorkspaceSessionState
from orca.wire.errors import Conflict, OrcaError


class LaunchMixin(AppBase):
    """New agents, new shells, spawns."""

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
