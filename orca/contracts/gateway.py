"""The ``gateway`` wire contract: the ``tcp://`` face of a host, and its remote mirrors.

The gateway has two faces. To *remote clients* (other machines) it serves one CURVE
ROUTER on ``tcp://`` (zguide "Ironhouse"; ``actors/gateway/listener.py``): every
request is checked against the sender's key (ZAP User-Id) and relayed to the local
actor that owns the op, if the key's access level allows that op (``READ_ONLY_OPS``
for read-only keys, ``FULL_OPS`` for full ones; nothing else is ever relayed). To the
*local* CLI it serves, on ``ipc://`` like every actor, its status and the mirrors it
keeps of every remote host this host follows (``orca host add``).

Ops served to remote clients (besides the relayed ones):

``gateway.events`` {epoch?, after, waitS=1, limit=500} → EventBatch {epoch, next, gap,
    events: [{src, epoch, seq, type, data}]}: a long-poll (at most ``waitS``, capped at
    10 s) on the gateway's bounded ring of the local actors' events (each keeps its
    publisher's ``epoch``/``seq``, so a remote mirror applies the zguide "Clone" rules
    per source). ``after`` is the ``next`` of the previous batch; ``after = -1`` returns
    the head at once (the cursor to take before taking snapshots). ``gap`` is true
    when the ring no longer holds the events from ``after`` on, or ``epoch`` is not the
    gateway's (it restarted): the caller re-snapshots every source. PTY output is not
    in the ring: remote terminals read it by offset with ``term.read`` or, without
    polling, ``gateway.termWait``.

``gateway.termWait`` {sessionId, since?, limit?, waitS=5} → ReadResult (``term.read``'s):
    ``term.read`` that waits, at most ``waitS`` (capped at 10 s), until the session has
    output past ``since``, has exited, or ``since`` is past the scrollback (``gap``).
    The gateway wakes on ptyd's ``term.output`` events of that session (its own
    subscription, shared by every waiter of the session), so an idle remote attach
    costs one request per ``waitS`` instead of a poll every few milliseconds.

Ops served locally (ipc only; a remote key calling them gets ``forbidden``):

``gateway.status`` {} → GatewayStatus: where it listens, its public key, the ZAP
    handler's health, refusal counters, per-peer counters, the followed hosts' links.
``gateway.mirrors`` {} → MirrorList: per followed host its mirrored agent-status rows,
    terminal sessions and worktrees, labelled with the host's execution host id, and
    ``reachable`` / ``unverifiableSince`` (the link is down: rows kept, never cleared,
    never to be shown as live).
``gateway.mirrorChanged`` (event) {host, version, reachable}: a followed host's mirror
    changed (rows, sessions, worktrees, repos, its link); ``orca watch`` re-reads
    ``gateway.mirrors`` then. ``version`` grows by one or more per change.
``gateway.hostStatus`` (event) {host, hostId, row? | cleared?}: one agent-status
    change of a followed host, in order, as its mirror applied it (published before
    the ``mirrorChanged`` that follows it), so ``orca watch`` shows every transition
    even when several come between two reads of the mirrors.
``gateway.injectZapFault`` {} → {}: fault injection for tests (ends the ZAP handler as
    a crash would); refused with ``forbidden`` unless ``ORCA_GATEWAY_FAULTS=1``.

The vault's ``vault.search``, ``vault.usage`` and ``vault.status`` are read-only ops,
relayed only when the host shares its transcript index (``gateway.toml`` ``[gateway]
share_vault = true``, or ``ORCA_GATEWAY_SHARE_VAULT=1``; off by default): otherwise
``forbidden`` for every key. The index never leaves its host: each answer is a page
of hits or a usage report.

Errors: ``forbidden`` (the key may not call this op, or is no longer authorized),
``unavailable`` (rate or in-flight bound of this peer exceeded; the local actor down).
"""

from __future__ import annotations

from typing import Any, Literal

import msgspec

from orca.contracts import gitwatch, hooks, orch, ptyd, store, vault
from orca.contracts import sys as sys_contract
from orca.contracts.base import Args, Contract, NoArgs, Op, Payload
from orca.model.agent_status import AgentStatusRow, PaneFate
from orca.wire.errors import BadRequest, Unavailable

# A long-poll waits at most this long (a client's timeout must exceed it).
MAX_EVENTS_WAIT_S = 10.0
MAX_EVENTS_LIMIT = 2000

Access = Literal["read-only", "full"]


class Forbidden(BadRequest):
    """The caller's key may not call this op (or is no longer authorized)."""

    code = "forbidden"


class EventsArgs(Args, frozen=True, kw_only=True):
    epoch: str | None = None
    after: int = -1
    wait_s: float = msgspec.field(default=1.0)
    limit: int = 500


