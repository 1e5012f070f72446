"""Running agents are never ended by surprise (issue 13): the terminals a command would end.

``orca down``, ``orca worktree rm`` and ``orca folder rm`` first look for terminals
still running; with any, they refuse (exit 2: a request the current state refuses),
list each by the handle ``orca term ls`` shows (``orca.cli.lookup``), and name the
flag that goes on - or, told to, end them: closed as ``orca term close`` closes them
(the pane retired and fenced) or killed as ``orca term kill`` kills them (the panes,
layout and history kept).
"""

from __future__ import annotations

import sys
import time
from typing import TYPE_CHECKING, NamedTuple

from orca.wire.errors import OrcaError

if TYPE_CHECKING:
    from orca.contracts.ptyd import SessionRow
    from orca.paths import OrcaPaths

# term.close replies once hooks fenced the pane and store retired it, or within ~3 s
# when either is down (orca/contracts/ptyd.py); this leaves room above that bound.
CLOSE_TIMEOUT_S = 8.0
# How long `down --kill-terminals` waits for the agents to exit after term.kill (its
# SIGHUP/SIGTERM, then ptyd's SIGKILL after a grace) before stopping the tree anyway.
END_TIMEOUT_S = 15.0


class Running(NamedTuple):
    """The running sessions and the handle of each (as ``orca term ls`` shows it)."""

    sessions: list[SessionRow]
    handles: dict[str, str]


def running_terminals(paths: OrcaPaths, owner_id: str | None = None) -> Running:
    """ptyd's running sessions (of one worktree or folder, if given); raises OrcaError
    if ptyd cannot answer (then nobody can tell whether an agent is live)."""
    from orca.cli.lookup import list_terminals

    found = list_terminals(paths)
    running = [s for s in found.sessions if s.running and owner_id in (None, s.worktree_id)]
    return Running(running, found.handles)


def print_running(running: Running) -> None:
    """One ``handle  pid N  command`` line per session on stderr: a command of several
    lines on one (``⏎`` for each line break), cut to the terminal's width on one (as
    ``orca term ls`` cuts its COMMAND cells), whole in a pipe."""
    from orca.cli.output import terminal_width
    from orca.cli.terminal_text import cut_to_width, one_line

    width = terminal_width(sys.stderr)
    for s in running.sessions:
        line = one_line(f"  {running.handles[s.session_id]}  pid {s.pid}  {' '.join(s.argv)}")
        print(line if width is None else cut_to_width(line, width), file=sys.stderr)


def end_terminals_or_refuse(
    paths: OrcaPaths, owner_id: str, place: str, command: str, *, force: bool
) -> bool:
    """Before removing a workspace: with terminals running in it, refuse (listing them,
    and how ``command --force`` ends them; False) unless ``force``, which closes them
    first as ``orca term close`` does. A ptyd that cannot answer leaves them unchecked,
    said on stderr."""
    try:
        running = running_terminals(paths, owner_id)
    except OrcaError as exc:
        print(
            f"orca: note: ptyd did not answer ({exc.message}): terminals unchecked", file=sys.stderr
        )
        running = Running([], {})
    if running.sessions and not force:
        print(
            f"orca: {len(running.sessions)} terminal(s) still running in {place}:",
            file=sys.stderr,
        )
        print_running(running)
        print(f"  `{command} --force` ends them first", file=sys.stderr)
        return False
    close_sessions(running.sessions, paths)
    return True


def close_sessions(rows: list[SessionRow], paths: OrcaPaths) -> None:
    """Close each session as ``orca term close`` does (the pane is retired and fenced)."""
    from orca.client.sync import invoke
    from orca.contracts import ptyd

    for r in rows:
        args = ptyd.SessionArgs(session_id=r.session_id)
        invoke(ptyd.CLOSE, args, paths=paths, timeout=CLOSE_TIMEOUT_S)


def end_sessions(rows: list[SessionRow], paths: OrcaPaths) -> int:
    """End each session's agent as ``orca term kill`` does and wait for the exits (ptyd's
    ``term.exit`` events); the panes, their layout and their output history stay (unlike
    ``close_sessions``). Returns how many exited within ``END_TIMEOUT_S``."""
    from orca.client.sync import invoke, subscribe
    from orca.contracts import ptyd

    ending = {r.session_id for r in rows}
    asked = len(ending)
    if not ending:
        return 0
    exits = subscribe(
        ptyd.CONTRACT.actor,
        [ptyd.EXIT],
        consumer="orca down",
        topics=[ptyd.exit_topic(sid) for sid in ending],
        paths=paths,
    )
    try:
        exits.wait_live(timeout=2.0)  # subscribed before the kills: no exit is missed
        for sid in ending:
            invoke(ptyd.KILL, ptyd.SessionArgs(session_id=sid), paths=paths)
        for _, exited in exits.until(time.monotonic() + END_TIMEOUT_S):
            ending.discard(exited.session_id)
            if not ending:
                break
    finally:
        exits.close()
    return asked - len(ending)
