"""The projection ``orca worktree ps`` prints and the web board shows: hooks' rows and
fates, judged by ptyd's facts about its terminals (``orca.model.agent_status``'s rules).
Pure; shared by the command line (``orca.cli.worktree_ps``, ``orca.cli.remote.readers``),
the web actor (``actors/web/board.py``) and the UI's remote groups (``actors/ui/view.py``),
so none reads another's code. :func:`remote_ps` projects a remote host's mirrored rows
by the same rules.
"""

from __future__ import annotations

from typing import TYPE_CHECKING, Any

if TYPE_CHECKING:  # annotations only; the gateway contract imports every other contract
    from orca.contracts.gateway import HostMirror
    from orca.contracts.hooks import Snapshot


def project_ps(
    snapshot: Snapshot, sessions: list[Any] | None, now_ms: int
) -> list[dict[str, object]]:
    """The projection ``orca worktree ps`` prints (and the web dashboard shows): hooks'
    rows and fates, with ptyd's facts about this ptyd's sessions (``sessions``: None
    when ptyd did not answer). Pure."""
    from orca.model.agent_status import project_worktrees, terminal_facts

    facts = None if sessions is None else terminal_facts([s for s in sessions if not s.archived])
    return project_worktrees(snapshot.rows, now_ms, facts, snapshot.fates)


def remote_ps(mirror: HostMirror, now_ms: int, needs_me: bool) -> list[dict[str, object]]:
    """One host's worktrees and agents, projected like local ones (its own ptyd facts)."""
    from orca.model.agent_status import TerminalFacts, needs_user, project_worktrees

    running = [s for s in mirror.sessions if s.running]
    live = frozenset(s.pane_key for s in running)
    facts = TerminalFacts(
        live_panes=live,
        live_handles=frozenset(s.terminal_handle for s in running),
        exited={
            s.pane_key: s.exit_code
            for s in mirror.sessions
            if not s.running and s.pane_key not in live
        },
    )
    worktrees = project_worktrees(mirror.rows, now_ms, facts, mirror.fates)
    if needs_me:
        kept = []
        for worktree in worktrees:
            agents = [a for a in worktree["agents"] if needs_user(a)]  # type: ignore[attr-defined]
            if agents:
                kept.append({**worktree, "agents": agents})
        worktrees = kept
    return worktrees
