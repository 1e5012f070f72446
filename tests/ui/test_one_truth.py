"""``orca ui`` and the CLI show one truth (issue 23): terminals the CLI started, a pane
resized, an ended terminal's last screen, a worktree removed only with what it loses.

Each test drives the real UI (Textual's pilot) against a real tree (``orca up`` in the
test's home) and the real CLI.
"""

from __future__ import annotations

import os
import uuid
from pathlib import Path
from typing import Any

from support.ui_pilot import open_shell, ready
from textual.widgets import Input, Label, Static

from actors.hooks.agent_events import ANSWER_IN_TERMINAL
from actors.ui.app import OrcaApp
from actors.ui.dialogs import ChoiceScreen, ConfirmScreen
from actors.ui.widgets import CURSOR_MARK, Sidebar
from orca.client.sync import invoke
from orca.contracts import hooks, ptyd, store
from orca.model import tab_groups as layout
from orca.model.panes import make_pane_key
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


async def shown_and_fitted(app: OrcaApp, worktree_id: str, session_id: str) -> Any:
    """The worktree opened, its one pane showing ``session_id``, attached, and the PTY
    resized from the CLI's 80x24 to the pane: the pane's view."""
    await ready(app)
    app.select_worktree(worktree_id, focus_terminal=True)
    await app.wait_for(lambda: [v.session_id for v in app.pane_views()] == [session_id])
    (view,) = app.pane_views()
    await app.wait_for(lambda: view.feed is not None and view.feed.attached.is_set())
    await app.wait_for(lambda: view.model.size == tuple(view.content_size))
    # ... and ptyd has the pane's size (its term.resized word): the pane's model takes it
    # before its resize reaches ptyd, and a later size from another client could
    # otherwise land first and then be overridden by the pane's.
    await app.wait_for(
        lambda: (
            (r := (app.backend.sessions or {}).get(session_id)) is not None
            and (r.cols, r.rows) == view.model.size
        )
    )
    return view


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


def test_a_pane_is_titled_by_its_terminals_handle_as_the_cli_names_it(
    tree: Any, drive: Any
) -> None:
    """Issue 32, one name per thing: the CLI said `alpha:8d35`, the UI only `1:sh`;
    every pane now carries its terminal's handle, the one `orca term ls` prints."""
    alpha = tree.worktrees["alpha"]
    row = cli_terminal(tree, "alpha")
    [listed] = [
        s for s in tree.user.json("term", "ls")["sessions"] if s["sessionId"] == row.session_id
    ]

    async def scenario(app: OrcaApp, pilot: Any) -> None:
        await ready(app)
        app.select_worktree(alpha, focus_terminal=True)
        await app.wait_for(lambda: [v.session_id for v in app.pane_views()] == [row.session_id])
        (view,) = app.pane_views()
        await app.wait_for(lambda: view.border_title == listed["handle"])
        assert listed["handle"].startswith("alpha:")

    drive(OrcaApp(resolve_paths(), bell=False), scenario)


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
        view = await shown_and_fitted(app, alpha, row.session_id)
        await app.wait_for(lambda: shows_every_line(view))
        wide = view.model.size
        await pilot.press("ctrl+g", "d")  # the review takes half of what the sidebar leaves
        await app.wait_for(lambda: view.model.size[0] < wide[0] - 50)
        await app.wait_for(lambda: shows_every_line(view))
        await pilot.press("ctrl+g", "d")
        await app.wait_for(lambda: view.model.size == wide)
        await app.wait_for(lambda: shows_every_line(view))
        await pilot.resize_terminal(90, 30)  # `tmux resize-window`
        await app.wait_for(lambda: view.model.size[0] < 60)
        await app.wait_for(lambda: shows_every_line(view))

    drive(OrcaApp(resolve_paths(), bell=False), scenario)


