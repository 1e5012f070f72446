"""``orca ui`` headless (Textual's pilot) against a real Orca tree (issue 17)."""

from __future__ import annotations

import json
import subprocess
from pathlib import Path
from typing import Any

from support.journey import FAKE_AGENT

from actors.ui.app import OrcaApp
from actors.ui.widgets import Sidebar, sidebar_prompt
from orca.client.sync import invoke
from orca.contracts import hooks, ptyd, store
from orca.model import tab_groups as layout
from orca.model.tabs import TerminalPaneSplit
from orca.paths import resolve_paths


async def ready(app: OrcaApp) -> None:
    """Every actor answered and both worktrees are listed."""
    await app.wait_for(lambda: all(app.backend.alive.values()))
    await app.wait_for(lambda: {w.name for w in app.items()} >= {"alpha", "beta"})


def stored_session() -> Any:
    return invoke(store.SESSION_GET, store.SessionGetArgs())


def tree_shape(session: Any, worktree_id: str) -> list[tuple[str, list[str]]]:
    """(tab id, pane keys) per terminal tab of a worktree, in strip order."""
    return [
        (t.id, layout.pane_keys(session, t.id)) for t in layout.terminal_tabs(session, worktree_id)
    ]


def test_navigate_launch_a_shell_type_and_read(tree: Any, drive: Any) -> None:
    """The sidebar lists both worktrees; a shell launched in beta echoes what is typed."""
    if True:
        app = OrcaApp(resolve_paths(), bell=False)

        async def scenario(app: OrcaApp, pilot: Any) -> None:
            await app.wait_for(lambda: {w.name for w in app.items()} >= {"alpha", "beta"})
            await app.wait_for(lambda: all(app.backend.alive.values()))
            beta = tree.worktrees["beta"]
            sidebar = app.query_one(Sidebar)
            sidebar.focus()
            while sidebar.highlighted_option is None or sidebar.highlighted_option.id != beta:
                await pilot.press("down")
            await pilot.press("enter")
            await app.wait_for(lambda: app.selected_worktree == beta)
            await pilot.press("ctrl+g", "t")
            await app.wait_for(
                lambda: len(app.pane_views()) == 1 and app.pane_views()[0].session_id is not None
            )
            (view,) = app.pane_views()
            row = app.backend.session_for_pane(view.pane_key)
            assert row is not None and row.worktree_id == beta and row.cwd == tree.paths["beta"]
            view.focus()
            await pilot.press(*"echo ui-$((6*7))", "enter")
            await app.wait_for(lambda: "ui-42" in view.screen_text())

        drive(app, scenario)


def test_splits_and_tabs_are_saved_and_restored(tree: Any, drive: Any) -> None:
    """Two tabs (the first split in two) live in the store's session; a new UI shows them."""
    alpha = tree.worktrees["alpha"]
    shape: list[tuple[str, list[str]]] = []
    bound: dict[str, str] = {}

    async def build(app: OrcaApp, pilot: Any) -> None:
        await ready(app)
        app.select_worktree(alpha, focus_terminal=True)
        await pilot.press("ctrl+g", "t")
        await app.wait_for(
            lambda: len(app.pane_views()) == 1 and app.pane_views()[0].session_id is not None
        )
        app.pane_views()[0].focus()
        await pilot.press("ctrl+g", "v")
        await app.wait_for(
            lambda: len(app.pane_views()) == 2 and all(v.session_id for v in app.pane_views())
        )
        await pilot.press("ctrl+g", "t")
        await app.wait_for(lambda: len(tree_shape(app.backend.session(), alpha)) == 2)
        await app.wait_for(
            lambda: len(app.pane_views()) == 1 and app.pane_views()[0].session_id is not None
        )
        shape.extend(tree_shape(app.backend.session(), alpha))
        for _tab, keys in shape:
            for key in keys:
                row = app.backend.session_for_pane(key)
                assert row is not None and row.running
                bound[key] = row.session_id
        await pilot.press("ctrl+g", "left_square_bracket")  # back to the split tab
        await app.wait_for(lambda: len(app.pane_views()) == 2)

    drive(OrcaApp(resolve_paths(), bell=False), build)
    assert [len(keys) for _tab, keys in shape] == [2, 1]
    saved = stored_session()
    assert tree_shape(saved.session, alpha) == shape, "the layout is the store's"
    assert layout.active_tab(saved.session, alpha).id == shape[0][0]
    root = saved.session.terminal_layouts_by_tab_id[shape[0][0]].root
    assert isinstance(root, TerminalPaneSplit) and root.direction == "vertical"

    async def restored(app: OrcaApp, pilot: Any) -> None:
        await ready(app)
        await app.wait_for(lambda: app.selected_worktree == alpha)
        await app.wait_for(lambda: {v.pane_key for v in app.pane_views()} == set(shape[0][1]))
        for view in app.pane_views():
            assert view.session_id == bound[view.pane_key], "the same live terminal"
        await app.wait_for(
            lambda: all("#" in v.screen_text() or "$" in v.screen_text() for v in app.pane_views())
        )

    drive(OrcaApp(resolve_paths(), bell=False), restored)


