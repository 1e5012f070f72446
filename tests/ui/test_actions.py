"""The UI's actions against a real tree: rename and remove a worktree, restart an actor,
install agent hooks (issue 17, "Actions"). HOME is the test user's, never the real one."""

from __future__ import annotations

from pathlib import Path
from typing import Any

import pytest
from support.ui_pilot import open_shell, ready, sidebar_row
from textual.widgets import Static

from actors.ui.app import OrcaApp
from actors.ui.dialogs import AskScreen, ConfirmScreen
from actors.ui.widgets import Sidebar
from orca import integrations
from orca.client.sync import invoke
from orca.contracts import ptyd
from orca.paths import resolve_paths


def is_dir(path: Path) -> bool:
    return path.is_dir()


def command(app: OrcaApp, title: str) -> Any:
    """The palette's command of that title (what F1 lists), as a callable."""
    found = [c.callback for c in app.get_system_commands(app.screen) if c.title == title]
    assert len(found) == 1, title
    return found[0]


def test_rename_moves_the_worktree_and_its_live_terminal(tree: Any, drive: Any) -> None:
    """Leader r renames alpha to gamma: the sidebar follows, the shell keeps echoing."""
    alpha = tree.worktrees["alpha"]

    async def scenario(app: OrcaApp, pilot: Any) -> None:
        await ready(app)
        view = await open_shell(app, pilot, alpha)
        await pilot.press("ctrl+g", "r")
        await app.wait_for(lambda: isinstance(app.screen, AskScreen))
        app.screen.query_one("#ask-input").value = "gamma"
        await pilot.press("enter")

        # The rename renames the branch and the display name, then moves the folder
        # (the worktree's id is its path): the row may show "gamma" at alpha's path a
        # moment before it moves, so wait for the moved one.
        def moved() -> bool:
            return any(w.name == "gamma" and w.worktree_id != alpha for w in app.items())

        await app.wait_for(moved, 30)
        assert "alpha" not in {w.name for w in app.items()}
        gamma = next(w.worktree_id for w in app.items() if w.name == "gamma")
        assert gamma != alpha
        await app.wait_for(lambda: app.selected_worktree == gamma, 10)
        current = app.pane_view(view.pane_key) or view
        current.send(b"echo renamed-$((6*7))\r")
        await app.wait_for(
            lambda: "renamed-42" in (app.pane_view(view.pane_key) or view).screen_text(), 20
        )

    drive(OrcaApp(resolve_paths(), bell=False), scenario)
    assert not Path(tree.paths["alpha"]).exists()


def test_remove_refuses_with_live_agents_unless_confirmed(tree: Any, drive: Any) -> None:
    """Leader w on a worktree with a live shell asks first; "n" keeps everything, "y"
    ends the shell (the pane retired) and removes the worktree."""
    beta = tree.worktrees["beta"]
    path = Path(tree.paths["beta"])
    seen: dict[str, Any] = {}

    async def scenario(app: OrcaApp, pilot: Any) -> None:
        await ready(app)
        view = await open_shell(app, pilot, beta)
        row = app.backend.session_for_pane(view.pane_key)
        assert row is not None and row.running
        seen["pane"], seen["session"] = view.pane_key, row.session_id
        app.action_focus_sidebar()
        await pilot.press("w")
        await app.wait_for(lambda: isinstance(app.screen, ConfirmScreen))
        assert "1 live agent" in app.screen.question
        await pilot.press("n")
        await app.wait_for(lambda: not isinstance(app.screen, ConfirmScreen))
        view.send(b"echo still-$((40+2))\r")  # the shell lives, the worktree stays
        await app.wait_for(lambda: "still-42" in view.screen_text(), 20)
        assert is_dir(path) and app.item(beta) is not None
        await pilot.press("ctrl+g", "w")
        await app.wait_for(lambda: isinstance(app.screen, ConfirmScreen))
        await pilot.press("y")
        await app.wait_for(lambda: app.item(beta) is None, 30)
        await app.wait_for(lambda: app.backend.session_for_pane(seen["pane"]) is None, 20)

    drive(OrcaApp(resolve_paths(), bell=False), scenario)
    assert not path.exists()
    sessions = invoke(ptyd.LIST, ptyd.ListArgs()).sessions
    assert not [s for s in sessions if s.session_id == seen["session"] and s.running]


def test_restart_an_actor_from_the_palette(tree: Any, drive: Any) -> None:
    """ "Restart gitwatch": orcad restarts it (a new pid); the UI shows it up again."""

    async def scenario(app: OrcaApp, pilot: Any) -> None:
        await ready(app)
        await app.wait_for(lambda: "gitwatch" in app.backend.actors)
        old = app.backend.actors["gitwatch"].pid
        assert old is not None
        command(app, "Restart gitwatch")()
        await app.wait_for(lambda: app.backend.actors["gitwatch"].pid not in (None, old), 30)
        await app.wait_for(lambda: app.actor_health()["gitwatch"] == "up", 30)
        assert not app.last_error

    drive(OrcaApp(resolve_paths(), bell=False), scenario)


