"""Which terminal a name means, and which handle names an agent (issue 23), pure."""

from __future__ import annotations

from typing import Any

import pytest

from orca.cli.tables import dirty_text
from orca.contracts.gitwatch import GitStatus
from orca.contracts.ptyd import SessionRow
from orca.views.agent_handles import LineHandles, ps_handles
from orca.views.handles import AmbiguousReference, resolve_terminal, session_handles

WT = "r1::/ws/proj/fix-login"
OTHER = "r1::/ws/proj/docs"


def session(hexes: str, *, running: bool, archived: bool = False, pane: str = "") -> SessionRow:
    return SessionRow(
        session_id=f"{WT}@@{hexes}", host_id="local", worktree_id=WT, pane_key=pane or f"t:{hexes}",
        tab_id="t", terminal_handle=f"h-{hexes}", argv=["sh"], cwd="/ws/proj/fix-login",
        pid=1, cols=80, rows=24, created_at=float(int(hexes, 16)),
        exit_code=None if running else 0, running=running, end_offset=0, subscribers=0,
        archived=archived,
    )  # fmt: skip


def resolved(sessions: list[SessionRow], ref: str) -> str:
    handles = session_handles([(s.session_id, s.worktree_id) for s in sessions])
    return resolve_terminal(sessions, handles, ref).session_id


LIVE = session("0bad0001", running=True)
EXITED = session("7e570002", running=False)
ARCHIVED = session("a4c40003", running=False, archived=True)


@pytest.mark.parametrize("ended", [[EXITED], [ARCHIVED], [EXITED, ARCHIVED]])
def test_a_worktree_name_names_its_running_terminal_however_many_ended(
    ended: list[SessionRow],
) -> None:
    """Ended terminals (history kept) never make `fix-login` ambiguous for kill/send."""
    assert resolved([*ended, LIVE], "fix-login") == LIVE.session_id


def test_an_ended_terminal_stays_reachable_by_its_handle_hex_and_id() -> None:
    sessions = [LIVE, EXITED, ARCHIVED]
    for ref in ("fix-login:7e57", "7e57", EXITED.session_id):
        assert resolved(sessions, ref) == EXITED.session_id
    assert resolved(sessions, "fix-login:a4c4") == ARCHIVED.session_id


def test_with_nothing_running_the_worktree_names_its_one_ended_terminal() -> None:
    """`term read fix-login` after the agent exited; ended since this ptyd's start
    before ended before it."""
    assert resolved([EXITED], "fix-login") == EXITED.session_id
    assert resolved([ARCHIVED, EXITED], "fix-login") == EXITED.session_id


def test_two_running_terminals_are_still_ambiguous_and_both_named() -> None:
    other = session("0bad9999", running=True)
    with pytest.raises(AmbiguousReference) as err:
        resolved([LIVE, other, EXITED], "fix-login")
    assert "2 terminals" in err.value.message and "fix-login:7e57" not in err.value.message


def test_nothing_matching_in_any_group_is_refused() -> None:
    with pytest.raises(AmbiguousReference, match="no terminal matches 'nope'"):
        resolved([LIVE, EXITED], "nope")


def test_dirty_counts_have_a_letter_each() -> None:
    """Unstaged and untracked used to share `u` (`1u 1u`)."""

    def status(
        staged: int = 0, unstaged: int = 0, untracked: int = 0, conflicted: int = 0
    ) -> GitStatus:
        total = staged + unstaged + untracked + conflicted
        return GitStatus(
            staged=staged,
            unstaged=unstaged,
            untracked=untracked,
            conflicted=conflicted,
            total=total,
        )

    assert dirty_text(status(1, 2, 3, 4)) == "1s 2m 3u 4c"
    assert dirty_text(status(unstaged=1, untracked=1)) == "1m 1u"
    assert dirty_text(status()) == "clean" and dirty_text(None) is None


def agent_line(pane: str, event: str = "set", worktree: str = WT) -> dict[str, Any]:
    return {"event": event, "paneKey": pane, "worktreeId": worktree, "terminalHandle": None}


def test_watch_lines_name_the_agent_as_worktree_ps_does() -> None:
    """The handle of a line is the TERMINAL column `worktree ps` shows for that row."""
    sessions = [LIVE, EXITED]
    names = LineHandles(sessions)
    assert names.name(agent_line(LIVE.pane_key)) == "fix-login:0bad"
    assert names.name(agent_line("t:none", worktree=OTHER)) == "docs"  # no terminal: its worktree
    rows = [{"worktreeId": WT, "agents": [{"paneKey": LIVE.pane_key, "terminalHandle": None}]}]
    assert ps_handles(rows, sessions).terminals[(WT, LIVE.pane_key)] == "fix-login:0bad"


def test_a_terminal_started_after_the_watch_is_listed_once_for_its_handle() -> None:
    later = session("5eed0004", running=True)
    listings: list[list[SessionRow]] = []

    def relist() -> list[SessionRow]:
        listings.append([LIVE, later])
        return listings[-1]

    names = LineHandles([LIVE], relist=relist)
    assert names.name(agent_line(later.pane_key)) == "fix-login:5eed"
    assert names.name(agent_line(later.pane_key, "clear")) == "fix-login:5eed"
    assert names.name(agent_line("t:outside")) == "fix-login"  # an agent in no Orca terminal
    assert names.name(agent_line("t:outside")) == "fix-login"
    assert len(listings) == 2, "one listing per unknown pane, not one per line"


def test_remote_lines_carry_their_host() -> None:
    assert (
        LineHandles([LIVE], prefix="box:").name(agent_line(LIVE.pane_key)) == "box:fix-login:0bad"
    )


def test_without_prefixes_only_a_whole_name_resolves() -> None:
    """`orca ack 3f2a` must not take a hex for the start of a worktree id (`3f2a...::`):
    worktrees are first matched by whole names only."""
    from orca.views.handles import NothingMatches, resolve, worktree_target

    targets = [worktree_target("3f2a91::/ws/proj/fix-login", "fix-login")]
    assert resolve(targets, "3f2a", "worktree").handle == "fix-login"
    with pytest.raises(NothingMatches):
        resolve(targets, "3f2a", "worktree", prefixes=False)
    assert resolve(targets, "fix-login", "worktree", prefixes=False).handle == "fix-login"


def test_a_restored_row_whose_terminal_ended_reads_as_ended() -> None:
    """ptyd's facts come before the restored mark: a row hooks could not confirm whose
    terminal is gone or exited is no agent that may still be working (the table said
    "idle (restored: working)" while the JSON said the terminal was gone)."""
    from orca.cli.tables import agent_state_text

    def agent(terminal: dict[str, object], restored: bool) -> dict[str, object]:
        return {
            "displayState": "idle",
            "state": "working",
            "restoredUnconfirmed": restored,
            "unread": False,
            "terminal": terminal,
        }

    assert agent_state_text(agent({"state": "gone"}, True)) == "terminal gone (was working)"
    assert agent_state_text(agent({"state": "exited", "exitCode": 3}, True)) == "exited 3"
    assert agent_state_text(agent({"state": "live"}, True)) == "idle (restored: working)"
