"""The ``hooks`` wire contract: every op and event, with fields and errors.

Ops (ROUTER; args validated as the Structs below; camelCase on the wire):

``agentStatus.snapshot`` {} → {epoch, seq, rev, rows: [row]}
    The mirror snapshot (architecture §2 "Clone"). ``row`` is
    :class:`orca.model.agent_status.AgentStatusRow` on the wire: {paneKey, worktreeId,
    state, source, updatedAtMs, stateSinceMs, agent, tabId, detail, sessionId,
    terminalHandle, structuredHost, restoredUnconfirmed, rev}.
``agentStatus.ingest_osc`` {paneKey, payload (JSON text or map), terminalHandle?,
    worktreeId?, connectionId?, connectionSeq?, evidenceAgeMs=0} → {outcome, reason}
    An OSC 9999 document ``ptyd`` scanned from the pane's output (source
    ``terminal``). ``outcome`` is ``applied | unchanged | rejected | ignored``;
    a rejection (``retired_pane``, ``replayed``, ``stale_evidence``, ``outranked``,
    ``unknown_worktree``, ...) is an answer, not an error.
    Errors: ``bad_request`` (pane key malformed, payload not a bounded JSON object).
``agentStatus.ingest_structured`` {paneKey, worktreeId, state (working | attention |
    idle | null), structuredHost, agent, sessionId, detail=""} → {outcome, reason}
    A structured session summary; ``state: null`` means the host forgot the session
    (the row is removed). Structured rows are never persisted.
``agentStatus.retire_pane`` {paneKey, retireId?} → {removed}
    The pane closed: its row goes (one ``agentStatus.clear``) and it is fenced, with
    its aliases, until ``restart_pane``. The fence is on disk before the reply and
    survives a hooks restart (seed 02 §9, §13).
``agentStatus.restart_pane`` {paneKey, launchTokenSha256?, worktreeId?} → {fenceLifted}
    A live launch in the pane: lifts the fence and commits the new token hash.
``agentStatus.alias_pane`` {alias, paneKey} → {outcome}
    Register a legacy pane key as an alias of its stable owner (seed 02 §8).
``agentStatus.clear`` {paneKey, reason="cleared"} → {removed}
    Remove a row without fencing (authenticated exit, provider replacement).
``hooks.endpoint`` {} → {port, version, endpointFile, scriptPath}
    Where the HTTP endpoint listens (the secret is only in ``endpoint.env``).

Followed (``store`` PUB; :mod:`actors.hooks.store_follower`):

``session.paneRetired`` {hostId, tabId, leafId, revision} - same as ``retire_pane``
    for ``tabId:leafId`` (the row is cleared only if it belongs to ``hostId``).
    Missed ones are replayed with ``store`` ``session.retired_since`` {hostId: local,
    revision} from the last applied revision (``storeRevision`` in last-status.json):
    at start (background, retried while store is down) and after a revision gap.
``worktree.renamed`` {oldId, newId} - rows filed under ``oldId`` are re-published
    under ``newId`` (``agentStatus.set``), and later writes naming ``oldId`` land under
    ``newId``. At start, restored rows' ids are checked with ``identity.resolve``.

Events (PUB; envelope {v, src, epoch, seq, type, data}):

``agentStatus.set`` {row} - a row was written (every accepted write, including a
    refresh of the same state: freshness is part of the row).
``agentStatus.clear`` {paneKey, worktreeId, reason} - the row is gone everywhere.
"""

from __future__ import annotations

from typing import Any, Literal

import msgspec

from orca.model import agent_status

SNAPSHOT_OP = "agentStatus.snapshot"
INGEST_OSC_OP = "agentStatus.ingest_osc"
INGEST_STRUCTURED_OP = "agentStatus.ingest_structured"
RETIRE_PANE_OP = "agentStatus.retire_pane"
RESTART_PANE_OP = "agentStatus.restart_pane"
ALIAS_PANE_OP = "agentStatus.alias_pane"
CLEAR_OP = "agentStatus.clear"
ENDPOINT_OP = "hooks.endpoint"

SET_EVENT = agent_status.SET_EVENT
CLEAR_EVENT = agent_status.CLEAR_EVENT


class NoArgs(msgspec.Struct, rename="camel"):
    pass


class IngestOscArgs(msgspec.Struct, rename="camel"):
    pane_key: str
    payload: str | dict[str, Any]
    terminal_handle: str | None = None
    worktree_id: str = ""
    connection_id: str | None = None
    connection_seq: int | None = None
    evidence_age_ms: int = 0


class IngestStructuredArgs(msgspec.Struct, rename="camel"):
    pane_key: str
    worktree_id: str
    state: Literal["working", "attention", "idle"] | None
    structured_host: str
    agent: str = "unknown"
    session_id: str = ""
    detail: str = ""


class RetirePaneArgs(msgspec.Struct, rename="camel"):
    pane_key: str
    retire_id: str | None = None


class RestartPaneArgs(msgspec.Struct, rename="camel"):
    pane_key: str
    launch_token_sha256: str | None = None
    worktree_id: str = ""


class AliasPaneArgs(msgspec.Struct, rename="camel"):
    alias: str
    pane_key: str


class ClearArgs(msgspec.Struct, rename="camel"):
    pane_key: str
    reason: str = "cleared"
