"""The sidebar projection: the shared summary, ptyd's admission facts, needs-me order."""

from __future__ import annotations

from typing import Any

from actors.ui.mirrors import WorktreeFacts
from actors.ui.screen import PaneScreen, bracketed, encode_key
from actors.ui.view import build_sidebar, next_needing_me
from orca.contracts import ptyd
from orca.model.agent_status import AgentStatusRow
from orca.model.types_repo import Repo

REPO = "22222222-2222-4222-8222-222222222222"
A, B = f"{REPO}::/w/a", f"{REPO}::/w/b"
NOW = 1_000_000


def row(pane: str, wt: str, state: str, unread: bool = False) -> AgentStatusRow:
    return AgentStatusRow(
        pane_key=pane,
        worktree_id=wt,
        state=state,
        source="hook",  # type: ignore[arg-type]
        updated_at_ms=NOW - 10,
        state_since_ms=NOW - 10,
        agent="claude",
        unread=unread,
    )


def session(pane: str, wt: str, running: bool = True) -> ptyd.SessionRow:
    return ptyd.SessionRow(
        session_id=f"{wt}@@0000000{len(pane) % 10}",
        host_id="local",
        worktree_id=wt,
        pane_key=pane,
        tab_id=pane.split(":")[0],
        terminal_handle=f"h-{pane}",
        argv=["sh"],
        cwd="/",
        pid=1,
        cols=80,
        rows=24,
        created_at=0.0,
        exit_code=None if running else 1,
        running=running,
        end_offset=0,
        subscribers=0,
    )


def facts(wt: str, path: str, branch: str, dirty: int) -> WorktreeFacts:
    return WorktreeFacts(wt, REPO, path, branch, "abc", False, dirty)


def sidebar(**kw: object) -> list:  # type: ignore[type-arg]
    rows = {
        "t1:p": row("t1:p", A, "working"),
        "t2:p": row("t2:p", B, "done", unread=True),
        "t3:p": row("t3:p", B, "working"),
    }
    sessions = {s.session_id: s for s in (session("t1:p", A), session("t2:p", B))}
    return build_sidebar(
        repos={REPO: Repo(id=REPO, path="/w", display_name="proj")},
        git={A: facts(A, "/w/a", "a-branch", 2), B: facts(B, "/w/b", "b", 0)},
        display_names={},
        rows=rows,
        fates=(),
        sessions=kw.pop("sessions", sessions),  # type: ignore[arg-type]
        now_ms=NOW,
        **kw,  # type: ignore[arg-type]
    )


def test_lights_follow_the_shared_projection_and_ptyd_facts() -> None:
    """A row without a live PTY is shown gone (never working); unread done needs me."""
    (group,) = sidebar()
    items = {w.worktree_id: w for w in group.worktrees}
    assert [(li.pane_key, li.state) for li in items[A].lights] == [("t1:p", "working")]
    states = {li.pane_key: (li.state, li.needs_me) for li in items[B].lights}
    assert states == {"t2:p": ("done", True), "t3:p": ("gone", False)}
    assert items[A].branch == "a-branch" and items[A].dirty == 2 and items[A].name == "a"
    (unknown,) = sidebar(sessions=None)
    states = {li.pane_key: li.state for w in unknown.worktrees for li in w.lights}
    assert states["t3:p"] == "working", "without ptyd's facts rows are shown as hooks holds them"


def test_needs_me_order_filter_and_next() -> None:
    (group,) = sidebar(needs_me_first=True)
    assert [w.worktree_id for w in group.worktrees] == [B, A]
    (group,) = sidebar(filter_text="A-BRANCH")
    assert [w.worktree_id for w in group.worktrees] == [A]
    groups = sidebar()
    light = next_needing_me(groups, None)
    assert light is not None and light.pane_key == "t2:p"
    assert next_needing_me(groups, "t2:p") == light, "cycles back to the only one"


def test_screen_renders_colours_and_cursor_and_keys_follow_modes() -> None:
    screen = PaneScreen(20, 3)
    screen.feed(b"\x1b[31mred\x1b[0m ok\r\nnext")
    lines = screen.lines(show_cursor=True)
    assert [line.plain for line in lines] == ["red ok".ljust(20), "next".ljust(20), " " * 20]
    assert str(lines[0].spans[0].style.color.name) == "color(1)"  # type: ignore[union-attr]
    assert any(span.style.reverse for span in lines[1].spans if span.start == 4)  # type: ignore[union-attr]
    assert encode_key("up", None, app_cursor=False) == b"\x1b[A"
    screen.feed(b"\x1b[?1h")
    assert encode_key("up", None, app_cursor=screen.mode(1)) == b"\x1bOA"
    assert encode_key("ctrl+c", None, app_cursor=False) == b"\x03"
    assert encode_key("x", "é", app_cursor=False) == "é".encode()
    assert bracketed("a\nb", True) == b"\x1b[200~a\rb\x1b[201~"
    screen.resize(10, 2)
    assert screen.size == (10, 2)


def test_a_pane_cleared_for_another_reason_than_its_exit_loses_its_fate() -> None:
    """The UI's status mirror drops a pane's fate with a clear that is not its PTY's exit
    (its worktree removed, the pane retired), as hooks does; an exit's clear keeps it."""
    from actors.ui.mirrors import StatusView, apply_status
    from orca.contracts import hooks
    from orca.model.agent_status import PaneFate

    fate = PaneFate(
        pane_key="t:1",
        worktree_id="r::/w",
        agent="claude",
        terminal_handle="h",
        exit_code=3,
        ended_at_ms=1,
    )
    view = StatusView(rows={}, fates=(fate,))
    event: Any = None
    exited = hooks.StatusCleared(pane_key="t:1", worktree_id="r::/w", reason="pty_exited")
    assert apply_status(view, event, exited).fates == (fate,)
    removed = hooks.StatusCleared(pane_key="t:1", worktree_id="r::/w", reason="worktree_removed")
    assert apply_status(view, event, removed).fates == ()
