"""Which handle names an agent: the one ``orca worktree ps`` shows, everywhere.

An agent row (hooks' ``AgentStatusRow``, projected by ``project_worktrees``) is named
by its pane key, which no one types. Every reader names it instead by its terminal's
handle (``orca.views.handles``: what ``orca term attach`` and ``orca ack`` take), or by
its worktree's when no Orca terminal runs it: ``orca worktree ps`` (its table and
``--json``), the same with remote hosts' rows (``orca.cli.remote.readers``) and every line
of ``orca watch`` (:class:`LineHandles`). Pure: rows in, handles out.
"""

from __future__ import annotations

from collections import defaultdict
from collections.abc import Callable, Iterable, Mapping, Sequence
from typing import Any, NamedTuple

from orca.views.handles import session_handles, worktree_handles


class PsHandles(NamedTuple):
    """The handles ``orca worktree ps`` shows: each agent's terminal and each worktree."""

    terminals: dict[tuple[str, str], str]  # (worktree id, pane key) -> terminal handle
    worktrees: dict[str, str]  # worktree id -> worktree handle
    sessions: dict[str, str]  # session id -> terminal handle (every session listed)


def ps_handles(
    worktrees: Sequence[Mapping[str, Any]],
    sessions: Sequence[Any] | None,
    known: Iterable[tuple[str, str]] = (),
) -> PsHandles:
    """The handle of each agent of ``worktrees`` (``project_worktrees``' rows) and of
    each worktree. An agent's is its terminal's (ptyd's ``sessions``: the running one
    before an ended one of the same pane), its worktree's for a pane ptyd lists no
    terminal for. Handles are made unique over these worktrees, the sessions' and
    ``known`` (``(id, path)``; ``orca term ls`` uses every worktree gitwatch lists,
    which ``worktree ps`` does not ask for: where a worktree without agents or
    terminals shares a folder name, ``term ls`` may show a longer handle, and both
    resolve)."""
    from orca.model.ids import folder_workspace_id_of_worktree_id

    listed = sessions or []
    # A folder workspace's id (``folder:<id>``) names no directory: its handle comes
    # from the folder its terminals run in, as gitwatch's row would give it (term ls).
    paths = {
        s.worktree_id: s.cwd
        for s in listed
        if folder_workspace_id_of_worktree_id(s.worktree_id) is not None
    }
    paths.update(known)
    every = [
        *paths.items(),
        *((w["worktreeId"], "") for w in worktrees if w["worktreeId"] not in paths),
    ]
    handles = session_handles([(s.session_id, s.worktree_id) for s in listed], every)
    by_pane: dict[str, str] = {}
    by_terminal: dict[str, str] = {}
    for s in sorted(listed, key=lambda s: (s.running, s.created_at)):  # the running one last
        by_pane[s.pane_key] = by_terminal[s.terminal_handle] = handles[s.session_id]
    worktree_names = worktree_handles(every + [(s.worktree_id, "") for s in listed])
    labels: dict[tuple[str, str], str] = {}
    for worktree in worktrees:
        wid = worktree["worktreeId"]
        for agent in worktree["agents"]:
            pane = agent["paneKey"]
            labels[(wid, pane)] = (
                by_pane.get(pane)
                or by_terminal.get(agent["terminalHandle"] or "")
                or worktree_names[wid]
            )
    return PsHandles(
        labels, {w["worktreeId"]: worktree_names[w["worktreeId"]] for w in worktrees}, handles
    )


def with_ps_handles(
    worktrees: Sequence[Mapping[str, Any]], handles: PsHandles
) -> list[dict[str, Any]]:
    """``--json``'s rows: each worktree and each of its agents with its ``handle`` (the
    table's TERMINAL for an agent), ahead of the model's fields."""
    return [
        {
            "handle": handles.worktrees[w["worktreeId"]],
            **w,
            "agents": [
                {"handle": handles.terminals[(w["worktreeId"], a["paneKey"])], **a}
                for a in w["agents"]
            ],
        }
        for w in worktrees
    ]


# More panes than this remembered as re-listed for: forget them (each costs one listing).
_ASKED_AT_MOST = 10_000


class LineHandles:
    """The handle each ``orca watch`` line names its agent by (module docstring): the one
    ``orca worktree ps`` would show, over the rows seen so far and the terminals listed.

    ``relist`` (ptyd's sessions again, None when it does not answer) is called when a
    line names a pane no listed terminal runs: a terminal started after the watch
    began. Once per pane, so an agent outside every Orca terminal costs one listing,
    not one a line. ``prefix`` is put before every handle (``box:`` for a remote host's
    lines, as ``orca term read box:...`` takes them).
    """

    def __init__(
        self,
        sessions: Sequence[Any] | None,
        known: Iterable[tuple[str, str]] = (),
        *,
        prefix: str = "",
        relist: Callable[[], Sequence[Any] | None] | None = None,
    ) -> None:
        self.prefix = prefix
        self._relist = relist
        self._sessions: list[Any] = []
        self._known: list[tuple[str, str]] = []
        self._rows: dict[str, tuple[str, str]] = {}  # pane -> (worktree id, terminal handle)
        self._asked: set[str] = set()
        self.update(sessions, known)

    def update(self, sessions: Sequence[Any] | None, known: Iterable[tuple[str, str]] = ()) -> None:
        """Newer terminals (a remote host's mirror re-read); None keeps the ones there are."""
        if sessions is not None:
            self._sessions = list(sessions)
        self._known = list(known) or self._known

    def name(self, line: Mapping[str, object]) -> str:
        """The handle of a ``set``, ``clear``, ``ask`` or ``answered`` line's agent (a
        clear forgets the pane)."""
        pane, worktree_id = str(line["paneKey"]), str(line["worktreeId"])
        known_terminal = self._rows.get(pane, ("", ""))[1]  # an ask line names none
        self._rows[pane] = (worktree_id, str(line.get("terminalHandle") or known_terminal))
        listed = any(s.pane_key == pane for s in self._sessions)
        if self._relist is not None and not listed and pane not in self._asked:
            if len(self._asked) > _ASKED_AT_MOST:
                self._asked.clear()
            self._asked.add(pane)
            self.update(self._relist())
        agents: dict[str, list[dict[str, str]]] = defaultdict(list)
        for p, (wid, terminal) in self._rows.items():
            agents[wid].append({"paneKey": p, "terminalHandle": terminal})
        worktrees = [{"worktreeId": wid, "agents": rows} for wid, rows in agents.items()]
        handle = ps_handles(worktrees, self._sessions, self._known).terminals[(worktree_id, pane)]
        if line.get("event") == "clear":
            del self._rows[pane]
        return self.prefix + handle
