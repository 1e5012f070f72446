"""The ``hooks`` wire contract: every op and event, with fields and errors.

Ops (ROUTER; args validated as the Structs below; camelCase on the wire):

``agentStatus.snapshot`` {} → Snapshot {epoch, seq, rev, rows: [row], fates: [fate]}
    The mirror snapshot (architecture §2 "Clone"): ``epoch``/``seq`` are the
    publisher's at the moment it was taken (``orca.actor.Mirror`` needs them), ``rev``
    the store-wide write counter. ``row`` is
    :class:`orca.model.agent_status.AgentStatusRow` on the wire: {paneKey, worktreeId,
    state, source, updatedAtMs, stateSinceMs, agent, tabId, detail, sessionId,
    terminalHandle, structuredHost, restoredUnconfirmed, rev, hostId, unread}
    (``unread``: a done/blocked row not yet seen - attach or ``agentStatus.ack``).
    ``fate`` is :class:`orca.model.agent_status.PaneFate` {paneKey, worktreeId, agent,
    terminalHandle, exitCode, endedAtMs, hostId}: a PTY exit ``ptyd`` reported for a
    pane that had a row (bounded; superseded by the pane's next row or launch).
``agentStatus.ingest_osc`` {paneKey, payload (JSON text or map), terminalHandle?,
    worktreeId?, connectionId?, connectionSeq?, evidenceAgeMs=0} → IngestResult
    {outcome, reason}
    An OSC 9999 document ``ptyd`` scanned from the pane's output (source
    ``terminal``). ``outcome`` is ``applied | unchanged | rejected | ignored``;
    a rejection (``retired_pane``, ``replayed``, ``stale_evidence``, ``outranked``,
    ``unknown_worktree``, ...) is an answer, not an error; ``ignored`` (reason
    ``no_status``) is a document that carries no status.
    Errors: ``bad_request`` (pane key malformed, payload not a bounded JSON object).
``agentStatus.ingest_structured`` {paneKey, worktreeId, state (working | attention |
    idle | null), structuredHost, agent="unknown", sessionId="", detail=""} →
    IngestResult {outcome, reason}
    A structured session summary; ``state: null`` means the host forgot the session
    (the row is removed). Structured rows are never persisted.
    Errors: ``bad_request`` (pane key malformed).
``agentStatus.retire_pane`` {paneKey, retireId?} → Removed {removed}
    The pane closed: its row goes (one ``agentStatus.clear``) and it is fenced, with
    its aliases, until ``restart_pane``. The fence is on disk before the reply and
    survives a hooks restart (seed 02 §9, §13). ``removed``: a row was dropped.
    Errors: ``bad_request`` (pane key malformed).
``agentStatus.restart_pane`` {paneKey, launchTokenSha256?, worktreeId="",
    terminalHandle?} → Restarted {fenceLifted}
    A live launch in the pane: lifts the fence and commits the new token hash (none:
    the commitment is dropped); ``worktreeId`` files later OSC rows of the pane. The
    previous agent's row is removed (clear reason ``replaced``): a new launch never
    inherits it (seed 03 "provider-generation 替换"); ``terminalHandle`` becomes the
    pane's current terminal (a later exit of an older one removes nothing).
    Errors: ``bad_request`` (pane key malformed, hash not 64 lowercase hex digits).
``agentStatus.alias_pane`` {alias, paneKey} → Aliased {outcome}
    Register a legacy pane key as an alias of its stable owner (seed 02 §8); a row kept
    under the alias moves to the owner. ``outcome`` is ``applied | unchanged``.
    Errors: ``bad_request`` (either key malformed).
``agentStatus.clear`` {paneKey, reason="cleared"} → Removed {removed}
    Remove a row without fencing (authenticated exit, provider replacement); the
    reason (cut to 64 characters) is the clear event's.
    Errors: ``bad_request`` (pane key malformed).
``agentStatus.pty_exited`` {paneKey, terminalHandle, exitCode?} → Removed {removed}
    ``ptyd`` (an authenticated RPC peer) saw the pane's PTY exit: the row goes
    everywhere (one ``agentStatus.clear`` reason ``pty_exited`` with ``exitCode``) and
    the fact is kept (bounded, in memory) as a ``PaneFate`` in the snapshot's
    ``fates``. Ignored (``removed: false``) when the pane has since been relaunched
    under another terminal handle (seed 03 PR 1b "经过认证的 PTY 退出").
    Errors: ``bad_request`` (pane key malformed).
``agentStatus.reconcile_ptys`` {running: [LivePty], ended: [EndedPty]} → PtysReconciled
    {epoch, confirmed, exited, replaced}
    ``ptyd``'s truth about every pane's PTYs (docs/protocols.md §3 "Restored rows and
    ptyd's truth"), sent after every ptyd start and whenever ptyd sees a new hooks
    ``epoch`` (hooks restarted alone), queued behind every earlier ptyd message.
    ``LivePty`` {paneKey, terminalHandle, launchTokenSha256}: a running PTY;
    ``EndedPty`` {paneKey, terminalHandle, launchTokenSha256, exitCode (null: unknown,
    lost)}: one ptyd saw end (still listed or archived). Per row (structured rows
    aside), the row's launch is the pane's launch-token commitment (persisted with the
    row) or, for a live row, its terminal handle:
    * the pane runs that launch → the row is *tied* to it: ``terminalHandle`` the live
      one, one ``agentStatus.set``; it stays ``restoredUnconfirmed`` with its state and
      evidence times until the agent reports again (a live PTY proves the process, not
      its turn: seed 03 R15); ``confirmed`` in the reply counts these;
    * the pane runs only other launches → the row is *replaced* (clear reason
      ``replaced``, as ``restart_pane`` would have done);
    * that launch ended → *exited*, as ``pty_exited`` (clear ``pty_exited`` with the
      exit code, a ``PaneFate``);
    * ptyd knows nothing of it → unchanged (a restored row stays unconfirmed).
    A pane running exactly one launch also gets that launch's token hash committed and
    its terminal handle as current (a ``restart_pane`` lost while hooks was down); a
    fence is never lifted. ``epoch``: this hooks incarnation's (ptyd pushes again when
    it sees another). Counts are rows. Idempotent.
    Errors: ``bad_request`` (a pane key malformed, a hash not 64 lowercase hex digits,
    more than ``MAX_RECONCILED_PTYS`` entries in a list).
``agentStatus.pane_input`` {paneKey, terminalHandle, evidenceAgeMs=0,
    typedAtMonotonicMs=0} → IngestResult {outcome, reason}
    The user typed into the pane (``ptyd`` ``term.write``). A ``blocked`` row (a
    permission prompt) returns to ``working`` at once: input into the blocked pane is
    the evidence the prompt was answered. A key typed before the row was blocked
    answers nothing (``unchanged``, ``typed_before_the_ask``): its age is taken at
    handling from ``typedAtMonotonicMs`` (the machine's monotonic clock), else
    ``evidenceAgeMs`` (as ptyd sent it). Any other row: ``unchanged``.
    Errors: ``bad_request`` (pane key malformed).
``agentStatus.ack`` {paneKey?} → Acked {acked}
    The user saw the pane (attach) or acknowledged it (``orca ack``): its row (every
    row without ``paneKey``) stops being ``unread`` (an ``agentStatus.set`` each).
    Errors: ``bad_request`` (pane key malformed).
``hooks.endpoint`` {} → Endpoint {port, version, endpointFile, scriptPath}
    Where the HTTP endpoint listens (the secret is only in ``endpoint.env``).
``agentSession.bindings`` {} → SessionBindings {epoch, seq, bindings}
    Which pane each agent session runs in (the vault's join; see "agent sessions"
    at the end of this module). Event ``agentSession.bound`` {binding}.

Followed (``store`` PUB, decoded with :mod:`orca.contracts.store`;
``actors.hooks.store_follower``):

``session.paneRetired`` {hostId, tabId, leafId, revision} - same as ``retire_pane``
    for ``tabId:leafId`` (the row is cleared only if it belongs to ``hostId``).
    Missed ones are replayed with ``store`` ``session.retired_since`` {hostId: local,
    revision} from the last applied revision (``storeRevision`` in last-status.json):
    at start (background, retried while store is down) and after a revision gap.
``worktree.renamed`` {oldId, newId} - rows filed under ``oldId`` are re-published
    under ``newId`` (``agentStatus.set``), and later writes naming ``oldId`` land under
    ``newId``. At start, restored rows' ids are checked with ``identity.resolve``.
``worktreeMeta.removed`` {worktreeIds}, ``repo.removed`` {id, worktreeIds},
``folderWorkspace.removed`` {id} - a worktree may be gone (``orca worktree rm``):
    each named id, and for a repo or folder workspace every id of it that rows or fates
    name, is checked with ``identity.resolve``; *unknown* drops its rows and its fates
    (one ``agentStatus.clear`` per pane, reason ``worktree_removed``: a reader that
    keeps fates drops the pane's too), saved at once; *alias* re-keys as
    ``worktree.renamed``; *current* keeps them. Checked in the background, retried
    while the store does not answer; missed while hooks was down: the start-up check
    of the restored rows' ids (unknown ones dropped).

Events (PUB; envelope {v, src, epoch, seq, type, data}):

``agentStatus.set`` StatusSet {row} - a row was written (every accepted write,
    including a refresh of the same state: freshness is part of the row).
``agentStatus.clear`` StatusCleared {paneKey, worktreeId, reason} - the row is gone
    everywhere (``retired``, ``session_ended``, ``aliased``, ``replaced``,
    ``pty_exited``, ``worktree_removed``, ``evicted``, or a clear's reason).

Mirrors (TUI, web, remote hosts, tests) keep a copy with ``orca.actor.Mirror`` using
:func:`load_mirror` and :func:`apply_to_mirror` with ``SNAPSHOT`` and ``EVENTS``; the
rows are then projected with :mod:`orca.model.agent_status` (seed 03 "镜像不是合并").
Permission requests (issue 27; ``actors.hooks.permission_desk`` decides,
``actors.hooks.permission_hold`` holds): an agent's PermissionRequest hook, posted by the
hook script in its ``permission`` mode to ``POST /permission/<agent>``, is held open
until the first answer or until its hold (the installer's per-event timeout less a
margin) ends. hooks is the one verdict store: the web dashboard and ``orca ui`` answer
through ``permission.answer``; the agent's own terminal answers by being answered (the
pane's row leaving ``blocked``: keys typed into the pane, the agent's next hook); a
timeout gives no verdict, so the agent's own prompt decides. Pending requests live in
memory only: a hooks restart drops the held connections and the script answers "no
decision".

``permission.snapshot`` {} → PermissionSnapshot {epoch, seq, pending: [PermissionRequest],
    settled: [PermissionSettlement]} - the mirror snapshot (``settled``: the most recent
    ones, bounded). ``PermissionRequest`` {requestId, paneKey, worktreeId, agent,
    toolName, summary, sessionId, createdAtMs, expiresAtMs, hostId};
    ``PermissionSettlement`` {requestId, paneKey, worktreeId, outcome (allow | deny |
    timeout | answered_elsewhere | withdrawn), by, message, settledAtMs}.
``permission.answer`` {requestId, behavior (allow | deny), message="", by} →
    PermissionAnswered {outcome (decided | already_settled), settlement}
    The first answer wins; a later one (the same or another behavior, from anyone) gets
    ``already_settled`` with the first one's settlement. ``by`` names who answered
    (``web:<device>``, ``ui``), cut to 64 characters. Errors: ``not_found`` (no such
    request, or settled too long ago to be remembered), ``bad_request``.

Events: ``permission.requested`` PermissionRequested {request};
``permission.settled`` PermissionSettled {settlement} - the request is answered, timed
out, answered in the agent's terminal or withdrawn (the agent's hook went away, the
pane's row was cleared). Mirrors fold them with :func:`load_permissions` /
:func:`apply_permissions`.
"""

