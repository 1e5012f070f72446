"""The ``ptyd`` wire contract: every op and event, with fields and errors.

Ops (ROUTER; args validated as the Structs below; field names camelCase on the wire):

``term.spawn`` {argv, cwd, worktreeId, cols=80, rows=24, env?, userEnv?, paneKey?}
    → {sessionId, paneKey, tabId, terminalHandle, pid, launchTokenSha256}
    Starts ``argv`` on a new PTY; ``worktreeId`` is a worktree id or a folder
    workspace's ``folder:<id>`` (``sessionId`` = ``<worktreeId>@@<8 hex>``,
    orca.model.panes). The child's environment (issue 40) is ``userEnv``, the
    environment of the shell that asked (``orca term new``, ``orca run new``,
    ``orca ui`` send theirs, as tmux's ``new-session`` takes its client's), or, without
    one, ptyd's own; either way without Orca's virtualenv and Orca's own ``ORCA_*``
    variables (``ORCA_HOME``, ``ORCA_HOST_ID`` and ``ORCA_NOTIFY_COMMAND`` stay:
    ``orca/user_env.py``), then ``env`` (``-e NAME=VALUE``), then the pane's
    ``ORCA_PANE_KEY``, ``ORCA_TAB_ID``, ``ORCA_WORKTREE_ID``,
    ``ORCA_AGENT_LAUNCH_TOKEN`` and ``ORCA_AGENT_HOOK_ENDPOINT`` (what the hook script
    reads). Errors: ``bad_request`` (empty argv, bad worktree id
    or pane key, cwd not a directory, executable not found, cols/rows outside
    1..``MAX_DIMENSION``), ``internal`` (system).
``term.write`` {sessionId, data? (bytes), text? (str)} → {queued}
    Queues input (never waits for the child). Errors: ``not_found``; ``conflict``
    (session ended); ``unavailable`` (the child is not reading; backlog full);
    ``bad_request`` (both ``data`` and ``text``).
``term.resize`` {sessionId, cols, rows} → {} (TIOCSWINSZ + SIGWINCH to the group).
    Errors: ``not_found``; ``conflict`` (ended); ``bad_request`` (size out of range).
``term.signal`` {sessionId, signal ("TERM", "SIGINT", 15)} → {delivered}
    ``delivered`` is false when the child had already exited.
``term.kill`` {sessionId} → {} SIGHUP+SIGTERM to the group, SIGKILL after a grace.
``term.close`` {sessionId} → {fenced, storeRevision, historyOnly} (for an archived
    session, see ``term.list``: its history is deleted, nothing else, ``historyOnly``
    true - its pane may run a newer terminal by now) a pane close (docs/protocols.md §2):
    kill if running, forget the session and its history, then retire its pane
    everywhere before replying: ``hooks`` ``agentStatus.retire_pane`` (queued behind
    every earlier hooks message, so a pending ``restart_pane`` cannot lift the fence)
    and ``store`` ``session.retire_pane`` (revision bump + flush; skipped for legacy
    numeric pane keys), at once, best effort. ``fenced`` true means hooks confirmed the
    fence: a status write for the pane key sent after this reply is rejected
    (``retired_pane``) until a new spawn in the pane. ``storeRevision``: the host's new
    topology revision, null if the store did not answer or there was nothing to retire.
    Neither failure fails the close; the reply comes within ~3 s even with both down.
``term.list`` {worktreeId?, history=false} → {sessions: [row]} where row (``SessionRow``) is
    {sessionId, hostId, worktreeId, paneKey, tabId, terminalHandle, argv, cwd, pid,
    cols, rows, createdAt, exitCode, running, endOffset, subscribers, archived, lost,
    endedAt}. With ``history`` the list also has the *archived* sessions: known only
    from their history on disk (``actors/ptyd/archive.py``), they ended before this
    ptyd started (``orca down``, a crash, a reboot); ``lost``: no exit was recorded
    (``exitCode`` -1), ptyd and the keeper died while it ran; ``endedAt`` (epoch s).
    ``term.read``, ``term.attach`` (the final screen; ``running`` false, ``outputEnded``
    true, no topics, no lease) and ``term.close`` (deletes the history) accept an
    archived session's id; every other op answers ``not_found`` for it. Ended
    sessions' history is bounded (``config/ptyd.toml`` ``[history]``: total bytes and
    age, oldest end evicted first; a running session's history is never evicted).
    ``subscribers``:
    the clients attached now (live ``term.attach`` leases, below, plus in-process
    readers). After a worktree rename ``cwd`` follows the folder when it was the old
    worktree folder or under it.
``term.read`` {sessionId, since?, limit?} → {sessionId, offset, data, end, gap,
    running, exitCode, outputEnded}. Without ``since``: the snapshot (scrollback,
    starting at a safe boundary). With ``since``: bytes from that offset (at most
    ``limit``, capped at ``MAX_READ_BYTES``); if they were trimmed, ``gap`` is true and
    the snapshot is returned instead (resync). ``outputEnded``: the PTY hung up and
    ``end`` is final (``running`` may turn false before the last output has been
    read). ``exitCode``: null while running, the code, 128+N for signal N, -1 when
    unknown. Errors: ``not_found``; ``bad_request`` (``since`` beyond ``end``).
``term.attach`` {sessionId, attachmentId?} → the ``term.read`` fields plus {epoch, seq,
    topics, leaseS}, where
    ``data`` is the *screen*, not scrollback: an escape stream generated from the
    session's terminal model (``actors/ptyd/terminal_model.py``) that redraws its cells,
    attributes, cursor, modes (alternate screen over the primary, bracketed paste,
    mouse, keypad, cursor visibility), title and cwd on a terminal of the session's
    size, and never contains a terminal query. ``offset`` == ``end`` is the stream
    position the screen corresponds to: output continues at that offset. Subscribe to
    ``topics`` *before* calling it; then apply output events with
    ``offset + len(data) > offset-so-far`` (StreamCursor); on a gap beyond the
    scrollback attach again. Terminal queries in the output (DSR, DA, OSC 10/11...)
    are answered by ptyd from the model, attached clients or not; clients must not
    let their terminal answer them (``orca.model.vt.QueryFilter``).
    Counting attached clients (``subscribers`` in ``term.list``): output reaches a
    client through ptyd's PUB socket, which cannot tell who listens, so a client that
    wants to be counted names itself with an ``attachmentId`` (1..64 chars, its own
    choice, e.g. a uuid) and holds a *lease* on it: ``term.attach`` takes or renews it
    for ``leaseS`` (``ATTACH_LEASE_S``, 15 s), ``term.lease`` renews it, ``term.detach``
    ends it. A client that dies stops being counted when its lease runs out. Without
    ``attachmentId`` the call is a plain screen read and counts nothing.
    ``stream``: the endpoint of the attach stream (below), the interactive path.
``term.lease`` {sessionId, attachmentId} → {leaseS} takes or renews the lease (a client
    renews every ``leaseS / 3``). Errors: ``not_found``.
``term.detach`` {sessionId, attachmentId} → {} ends the lease (unknown ones: no-op).
    Errors: ``not_found`` (no such session).
``term.snapshot`` {} → {epoch, seq, sessions: [row]} (mirror snapshot).
``term.gc_status`` {} → {suspects: {worktreeId: since}, graceS}
``term.activity`` {paneKey} → {sessionId, running, quietMs, lines} of the pane's running
    terminal (the newest): how long its output has been quiet, and its screen as text
    (each row right-trimmed; ``lines`` empty when it has no model). What hooks settles
    an answered prompt by (issue 40 item 4: an agent idle at its prompt prints
    nothing, one at work animates). Errors: ``not_found`` (no running terminal there).
``sys.stats`` built in, plus {ptyd: {sessions, hooksDropped, hooksFailed, gcSuspects,
    history: {degraded, droppedBytes, failures, resumed, lastError}, endedHistories}}
    (``endedHistories``: archived sessions, see ``term.list``). ``history``
    sums the live sessions' journals: a full or failing disk (ENOSPC, EIO...) makes a
    journal *degraded* (output keeps streaming to clients and into the scrollback and
    model, but is not journaled: ``droppedBytes``; not crash-safe meanwhile); the next
    output after ``RETRY_INTERVAL_S`` (1 s) tries the disk again and a journal that
    resumes starts over at the current offsets (``resumed``). ``degraded`` counts the
    journals degraded now; ``lastError`` is e.g. ``"ENOSPC: No space left on device"``.

Every op naming a session accepts an id from before a worktree rename (an alias).

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

The attach stream (issue 14; the interactive path of ``orca term attach``): a ROUTER
socket at ``ipc_endpoint("ptyd", "attach")`` (``ATTACH_STREAM_KIND``; in the checked
runtime dir, file mode 0600, ipc only). A client connects one DEALER per attachment
(its routing id is its identity) and speaks the tagged msgpack messages below (field
``t``); no RPC per keystroke, output pushed to it alone:

    client → ptyd   ``hello`` {sessionId, attachmentId?, since?, flat}: attach. Without
                    ``since``: ptyd answers ``screen`` (the model's redraw) then live
                    ``output``. With ``since`` (a resume, e.g. after a ptyd restart):
                    ``output`` from that offset, or ``screen`` if it was trimmed.
                    ``flat``: the client keeps the user's screen in an outer alternate
                    screen (``orca term attach``), so the redraw and the live stream
                    never switch screens: a chunk in which the program switched
                    screens is sent as a ``screen`` of the new one instead.
                    ``input`` {data, sessionId?}: bytes for the PTY (this client
                    becomes the one that answers terminal queries; a ptyd that does
                    not know the client, e.g. restarted, still writes them to
                    ``sessionId``, then answers ``not_attached``). ``resize`` {cols, rows}.
                    ``read`` {since}: catch up after a gap. ``ping`` {}: every
                    ``STREAM_PING_S``; renews the attachment (it is dropped after
                    ``ATTACH_LEASE_S`` of silence). ``bye`` {}: detach.
    ptyd → client   ``screen`` {sessionId, offset, data, cols, rows, running, exitCode,
                    outputEnded}: clear and draw ``data``; output continues at
                    ``offset``. ``output`` {offset, data, answer}: the same offsets and
                    gap rule as ``term.output`` (an ``offset`` past the client's means a
                    gap: send ``read``; a client whose queue was full gets an empty one
                    at the end offset within ``STREAM_PING_S``). ``answer`` true: this
                    client is the one whose terminal answers the queries in ``data``
                    (show it unfiltered); false: strip queries (``QueryFilter``);
                    a chunk ending inside a sequence keeps its answerer for the next
                    (a query cut in two is shown whole to one terminal). ``exit`` {exitCode,
                    endOffset} after the final output. ``error`` {code, message}
                    (``not_found``, ``conflict``, ``unavailable``, ``bad_request``,
                    ``not_attached``: ptyd does not know this client, e.g. it restarted:
                    send ``hello`` with ``since`` again).

The handed terminal (issue 24; ``orca term attach``'s path, tmux's shape; only on the
Unix socket ``LOCAL_STREAM_FILE``, not the ROUTER): the client passes its own terminal
to ptyd and ptyd reads the keys from it and writes the output to it, with no hop
through the client:

    client → ptyd   ``hand`` {sessionId, cols?, rows?, detachKey (bytes, default Ctrl-])} sent with
                    SCM_RIGHTS ancillary data holding exactly the client's stdin and
                    stdout (``HAND_FDS``; both ttys, the client already put its terminal
                    in raw mode and its outer alternate screen). ``resize`` {cols,
                    rows}, ``bye`` {}: as above (no ``ping``: the connection is the
                    lease).
    ptyd → client   ``handed`` {sessionId, cols, rows}: ptyd holds the terminal (it
                    draws the model's flat screen on it, then the live output).
                    ``released`` {reason}: ptyd no longer touches the terminal (it
                    wrote its last byte before this message): ``detached`` (the detach
                    key was typed), ``bye``, ``tty_closed`` (the terminal hung up),
                    ``closed`` (the session was closed). ``exit`` {exitCode,
                    endOffset}: the program ended and its last output is on the
                    terminal. ``error`` {code, message}: ``bad_request`` (not ttys, no
                    fds, the ROUTER), ``not_found``.
                    A client whose connection ends (EOF: ptyd died) restores its
                    terminal itself; its terminal is no longer read by anyone.

Terminal queries (DSR, DA, OSC 10/11 ...): while a stream client is attached exactly
one answers: the most recent one that sent ``input`` (before any did, the most
recent to attach); it gets the chunk with ``answer`` true and every other client
strips the queries. If that client cannot take the chunk (its queue is full, it
went away) or none is attached, ptyd answers from the model. Never two answers.
A handed terminal never answers: it is shown output with queries stripped, and while
it is the one that typed last the model answers.

Calls ``ptyd`` makes (never on the output path; hooks calls go through one ordered
bounded queue): ``hooks`` ``agentStatus.restart_pane`` {paneKey, launchTokenSha256,
worktreeId} on every spawn, ``agentStatus.ingest_osc`` {paneKey, terminalHandle,
worktreeId, payload} per OSC 9999 sequence, ``agentStatus.retire_pane`` {paneKey} on
``term.close``, ``agentStatus.reconcile_ptys`` {running, ended} (every pane's PTYs) after
every start and whenever hooks' heartbeat shows an epoch it has not told (hooks
restarted; docs/protocols.md §3); ``store`` ``identity.resolve`` {worktreeId} (session GC),
``session.reconcile_ptys`` {hostId, running, ended} once after every start (in the
background, retrying while the store is down; ``actors/store/pty_bindings.py``,
docs/protocols.md §4), ``session.retire_pane`` {hostId, tabId, leafId} on ``term.close`` (directly, short
timeout), ``session.retire_pty`` {hostId, ptyIds} after every exit, once ``term.exit``
went out (its bindings leave the session, its pane stays; retried for up to 30 s
while the store is down). Followed (``orca.actor.subscriber``, the store contract's specs): store's
``worktree.renamed`` {oldId, newId} (re-key) and ``session.paneRetired`` {hostId,
tabId, leafId, revision}: every running session of that host whose pane key is
``tabId:leafId`` is ended like ``term.kill`` (``term.exit`` follows as usual; the
session stays listed until closed); a malformed event is logged once and dropped.
Events missed while ptyd was down: after adopting the keeper's sessions it calls
``store`` ``session.retired_since`` {hostId, revision: 0} (in the background, retrying
while the store is down) and ends the same way every adopted session whose pane was
retired after the session was created.

Environment: ``ORCA_PTYD_SCROLLBACK_BYTES`` (1 MiB), ``ORCA_PTYD_HISTORY_BYTES``
(4 MiB), ``ORCA_PTYD_GC_GRACE_S`` (300), ``ORCA_PTYD_GC_INTERVAL_S`` (60),
``ORCA_PTYD_FD_KEEPER`` (default ``<runtime dir>/ptyd-keeper.sock`` if present).
"""