class RelayedEvent(Payload, frozen=True, kw_only=True):
    src: str
    epoch: str
    seq: int
    type: str
    data: Any = None


class EventBatch(Payload, frozen=True, kw_only=True):
    epoch: str
    next: int
    gap: bool
    events: list[RelayedEvent]


class PeerStats(Payload, frozen=True, kw_only=True):
    key: str
    name: str
    access: str
    requests: int
    refused: int
    inflight: int


class HostLink(Payload, frozen=True, kw_only=True):
    name: str
    host_id: str
    endpoint: str
    reachable: bool
    unverifiable_since: float | None
    last_contact: float | None
    resyncs: int
    error: str


# ``<runtime>/gateway.remote``: the CURVE listener's Unix socket, always bound; an ssh
# forward reaches it (orca.remote.ssh). Named like the actors' ``.rpc``/``.pub``.
LOCAL_SOCKET_KIND = "remote"


class GatewayStatus(Payload, frozen=True, kw_only=True):
    listening: str | None
    server_key: str
    zap_alive: bool
    zap_restarts: int
    zap_allowed: int
    zap_denied: int
    refused_ops: int
    handshake_failures: int
    peers: list[PeerStats]
    hosts: list[HostLink]
    # Requests admitted per op name, since the gateway started (every peer).
    op_counts: dict[str, int] = msgspec.field(default_factory=dict)
    # The listener's Unix socket (``ipc://…/gateway.remote``), the end ssh forwards reach.
    local_socket: str | None = None


class HostMirror(Payload, frozen=True, kw_only=True):
    link: HostLink
    rows: list[AgentStatusRow]
    fates: list[PaneFate]
    sessions: list[ptyd.SessionRow]
    worktrees: list[dict[str, Any]]
    # The remote store's repos and worktree notes (``repo.list``, ``worktreeMeta.list``
    # as builtins): the labels of its worktrees; read-only, never written locally.
    repos: list[dict[str, Any]] = msgspec.field(default_factory=list)
    worktree_meta: dict[str, dict[str, Any]] = msgspec.field(default_factory=dict)
    version: int = 0


class MirrorList(Payload, frozen=True, kw_only=True):
    hosts: list[HostMirror]


class Empty(Payload, frozen=True, kw_only=True):
    pass


class TermWaitArgs(Args, frozen=True, kw_only=True):
    session_id: str
    since: int | None = None
    limit: int | None = None
    wait_s: float = 5.0


class MirrorChanged(Payload, frozen=True, kw_only=True):
    host: str
    version: int
    reachable: bool


class HostStatus(Payload, frozen=True, kw_only=True):
    """One agent-status change of a followed host, as its mirror applied it."""

    host: str
    host_id: str
    row: AgentStatusRow | None = None  # agentStatus.set
    cleared: hooks.StatusCleared | None = None  # agentStatus.clear


CONTRACT = Contract("gateway")
EVENTS = CONTRACT.op(
    "gateway.events", EventsArgs, EventBatch, BadRequest, doc="long-poll the event ring"
)
STATUS = CONTRACT.op("gateway.status", NoArgs, GatewayStatus, doc="listener, ZAP, peers, links")
MIRRORS = CONTRACT.op("gateway.mirrors", NoArgs, MirrorList, doc="every followed host's mirror")
TERM_WAIT = CONTRACT.op(
    "gateway.termWait",
    TermWaitArgs,
    ptyd.ReadResult,
    BadRequest,
    doc="term.read, waiting for output",
)
MIRROR_CHANGED = CONTRACT.event(
    "gateway.mirrorChanged", MirrorChanged, doc="a host's mirror changed"
)
HOST_STATUS = CONTRACT.event(
    "gateway.hostStatus", HostStatus, doc="a followed host's status change"
)
# A termWait waits at most this long (a client's timeout must exceed it).
MAX_TERM_WAIT_S = 10.0
INJECT_ZAP_FAULT = CONTRACT.op(
    "gateway.injectZapFault", NoArgs, Empty, Forbidden, doc="tests: crash the ZAP handler"
)

