"""The verdict store for held permission requests: the first answer wins. Pure.

An agent's PermissionRequest hook is held open by :mod:`actors.hooks.permission_hold`
until someone answers it. Several people (a phone, ``orca ui``, the agent's own
terminal) may answer the same request at nearly the same moment, and the web may retry
a click; so every way a request ends goes through :meth:`PermissionDesk.settle`, which
settles it once:

* Invariant: a request id is settled at most once; its settlement never changes. A
  later answer, whoever sends it, gets the first settlement back (``already_settled``),
  which is what makes ``permission.answer`` idempotent by request id.
* Invariant: a pending request is in ``_pending`` and nowhere else; a settled one is in
  ``_settled`` (the most recent ``MAX_SETTLED``) and never pending again.

The hook payload is the agent's own (Claude Code: ``tool_name``, ``tool_input``,
``session_id``; Codex the same names, ``tool_input.command`` / ``description`` for its
shell approvals: codex-rs/hooks/src/events/permission_request.rs). What a person needs to
judge it is cut to one line (:func:`summarize_tool_input`).

No clock, no I/O, no trio: the shell passes ``now_ms`` and carries out the events.
"""

from __future__ import annotations

import json
import secrets
from collections import OrderedDict
from collections.abc import Callable, Mapping
from dataclasses import dataclass
from typing import Literal

from actors.hooks.http_request import clean_line
from orca.contracts.hooks import (
    MAX_ANSWERED_BY_CHARS,
    MAX_PERMISSION_MESSAGE_CHARS,
    PermissionOutcome,
    PermissionRequest,
    PermissionRequested,
    PermissionSettled,
    PermissionSettlement,
)

# Every agent that can wait on a prompt at once, with room: a held request costs one
# connection of the endpoint's 128 (actors/hooks/http.py), so this stays below that.
MAX_PENDING = 96
# Settlements remembered for late answers (a second click, a slow phone) and readers.
MAX_SETTLED = 256
MAX_SUMMARY_CHARS = 300
MAX_TOOL_NAME_CHARS = 100
# The tool-input fields that say what a call does, most telling first (Claude Code's
# Bash ``command``, Edit/Write ``file_path``, WebFetch ``url``; Codex's ``description``
# is the request's justification and comes after its ``command``).
_SUMMARY_FIELDS = ("command", "file_path", "path", "url", "pattern", "description", "prompt")


class DeskFull(Exception):
    """Too many requests are pending: the new one is not held (the agent asks in its own
    terminal, as without Orca)."""


@dataclass(frozen=True)
class Answer:
    """What :meth:`PermissionDesk.answer` did: ``decided`` now, or ``already_settled``."""

    outcome: Literal["decided", "already_settled"]
    settlement: PermissionSettlement
    events: tuple[PermissionSettled, ...]


def summarize_tool_input(tool_input: object) -> str:
    """One line saying what the tool call does, for a person to judge."""
    if isinstance(tool_input, Mapping):
        for key in _SUMMARY_FIELDS:
            value = tool_input.get(key)
            if isinstance(value, str) and value.strip():
                return clean_line(value.strip())[:MAX_SUMMARY_CHARS]
    if tool_input in (None, {}, [], ""):
        return ""
    text = json.dumps(tool_input, ensure_ascii=False, sort_keys=True, default=str)
    return clean_line(text)[:MAX_SUMMARY_CHARS]


def new_request_id() -> str:
    return secrets.token_hex(8)


class PermissionDesk:
    """Pending permission requests and the settlements of recent ones."""

    def __init__(
        self,
        host_id: str = "local",
        *,
        max_pending: int = MAX_PENDING,
        max_settled: int = MAX_SETTLED,
        new_id: Callable[[], str] = new_request_id,
    ) -> None:
        self._host_id = host_id
        self._max_pending = max_pending
        self._max_settled = max_settled
        self._new_id = new_id
        self._pending: dict[str, PermissionRequest] = {}
        self._settled: OrderedDict[str, PermissionSettlement] = OrderedDict()

    def pending(self) -> list[PermissionRequest]:
        return sorted(self._pending.values(), key=lambda r: (r.created_at_ms, r.request_id))

    def settled(self) -> list[PermissionSettlement]:
        return list(self._settled.values())

    def settlement(self, request_id: str) -> PermissionSettlement | None:
        return self._settled.get(request_id)

    def open(
        self,
        *,
        pane_key: str,
        worktree_id: str,
        agent: str,
        payload: Mapping[str, object],
        now_ms: int,
        hold_ms: int,
    ) -> tuple[PermissionRequest, PermissionRequested]:
        """A new pending request from a PermissionRequest hook payload (raises
        :class:`DeskFull` at the bound)."""
        if len(self._pending) >= self._max_pending:
            raise DeskFull(f"{len(self._pending)} permission requests are already waiting")
        request_id = self._new_id()
        while request_id in self._pending or request_id in self._settled:
            request_id = self._new_id()
        tool = payload.get("tool_name")
        session = payload.get("session_id")
        request = PermissionRequest(
            request_id=request_id,
            pane_key=pane_key,
            worktree_id=worktree_id,
            agent=agent,
            tool_name=clean_line(tool)[:MAX_TOOL_NAME_CHARS] if isinstance(tool, str) else "",
            summary=summarize_tool_input(payload.get("tool_input")),
            session_id=clean_line(session)[:MAX_TOOL_NAME_CHARS]
            if isinstance(session, str)
            else "",
            created_at_ms=now_ms,
            expires_at_ms=now_ms + hold_ms,
            host_id=self._host_id,
        )
        self._pending[request_id] = request
        return request, PermissionRequested(request=request)

    def settle(
        self, request_id: str, outcome: PermissionOutcome, by: str, message: str, now_ms: int
    ) -> PermissionSettled | None:
        """Settle a pending request (``None`` if it is not pending: settled already, or
        never known). The one place a request ends."""
        request = self._pending.pop(request_id, None)
        if request is None:
            return None
        settlement = PermissionSettlement(
            request_id=request_id,
            pane_key=request.pane_key,
            worktree_id=request.worktree_id,
            outcome=outcome,
            by=clean_line(by)[:MAX_ANSWERED_BY_CHARS],
            message=clean_line(message)[:MAX_PERMISSION_MESSAGE_CHARS],
            settled_at_ms=now_ms,
        )
        self._settled[request_id] = settlement
        while len(self._settled) > self._max_settled:
            self._settled.popitem(last=False)
        return PermissionSettled(settlement=settlement)

    def answer(
        self, request_id: str, behavior: PermissionOutcome, by: str, message: str, now_ms: int
    ) -> Answer | None:
        """A person's verdict: ``decided``, or ``already_settled`` with the first
        settlement; ``None`` for an id neither pending nor remembered."""
        settled = self.settle(request_id, behavior, by, message, now_ms)
        if settled is not None:
            return Answer("decided", settled.settlement, (settled,))
        earlier = self._settled.get(request_id)
        if earlier is None:
            return None
        return Answer("already_settled", earlier, ())

    def settle_pane(
        self, pane_key: str, outcome: PermissionOutcome, by: str, now_ms: int
    ) -> list[PermissionSettled]:
        """Settle every request pending on ``pane_key`` (its prompt was answered in the
        agent's terminal, or the pane is gone)."""
        ids = [r.request_id for r in self.pending() if r.pane_key == pane_key]
        events = [self.settle(i, outcome, by, "", now_ms) for i in ids]
        return [e for e in events if e is not None]