from __future__ import annotations

from typing import Annotated, Any, Literal

import msgspec

from orca.contracts.base import Args, Contract, EventSpec, NoArgs, Payload
from orca.model.agent_status import (
    AgentStatusRow,
    PaneFate,
    StructuredState,
    index_rows,
    with_row,
    without_pane,
)
from orca.wire.envelope import Event
from orca.wire.errors import BadRequest, NotFound

IngestOutcome = Literal["applied", "unchanged", "rejected", "ignored"]


# -- args ---------------------------------------------------------------------------
class IngestOscArgs(Args, frozen=True, kw_only=True):
    pane_key: str
    payload: str | dict[str, Any]
    terminal_handle: str | None = None
    worktree_id: str = ""
    connection_id: str | None = None
    connection_seq: int | None = None
    evidence_age_ms: int = 0


class IngestStructuredArgs(Args, frozen=True, kw_only=True):
    pane_key: str
    worktree_id: str
    state: StructuredState | None
    structured_host: str
    agent: str = "unknown"
    session_id: str = ""
    detail: str = ""


class RetirePaneArgs(Args, frozen=True, kw_only=True):
    pane_key: str
    retire_id: str | None = None


class RestartPaneArgs(Args, frozen=True, kw_only=True):
    pane_key: str
    launch_token_sha256: str | None = None
    worktree_id: str = ""
    terminal_handle: str | None = None


