"""Producers' inputs turned into :class:`StatusEvent` - the one shape the store ingests.

Three producers (seed 03 "规则"), one target:

* an authenticated HTTP hook (:func:`event_from_hook`) - source ``hook``;
* an OSC 9999 document ``ptyd`` scanned out of a pane's output
  (:func:`event_from_osc`) - source ``terminal``; it may be an explicit
  ``{"state": ...}`` document or an agent hook payload with ``agent`` set;
* a structured session summary (:func:`event_from_structured`) - source
  ``structured``, its ``working/attention/idle`` mapped once by the model.

A ``None`` result means the input carries no status change (unknown event name).
"""

from __future__ import annotations

import json
from collections.abc import Mapping

from actors.hooks.agent_events import KNOWN_AGENTS, decide
from actors.hooks.http_request import MAX_JSON_DEPTH, HookSubmission, clean_document, exceeds_depth
from actors.hooks.status_table import StatusEvent
from orca.model.agent_status import StructuredState, map_structured_state


def event_from_hook(sub: HookSubmission) -> StatusEvent | None:
    decision = decide(sub.agent, sub.payload)
    if decision.action is None:
        return None
    return StatusEvent(
        pane_key=sub.pane_key,
        state=None if decision.action == "clear" else decision.action,
        source="hook",
        worktree_id=sub.worktree_id,
        agent=sub.agent,
        tab_id=sub.tab_id,
        detail=decision.detail,
        session_id=decision.session_id,
        launch_token_sha256=sub.launch_token_sha256,
        resume_only=decision.resume_only,
        not_while_blocked=decision.not_while_blocked,
    )


def decode_osc_payload(payload: str | Mapping[str, object]) -> Mapping[str, object] | None:
    """The OSC document as a mapping; ``None`` when it is not a bounded JSON object."""
    if isinstance(payload, str):
        try:
            document: object = json.loads(payload)
        except (ValueError, RecursionError):
            return None
    else:
        document = dict(payload)
    if not isinstance(document, dict) or exceeds_depth(document, MAX_JSON_DEPTH):
        return None
    # JSON's "\ud800" escape decodes to a lone surrogate, which no reader can encode
    # (issue 16 item 6: one such OSC payload broke `orca worktree ps` for everyone).
    cleaned = clean_document(document)
    assert isinstance(cleaned, dict)
    return cleaned


def event_from_osc(
    pane_key: str,
    worktree_id: str,
    document: Mapping[str, object],
    *,
    terminal_handle: str | None,
    connection_id: str | None = None,
    connection_seq: int | None = None,
    evidence_age_ms: int = 0,
) -> StatusEvent | None:
    agent_field = document.get("agent")
    agent = agent_field if isinstance(agent_field, str) and agent_field else "unknown"
    decision = decide(agent if agent in KNOWN_AGENTS else "generic", document)
    if decision.action is None:
        return None
    return StatusEvent(
        pane_key=pane_key,
        state=None if decision.action == "clear" else decision.action,
        source="terminal",
        worktree_id=worktree_id,
        agent=agent,
        detail=decision.detail,
        session_id=decision.session_id,
        terminal_handle=terminal_handle,
        connection_id=connection_id,
        connection_seq=connection_seq,
        evidence_age_ms=evidence_age_ms,
        resume_only=decision.resume_only,
    )


def event_from_structured(
    pane_key: str,
    worktree_id: str,
    state: StructuredState | None,
    *,
    structured_host: str,
    agent: str,
    session_id: str,
    detail: str = "",
) -> StatusEvent:
    """``state is None`` (the host forgot the session) removes the row."""
    return StatusEvent(
        pane_key=pane_key,
        state=None if state is None else map_structured_state(state),
        source="structured",
        worktree_id=worktree_id,
        agent=agent,
        detail=detail,
        session_id=session_id,
        structured_host=structured_host,
    )
