"""The ``ptyd`` wire contract: every op and event, with fields and errors.

Ops (ROUTER; args validated as the Structs below; field names camelCase on the wire):

``term.spawn`` {argv, cwd, worktreeId, cols=80, rows=24, env?, paneKey?}
    → {sessionId, paneKey, tabId, terminalHandle, pid, launchTokenSha256}
    Starts ``argv`` on a new PTY. Errors: ``bad_request`` (empty argv, bad worktree id
    or pane key, cwd not a directory, executable not found), ``internal`` (system).
``term.write`` {sessionId, data? (bytes), text? (str)} → {queued}
    Queues input (never waits for the child). Errors: ``not_found``; ``conflict``
    (session ended); ``unavailable`` (the child is not reading; backlog full).
``term.resize`` {sessionId, cols, rows} → {} (TIOCSWINSZ + SIGWINCH to the group).
``term.signal`` {sessionId, signal ("TERM", "SIGINT", 15)} → {delivered}
``term.kill`` {sessionId} → {} SIGHUP+SIGTERM to the group, SIGKILL after a grace.
``term.close`` {sessionId} → {fenced, storeRevision} a pane close (ARCHITECTURE §3.2):
    kill if running, forget the session and its history, then retire its pane
    everywhere before replying: ``hooks`` ``agentStatus.retire_pane`` (queued behind
    every earlier hooks message, so a pending ``restart_pane`` cannot lift the fence)
    and ``store`` ``session.retire_pane`` (revision bump + flush; skipped for legacy
    numeric pane keys), at once, best effort. ``fenced`` true means hooks confirmed the
    fence: a status write for the pane key sent after this reply is rejected
    (``retired_pane``) until a new spawn in the pane. ``storeRevision``: the host's new
    topology revision, null if the store did not answer or there was nothing to retire.
    Neither failure fails the close; the reply comes within ~3 s even with both down.
``term.list`` {worktreeId?} → {sessions: [row]} where row is
    {sessionId, worktreeId, paneKey, tabId, terminalHandle, argv, cwd, pid, cols,
    rows, createdAt, exitCode, running, endOffset, subscribers}
``term.read`` {sessionId, since?, limit?} → {sessionId, offset, data, end, gap,
    running, exitCode, outputEnded}. Without ``since``: the snapshot (scrollback,
    starting at a safe boundary). With ``since``: bytes from that offset; if they were
    trimmed, ``gap`` is true and the snapshot is returned instead (resync).
    ``outputEnded``: the PTY hung up and ``end`` is final (``running`` may turn false
    before the last output has been read). ``exitCode``: null while running, the
    code, 128+N for signal N, -1 when unknown.
    Errors: ``not_found``; ``bad_request`` (``since`` beyond ``end``).
``term.attach`` {sessionId} → like ``term.read`` without ``since`` plus
    {epoch, seq, topics}. Subscribe to ``topics`` *before* calling it; then apply
    output events with ``offset + len(data) > offset-so-far`` (StreamCursor).
``term.snapshot`` {} → {epoch, seq, sessions: [row]} (mirror snapshot).
``term.gc_status`` {} → {suspects: {worktreeId: since}, graceS}

Events (PUB; envelope {v, src, epoch, seq, type, data}):

``term.output`` topic ``term.output.<sessionId>``: {sessionId, offset, data}.
    ``offset`` numbers the first byte of ``data`` in the session's OSC-stripped
    output stream; a client whose next expected offset is smaller than ``offset``
    lost events and catches up with ``term.read {since}``. Topics match by prefix, so
    a client checks ``data.sessionId``.
``term.exit`` topic ``term.exit.<sessionId>``: {sessionId, exitCode, endOffset}.
    Published after the child's final output was published.
``term.spawned`` row (as in ``term.list``), ``term.closed`` {sessionId},
``term.rekeyed`` {old, new} (a worktree rename moved a session; the old id stays a
    valid alias for every op).

Calls ``ptyd`` makes (never on the output path; through one ordered bounded queue):
``hooks`` ``agentStatus.restart_pane`` {paneKey, launchTokenSha256, worktreeId} on
every spawn, ``agentStatus.ingest_osc`` {paneKey, terminalHandle, worktreeId,
payload} per OSC 9999 sequence, ``agentStatus.retire_pane`` {paneKey} on
``term.close``; ``store`` ``identity.resolve`` {worktreeId} (session GC),
``session.retire_pane`` {hostId, tabId, leafId} on ``term.close`` (directly, short
timeout); its ``worktree.renamed`` {oldId, newId} events (re-key) and
``session.paneRetired`` {hostId, tabId, leafId, revision} events: every running
session of that host whose pane key is ``tabId:leafId`` is ended like ``term.kill``
(``term.exit`` follows as usual; the session stays listed until closed). Events
missed while ptyd was down: after adopting the keeper's sessions it calls ``store``
``session.retired_since`` {hostId, revision: 0} (in the background, retrying while the
store is down) and ends the same way every adopted session whose pane was retired
after the session was created.

Environment: ``ORCA_PTYD_SCROLLBACK_BYTES`` (1 MiB), ``ORCA_PTYD_HISTORY_BYTES``
(4 MiB), ``ORCA_PTYD_GC_GRACE_S`` (300), ``ORCA_PTYD_GC_INTERVAL_S`` (60),
``ORCA_PTYD_FD_KEEPER`` (default ``<runtime dir>/ptyd-keeper.sock`` if present).
"""

from __future__ import annotations

import msgspec

# Wire field names are camelCase (seed convention), Python names snake_case:
# every Struct below declares rename="camel".


class SpawnArgs(msgspec.Struct, rename="camel"):
    argv: list[str]
    cwd: str
    worktree_id: str
    cols: int = 80
    rows: int = 24
    env: dict[str, str] | None = None
    pane_key: str | None = None


class SessionArgs(msgspec.Struct, rename="camel"):
    session_id: str


class WriteArgs(msgspec.Struct, rename="camel"):
    session_id: str
    data: bytes | None = None
    text: str | None = None


class ResizeArgs(msgspec.Struct, rename="camel"):
    session_id: str
    cols: int
    rows: int


class SignalArgs(msgspec.Struct, rename="camel"):
    session_id: str
    signal: str | int


class ListArgs(msgspec.Struct, rename="camel"):
    worktree_id: str | None = None


class ReadArgs(msgspec.Struct, rename="camel"):
    session_id: str
    since: int | None = None
    limit: int | None = None


class EmptyArgs(msgspec.Struct, rename="camel"):
    pass


OUTPUT_EVENT = "term.output"
EXIT_EVENT = "term.exit"
SPAWNED_EVENT = "term.spawned"
CLOSED_EVENT = "term.closed"
REKEYED_EVENT = "term.rekeyed"
# Largest read reply: a whole scrollback fits; bounded well below ZMQ_MAXMSGSIZE.
MAX_READ_BYTES = 8 * 1024 * 1024
# Terminal sizes beyond this are typos or attacks (TIOCSWINSZ takes 16-bit values).
MAX_DIMENSION = 1000


def output_topic(session_id: str) -> str:
    return f"{OUTPUT_EVENT}.{session_id}"


def exit_topic(session_id: str) -> str:
    return f"{EXIT_EVENT}.{session_id}"