# -- what a remote key may call --------------------------------------------------------
# Mutability is declared here, once, for every op of the actors the gateway relays to
# (tests/unit/contracts/test_gateway_access.py checks that every op is classified).
# Read-only keys get READ_ONLY_OPS; full keys also MUTATING_OPS; NOT_RELAYED never
# crosses a machine (agents report status to their own host; store writes that only
# local actors make; the supervisor and the fd keeper are not on this list at all).
READ_ONLY_OPS: frozenset[Op[Any, Any]] = frozenset(
    {
        sys_contract.HELLO,
        sys_contract.PING,
        EVENTS,
        TERM_WAIT,
        hooks.SNAPSHOT,
        hooks.PERMISSION_SNAPSHOT,
        ptyd.LIST,
        ptyd.READ,
        ptyd.SNAPSHOT,
        ptyd.GC_STATUS,
        gitwatch.WORKTREE_LIST,
        gitwatch.WORKTREE_PATHS,
        gitwatch.WORKTREE_MERGE_PREVIEW,  # in memory: moves no ref, touches no checkout
        gitwatch.SNAPSHOT,
        store.REPO_LIST,
        store.FOLDER_WORKSPACE_LIST,
        store.WORKTREE_META_GET,
        store.WORKTREE_META_LIST,
        store.LINEAGE_GET,
        store.SETTINGS_GET,
        store.UI_GET,
        store.SESSION_GET,
        store.SESSION_BINDINGS,
        store.SESSION_RETIRED_SINCE,
        store.IDENTITY_RESOLVE,
        # (Not store.STATE_SNAPSHOT: the whole persisted state is this host's own; a
        # viewer reads the projections above, seed 02-56.)
        vault.SEARCH,
        vault.USAGE,
        vault.STATUS,
        # Issue 26: runs are read like worktrees.
        orch.LIST,
        orch.SHOW,
        # Issue 38: another host lists a host's automations and their firings; defining,
        # pausing or firing them is never relayed (a schedule is its own host's business).
        orch.AUTO_LIST,
        orch.AUTO_SHOW,
    }
)
# Reads only a full key may make: a variant's inbox is the messages between its agents
# and their operator, not a viewer's projection (seed 02-56).
FULL_KEY_READS: frozenset[Op[Any, Any]] = frozenset({orch.INBOX})
MUTATING_OPS: frozenset[Op[Any, Any]] = frozenset(
    {
        ptyd.SPAWN,
        ptyd.WRITE,
        ptyd.RESIZE,
        ptyd.SIGNAL,
        ptyd.KILL,
        ptyd.CLOSE,
        ptyd.ATTACH,  # takes a lease: changes what term.list counts
        ptyd.LEASE,
        ptyd.DETACH,
        gitwatch.WORKTREE_CREATE,
        gitwatch.WORKTREE_REMOVE,
        gitwatch.WORKTREE_RENAME,
        gitwatch.WORKTREE_RENAME_FROM_FIRST_MESSAGE,
        gitwatch.WORKTREE_MERGE,
        hooks.ACK,
        # Issue 27: approving an agent's tool call from another machine is a write; a
        # read-only key sees the pending requests, a full key may answer them.
        hooks.ANSWER_PERMISSION,
        store.REPO_ADD,
        store.REPO_UPDATE,
        store.REPO_REMOVE,
        store.WORKTREE_META_SET,
        store.WORKTREE_META_PATCH,
        store.SETTINGS_PATCH,
        store.UI_PATCH,
        # Issue 26: starting agents, running checks, merging, removing, messaging.
        orch.CREATE,
        orch.CHECK,
        orch.MERGE,
        orch.REMOVE,
        orch.SEND,
        orch.ACK,
    }
)
RELAYED_CONTRACTS = (
    store.CONTRACT, hooks.CONTRACT, ptyd.CONTRACT, gitwatch.CONTRACT, vault.CONTRACT, orch.CONTRACT,
)  # fmt: skip
# The transcript index's ops (read-only) are relayed only by a host whose gateway.toml
# says ``share_vault = true`` (off by default: transcripts are the most private thing a
# host holds); any other host answers them ``forbidden`` whatever the key's access.
VAULT_OPS: frozenset[Op[Any, Any]] = frozenset({vault.SEARCH, vault.USAGE, vault.STATUS})
FULL_OPS = READ_ONLY_OPS | MUTATING_OPS | FULL_KEY_READS
OPS_BY_NAME: dict[str, Op[Any, Any]] = {op.name: op for op in FULL_OPS}
# Ops the gateway answers itself rather than relaying.
GATEWAY_SERVED = frozenset(
    {sys_contract.HELLO.name, sys_contract.PING.name, EVENTS.name, TERM_WAIT.name}
)


def allowed_ops(access: Access) -> frozenset[Op[Any, Any]]:
    return FULL_OPS if access == "full" else READ_ONLY_OPS


def is_mutating(op: Op[Any, Any]) -> bool:
    """Whether ``op`` changes state on the serving host (anything not known read-only)."""
    return op not in READ_ONLY_OPS


__all__ = [
    "CONTRACT",
    "EVENTS",
    "FULL_KEY_READS",
    "FULL_OPS",
    "HOST_STATUS",
    "INJECT_ZAP_FAULT",
    "MIRRORS",
    "MIRROR_CHANGED",
    "MUTATING_OPS",
    "READ_ONLY_OPS",
    "STATUS",
    "TERM_WAIT",
    "VAULT_OPS",
    "Forbidden",
    "Unavailable",
]
