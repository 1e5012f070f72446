"""The UI's commands: the leader key (Ctrl-G, then one key: ``LEADER_ACTIONS``; in the
sidebar the same keys work bare), the command palette's entries, and the commands
that ask another process (an acknowledgement, a restart, the hooks installed).
"""

from __future__ import annotations

import sys
from collections.abc import Iterable
from pathlib import Path
from typing import Any

from textual import events
from textual.app import SystemCommand
from textual.screen import Screen

from actors.ui.base import AppBase
from actors.ui.hook_offers import hook_offers
from actors.ui.terminal_view import LEADER_KEY
from actors.ui.widgets import Sidebar
from actors.ui.workspace import DETACH_HINT

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


class CommandsMixin(AppBase):
    """The leader keys and the command palette."""

    def action_ack(self) -> None:
        pane = self.active_pane()
        self.guest.start_soon(self._quiet, self.backend.ack(pane))

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
            "Search transcripts",
            "every agent's words, newest first (^G f)",
            self.action_vault_search,
        )
        yield SystemCommand(
            "Runs",
            "one task, N agents: compare the variants, merge the best (^G e)",
            self.action_runs,
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
