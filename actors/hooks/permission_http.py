"""``POST /permission/<agent>``: the held PermissionRequest hook's HTTP shape. Pure.

The hook script's ``permission`` mode (``orca.hook_script``) posts the agent's
PermissionRequest payload here with the usual secret and pane headers, plus
``X-Orca-Hold-S``: how long the installer lets the agent wait (its per-event timeout
less a margin, ``orca.integrations``). The reply's body is printed by the script as the
hook's output, so every 200 body is a valid hook output for the agent:

* a verdict - Claude Code's PermissionRequest decision control,
  ``{"hookSpecificOutput": {"hookEventName": "PermissionRequest", "decision":
  {"behavior": "allow" | "deny", "message"?}}}`` (https://code.claude.com/docs/en/hooks,
  "PermissionRequest decision control"); Codex reads the same shape
  (codex-rs/hooks/schema/generated/permission-request.command.output.schema.json:
  ``hookSpecificOutput.decision.behavior``, ``message``);
* no verdict - ``{}``: both agents then ask in their own terminal ("quiet or invalid
  hooks fall back to the normal approval path", openai/codex#17563).

A refusal (bad secret, a pane the caller has no authority over) is a 4xx, after which
the script prints ``{}`` too: a hook never breaks the agent.
"""

from __future__ import annotations

from collections.abc import Mapping

from actors.hooks.agent_events import KNOWN_AGENTS
from actors.hooks.http_request import HttpRejection
from orca.contracts.hooks import PermissionSettlement

PERMISSION_PREFIX = "/permission/"
HOLD_HEADER = "x-orca-hold-s"
# Without the header (an older script): about what an agent's default hook timeout
# leaves. Never longer than an hour, whatever the caller asks.
DEFAULT_HOLD_S = 60.0
MAX_HOLD_S = 3600.0
MIN_HOLD_S = 1.0
HOOK_EVENT = "PermissionRequest"
NO_DECISION: dict[str, object] = {}


def is_permission_route(target: str) -> bool:
    return target.split("?", 1)[0].startswith(PERMISSION_PREFIX)


def route_permission(method: str, target: str) -> str | HttpRejection:
    """The agent named by ``POST /permission/<agent>``."""
    agent = target.split("?", 1)[0][len(PERMISSION_PREFIX) :]
    if agent not in KNOWN_AGENTS:
        return HttpRejection(404, "unknown_route")
    if method != "POST":
        return HttpRejection(405, "method_not_allowed")
    return agent


def hold_seconds(headers: Mapping[str, str]) -> float:
    """The hold the caller asked for, clamped to [MIN_HOLD_S, MAX_HOLD_S]."""
    raw = headers.get(HOLD_HEADER, "").strip()
    try:
        asked = float(raw) if raw else DEFAULT_HOLD_S
    except ValueError:
        asked = DEFAULT_HOLD_S
    if asked != asked:  # NaN
        asked = DEFAULT_HOLD_S
    return min(MAX_HOLD_S, max(MIN_HOLD_S, asked))


def hook_output(settlement: PermissionSettlement | None) -> dict[str, object]:
    """What the agent reads on the hook's stdout for this settlement."""
    if settlement is None or settlement.outcome not in ("allow", "deny"):
        return NO_DECISION
    decision: dict[str, object] = {"behavior": settlement.outcome}
    if settlement.outcome == "deny":
        decision["message"] = settlement.message or f"denied by {settlement.by or 'the user'}"
    return {"hookSpecificOutput": {"hookEventName": HOOK_EVENT, "decision": decision}}