from __future__ import annotations

from typing import Annotated

import msgspec

from orca.contracts.base import Args, Contract, NoArgs, Payload
from orca.user_env import check_bounds
from orca.wire.codec import ZMQ_MAX_MESSAGE_BYTES
from orca.wire.errors import BadRequest, Conflict, Internal, NotFound, Unavailable

# Largest read reply: a whole scrollback fits; bounded well below ZMQ_MAXMSGSIZE.
MAX_READ_BYTES = 8 * 1024 * 1024
# Terminal sizes beyond this are typos or attacks (TIOCSWINSZ takes 16-bit values).
MAX_DIMENSION = 1000

Dimension = Annotated[int, msgspec.Meta(ge=1, le=MAX_DIMENSION)]
# How long an attachment counts in ``subscribers`` without renewal (client crash bound).
ATTACH_LEASE_S = 15.0
AttachmentId = Annotated[str, msgspec.Meta(min_length=1, max_length=64)]

# ptyd's local attach-stream socket, in the runtime dir (actors/ptyd/local_stream.py;
# its client is ``orca.client.terminal.LocalTerminalStream``).
LOCAL_STREAM_FILE = "ptyd.attach.sock"
# A frame: this header (the body's length, big-endian) then a msgpack message.
LOCAL_FRAME_HEADER = ">I"
LOCAL_MAX_FRAME = ZMQ_MAX_MESSAGE_BYTES

