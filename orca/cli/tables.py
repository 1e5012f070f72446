"""The cells of the worktree tables, for local and remote rows alike.

``orca worktree ls`` and ``orca worktree ps`` (``orca.cli.worktree``,
``orca.cli.worktree_ps``) and their versions with remote hosts' rows
(``orca.cli.remote.readers``) print the same columns from the same kinds of row. This
module is the one place a row becomes its cells, so the listings never drift, and the
remote reader needs no command module (which import it back: an import circle).

``DIRTY`` is ``clean`` or the counts, one letter each: ``s`` staged, ``m`` modified
but not staged, ``u`` untracked, ``c`` conflicted (``2s 1m 3u``).

Pure and import-light (it runs in every listing): the row types are annotations only.
"""

from __future__ import annotations

from typing import TYPE_CHECKING, Any

from orca.views.handles import short_branch

if TYPE_CHECKING:
    from orca.contracts.gitwatch import AheadBehind, GitStatus, WorktreeRow

# -- worktree ls ------------------------------------------------------------------------
WORKTREE_COLUMNS = ("WORKTREE", "BRANCH", "AHEAD/BEHIND", "DIRTY", "OWNER", "PATH")
# One letter per kind of change; each differs, so `1m 1u` says which is which.
DIRTY_LETTERS = (("staged", "s"), ("unstaged", "m"), ("untracked", "u"), ("conflicted", "c"))


def branch_text(row: WorktreeRow) -> str:
    """The short branch, ``(detached)`` for a HEAD on no branch, ``-`` with no HEAD."""
    return short_branch(row.branch) or ("(detached)" if row.head else "-")


def ahead_behind_text(counts: AheadBehind | None) -> str | None:
    """``+ahead/-behind`` against the comparison ref (``--json`` names it); None (shown
    ``-``) when there is none."""
    if counts is None:
        return None
    return f"+{counts.ahead}/-{counts.behind}"


def dirty_text(status: GitStatus | None) -> str | None:
    """``clean``, or the counts by kind (module docstring); None when git said nothing."""
    if status is None:
        return None
    if not status.total:
        return "clean"
    return " ".join(
        f"{n}{letter}" for field, letter in DIRTY_LETTERS if (n := getattr(status, field))
    )


def owner_text(row: WorktreeRow) -> str:
    """The JSON's ``ownership`` word, then ``main`` / ``locked`` when they apply."""
    flags: list[str] = [row.ownership]
    if row.is_main_worktree:
        flags.append("main")
    if row.locked:
        flags.append("locked")
    return " ".join(flags)


def worktree_cells(row: WorktreeRow, handle: str, dirty: str | None = None) -> list[object]:
    """One row in :data:`WORKTREE_COLUMNS` order; ``dirty`` replaces the DIRTY cell (a
    remote row that cannot be verified says so there)."""
    return [
        handle,
        branch_text(row),
        ahead_behind_text(row.ahead_behind),
        dirty or ("missing" if row.prunable else dirty_text(row.git_status)),
        owner_text(row),
        row.path,
    ]


# -- worktree ps ------------------------------------------------------------------------
# The terminal's handle first (what ``orca term attach`` and ``orca ack`` take).
PS_COLUMNS = ("TERMINAL", "AGENT", "STATE", "AGE", "SOURCE", "DETAIL")
PS_STATE_COLUMN = PS_COLUMNS.index("STATE")


def agent_state_text(agent: dict[str, Any]) -> str:
    """An agent's STATE cell: what the user should know first about it."""
    state = str(agent["displayState"])
    terminal = agent["terminal"]
    # ptyd's facts first: a restored row whose terminal ended or is gone is no agent
    # that may still be working (the JSON says the same: terminal.state).
    if terminal["state"] == "exited":
        return f"exited {terminal.get('exitCode')}"
    if terminal["state"] == "gone":
        return f"terminal gone (was {agent['state']})"
    if agent["restoredUnconfirmed"]:
        return f"{state} (restored: {agent['state']})"
    if agent["unread"]:
        return f"{state} (unread)"
    return state


def _asks(asking: dict[str, Any]) -> str:
    """A held permission request, as the DETAIL cell shows it."""
    summary = str(asking["summary"]).strip()
    return f"asks {asking['toolName']}: {summary}" if summary else f"asks {asking['toolName']}"


def silent_terminals(worktrees: list[dict[str, Any]], sessions: list[Any] | None) -> list[Any]:
    """The running terminals no agent row names (plain shells, agents without hooks):
    ``orca worktree ps`` lists them with their state unknown."""
    named = {agent["paneKey"] for worktree in worktrees for agent in worktree["agents"]}
    return [s for s in sessions or [] if s.running and s.pane_key not in named]


def silent_rows(sessions: list[Any], handles: dict[str, str], now_s: float) -> list[list[object]]:
    """:func:`silent_terminals` in :data:`PS_COLUMNS` order: the command as DETAIL."""
    from orca.cli.output import human_duration

    return [
        [handles[s.session_id], "-", "unknown", human_duration(max(0.0, now_s - s.created_at)),
         "-", " ".join(s.argv)]
        for s in sessions
    ]  # fmt: skip


def ps_rows(
    worktrees: list[dict[str, Any]], labels: dict[tuple[str, str], str]
) -> list[list[object]]:
    """One row per agent, in :data:`PS_COLUMNS` order; ``labels``: the terminal handle
    of each ``(worktree id, pane key)`` (``orca.views.agent_handles.ps_handles``)."""
    from orca.cli.output import human_duration

    return [
        [
            labels[(worktree["worktreeId"], agent["paneKey"])],
            agent["agent"],
            agent_state_text(agent),
            human_duration(agent["ageMs"] / 1000),
            agent["source"],
            _asks(agent["asking"]) if agent.get("asking") else agent["detail"] or None,
        ]
        for worktree in worktrees
        for agent in worktree["agents"]
    ]