class AliasPaneArgs(Args, frozen=True, kw_only=True):
    alias: str
    pane_key: str


class PtyExitedArgs(Args, frozen=True, kw_only=True):
    pane_key: str
    terminal_handle: str
    exit_code: int | None = None


class PaneInputArgs(Args, frozen=True, kw_only=True):
    pane_key: str
    terminal_handle: str = ""
    # How long before sending the last key was typed (ptyd's queue to hooks can lag):
    # a key typed before the row was blocked answers nothing.
    evidence_age_ms: int = 0
    # When it was typed on the machine's monotonic clock (CLOCK_MONOTONIC, ms), which
    # ptyd and hooks share: hooks takes the age from it when the call is handled, so the
    # time the call spent on its way and queued in hooks counts too (0: not sent).
    typed_at_monotonic_ms: int = 0


# One reconciliation names every PTY ptyd holds (ended ones are bounded by its history
# budget); far more than any real host, small enough to bound the work of one call.
MAX_RECONCILED_PTYS = 65_536


class LivePty(Payload, frozen=True, kw_only=True):
    pane_key: str
    terminal_handle: str
    launch_token_sha256: str


class EndedPty(Payload, frozen=True, kw_only=True):
    pane_key: str
    terminal_handle: str
    launch_token_sha256: str
    exit_code: int | None = None