_OUTPUT_TYPE = "term.output"
_EXIT_TYPE = "term.exit"


def output_topic(session_id: str) -> str:
    """The topic of one session's ``term.output`` events."""
    return f"{_OUTPUT_TYPE}.{session_id}"


def exit_topic(session_id: str) -> str:
    """The topic of one session's ``term.exit`` event."""
    return f"{_EXIT_TYPE}.{session_id}"


# -- args -------------------------------------------------------------------------------


class SpawnArgs(Args, frozen=True, kw_only=True):
    """What to start and where; also the session table's spawn request (one shape)."""

    argv: list[str]
    cwd: str
    worktree_id: str
    cols: Dimension = 80
    rows: Dimension = 24
    env: dict[str, str] | None = None
    user_env: dict[str, str] | None = None
    pane_key: str | None = None

    def __post_init__(self) -> None:  # a ValueError is msgspec's ValidationError
        for env in (self.env, self.user_env):
            if env is not None:
                check_bounds(env)


class SessionArgs(Args, frozen=True, kw_only=True):
    session_id: str


class AttachArgs(Args, frozen=True, kw_only=True):
    session_id: str
    attachment_id: AttachmentId | None = None


class LeaseArgs(Args, frozen=True, kw_only=True):
    session_id: str
    attachment_id: AttachmentId


