"""Folder workspaces in the sidebar (store's route A records, seed 01 §5.1) and the
desktop notification (OSC 9) when an agent becomes blocked or done (issue 17)."""

from __future__ import annotations

import asyncio
import uuid
from pathlib import Path
from typing import Any

from actors.ui.app import OrcaApp
from actors.ui.dialogs import ConfirmScreen
from actors.ui.view import WorktreeItem, build_sidebar
from actors.ui.widgets import osc9
from orca.client.sync import invoke
from orca.contracts import hooks, ptyd, store
from orca.model import tab_groups as layout
from orca.model.agent_status import AgentStatusRow
from orca.model.panes import make_pane_key
from orca.model.types_repo import FolderWorkspace
from orca.paths import resolve_paths

NOW = 1_000_000
OSC_WORKING = """printf '\\033]9999;{"state":"working","agent":"claude"}\\007'"""
GROUP = "g1"


def folder(fid: str, name: str, archived: bool = False) -> FolderWorkspace:
    return FolderWorkspace(
        id=fid,
        project_group_id=GROUP,
        name=name,
        folder_path=f"/data/{name}",
        is_archived=archived,
    )


def test_folder_workspaces_are_listed_by_group_with_their_lights() -> None:
    row = AgentStatusRow(
        pane_key="t9:p",
        worktree_id="folder:f1",
        state="working",
        source="hook",  # type: ignore[arg-type]
        updated_at_ms=NOW - 10,
        state_since_ms=NOW - 10,
        agent="claude",
    )
    groups = build_sidebar(
        repos={},
        git={},
        display_names={},
        rows={"t9:p": row},
        fates=(),
        sessions=None,
        now_ms=NOW,
        folders={f.id: f for f in (folder("f1", "notes"), folder("f2", "old", archived=True))},
        group_names={GROUP: "research"},
    )
    (group,) = groups
    assert group.name == "research (folders)"
    (item,) = group.worktrees
    assert (item.worktree_id, item.name) == ("folder:f1", "notes")
    assert [(li.pane_key, li.state) for li in item.lights] == [("t9:p", "working")]
    assert not build_sidebar(
        repos={},
        git={},
        display_names={},
        rows={},
        fates=(),
        sessions=None,
        now_ms=NOW,
        folders={"f1": folder("f1", "notes")},
        filter_text="nothing like it",
    )


def test_osc9_is_one_clean_string() -> None:
    assert osc9("claude in alpha is done") == "\x1b]9;claude in alpha is done\x07"
    assert osc9("evil\x07\x1b]52;c;x\x1b\\ name") == "\x1b]9;evil]52;c;x\\ name\x07"
    assert osc9("4;1;50").startswith("\x1b]9;orca: "), "not ConEmu's progress report"
    assert len(osc9("x" * 10_000)) < 300
    assert osc9("naïve ✓") == "\x1b]9;naïve ✓\x07"


class RecordingApp(OrcaApp):
    """The app, with what it writes to the real terminal recorded (headless: no terminal)."""

    def __init__(self, *args: Any, **kw: Any) -> None:
        super().__init__(*args, **kw)
        self.written: list[str] = []

    def write_to_terminal(self, data: str) -> None:
        self.written.append(data)