class ReconcilePtysArgs(Args, frozen=True, kw_only=True):
    running: Annotated[list[LivePty], msgspec.Meta(max_length=MAX_RECONCILED_PTYS)]
    ended: Annotated[list[EndedPty], msgspec.Meta(max_length=MAX_RECONCILED_PTYS)] = msgspec.field(
        default_factory=list
    )


class AckArgs(Args, frozen=True, kw_only=True):
    pane_key: str | None = None


class ClearArgs(Args, frozen=True, kw_only=True):
    pane_key: str
    reason: str = "cleared"


# -- results ------------------------------------------------------------------------
class Snapshot(Payload, frozen=True, kw_only=True):
    epoch: str
    seq: int
    rev: int
    rows: list[AgentStatusRow]
    fates: list[PaneFate] = msgspec.field(default_factory=list)


class Acked(Payload, frozen=True, kw_only=True):
    acked: int


class IngestResult(Payload, frozen=True, kw_only=True):
    outcome: IngestOutcome
    reason: str = ""


class Removed(Payload, frozen=True, kw_only=True):
    removed: bool


class PtysReconciled(Payload, frozen=True, kw_only=True):
    epoch: str
    confirmed: int
    exited: int
    replaced: int


class Restarted(Payload, frozen=True, kw_only=True):
    fence_lifted: bool


class Aliased(Payload, frozen=True, kw_only=True):
    outcome: Literal["applied", "unchanged"]


class Endpoint(Payload, frozen=True, kw_only=True):
    port: int
    version: int
    endpoint_file: str
    script_path: str


# -- events -------------------------------------------------------------------------
class StatusSet(Payload, frozen=True, kw_only=True):
    row: AgentStatusRow


class StatusCleared(Payload, frozen=True, kw_only=True, omit_defaults=True):
    pane_key: str
    worktree_id: str
    reason: str
    # ``pty_exited`` only: ptyd's exit code of the pane's PTY.
    exit_code: int | None = None


CONTRACT = Contract("hooks")