class LeaseResult(Payload, frozen=True, kw_only=True):
    lease_s: float


class WriteArgs(Args, frozen=True, kw_only=True):
    session_id: str
    data: bytes | None = None
    text: str | None = None


class ResizeArgs(Args, frozen=True, kw_only=True):
    session_id: str
    cols: Dimension
    rows: Dimension


class SignalArgs(Args, frozen=True, kw_only=True):
    session_id: str
    signal: str | int


class ListArgs(Args, frozen=True, kw_only=True):
    worktree_id: str | None = None
    # Also the sessions known only from their history on disk (``archived`` rows).
    history: bool = False


class ReadArgs(Args, frozen=True, kw_only=True):
    session_id: str
    since: int | None = None
    limit: int | None = None


# -- results ----------------------------------------------------------------------------


class Empty(Payload, frozen=True, kw_only=True):
    """The result of an op that reports nothing but success (``{}``)."""


class SpawnResult(Payload, frozen=True, kw_only=True):
    session_id: str
    pane_key: str
    tab_id: str
    terminal_handle: str
    pid: int
    launch_token_sha256: str


class WriteResult(Payload, frozen=True, kw_only=True):
    queued: int


class SignalResult(Payload, frozen=True, kw_only=True):
    delivered: bool


class CloseResult(Payload, frozen=True, kw_only=True):
    fenced: bool = False
    store_revision: int | None = None
    # True for an archived session: only its history was deleted (its pane is not
    # retired: it may run a newer terminal by now). Absent otherwise (the reply's shape
    # for a live session is unchanged).
    history_only: bool | msgspec.UnsetType = msgspec.UNSET


