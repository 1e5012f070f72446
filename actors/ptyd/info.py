"""The serialisable description of a session, and signal names on the wire."""

from __future__ import annotations

import signal
import time
from dataclasses import dataclass, field
from typing import TypeVar

from orca.contracts.ptyd import SessionRow
from orca.host import current_host_id

RowT = TypeVar("RowT", bound=SessionRow)


@dataclass
class SessionInfo:
    """The serialisable description of a session (``term.list`` row, handoff record)."""

    session_id: str
    worktree_id: str
    pane_key: str
    tab_id: str
    argv: list[str]
    cwd: str
    pid: int
    cols: int
    rows: int
    launch_token_sha256: str
    # The terminal's own handle (``term_<uuid>``), distinct from the session id; hooks
    # rows carry it to tie a status row back to this terminal (seed 03).
    terminal_handle: str = ""
    created_at: float = field(default_factory=time.time)
    exit_code: int | None = None  # None while running; -1 when unknown (not our child)
    # Names the on-disk history; stays the id given at spawn when a rename re-keys.
    history_key: str = ""
    # The execution host running the session (ARCHITECTURE §4: every session carries it).
    host_id: str = field(default_factory=current_host_id)

    def to_row(self, kind: type[RowT], end_offset: int, attached: int) -> RowT:
        """The session as ``term.list`` shows it (``kind``: ``SessionRow``, or its
        subclass the ``term.spawned`` event)."""
        return kind(
            session_id=self.session_id,
            host_id=self.host_id,
            worktree_id=self.worktree_id,
            pane_key=self.pane_key,
            tab_id=self.tab_id,
            terminal_handle=self.terminal_handle,
            argv=list(self.argv),
            cwd=self.cwd,
            pid=self.pid,
            cols=self.cols,
            rows=self.rows,
            created_at=self.created_at,
            exit_code=self.exit_code,
            running=self.exit_code is None,
            end_offset=end_offset,
            subscribers=attached,
        )


def decode_signal(name: str | int) -> int:
    """``"TERM"``, ``"SIGTERM"`` or ``15`` → 15; raises ValueError for anything else."""
    if isinstance(name, int):
        return signal.Signals(name).value
    upper = name.upper()
    try:
        return signal.Signals[upper if upper.startswith("SIG") else "SIG" + upper].value
    except KeyError:
        raise ValueError(f"unknown signal {name!r}") from None