def test_light_follows_a_hook_and_a_closed_pane_is_retired(tree: Any, drive: Any) -> None:
    """An agent's hooks turn its light working → done (unread); closing its pane retires it."""
    tree.user.ok("hooks", "install", "claude")
    beta = tree.worktrees["beta"]
    seen: dict[str, Any] = {}

    async def scenario(app: OrcaApp, pilot: Any) -> None:
        await ready(app)
        app.select_worktree(beta, focus_terminal=True)
        await pilot.press("ctrl+g", "n")
        screen = app.screen
        screen.query_one("#launch-preset").value = "custom"
        screen.query_one("#launch-command").value = f"{FAKE_AGENT} {tree.user.hook_script}"
        screen.submit()

        def light() -> Any:
            item = app.item(beta)
            return item.lights[0] if item and item.lights else None

        await app.wait_for(lambda: light() is not None and light().state == "working", 20)
        pane = light().pane_key
        seen["pane"] = pane

        def screen() -> str:
            view = app.pane_view(pane)
            return "" if view is None else view.screen_text()

        await app.wait_for(lambda: "agent: working" in screen())
        app.focused_pane = "elsewhere"  # looking at another pane: the result stays unread
        app.pane_view(pane).send(b"go\r")
        await app.wait_for(
            lambda: light().state == "done" and light().unread and light().needs_me, 20
        )
        seen["notified"] = [n.message for n in app._notifications]
        app.pane_view(pane).focus()
        await pilot.press("ctrl+g", "x")
        await pilot.press("y")
        await app.wait_for(lambda: app.backend.session_for_pane(pane) is None, 20)
        await app.wait_for(lambda: pane not in app.backend.status.rows)
        await app.wait_for(
            lambda: not any(pane in keys for _t, keys in tree_shape(app.backend.session(), beta))
        )
        await app.wait_for(lambda: app.item(beta) is not None and not app.item(beta).lights)

    drive(OrcaApp(resolve_paths(), bell=False), scenario)
    pane = seen["pane"]
    assert any("is done" in m for m in seen["notified"]), seen["notified"]
    assert not any(pane in keys for _t, keys in tree_shape(stored_session().session, beta))
    late = invoke(
        hooks.INGEST_OSC,
        hooks.IngestOscArgs(
            pane_key=pane, payload=json.dumps({"state": "working"}), worktree_id=beta
        ),
    )
    assert (late.outcome, late.reason) == ("rejected", "retired_pane")
    assert not [s for s in invoke(ptyd.LIST, ptyd.ListArgs()).sessions if s.pane_key == pane]


def commit_all(path: Path, message: str) -> None:
    git = ["git", "-C", str(path), "-c", "user.name=t", "-c", "user.email=t@t"]
    subprocess.run([*git, "add", "-A"], check=True)
    subprocess.run([*git, "commit", "-qm", message], check=True)


def test_review_lists_changed_files_and_follows_gitwatch(tree: Any, drive: Any) -> None:
    """The review pane shows alpha's changes against main; a new change appears by itself;
    a commit on alpha shows in the sidebar as one commit ahead of its base."""
    alpha = tree.worktrees["alpha"]
    path = Path(tree.paths["alpha"])

    def sidebar_text() -> str:
        item = app.item(alpha)
        return "" if item is None else sidebar_prompt(item, stale=False).plain

    async def scenario(app: OrcaApp, pilot: Any) -> None:
        await ready(app)
        app.select_worktree(alpha, focus_terminal=False)
        (path / "README").write_text("hello\nchanged\n")
        await pilot.press("ctrl+g", "d")
        await app.wait_for(lambda: [f.path for f in app.review_files] == ["README"], 20)
        assert "+changed" in app.review_diff
        (path / "new.py").write_text("print('x')\n")
        await app.wait_for(lambda: {f.path for f in app.review_files} == {"README", "new.py"}, 20)
        assert "↑" not in sidebar_text()
        commit_all(path, "ahead by one")
        await app.wait_for(lambda: "↑1" in sidebar_text(), 20)
        assert "↓" not in sidebar_text()

    app = OrcaApp(resolve_paths(), bell=False)
    drive(app, scenario)