class SessionRow(Payload, frozen=True, kw_only=True):
    """One session as ``term.list``, ``term.snapshot`` and ``term.spawned`` show it."""

    session_id: str
    host_id: str
    worktree_id: str
    pane_key: str
    tab_id: str
    terminal_handle: str
    argv: list[str]
    cwd: str
    pid: int
    cols: int
    rows: int
    created_at: float
    exit_code: int | None
    running: bool
    end_offset: int
    subscribers: int
    # Known only from its history on disk: it ended before this ptyd started (issue 13).
    archived: bool = False
    # Archived without a recorded exit: ptyd and the keeper died while it ran (a reboot).
    lost: bool = False
    # When it ended (archived rows; for a lost one, its last output).
    ended_at: float | None = None
    # A lost one: when a ptyd's start first found it lost (`orca up` names those its own
    # start found, once).
    lost_at: float | None = None
    # A running session whose folder (``cwd``) was removed under it, by hand or by a
    # tool other than Orca (issue 13: reported, never hidden); the program still runs.
    folder_missing: bool = False


class SessionList(Payload, frozen=True, kw_only=True):
    sessions: list[SessionRow]


class ReadResult(Payload, frozen=True, kw_only=True):
    session_id: str
    offset: int
    data: bytes
    end: int
    gap: bool
    running: bool
    exit_code: int | None
    output_ended: bool


