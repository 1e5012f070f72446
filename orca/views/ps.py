"""The projection ``orca worktree ps`` prints and the web board shows: hooks' rows and
fates, judged by ptyd's facts about its terminals (``orca.model.agent_status``'s rules).
Pure; shared by the command line (``orca.cli.worktree_ps``) and the web actor
(``actors/web/board.py``), so neither reads the other's code.
"""

from __future__ import annotations

from typing import TYPE_CHECKING, Any

if TYPE_CHECKING:
    from orca.contracts.hooks import Snapshot


def project_ps(snapshot: Snapshot, sessions: list[Any] | None, now_ms: int) -> list[dict[str, object]]:
    """The projection ``orca worktree ps`` prints (and the web dashboard shows): hooks'
    rows and fates, with ptyd's facts about this ptyd's sessions (``sessions``: None
    when ptyd did not answer). Pure."""
    from orca.model.agent_status import project_worktrees, terminal_facts

    facts = None if sessions is None else terminal_facts([s for s in sessions if not s.archived])
    return project_worktrees(snapshot.rows, now_ms, facts, snapshot.fates)
