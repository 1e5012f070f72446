"""``orca ui`` and the CLI show one truth (issue 23): terminals the CLI started, a pane
resized, an ended terminal's last screen, a worktree removed only with what it loses.

Each test drives the real UI (Textual's pilot) against a real tree (``orca up`` in the
test's home) and the real CLI.
"""

from __future__ import annotations

from typing import Any

from support.ui_pilot import ready

from actors.ui import layout
from actors.ui.app import OrcaApp
from orca.client.sync import invoke
from orca.contracts import ptyd, store
from orca.paths import resolve_paths

# A program whose screen is known: numbered lines, one long enough to wrap in a narrow
# pane, then a shell that redraws nothing on a resize (dash).
LINES = [f"line-{i}" for i in range(1, 6)]
LONG = " ".join(f"w{i:02d}" for i in range(40))  # 159 columns: wraps below that
SCRIPT = "; ".join(f"echo {line}" for line in [*LINES, LONG]) + "; exec sh"


def cli_terminal(tree: Any, name: str, script: str = SCRIPT) -> ptyd.SessionRow:
    """A terminal started with ``orca term new`` (no UI involved): ptyd's row of it."""
    tree.user.ok("term", "new", name, "--", "sh", "-c", script)
    rows = invoke(ptyd.LIST, ptyd.ListArgs(worktree_id=tree.worktrees[name])).sessions
    (row,) = [r for r in rows if r.running]
    return row


def stored_pane_keys(worktree_id: str) -> list[str]:
    session = invoke(store.SESSION_GET, store.SessionGetArgs()).session
    return [k for wt, k in layout.all_pane_keys(session) if wt == worktree_id]


def test_a_terminal_started_from_the_cli_is_adopted_shown_and_typed_into(
    tree: Any, drive: Any
) -> None:
    """`orca term new` then `orca ui`: the worktree shows the terminal in a tab of its
    own (saved in the store, under the pane key ptyd gave it), and keys typed in the
    pane reach it. Before, the pane area said "no terminals"."""
    alpha = tree.worktrees["alpha"]
    row = cli_terminal(tree, "alpha")
    assert stored_pane_keys(alpha) == []

    async def scenario(app: OrcaApp, pilot: Any) -> None:
        await ready(app)
        app.select_worktree(alpha, focus_terminal=True)
        await app.wait_for(lambda: [v.session_id for v in app.pane_views()] == [row.session_id])
        (view,) = app.pane_views()
        assert view.pane_key == row.pane_key
        await app.wait_for(lambda: "line-5" in view.screen_text())
        view.focus()
        await pilot.press(*"echo typed-$((6*7))", "enter")
        await app.wait_for(lambda: "typed-42" in view.screen_text())

    drive(OrcaApp(resolve_paths(), bell=False), scenario)
    assert stored_pane_keys(alpha) == [row.pane_key]
    output = invoke(ptyd.READ, ptyd.ReadArgs(session_id=row.session_id)).data
    assert b"typed-42" in output


def test_a_resized_pane_shows_its_screen_again(tree: Any, drive: Any) -> None:
    """A pane narrowed by the review (^G d) and by a smaller window, then widened
    again, still shows every line of its screen: before, the screen came from ptyd's
    snapshot with every row drawn full width, and a narrower pane wrapped those blanks
    until the text had scrolled out (the pane went blank)."""
    alpha = tree.worktrees["alpha"]
    row = cli_terminal(tree, "alpha")

    def shows_every_line(view: Any) -> bool:
        text = view.screen_text()
        flat = text.replace("\n", "")
        return all(line in text for line in LINES) and LONG.replace(" ", "") in flat.replace(
            " ", ""
        )

    async def scenario(app: OrcaApp, pilot: Any) -> None:
        await ready(app)
        app.select_worktree(alpha, focus_terminal=True)
        await app.wait_for(lambda: [v.session_id for v in app.pane_views()] == [row.session_id])
        (view,) = app.pane_views()
        await app.wait_for(lambda: view.feed is not None and view.feed.attached.is_set())
        fitted = lambda: view.model.size == tuple(view.content_size)  # noqa: E731
        await app.wait_for(fitted)  # the PTY resized from the CLI's 80x24 to the pane
        await app.wait_for(lambda: shows_every_line(view))
        wide = view.model.size
        await pilot.press("ctrl+g", "d")  # the review takes 70 columns
        await app.wait_for(lambda: view.model.size[0] < wide[0] - 50)
        await app.wait_for(lambda: shows_every_line(view))
        await pilot.press("ctrl+g", "d")
        await app.wait_for(lambda: view.model.size == wide)
        await app.wait_for(lambda: shows_every_line(view))
        await pilot.resize_terminal(90, 30)  # `tmux resize-window`
        await app.wait_for(lambda: view.model.size[0] < 60)
        await app.wait_for(lambda: shows_every_line(view))

    drive(OrcaApp(resolve_paths(), bell=False), scenario)


def test_an_ended_terminal_shows_its_last_screen_and_runs_again(tree: Any, drive: Any) -> None:
    """After `down --kill-terminals` + `up`, a pane whose terminal ended shows the screen
    it left and says how it ended; Enter runs its command again in the same pane.
    Before, the pane said "no terminal" although ptyd kept the history."""
    alpha = tree.worktrees["alpha"]
    row = cli_terminal(tree, "alpha", "echo before-down; exec sh")

    async def adopt(app: OrcaApp, pilot: Any) -> None:
        await ready(app)
        app.select_worktree(alpha, focus_terminal=True)
        await app.wait_for(lambda: [v.session_id for v in app.pane_views()] == [row.session_id])

    drive(OrcaApp(resolve_paths(), bell=False), adopt)
    tree.user.ok("down", "--kill-terminals")
    tree.user.ok("up")

    async def after(app: OrcaApp, pilot: Any) -> None:
        await ready(app)
        app.select_worktree(alpha, focus_terminal=True)
        await app.wait_for(lambda: [v.session_id for v in app.pane_views()] == [row.session_id])
        (view,) = app.pane_views()
        await app.wait_for(lambda: "before-down" in view.screen_text())
        assert view.ended is not None and view.note.startswith("[exited ")
        assert "Enter runs sh -c" in view.note
        view.focus()
        await pilot.press("enter")
        await app.wait_for(
            lambda: [v.session_id for v in app.pane_views()] != [row.session_id]
            and app.pane_views()[0].feed is not None
        )
        (again,) = app.pane_views()
        assert again.pane_key == row.pane_key
        await app.wait_for(lambda: "before-down" in again.screen_text())  # run again
        again.focus()
        await pilot.press(*"echo again-$((6*7))", "enter")
        await app.wait_for(lambda: "again-42" in again.screen_text())

    drive(OrcaApp(resolve_paths(), bell=False), after)