class AttachResult(ReadResult, frozen=True, kw_only=True):
    """The snapshot plus the publisher position and the topics to have subscribed."""

    epoch: str
    seq: int
    topics: list[str]
    lease_s: float = 0.0  # > 0 when the call named an attachment (it holds a lease)
    stream: str | None = None  # the attach stream's endpoint (interactive path)


class Snapshot(Payload, frozen=True, kw_only=True):
    epoch: str
    seq: int
    sessions: list[SessionRow]


class ActivityArgs(Args, frozen=True, kw_only=True):
    pane_key: str


class Activity(Payload, frozen=True, kw_only=True):
    session_id: str
    running: bool
    quiet_ms: int
    lines: list[str]


class GcStatus(Payload, frozen=True, kw_only=True):
    suspects: dict[str, float]
    grace_s: float


# -- event data -------------------------------------------------------------------------


class OutputChunk(Payload, frozen=True, kw_only=True):
    session_id: str
    offset: int
    data: bytes


class SessionExited(Payload, frozen=True, kw_only=True):
    session_id: str
    exit_code: int | None
    end_offset: int


class SessionSpawned(SessionRow, frozen=True, kw_only=True):
    """``term.spawned``: the new session's row."""


class SessionClosed(Payload, frozen=True, kw_only=True):
    session_id: str


class SessionRekeyed(Payload, frozen=True, kw_only=True):
    old: str
    new: str


class SessionResized(Payload, frozen=True, kw_only=True):
    """The PTY's new size, whoever resized it: the client that resized last sets the
    size every other client draws at (docs/web.md), and each face says when it is not
    its own."""

    session_id: str
    cols: int
    rows: int


# -- the attach stream (messages, not ops: see the module docstring) --------------------

# The endpoint kind of the attach stream: ``paths.ipc_endpoint("ptyd", ATTACH_STREAM_KIND)``.
ATTACH_STREAM_KIND = "attach"
# A stream client pings this often; silent for ATTACH_LEASE_S, it is detached.
STREAM_PING_S = 2.0


class _StreamMessage(Payload, frozen=True, kw_only=True, tag_field="t"):
    """Base of the attach stream's messages (tagged by ``t``)."""


class StreamHello(_StreamMessage, frozen=True, kw_only=True, tag="hello"):
    session_id: str
    attachment_id: AttachmentId | None = None
    since: int | None = None
    flat: bool = False


class StreamInput(_StreamMessage, frozen=True, kw_only=True, tag="input"):
    data: bytes
    session_id: str | None = None  # written even by a ptyd that does not know us


class StreamResize(_StreamMessage, frozen=True, kw_only=True, tag="resize"):
    cols: Dimension
    rows: Dimension


class StreamRead(_StreamMessage, frozen=True, kw_only=True, tag="read"):
    since: Annotated[int, msgspec.Meta(ge=0)]


class StreamPing(_StreamMessage, frozen=True, kw_only=True, tag="ping"):
    pass


class StreamBye(_StreamMessage, frozen=True, kw_only=True, tag="bye"):
    pass


class StreamScreen(_StreamMessage, frozen=True, kw_only=True, tag="screen"):
    session_id: str
    offset: int
    data: bytes
    cols: int
    rows: int
    running: bool
    exit_code: int | None
    output_ended: bool


class StreamOutput(_StreamMessage, frozen=True, kw_only=True, tag="output"):
    offset: int
    data: bytes
    answer: bool = False


