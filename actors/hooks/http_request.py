"""Validating one hook request, after h11 has framed it. Pure.

Order: route (404/405) → secret (403, constant-time compare; nothing else is looked
at without it) → body size (413) → JSON document (400) → JSON depth (400) → pane
identity (400). Every failure is an :class:`HttpRejection` naming the caller's fault;
nothing here raises on hostile input.

Text is normalised here, at the boundary (issue 16 item 6): JSON may spell a lone
surrogate (``"\\ud800"``) that no UTF-8 encoder accepts, so one such string in a row
made every snapshot reply, and so ``orca worktree ps``, fail (and, persisted, kept
failing across restarts). :func:`clean_document` replaces every lone surrogate in the
payload (keys and values) with U+FFFD; the identity fields, single-line names, also
lose control characters (:func:`clean_line`). Other producers (OSC, files) reuse both.

Pane identity comes from headers the hook script sets from the pane's environment
(``ORCA_PANE_KEY``, ``ORCA_TAB_ID``, ``ORCA_WORKTREE_ID``, ``ORCA_AGENT_LAUNCH_TOKEN``),
or, for producers that cannot set headers, from an ``"orca"`` object in the body.
The launch token is hashed here and the raw value dropped (seed 02 §10: only the hash
is ever kept).
"""

from __future__ import annotations

import hashlib
import hmac
import json
import re
from collections.abc import Callable, Mapping
from dataclasses import dataclass

from actors.hooks.agent_events import KNOWN_AGENTS

SECRET_HEADER = "x-orca-hook-secret"
PANE_KEY_HEADER = "x-orca-pane-key"
TAB_ID_HEADER = "x-orca-tab-id"
WORKTREE_ID_HEADER = "x-orca-worktree-id"
LAUNCH_TOKEN_HEADER = "x-orca-launch-token"
# Tool payloads can embed file contents; 1 MB is far above any real hook body and
# bounds what one request can make us buffer.
MAX_BODY_BYTES = 1024 * 1024
# Agent hook documents nest a handful of levels; 64 leaves room and keeps any parser
# far from recursion limits.
MAX_JSON_DEPTH = 64
MAX_IDENTITY_CHARS = 1024
REPLACEMENT_CHAR = "\ufffd"
# A lone surrogate: representable in a Python str (JSON's \uXXXX escape, or
# surrogatepass decoding), not in UTF-8 (so not in msgpack, nor in any reader's output).
_SURROGATE = re.compile(r"[\ud800-\udfff]")
# A one-line name also loses C0 (tab and newline included), DEL and C1 controls: they
# would rewrite a reader's terminal (ESC) or its layout.
_LINE_BREAKER = re.compile(r"[\x00-\x1f\x7f-\x9f\ud800-\udfff]")


@dataclass(frozen=True)
class HttpRejection:
    status: int
    reason: str


@dataclass(frozen=True)
class HookReply:
    """What the endpoint answers: an HTTP status and a JSON body."""

    status: int
    body: dict[str, object]


@dataclass(frozen=True)
class HookSubmission:
    agent: str
    pane_key: str
    tab_id: str
    worktree_id: str
    launch_token_sha256: str | None
    payload: Mapping[str, object]


def route_agent(method: str, target: str) -> str | HttpRejection:
    """The agent named by ``POST /hook/<agent>``."""
    path = target.split("?", 1)[0]
    prefix = "/hook/"
    if not path.startswith(prefix) or path[len(prefix) :] not in KNOWN_AGENTS:
        return HttpRejection(404, "unknown_route")
    if method != "POST":
        return HttpRejection(405, "method_not_allowed")
    return path[len(prefix) :]


def check_secret(headers: Mapping[str, str], secret: str) -> HttpRejection | None:
    presented = headers.get(SECRET_HEADER, "")
    if not hmac.compare_digest(presented.encode(), secret.encode()):
        return HttpRejection(403, "bad_secret")
    return None


def exceeds_depth(document: object, limit: int) -> bool:
    """Whether a decoded JSON value nests containers deeper than ``limit`` (iterative)."""
    stack: list[tuple[object, int]] = [(document, 1)]
    while stack:
        value, depth = stack.pop()
        if isinstance(value, dict):
            children: list[object] = list(value.values())
        elif isinstance(value, list):
            children = value
        else:
            continue
        if depth > limit:
            return True
        stack.extend((child, depth + 1) for child in children)
    return False


def clean_text(value: str) -> str:
    """``value`` with every lone surrogate replaced by U+FFFD (valid pairs cannot occur
    in a Python str: JSON's escaped pairs decode to the one astral character)."""
    return _SURROGATE.sub(REPLACEMENT_CHAR, value)


def clean_line(value: str) -> str:
    """``value`` as a one-line name: lone surrogates and control characters → U+FFFD."""
    return _LINE_BREAKER.sub(REPLACEMENT_CHAR, value)


def clean_document(document: object) -> object:
    """A decoded JSON value with every string (keys too) passed through :func:`clean_text`.

    Recursive: call it on a value whose depth is already bounded (``exceeds_depth``).
    """
    if isinstance(document, str):
        return clean_text(document)
    if isinstance(document, dict):
        return {clean_text(str(k)): clean_document(v) for k, v in document.items()}
    if isinstance(document, list):
        return [clean_document(item) for item in document]
    return document


def admit(
    route: Callable[[str, str], str | HttpRejection],
    method: str,
    target: str,
    headers: Mapping[str, str],
    body: bytes,
    secret: str,
) -> HookSubmission | HttpRejection:
    """A request's way in, each step answering its own rejection: ``route`` names the
    agent (``route_agent``, or the permission route's), then the secret, then the body
    and the pane identity."""
    agent = route(method, target)
    if isinstance(agent, HttpRejection):
        return agent
    refused = check_secret(headers, secret)
    if refused is not None:
        return refused
    return parse_submission(agent, headers, body)


def parse_submission(
    agent: str, headers: Mapping[str, str], body: bytes
) -> HookSubmission | HttpRejection:
    """Decode the body and the pane identity of an authenticated request."""
    if len(body) > MAX_BODY_BYTES:
        return HttpRejection(413, "body_too_large")
    try:
        # CPython's decoder guards its own recursion: hostile nesting beyond the
        # interpreter limit surfaces as RecursionError, never a crash.
        payload = json.loads(body)
    except RecursionError:
        return HttpRejection(400, "json_too_deep")
    except ValueError:
        return HttpRejection(400, "bad_json")
    if exceeds_depth(payload, MAX_JSON_DEPTH):
        return HttpRejection(400, "json_too_deep")
    if not isinstance(payload, dict):
        return HttpRejection(400, "json_not_object")
    payload = clean_document(payload)
    assert isinstance(payload, dict)
    embedded = payload.get("orca")
    fallback: Mapping[str, object] = embedded if isinstance(embedded, dict) else {}

    def field(header: str, key: str) -> str:
        value = headers.get(header) or fallback.get(key)
        return clean_line(value[:MAX_IDENTITY_CHARS]) if isinstance(value, str) else ""

    pane_key = field(PANE_KEY_HEADER, "paneKey")
    if not pane_key:
        return HttpRejection(400, "missing_pane_key")
    token = field(LAUNCH_TOKEN_HEADER, "launchToken")
    return HookSubmission(
        agent=agent,
        pane_key=pane_key,
        tab_id=field(TAB_ID_HEADER, "tabId"),
        worktree_id=field(WORKTREE_ID_HEADER, "worktreeId"),
        launch_token_sha256=hashlib.sha256(token.encode()).hexdigest() if token else None,
        payload=payload,
    )