SNAPSHOT = CONTRACT.op("agentStatus.snapshot", NoArgs, Snapshot, doc="the mirror snapshot")
INGEST_OSC = CONTRACT.op(
    "agentStatus.ingest_osc", IngestOscArgs, IngestResult, BadRequest, doc="an OSC 9999 document"
)
INGEST_STRUCTURED = CONTRACT.op(
    "agentStatus.ingest_structured",
    IngestStructuredArgs,
    IngestResult,
    BadRequest,
    doc="a structured session summary",
)
RETIRE_PANE = CONTRACT.op(
    "agentStatus.retire_pane", RetirePaneArgs, Removed, BadRequest, doc="close and fence a pane"
)
RESTART_PANE = CONTRACT.op(
    "agentStatus.restart_pane", RestartPaneArgs, Restarted, BadRequest, doc="lift a pane's fence"
)
ALIAS_PANE = CONTRACT.op(
    "agentStatus.alias_pane", AliasPaneArgs, Aliased, BadRequest, doc="alias a legacy pane key"
)
CLEAR = CONTRACT.op(
    "agentStatus.clear", ClearArgs, Removed, BadRequest, doc="remove a row without fencing"
)
PTY_EXITED = CONTRACT.op(
    "agentStatus.pty_exited", PtyExitedArgs, Removed, BadRequest, doc="a pane's PTY exited"
)
RECONCILE_PTYS = CONTRACT.op(
    "agentStatus.reconcile_ptys",
    ReconcilePtysArgs,
    PtysReconciled,
    BadRequest,
    doc="ptyd's truth about every pane's PTYs",
)
PANE_INPUT = CONTRACT.op(
    "agentStatus.pane_input", PaneInputArgs, IngestResult, BadRequest, doc="input into a pane"
)
ACK = CONTRACT.op("agentStatus.ack", AckArgs, Acked, BadRequest, doc="mark rows read")
ENDPOINT = CONTRACT.op("hooks.endpoint", NoArgs, Endpoint, doc="where the HTTP endpoint listens")

STATUS_SET = CONTRACT.event("agentStatus.set", StatusSet, doc="a row was written")
STATUS_CLEARED = CONTRACT.event("agentStatus.clear", StatusCleared, doc="a row is gone")

StatusEventData = StatusSet | StatusCleared
EVENTS: tuple[EventSpec[Any], ...] = (STATUS_SET, STATUS_CLEARED)


# -- mirrors ------------------------------------------------------------------------
def load_mirror(snapshot: Snapshot) -> dict[str, AgentStatusRow]:
    """A mirror's rows by pane key from one ``agentStatus.snapshot`` (``Mirror.load``)."""
    return index_rows(snapshot.rows)


def apply_to_mirror(
    rows: dict[str, AgentStatusRow], _envelope: Event, event: object
) -> dict[str, AgentStatusRow]:
    """Fold one typed event into a mirror's rows (``Mirror.apply``; returns a new dict).
    Events that are not status events (``permission.*``, ``agentSession.bound``, on
    the same publisher) leave the rows as they are, so a mirror following every event
    of the contract stays whole."""
    if isinstance(event, StatusSet):
        return with_row(rows, event.row)
    if isinstance(event, StatusCleared):
        return without_pane(rows, event.pane_key)
    return rows


# -- permission requests (issue 27) -------------------------------------------------
PermissionBehavior = Literal["allow", "deny"]
PermissionOutcome = Literal["allow", "deny", "timeout", "answered_elsewhere", "withdrawn"]
# ``by`` and ``message`` are labels shown to people and agents: bounded.
MAX_ANSWERED_BY_CHARS = 64
MAX_PERMISSION_MESSAGE_CHARS = 500


class PermissionRequest(Payload, frozen=True, kw_only=True):
    request_id: str
    pane_key: str
    worktree_id: str
    agent: str
    tool_name: str
    # What the agent wants to do, one line (a command, a path): for a person to judge.
    summary: str
    session_id: str
    created_at_ms: int
    expires_at_ms: int
    host_id: str = "local"


class PermissionSettlement(Payload, frozen=True, kw_only=True):
    request_id: str
    pane_key: str
    worktree_id: str
    outcome: PermissionOutcome
    by: str
    message: str
    settled_at_ms: int


class PermissionSnapshot(Payload, frozen=True, kw_only=True):
    epoch: str
    seq: int
    pending: list[PermissionRequest]
    settled: list[PermissionSettlement] = msgspec.field(default_factory=list)


class AnswerPermissionArgs(Args, frozen=True, kw_only=True):
    request_id: str
    behavior: PermissionBehavior
    message: str = ""
    by: str = ""


class PermissionAnswered(Payload, frozen=True, kw_only=True):
    outcome: Literal["decided", "already_settled"]
    settlement: PermissionSettlement