def test_install_hooks_from_the_palette(
    tree: Any, drive: Any, monkeypatch: pytest.MonkeyPatch
) -> None:
    """ "Install hooks: claude" wires Claude Code's config in HOME (the test user's); an
    unreadable Gemini config is reported and left as it was."""
    home = tree.user.user_home
    monkeypatch.setenv("HOME", str(home))
    claude = integrations.INTEGRATIONS["claude"].config_path(home)
    gemini = integrations.INTEGRATIONS["gemini"].config_path(home)
    gemini.parent.mkdir(parents=True, exist_ok=True)
    gemini.write_text("{not json", encoding="utf-8")

    async def scenario(app: OrcaApp, pilot: Any) -> None:
        await ready(app)
        command(app, "Install hooks: claude")()
        await app.wait_for(
            lambda: any("installed into" in n.message for n in app._notifications), 30
        )
        command(app, "Install hooks: gemini")()
        await app.wait_for(lambda: "hooks install gemini" in app.last_error, 30)

    drive(OrcaApp(resolve_paths(), bell=False), scenario)
    assert str(tree.user.hook_script) in claude.read_text(encoding="utf-8")
    assert gemini.read_text(encoding="utf-8") == "{not json"


def test_review_acts_on_the_highlighted_row_like_rename_and_remove(tree: Any, drive: Any) -> None:
    """With alpha open and the cursor on beta, `d` reviews beta (as `r` and `w` act on
    beta), follows the cursor back to alpha, and `d` there closes it. Before, `d`
    reviewed the open worktree whatever row was highlighted."""
    alpha, beta = tree.worktrees["alpha"], tree.worktrees["beta"]
    (Path(tree.paths["beta"]) / "only-in-beta.txt").write_text("beta\n", encoding="utf-8")

    def title() -> str:
        return str(app.query_one("#review-title", Static).render())

    async def scenario(app: OrcaApp, pilot: Any) -> None:
        await ready(app)
        app.select_worktree(alpha, focus_terminal=False)
        sidebar = app.query_one(Sidebar)
        sidebar.focus()
        # (the keys go where the focus is, from the row drawn highlighted: wait for both;
        # CI pressed `down` before the list had rows, and it moved nothing)
        await app.wait_for(lambda: sidebar_row(app) == alpha and sidebar.has_focus)
        await pilot.press("down")
        await app.wait_for(lambda: sidebar_row(app) == beta)
        assert app.highlighted_worktree() == beta
        await pilot.press("d")
        await app.wait_for(lambda: [f.path for f in app.review_files] == ["only-in-beta.txt"], 20)
        assert title().startswith("beta vs ") and app.selected_worktree == alpha
        await pilot.press("up")
        await app.wait_for(lambda: title().startswith("alpha vs ") and not app.review_files, 20)
        assert app.review_shown
        await pilot.press("d")
        assert not app.review_shown and not app.query_one("#review").has_class("shown")

    app = OrcaApp(resolve_paths(), bell=False)
    drive(app, scenario)


def test_the_cursor_stays_where_the_last_render_put_it_when_its_messages_come_late(
    tree: Any, drive: Any
) -> None:
    """Each render that moves the sidebar's cursor makes the list post a highlight
    message. Handled after a later render, they were taken for the user's moves: the
    cursor went back to beta, then to the row first drawn, and `down` went on from there
    (CI, twice, in the review test above)."""
    alpha, beta = tree.worktrees["alpha"], tree.worktrees["beta"]

    async def scenario(app: OrcaApp, pilot: Any) -> None:
        await ready(app)
        sidebar = app.query_one(Sidebar)
        sidebar.focus()
        await app.wait_for(lambda: sidebar.has_focus and sidebar_row(app) not in (alpha, None))
        # Two selections rendered before the app handles a message (what a loaded
        # machine does with a store event and a click in one turn).
        for picked in (beta, alpha):
            app.select_worktree(picked, focus_terminal=False)
            app._render_sidebar()
        assert sidebar_row(app) == alpha
        await pilot.pause()
        app.poke(view=True)
        renders = app.renders
        await app.wait_for(lambda: app.renders > renders)
        assert sidebar_row(app) == alpha
        await pilot.press("down")
        await app.wait_for(lambda: sidebar_row(app) == beta)

    drive(OrcaApp(resolve_paths(), bell=False), scenario)


def test_the_palette_offers_to_install_only_hooks_not_installed(
    tree: Any, drive: Any, monkeypatch: pytest.MonkeyPatch
) -> None:
    """Hooks installed (`orca hooks install claude`) are not offered again; codex's,
    missing, are, and are not once the palette installed them. Before, all three were
    offered whatever `orca hooks status` said."""
    monkeypatch.setenv("HOME", str(tree.user.user_home))
    tree.user.ok("hooks", "install", "claude")

    def offered() -> set[str]:
        titles = (c.title for c in app.get_system_commands(app.screen))
        return {t for t in titles if t.startswith("Install hooks")}

    async def scenario(app: OrcaApp, pilot: Any) -> None:
        await ready(app)
        assert offered() == {"Install hooks: codex", "Install hooks: gemini"}
        command(app, "Install hooks: codex")()
        await app.wait_for(
            lambda: any("codex: installed into" in n.message for n in app._notifications), 30
        )
        assert offered() == {"Install hooks: gemini"}

    app = OrcaApp(resolve_paths(), bell=False)
    drive(app, scenario)
