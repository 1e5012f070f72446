"""The serialisable description of a session, and signal names on the wire."""

from __future__ import annotations

import dataclasses
import signal
import time
from dataclasses import dataclass, field
from typing import Any, TypeVar

import msgspec

from orca.contracts.ptyd import MAX_DIMENSION, SessionRow
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
    # The execution host running the session (seed 01 §4–§6: every session carries it).
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


# Keys of ``info_record`` that are not SessionInfo fields: when the end was recorded,
# and the stream offset the output had reached then.
ENDED_AT = "endedAt"
END_OFFSET = "endOffset"
_FIELDS = frozenset(f.name for f in dataclasses.fields(SessionInfo))


@dataclass(frozen=True)
class DiskInfo:
    """A session description read back from disk."""

    info: SessionInfo
    ended_at: float | None
    end_offset: int | None


def info_record(info: SessionInfo, ended_at: float | None, end_offset: int) -> dict[str, Any]:
    """The on-disk description of a session (``<h>.info.json``, see history.py)."""
    return {**dataclasses.asdict(info), ENDED_AT: ended_at, END_OFFSET: end_offset}


def info_from_disk(record: dict[str, Any]) -> DiskInfo | None:
    """The description ``info_record`` wrote; None if it is not one (damaged, or written
    by a version with other required fields). Unknown keys are ignored."""
    ended = record.get(ENDED_AT)
    end_offset = record.get(END_OFFSET)
    try:  # every field's type checked (a damaged file must not reach a reply)
        info = msgspec.convert({k: v for k, v in record.items() if k in _FIELDS}, SessionInfo)
    except msgspec.ValidationError:
        return None
    if not (0 < info.cols <= MAX_DIMENSION and 0 < info.rows <= MAX_DIMENSION):
        return None  # the model of a damaged size could take any amount of memory
    return DiskInfo(
        info,
        float(ended) if isinstance(ended, int | float) else None,
        end_offset if isinstance(end_offset, int) and end_offset >= 0 else None,
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