def test_a_pty_resized_by_another_client_is_drawn_at_its_size_and_said(
    tree: Any, drive: Any
) -> None:
    """Issue 32, one resize rule for every face: the client that resized last sets the
    size (docs/web.md). A phone's Fit made the PTY 41 columns and the UI went on drawing
    it in its 79-column pane, wrapped, without a word; now the pane draws at the PTY's
    size and says who sized it, until its own next resize takes the size back."""
    import asyncio

    alpha = tree.worktrees["alpha"]
    row = cli_terminal(tree, "alpha")

    def pty_size() -> tuple[int, int]:
        rows = invoke(ptyd.LIST, ptyd.ListArgs(worktree_id=alpha)).sessions
        (mine,) = [r for r in rows if r.session_id == row.session_id]
        return mine.cols, mine.rows

    async def scenario(app: OrcaApp, pilot: Any) -> None:
        view = await shown_and_fitted(app, alpha, row.session_id)
        assert not view.border_subtitle
        # another client (a phone's Fit: term.resize) takes the size
        resize = ptyd.ResizeArgs(session_id=row.session_id, cols=41, rows=20)
        await asyncio.to_thread(invoke, ptyd.RESIZE, resize)
        try:
            await app.wait_for(lambda: view.model.size == (41, 20))
        except TimeoutError:  # what the pane was doing instead (a CI run timed out here)
            r = (app.backend.sessions or {}).get(row.session_id)
            raise AssertionError(
                f"pane drawn at {view.model.size}, grid {tuple(view.content_size)},"
                f" ptyd's row {(r.cols, r.rows) if r else None}, own size"
                f" {view._own_size}, resize pending {view._resize_timer is not None},"
                f" snap {view._snap_size}"
            ) from None
        assert view.border_subtitle == "41×20: sized by another client; resize this pane to take it"
        # the pane's own resize (the window changed) takes it back
        await pilot.resize_terminal(120, 36)
        await app.wait_for(lambda: view.model.size == tuple(view.content_size) != (41, 20))
        await app.wait_for(lambda: not view.border_subtitle)
        # ptyd's word of the pane's size (term.resized), then its own list agrees
        await app.wait_for(
            lambda: (
                (r := (app.backend.sessions or {}).get(row.session_id)) is not None
                and (r.cols, r.rows) == view.model.size
            )
        )
        assert await asyncio.to_thread(pty_size) == view.model.size
        assert not view.border_subtitle

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
            lambda: (
                [v.session_id for v in app.pane_views()] != [row.session_id]
                and app.pane_views()[0].feed is not None
            )
        )
        (again,) = app.pane_views()
        assert again.pane_key == row.pane_key
        await app.wait_for(lambda: "before-down" in again.screen_text())  # run again
        again.focus()
        await pilot.press(*"echo again-$((6*7))", "enter")
        await app.wait_for(lambda: "again-42" in again.screen_text())

    drive(OrcaApp(resolve_paths(), bell=False), after)


def test_removing_a_dirty_worktree_is_refused_and_forced_only_in_a_second_step(
    tree: Any, drive: Any
) -> None:
    """`w` acts on the sidebar's highlighted row (not the worktree open), refuses a
    worktree with uncommitted work, lists what would be lost, and removes it only after
    `f` and a second yes; Enter, `n` and Escape keep it. A clean worktree is removed
    unforced. Before, a live agent made the UI ask "End them and remove?" and then
    force the removal, deleting the uncommitted changes."""
    alpha, beta = tree.worktrees["alpha"], tree.worktrees["beta"]
    beta_path = Path(tree.paths["beta"])
    (beta_path / "notes.txt").write_text("not committed\n", encoding="utf-8")
    (beta_path / "README").write_text("edited\n", encoding="utf-8")
    agent = cli_terminal(tree, "beta", "exec sh")

    async def scenario(app: OrcaApp, pilot: Any) -> None:
        await ready(app)
        app.select_worktree(alpha, focus_terminal=False)
        await app.wait_for(lambda: app.selected_worktree == alpha)
        sidebar = app.query_one(Sidebar)
        sidebar.focus()
        while sidebar.highlighted_option is None or sidebar.highlighted_option.id != beta:
            await pilot.press("down")
        assert app.selected_worktree == alpha  # highlighted, not opened

        async def refusal() -> ChoiceScreen[Any]:
            await pilot.press("w")
            await app.wait_for(lambda: isinstance(app.screen, ChoiceScreen))
            screen = app.screen
            assert isinstance(screen, ChoiceScreen)
            return screen

        for keep in ("enter", "n", "escape"):
            screen = await refusal()
            assert "beta is not removed" in screen.question
            assert "2 uncommitted changes" in screen.question and "1 live agent" in screen.question
            assert "?? notes.txt" in screen.details and " M README" in screen.details
            assert "[f] remove it anyway" in screen.keys_line
            await pilot.press(keep)
            await app.wait_for(lambda: not isinstance(app.screen, ChoiceScreen))
        await refusal()
        await pilot.press("f")  # the second step asks again, "no" by default
        await app.wait_for(lambda: isinstance(app.screen, ConfirmScreen))
        assert "for good" in app.screen.question  # type: ignore[attr-defined]
        await pilot.press("enter")
        await app.wait_for(lambda: not isinstance(app.screen, ChoiceScreen))
        assert os.path.isdir(beta_path) and app.item(beta) is not None  # noqa: ASYNC240
        with open(beta_path / "notes.txt", encoding="utf-8") as kept:  # noqa: ASYNC230
            assert kept.read() == "not committed\n"
        live = invoke(ptyd.LIST, ptyd.ListArgs(worktree_id=beta)).sessions
        assert [s.session_id for s in live if s.running] == [agent.session_id]
        await refusal()
        await pilot.press("f")
        await app.wait_for(lambda: isinstance(app.screen, ConfirmScreen))
        await pilot.press("y")
        await app.wait_for(lambda: app.item(beta) is None, 30)
        # alpha, clean and with nothing running: one question, an unforced removal
        while sidebar.highlighted_option is None or sidebar.highlighted_option.id != alpha:
            await pilot.press("up")
        await pilot.press("w")
        await app.wait_for(lambda: isinstance(app.screen, ConfirmScreen))
        assert app.screen.question == "Remove the worktree alpha?"  # type: ignore[attr-defined]
        await pilot.press("y")
        await app.wait_for(lambda: app.item(alpha) is None, 30)
        assert not app.last_error, app.last_error

    drive(OrcaApp(resolve_paths(), bell=False), scenario)
    assert not beta_path.exists() and not Path(tree.paths["alpha"]).exists()
    ended = invoke(ptyd.LIST, ptyd.ListArgs()).sessions
    assert not [s for s in ended if s.session_id == agent.session_id and s.running]