class PermissionRequested(Payload, frozen=True, kw_only=True):
    request: PermissionRequest


class PermissionSettled(Payload, frozen=True, kw_only=True):
    settlement: PermissionSettlement


PERMISSION_SNAPSHOT = CONTRACT.op(
    "permission.snapshot", NoArgs, PermissionSnapshot, doc="pending permission requests"
)
ANSWER_PERMISSION = CONTRACT.op(
    "permission.answer",
    AnswerPermissionArgs,
    PermissionAnswered,
    NotFound,
    BadRequest,
    doc="answer a held permission request (the first answer wins)",
)
PERMISSION_REQUESTED = CONTRACT.event(
    "permission.requested", PermissionRequested, doc="an agent waits for a permission"
)
PERMISSION_SETTLED = CONTRACT.event(
    "permission.settled", PermissionSettled, doc="a permission request is settled"
)
PermissionEventData = PermissionRequested | PermissionSettled
PERMISSION_EVENTS: tuple[EventSpec[Any], ...] = (PERMISSION_REQUESTED, PERMISSION_SETTLED)


def load_permissions(snapshot: PermissionSnapshot) -> dict[str, PermissionRequest]:
    """A mirror's pending requests by id from one ``permission.snapshot``."""
    return {r.request_id: r for r in snapshot.pending}


def apply_permissions(
    pending: dict[str, PermissionRequest], _envelope: Event, event: PermissionEventData
) -> dict[str, PermissionRequest]:
    """Fold one permission event into a mirror's pending requests (a new dict)."""
    if isinstance(event, PermissionRequested):
        return {**pending, event.request.request_id: event.request}
    return {k: v for k, v in pending.items() if k != event.settlement.request_id}


# -- agent sessions: which pane an agent session (and its transcript) runs in -----------
# The vault's exact join (orca/contracts/vault.py): pane -> session -> transcript ->
# worktree -> repo. hooks learns it from the hook payloads it already receives (every
# agent's hooks carry ``session_id`` and ``transcript_path``: Claude Code, Codex and
# Gemini CLI hook input; Codex's legacy notify carries ``thread-id`` only), so nobody
# has to guess a session from a working directory.
#
# ``agentSession.bindings`` {} → SessionBindings {epoch, seq, bindings: [SessionBinding]}
#     The mirror snapshot of the binding table: one binding per (agent, sessionId), the
#     latest pane that reported it; bounded (``MAX_SESSION_BINDINGS``, the least
#     recently bound go first), kept 30 days, saved in ``agent-hooks/session-bindings.json``.
#     A binding is taken only from a hook the pane's authority accepts (the pane is not
#     retired, the launch token matches the pane's commitment).
# ``agentSession.bound`` (event) {binding}: a session was bound, or moved to another
#     pane, worktree or transcript path. Not sent again for a binding already known.
MAX_SESSION_BINDINGS = 4096


class SessionBinding(Payload, frozen=True, kw_only=True):
    agent: str
    session_id: str
    pane_key: str
    bound_at_ms: int
    transcript_path: str = ""
    tab_id: str = ""
    worktree_id: str = ""


class SessionBindings(Payload, frozen=True, kw_only=True):
    epoch: str
    seq: int
    bindings: list[SessionBinding]


class SessionBound(Payload, frozen=True, kw_only=True):
    binding: SessionBinding


SESSION_BINDINGS = CONTRACT.op(
    "agentSession.bindings", NoArgs, SessionBindings, doc="which pane each agent session runs in"
)
SESSION_BOUND = CONTRACT.event("agentSession.bound", SessionBound, doc="a session was bound")

BindingKey = tuple[str, str]  # (agent, sessionId)


def load_bindings_mirror(snapshot: SessionBindings) -> dict[BindingKey, SessionBinding]:
    """A bindings mirror from ``agentSession.bindings`` (``Mirror.load``)."""
    return {(b.agent, b.session_id): b for b in snapshot.bindings}


def apply_binding(
    bindings: dict[BindingKey, SessionBinding], _envelope: Event, event: SessionBound
) -> dict[BindingKey, SessionBinding]:
    """Fold one ``agentSession.bound`` into a bindings mirror (returns a new dict)."""
    b = event.binding
    return {**bindings, (b.agent, b.session_id): b}
