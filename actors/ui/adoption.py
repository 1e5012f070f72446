"""Terminals that no layout leaf shows, and which of them a UI adopts (pure).

ptyd runs terminals the UI did not start: ``orca term new``, an agent another client
launched without saving a layout, a session whose tab a crashed UI never wrote. Each
has a pane key (ptyd mints one when the spawn names none), so the UI gives it the pane
that key names (``layout.adopt_terminals``) and saves it in the store's session like
any other: every UI then shows it, and closing it is the retirement protocol.

Only running terminals are adopted: an ended one is history (``orca term ls --all``),
not a pane to open. A pane key the store refused once (it was retired, and its
terminal is on its way out: ``actors/store/sessions.py``) is not asked again.
"""

from __future__ import annotations

import os
from collections.abc import Iterable, Mapping
from collections.abc import Set as AbstractSet
from typing import Any

from orca.model.ids import is_terminal_owner_id

Adoptee = tuple[str, str, int]  # (pane key, tab label, created at ms)


def tab_label(argv: list[str]) -> str:
    """What the adopted tab is called: its program (``claude``, ``bash``)."""
    return os.path.basename(argv[0]) if argv and argv[0] else "terminal"


def orphans(
    sessions: Iterable[Any], shown: AbstractSet[str], refused: AbstractSet[str] = frozenset()
) -> Mapping[str, list[Adoptee]]:
    """Per worktree, its running terminals (ptyd's ``SessionRow``) whose pane key is in
    no layout (``shown``) and was not ``refused``, oldest first."""
    found: dict[str, list[Adoptee]] = {}
    for row in sorted(sessions, key=lambda r: r.created_at):
        key = row.pane_key
        if not row.running or not key or key in shown or key in refused:
            continue
        if not is_terminal_owner_id(row.worktree_id):
            continue
        found.setdefault(row.worktree_id, []).append(
            (key, tab_label(list(row.argv)), int(row.created_at * 1000))
        )
    return found