class RecordingApp(OrcaApp):
    """The app, with its notifications and what it writes to the terminal recorded."""

    def __init__(self, *args: Any, **kw: Any) -> None:
        super().__init__(*args, **kw)
        self.written: list[str] = []
        self.notified: list[str] = []

    def write_to_terminal(self, data: str) -> None:
        self.written.append(data)

    def notify(self, message: str, **kw: Any) -> None:  # type: ignore[override]
        self.notified.append(message)
        super().notify(message, **kw)


def report_structured(
    worktree_id: str, pane_key: str, state: str, agent: str = "claude", detail: str = ""
) -> None:
    invoke(
        hooks.INGEST_STRUCTURED,
        hooks.IngestStructuredArgs(
            pane_key=pane_key,
            worktree_id=worktree_id,
            state=state,  # type: ignore[arg-type]
            structured_host="test",
            agent=agent,
            detail=detail,
        ),
    )


def test_agents_blocked_before_the_ui_started_are_not_announced_again(
    tree: Any, drive: Any
) -> None:
    """An agent already blocked when `orca ui` starts is shown, not announced (no
    notification, bell or OSC 9); one that becomes blocked while it runs is, once."""
    alpha, beta = tree.worktrees["alpha"], tree.worktrees["beta"]
    old, new = (make_pane_key(f"t-{n}", str(uuid.uuid4())) for n in ("old", "new"))
    report_structured(alpha, old, "working")
    report_structured(alpha, old, "attention")

    async def scenario(app: RecordingApp, pilot: Any) -> None:
        await ready(app)
        lights = lambda: {li.pane_key: li.state for w in app.items() for li in w.lights}  # noqa: E731
        await app.wait_for(lambda: lights().get(old) == "blocked")
        report_structured(beta, new, "working")
        await app.wait_for(lambda: lights().get(new) == "working")
        report_structured(beta, new, "attention")
        await app.wait_for(lambda: bool(app.written))
        assert app.written == ["\x1b]9;orca: claude in beta is blocked\x07"]
        assert app.notified == ["claude in beta is blocked"]
        # An ask Orca cannot hold (Gemini CLI's): the notice says where to answer it.
        asking = make_pane_key("t-gemini", str(uuid.uuid4()))
        report_structured(beta, asking, "working", agent="gemini")
        await app.wait_for(lambda: lights().get(asking) == "working")
        report_structured(beta, asking, "attention", "gemini", f"{ANSWER_IN_TERMINAL}: run it?")
        await app.wait_for(lambda: len(app.notified) == 2)
        assert app.notified[1] == f"gemini in beta is blocked: {ANSWER_IN_TERMINAL}: run it?"

    drive(RecordingApp(resolve_paths(), bell=True), scenario)


