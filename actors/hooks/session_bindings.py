"""Which pane each agent session runs in, learnt from the hooks it sends. Pure (+ its file).

Every supported agent's hook payload names its session and transcript: Claude Code's,
Codex's and Gemini CLI's hook input carry ``session_id`` and ``transcript_path``
(code.claude.com/docs/en/hooks "Hook input"; developers.openai.com/codex/hooks;
geminicli.com/docs/hooks/reference), Codex's legacy notify ``thread-id``. The request's
headers name the pane (``X-Orca-Pane-Key``, ``X-Orca-Worktree-Id``). Together they bind
session -> pane, which the vault follows (``agentSession.bound``) to file a transcript
under its pane, worktree and repo exactly.

A binding is only taken from a hook the pane's authority would accept for a status
write (:func:`may_bind`): a retired pane's late hook, or one whose launch token does not
match the pane's commitment, binds nothing. Events that change no status (an unknown
event name) still bind: the binding is about the session, not its state.

Bounded: at most ``MAX_SESSION_BINDINGS``, the least recently bound dropped first, and
none older than :data:`MAX_AGE_MS` survives a load. Saved in
``agent-hooks/session-bindings.json`` (debounced, atomic); a damaged file is logged and
replaced (the bindings are a convenience for the vault, which keeps its own copy).
"""

from __future__ import annotations

import json
import logging
from collections import OrderedDict
from collections.abc import Mapping
from pathlib import Path

from actors.hooks.http_request import HookSubmission, clean_line
from actors.hooks.pane_authority import PaneAuthority, parse_pane_key
from orca.contracts.hooks import MAX_SESSION_BINDINGS, SessionBinding

log = logging.getLogger(__name__)

BINDINGS_FILE_NAME = "session-bindings.json"
FILE_VERSION = 1
MAX_AGE_MS = 30 * 86_400_000
MAX_TRANSCRIPT_PATH_CHARS = 4096
MAX_SESSION_ID_CHARS = 256
# The payload keys agents name their session by (the same list agent_events.decide reads).
SESSION_KEYS = ("session_id", "conversation_id", "sessionID", "sessionId", "thread-id")
TRANSCRIPT_KEYS = ("transcript_path", "transcriptPath")


def _first_text(payload: Mapping[str, object], keys: tuple[str, ...], limit: int) -> str:
    for key in keys:
        value = payload.get(key)
        if isinstance(value, str) and value and len(value) <= limit:
            return clean_line(value)
    return ""


def binding_from(submission: HookSubmission, now_ms: int) -> SessionBinding | None:
    """The binding a hook submission states, if it names a session."""
    session_id = _first_text(submission.payload, SESSION_KEYS, MAX_SESSION_ID_CHARS)
    if not session_id:
        return None
    path = _first_text(submission.payload, TRANSCRIPT_KEYS, MAX_TRANSCRIPT_PATH_CHARS)
    if path and not path.startswith("/"):
        path = ""  # a relative path names nothing the vault could open
    return SessionBinding(
        agent=submission.agent,
        session_id=session_id,
        pane_key=submission.pane_key,
        bound_at_ms=now_ms,
        transcript_path=path,
        tab_id=submission.tab_id,
        worktree_id=submission.worktree_id,
    )


def may_bind(authority: PaneAuthority, pane_key: str, token_sha256: str | None) -> bool:
    """Whether the pane's authority accepts this hook as the pane's (read only: the
    status path commits a first token; this never does)."""
    pane = authority.resolve(pane_key)
    if parse_pane_key(pane) is None or authority.is_fenced(pane):
        return False
    committed = authority.commitments.get(pane)
    return committed is None or committed == token_sha256


class SessionBindingTable:
    def __init__(self, capacity: int = MAX_SESSION_BINDINGS) -> None:
        self._capacity = capacity
        self._items: OrderedDict[tuple[str, str], SessionBinding] = OrderedDict()

    def observe(self, binding: SessionBinding) -> SessionBinding | None:
        """Record ``binding``; returns the binding to publish when it is new or names
        another pane, worktree or transcript (a path learnt late is kept: a later hook
        without one does not erase it)."""
        key = (binding.agent, binding.session_id)
        known = self._items.get(key)
        if known is not None and not binding.transcript_path and known.transcript_path:
            binding = SessionBinding(
                agent=binding.agent,
                session_id=binding.session_id,
                pane_key=binding.pane_key,
                bound_at_ms=binding.bound_at_ms,
                transcript_path=known.transcript_path,
                tab_id=binding.tab_id,
                worktree_id=binding.worktree_id,
            )
        changed = known is None or (
            (known.pane_key, known.worktree_id, known.transcript_path)
            != (binding.pane_key, binding.worktree_id, binding.transcript_path)
        )
        if changed:
            self._items[key] = binding
        self._items.move_to_end(key)
        while len(self._items) > self._capacity:
            self._items.popitem(last=False)
        return binding if changed else None

    def bindings(self) -> list[SessionBinding]:
        return list(self._items.values())

    def __len__(self) -> int:
        return len(self._items)

    # -- the file -------------------------------------------------------------------------
    def encode(self) -> bytes:
        rows = [
            {
                "agent": b.agent,
                "sessionId": b.session_id,
                "paneKey": b.pane_key,
                "boundAtMs": b.bound_at_ms,
                "transcriptPath": b.transcript_path,
                "tabId": b.tab_id,
                "worktreeId": b.worktree_id,
            }
            for b in self._items.values()
        ]
        return json.dumps({"version": FILE_VERSION, "bindings": rows}, indent=1).encode()

    def load(self, path: Path, now_ms: int) -> int:
        """Read the saved bindings (those older than MAX_AGE_MS are dropped); how many."""
        try:
            doc = json.loads(path.read_bytes())
        except FileNotFoundError:
            return 0
        except (OSError, ValueError, RecursionError) as exc:
            log.error("%s: not read (%s); bindings start empty", path, exc)
            return 0
        rows = doc.get("bindings") if isinstance(doc, dict) else None
        if not isinstance(rows, list):
            log.error("%s: no bindings list; bindings start empty", path)
            return 0
        for row in rows:
            binding = _decoded(row)
            if binding is None or now_ms - binding.bound_at_ms > MAX_AGE_MS:
                continue
            if (binding.agent, binding.session_id) not in self._items:  # a live one wins
                self.observe(binding)
        return len(self._items)


def _decoded(row: object) -> SessionBinding | None:
    if not isinstance(row, dict):
        return None
    fields = {
        k: row.get(k)
        for k in ("agent", "sessionId", "paneKey", "transcriptPath", "tabId", "worktreeId")
    }
    if not all(isinstance(v, str) for v in fields.values()) or not fields["sessionId"]:
        return None
    when = row.get("boundAtMs")
    if not isinstance(when, int) or isinstance(when, bool):
        return None
    return SessionBinding(
        agent=str(fields["agent"]),
        session_id=str(fields["sessionId"]),
        pane_key=str(fields["paneKey"]),
        bound_at_ms=when,
        transcript_path=str(fields["transcriptPath"]),
        tab_id=str(fields["tabId"]),
        worktree_id=str(fields["worktreeId"]),
    )