def test_a_folder_workspace_is_listed_and_its_blocked_agent_notifies(
    tree: Any, drive: Any, tmp_path: Path
) -> None:
    """A folder workspace added to the store appears by itself under its group; a shell
    tab opens in it (session ``folder:<id>@@<hex>``, cwd the folder) and answers typed
    input; its agent turning blocked posts one OSC 9 notification."""
    empty = WorktreeItem("", "", "", "", None, "idle", (), 0)
    data = tmp_path / "notes folder"
    data.mkdir()
    seen: dict[str, Any] = {}

    async def scenario(app: RecordingApp, pilot: Any) -> None:
        await app.wait_for(lambda: all(app.backend.alive.values()))
        # added while the UI runs, by the CLI as a user does
        worktree_id = await asyncio.to_thread(tree.user.add_folder, data, "notes", "research")
        seen["worktree"] = worktree_id
        await app.wait_for(lambda: app.item(worktree_id) is not None, 20)
        group = next(
            g for g in app.groups if any(w.worktree_id == worktree_id for w in g.worktrees)
        )
        seen["group"] = group.name
        app.select_worktree(worktree_id, focus_terminal=True)
        await pilot.press("ctrl+g", "t")  # a shell tab in the folder, like in a worktree
        await app.wait_for(
            lambda: len(app.pane_views()) == 1 and app.pane_views()[0].session_id is not None, 20
        )
        (view,) = app.pane_views()
        assert str(view.session_id).startswith(worktree_id + "@@")
        row = app.backend.session_for_pane(view.pane_key)
        assert row is not None and (row.worktree_id, row.cwd) == (worktree_id, str(data))
        assert layout.terminal_tabs(app.backend.session(), worktree_id), "saved in the session"
        await app.wait_for(lambda: view.feed is not None and view.feed.attached.is_set(), 20)
        view.focus()
        await pilot.press(*"echo in-$((6*7)) $PWD", "enter")
        await app.wait_for(lambda: f"in-42 {data}" in view.screen_text(), 20)
        seen["bound"] = (view.pane_key, view.session_id)
        await app.wait_for(lambda: (app.item(worktree_id) or empty).sessions == 1, 20)
        # Its agent's OSC status (typed into the shell) lights the folder's pane.
        invoke(
            ptyd.WRITE,
            ptyd.WriteArgs(session_id=str(view.session_id), text=OSC_WORKING + "\r"),
        )
        await app.wait_for(
            lambda: (
                ("working", view.pane_key)
                in {(li.state, li.pane_key) for li in (app.item(worktree_id) or empty).lights}
            ),
            20,
        )
        pane = make_pane_key("t-folder", str(uuid.uuid4()))
        for state in ("working", "attention"):
            invoke(
                hooks.INGEST_STRUCTURED,
                hooks.IngestStructuredArgs(
                    pane_key=pane,
                    worktree_id=worktree_id,
                    state=state,  # type: ignore[arg-type]
                    structured_host="test",
                    agent="claude",
                ),
            )
            await app.wait_for(
                lambda s=state: any(
                    li.state == ("blocked" if s == "attention" else s)
                    for li in (app.item(worktree_id) or empty).lights
                ),
                20,
            )
        await app.wait_for(lambda: bool(app.written), 10)
        seen["written"] = list(app.written)

    drive(RecordingApp(resolve_paths(), bell=True), scenario)
    assert seen["group"] == "research (folders)"
    assert seen["written"] == ["\x1b]9;orca: claude in notes is blocked\x07"]

    async def restored(app: OrcaApp, pilot: Any) -> None:
        """A new UI comes back to the folder's tab, on the same live terminal; removing
        the folder workspace from the UI ends its agent and keeps the folder."""
        worktree_id = seen["worktree"]
        await app.wait_for(lambda: app.selected_worktree == worktree_id, 20)
        await app.wait_for(lambda: [v.pane_key for v in app.pane_views()] == [seen["bound"][0]], 20)
        (view,) = app.pane_views()
        assert view.session_id == seen["bound"][1], "the same live terminal"
        await app.wait_for(lambda: f"in-42 {data}" in view.screen_text(), 20)
        # ^G w on a folder workspace: its agent ended, the record removed, the folder kept
        await pilot.press("ctrl+g", "w")
        await app.wait_for(lambda: isinstance(app.screen, ConfirmScreen))
        assert "folder workspace" in app.screen.question
        await pilot.press("y")
        await app.wait_for(lambda: app.item(worktree_id) is None, 20)
        assert not invoke(store.FOLDER_WORKSPACE_LIST).folder_workspaces
        assert data.is_dir()
        session_id = seen["bound"][1]
        await app.wait_for(
            lambda: (
                not any(
                    s.session_id == session_id and s.running
                    for s in (app.backend.sessions or {}).values()
                )
            ),
            20,
        )
        assert not app.last_error, app.last_error

    drive(OrcaApp(resolve_paths(), bell=False), restored)