class StreamExit(_StreamMessage, frozen=True, kw_only=True, tag="exit"):
    exit_code: int | None
    end_offset: int


class StreamError(_StreamMessage, frozen=True, kw_only=True, tag="error"):
    code: str
    message: str


# ``StreamError.code`` when ptyd does not know the sender (send ``hello`` again).
NOT_ATTACHED = "not_attached"

# The descriptors a ``hand`` carries (SCM_RIGHTS): the client's stdin, then its stdout.
HAND_FDS = 2
# The default detach key of a handed terminal: Ctrl-] (what telnet taught to press).
DEFAULT_DETACH_KEY = b"\x1d"


class StreamHand(_StreamMessage, frozen=True, kw_only=True, tag="hand"):
    session_id: str
    detach_key: Annotated[bytes, msgspec.Meta(min_length=1, max_length=8)] = DEFAULT_DETACH_KEY
    cols: Dimension | None = None  # the terminal's size (the session is resized to it)
    rows: Dimension | None = None


class StreamHanded(_StreamMessage, frozen=True, kw_only=True, tag="handed"):
    session_id: str
    cols: int
    rows: int


# ``StreamReleased.reason`` values.
RELEASED_DETACHED = "detached"
RELEASED_BYE = "bye"
RELEASED_TTY_CLOSED = "tty_closed"
RELEASED_CLOSED = "closed"


class StreamReleased(_StreamMessage, frozen=True, kw_only=True, tag="released"):
    reason: str


ToPtyd = StreamHello | StreamInput | StreamResize | StreamRead | StreamPing | StreamBye | StreamHand
FromPtyd = StreamScreen | StreamOutput | StreamExit | StreamError | StreamHanded | StreamReleased


# -- the contract -----------------------------------------------------------------------

CONTRACT = Contract("ptyd")

SPAWN = CONTRACT.op("term.spawn", SpawnArgs, SpawnResult, BadRequest, Internal)
WRITE = CONTRACT.op(
    "term.write", WriteArgs, WriteResult, NotFound, Conflict, Unavailable, BadRequest
)
RESIZE = CONTRACT.op("term.resize", ResizeArgs, Empty, NotFound, Conflict, BadRequest)
SIGNAL = CONTRACT.op("term.signal", SignalArgs, SignalResult, NotFound, BadRequest)
KILL = CONTRACT.op("term.kill", SessionArgs, Empty, NotFound)
CLOSE = CONTRACT.op("term.close", SessionArgs, CloseResult, NotFound)
LIST = CONTRACT.op("term.list", ListArgs, SessionList)
READ = CONTRACT.op("term.read", ReadArgs, ReadResult, NotFound, BadRequest)
ATTACH = CONTRACT.op("term.attach", AttachArgs, AttachResult, NotFound)
LEASE = CONTRACT.op("term.lease", LeaseArgs, LeaseResult, NotFound)
DETACH = CONTRACT.op("term.detach", LeaseArgs, Empty, NotFound)
SNAPSHOT = CONTRACT.op("term.snapshot", NoArgs, Snapshot)
GC_STATUS = CONTRACT.op("term.gc_status", NoArgs, GcStatus)
ACTIVITY = CONTRACT.op("term.activity", ActivityArgs, Activity, NotFound)

OUTPUT = CONTRACT.event(
    _OUTPUT_TYPE,
    OutputChunk,
    doc="output of one session, on its own topic",
    topic_of=lambda e: output_topic(e.session_id),
)
EXIT = CONTRACT.event(
    _EXIT_TYPE,
    SessionExited,
    doc="a session's child exited (after its final output)",
    topic_of=lambda e: exit_topic(e.session_id),
)
SPAWNED = CONTRACT.event("term.spawned", SessionSpawned, doc="a session was started")
CLOSED = CONTRACT.event("term.closed", SessionClosed, doc="a session was closed and forgotten")
REKEYED = CONTRACT.event("term.rekeyed", SessionRekeyed, doc="a worktree rename moved a session")
RESIZED = CONTRACT.event("term.resized", SessionResized, doc="a session's PTY took a new size")
