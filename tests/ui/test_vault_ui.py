"""`orca ui` and the vault (issue 25): a pane's agent cost on its tab, and the search
view that finds its words and opens its pane.

A real tree; the agent is a shell in a pane that runs the installed hook script the way
Claude Code does (SessionStart with ``session_id`` and ``transcript_path``), naming a
transcript the test wrote in Claude Code's format.
"""

from __future__ import annotations

import json
from pathlib import Path
from typing import Any

from support.ui_pilot import open_shell, ready
from support.vault import claude_assistant, claude_usage, claude_user, write_jsonl

from actors.ui.app import OrcaApp
from actors.ui.vault_view import SearchScreen
from orca.paths import resolve_paths


def test_a_panes_cost_is_on_its_tab_and_search_opens_its_pane(
    tree: Any, drive: Any, tmp_path: Path
) -> None:
    alpha, beta = tree.worktrees["alpha"], tree.worktrees["beta"]
    transcript = tmp_path / "transcripts" / "S-ui.jsonl"
    cwd = tree.paths["alpha"]
    write_jsonl(transcript, [
        claude_user("S-ui", cwd, "deploy the canary build"),
        # claude-opus-4-5: 1000 in * $5 + 1000 out * $25 = 30000 µ$ = $0.03
        claude_assistant("S-ui", cwd, message_id="u1", request_id="q1", model="claude-opus-4-5",
                         text="canary deployed", usage=claude_usage(1000, 1000)),
    ])  # fmt: skip
    payload = json.dumps({"hook_event_name": "SessionStart", "session_id": "S-ui",
                          "transcript_path": str(transcript), "source": "startup"})  # fmt: skip
    hook = tree.user.hook_script
    seen: dict[str, Any] = {}

    async def scenario(app: OrcaApp, pilot: Any) -> None:
        await ready(app)
        view = await open_shell(app, pilot, alpha)
        view.send(f"printf '%s' '{payload}' | {hook} claude\r".encode())
        await app.wait_for(lambda: view.pane_key in app.backend.vault.by_pane, 30)
        strips = lambda: [g.strip.plain for g in app.group_views.values()]  # noqa: E731
        await app.wait_for(lambda: any("$0.03" in s for s in strips()), 10)
        seen["strips"] = strips()
        app.select_worktree(beta, focus_terminal=False)  # somewhere else first
        await app.wait_for(lambda: app.selected_worktree == beta)
        await pilot.press("ctrl+g", "f")
        await app.wait_for(lambda: isinstance(app.screen, SearchScreen))
        search = app.screen
        assert isinstance(search, SearchScreen)
        search.query_one("#vault-query").value = "canary"
        await pilot.press("enter")
        await app.wait_for(lambda: search.searches == 1 and len(search.hits) == 2, 20)
        seen["hits"] = [(h.kind, h.pane_key, h.bound) for h in search.hits]
        await pilot.press("enter")  # the newest hit: the agent's answer
        await app.wait_for(lambda: not isinstance(app.screen, SearchScreen))
        await app.wait_for(
            lambda: app.selected_worktree == alpha and app.focused_pane == view.pane_key, 10
        )
        seen["pane"] = view.pane_key

    drive(OrcaApp(resolve_paths(), bell=False), scenario)
    assert any(" 1:" in s and "$0.03" in s for s in seen["strips"])
    assert seen["hits"] == [("assistant", seen["pane"], True), ("user", seen["pane"], True)]