def test_filter_closes_on_escape_and_the_leader_works_in_it(tree: Any, drive: Any) -> None:
    """`/` opens the filter; the leader's next key is the UI's there too (not a letter
    of the filter); Escape clears and closes it. The sidebar's cursor is a glyph, on the
    highlighted row only, and follows the cursor. The review is in the hint and palette."""

    async def scenario(app: OrcaApp, pilot: Any) -> None:
        await ready(app)
        sidebar = app.query_one(Sidebar)
        sidebar.focus()

        def marked() -> list[str]:
            return [
                str(sidebar.get_option_at_index(i).id)
                for i in range(sidebar.option_count)
                if sidebar.get_option_at_index(i).prompt.plain.startswith(CURSOR_MARK)  # type: ignore[union-attr]
            ]

        await app.wait_for(lambda: len(marked()) == 1)
        assert marked() == [sidebar.highlighted_option.id]  # type: ignore[union-attr]
        before = marked()
        await pilot.press("down")
        await app.wait_for(lambda: marked() != before)
        assert marked() == [sidebar.highlighted_option.id]  # type: ignore[union-attr]
        await pilot.press("slash")
        box = app.query_one("#filter", Input)
        await app.wait_for(lambda: box.has_focus)
        await pilot.press(*"bet")
        await app.wait_for(lambda: {w.name for w in app.items()} == {"beta"})
        await pilot.press("ctrl+g", "o")  # needs-me order: the UI's key, not the filter's
        await app.wait_for(lambda: app.needs_me_first)
        assert box.value == "bet"
        await pilot.press("escape")
        await app.wait_for(lambda: {w.name for w in app.items()} >= {"alpha", "beta"})
        assert not box.has_class("shown") and box.value == "" and sidebar.has_focus
        # The review (^G d) is in the hint and the palette, not only in the code.
        assert "d review" in str(app.query_one("#status", Static).render())
        (review,) = [c for c in app.get_system_commands(app.screen) if c.title == "Review changes"]
        review.callback()
        assert app.review_shown

    drive(OrcaApp(resolve_paths(), bell=False), scenario)


def test_a_question_shows_its_keys_and_enter_gives_its_default(tree: Any, drive: Any) -> None:
    """`[y] yes [n] no` is shown as written (it was read as markup and vanished), and
    Enter answers the default (it did nothing): closing a pane asks, Enter keeps it."""
    alpha = tree.worktrees["alpha"]

    async def scenario(app: OrcaApp, pilot: Any) -> None:
        await ready(app)
        view = await open_shell(app, pilot, alpha)
        view.focus()
        await pilot.press("ctrl+g", "x")
        await app.wait_for(lambda: isinstance(app.screen, ConfirmScreen))
        shown = str(app.screen.query_one("#choice-keys", Label).render())
        assert shown == "[y] yes   [n] no (Enter)   [Esc] cancel"
        await pilot.press("enter")
        await app.wait_for(lambda: not isinstance(app.screen, ConfirmScreen))
        assert [v.pane_key for v in app.pane_views()] == [view.pane_key]
        row = app.backend.session_for_pane(view.pane_key)
        assert row is not None and row.running

    drive(OrcaApp(resolve_paths(), bell=False), scenario)


def test_another_clients_change_of_the_active_worktree_does_not_move_this_ui(
    tree: Any, drive: Any
) -> None:
    """``orca ui`` opens on the worktree the saved session had active; after that its
    selection is its own. Another client's tab change (it saves its worktree as the
    session's active one) moved an untouched UI there: a user's ``^G w`` then asked to
    remove the other worktree (CI, test_folders_notify)."""
    alpha, beta = tree.worktrees["alpha"], tree.worktrees["beta"]
    invoke(store.SESSION_PATCH, store.SessionPatchArgs(patch={"activeWorktreeId": alpha}))

    async def scenario(app: OrcaApp, pilot: Any) -> None:
        await ready(app)
        await app.wait_for(lambda: app.selected_worktree == alpha, 20)
        invoke(store.SESSION_PATCH, store.SessionPatchArgs(patch={"activeWorktreeId": beta}))
        await app.wait_for(lambda: app.backend.session().active_worktree_id == beta, 20)
        for _ in range(2):  # the second refresh began after the session changed
            renders = app.renders
            app.poke(view=True)
            await app.wait_for(lambda r=renders: app.renders > r, 10)
        assert app.selected_worktree == alpha
        # the user's own pick still moves it
        app.select_worktree(beta, focus_terminal=False)
        await app.wait_for(lambda: app.selected_worktree == beta, 10)

    drive(OrcaApp(resolve_paths(), bell=False), scenario)
