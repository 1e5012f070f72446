"""The POSIX hook script agents run, and installing it under ``agent-hooks/``.

Contract (issue 7):

* it prints ``{}`` before anything else - every supported agent parses hook stdout
  as JSON, and an empty object means "no decision, carry on" - except in its
  ``permission`` mode (issue 27; ``<agent> permission <seconds>``, which the installer
  gives the PermissionRequest event): there it prints exactly one document, the
  verdict the hooks actor answered after holding the request (``POST
  /permission/<agent>``, ``actors.hooks.permission_http``), or ``{}`` for none - on
  any failure, timeout or when Orca is not running, so the agent's own prompt decides;
* outside Orca (no ``ORCA_PANE_KEY``) or when Orca is not running (no readable
  endpoint file, no curl) it exits 0 silently: a hook must never break the agent;
* it re-reads ``endpoint.env`` on every call, so an agent that outlives a restart of
  the hooks actor reaches the new port and secret on its next event;
* it posts the agent's own hook payload (its stdin) unchanged - or, when called with
  a second argument, that argument: Codex's legacy ``notify`` program gets its
  ``agent-turn-complete`` JSON as the last argv entry with stdin closed
  (``codex-rs/hooks/src/legacy_notify.rs``) - with short connect and
  total timeouts, and passes the secret and pane identity as headers through a file
  descriptor - never on the command line, where other users' ``ps`` could read it.

Two writers, one file. ``orca hooks install`` writes the script (it must work while
the service is down: the agent's config has to name a script that exists), and the
hooks actor writes it at every start (so an upgrade's new script replaces the old one
without a re-install). Both call :func:`install_hook_script`, which renders the same
bytes from this module and replaces the file with ``orca.fsio.write_atomic``: whichever
runs last, the file is whole (old or new, never torn) and identical.

Pure apart from :func:`install_hook_script`, and free of trio and ``actors.*``: the CLI
imports it.
"""

from __future__ import annotations

from pathlib import Path

from orca.fsio import ensure_private_dir, write_atomic

HOOK_SCRIPT_NAME = "orca-agent-hook.sh"
# The file the hooks actor writes its port and secret to (``actors.hooks.endpoint_file``)
# and the script reads on every call.
ENDPOINT_FILE_NAME = "endpoint.env"
# The agents the HTTP endpoint serves as ``/hook/<agent>`` (``actors.hooks.agent_events``);
# the script posts any other name as ``generic``.
KNOWN_AGENTS = ("claude", "codex", "gemini", "opencode", "cursor", "amp", "generic")
# Owner-only: the script is run by the user's agents, and nobody else may swap it.
SCRIPT_MODE = 0o700
# A local POST completes in milliseconds; these bound the agent's wait when the
# server is wedged (connect) or slow (total). The agents' own hook timeouts are longer.
CONNECT_TIMEOUT_S = 1
TOTAL_TIMEOUT_S = 2
# The permission mode (issue 27): the second argument that selects it, the hold when
# the installer named none, and how much longer curl waits than the hold (the server
# answers when the hold ends; this only bounds a wedged one).
PERMISSION_MODE = "permission"
DEFAULT_HOLD_S = 60
HOLD_SLACK_S = 3

_TEMPLATE = r"""#!/bin/sh
# Orca agent-status hook, installed by `orca hooks install`. Forwards this agent
# hook's JSON payload (stdin) to the local Orca hooks actor; does nothing outside
# Orca. Safe to delete: `orca hooks uninstall <agent>` removes its config entries.
# `<agent> permission <seconds>`: a PermissionRequest hook, held by Orca until it is
# answered (web, orca ui) or <seconds> pass; prints the verdict, or {} for none.
if [ "${2:-}" = permission ]; then
  mode=permission
else
  mode=status
  printf '{}\n'
fi
# ORCA_HOOK_TRACE=FILE (for debugging a light that did not change): one line per call,
# what became of it.
trace() {
  [ -n "${ORCA_HOOK_TRACE:-}" ] || return 0
  printf '%s %s %s %s\n' "$(date +%s 2>/dev/null)" "${1:-}" "${ORCA_PANE_KEY:-}" "$2" \
    >> "$ORCA_HOOK_TRACE" 2>/dev/null
}
no_decision() {
  trace "${1:-?}" "not sent: ${2:-}"
  [ "$mode" = permission ] && printf '{}\n'
  exit 0
}
[ -n "${ORCA_PANE_KEY:-}" ] || no_decision "${1:-}" "no ORCA_PANE_KEY"
case ${1:-} in
  @AGENTS@) agent=$1 ;;
  *) agent=generic ;;
esac
endpoint_file=${ORCA_AGENT_HOOK_ENDPOINT:-'@ENDPOINT_FILE@'}
[ -r "$endpoint_file" ] || no_decision "$agent" "no endpoint file $endpoint_file"
command -v curl >/dev/null 2>&1 || no_decision "$agent" "no curl"
port=
secret=
while IFS='=' read -r key value; do
  case $key in
    ORCA_HOOK_PORT) port=$value ;;
    ORCA_HOOK_SECRET) secret=$value ;;
  esac
done < "$endpoint_file"
case $port in
  '' | *[!0-9]*) no_decision "$agent" "no port in $endpoint_file" ;;
esac
[ -n "$secret" ] || no_decision "$agent" "no secret in $endpoint_file"
send() {
  curl --silent --output /dev/null --connect-timeout @CONNECT@ --max-time @TOTAL@ \
    -X POST -H 'Content-Type: application/json' -H 'Expect:' -H @/dev/fd/3 \
    "$@" --data-binary @- "http://127.0.0.1:$port/hook/$agent" 2>/dev/null
}
post() {
  if [ -z "${ORCA_HOOK_TRACE:-}" ]; then
    send >/dev/null
    return
  fi
  send -w '%{http_code}' | { read -r code; trace "$agent" "port $port: http ${code:-none}"; }
}
if [ "$mode" = permission ]; then
  hold=${3:-}
  case $hold in
    '' | *[!0-9]*) hold=@DEFAULT_HOLD@ ;;
  esac
  body=$(curl --silent --fail --connect-timeout @CONNECT@ --max-time $((hold + @SLACK@)) \
    -X POST -H 'Content-Type: application/json' -H 'Expect:' -H @/dev/fd/3 \
    --data-binary @- "http://127.0.0.1:$port/permission/$agent" 2>/dev/null 3<<ORCA_HEADERS
X-Orca-Hook-Secret: $secret
X-Orca-Pane-Key: $ORCA_PANE_KEY
X-Orca-Tab-Id: ${ORCA_TAB_ID:-}
X-Orca-Worktree-Id: ${ORCA_WORKTREE_ID:-}
X-Orca-Launch-Token: ${ORCA_AGENT_LAUNCH_TOKEN:-}
X-Orca-Hold-S: $hold
ORCA_HEADERS
  ) || body=
  case $body in
    '{'*) printf '%s\n' "$body" ;;
    *) printf '{}\n' ;;
  esac
  exit 0
fi
if [ -n "${2:-}" ]; then
  printf '%s' "$2" | post 3<<ORCA_HEADERS
X-Orca-Hook-Secret: $secret
X-Orca-Pane-Key: $ORCA_PANE_KEY
X-Orca-Tab-Id: ${ORCA_TAB_ID:-}
X-Orca-Worktree-Id: ${ORCA_WORKTREE_ID:-}
X-Orca-Launch-Token: ${ORCA_AGENT_LAUNCH_TOKEN:-}
ORCA_HEADERS
  exit 0
fi
post 3<<ORCA_HEADERS
X-Orca-Hook-Secret: $secret
X-Orca-Pane-Key: $ORCA_PANE_KEY
X-Orca-Tab-Id: ${ORCA_TAB_ID:-}
X-Orca-Worktree-Id: ${ORCA_WORKTREE_ID:-}
X-Orca-Launch-Token: ${ORCA_AGENT_LAUNCH_TOKEN:-}
ORCA_HEADERS
exit 0
"""


def render_hook_script(endpoint_file: Path) -> str:
    """The script with the endpoint file's path baked in (the env var may override)."""
    if "'" in str(endpoint_file):
        raise ValueError(f"endpoint path cannot contain a single quote: {endpoint_file}")
    return (
        _TEMPLATE.replace("@AGENTS@", " | ".join(KNOWN_AGENTS))
        .replace("@ENDPOINT_FILE@", str(endpoint_file))
        .replace("@CONNECT@", str(CONNECT_TIMEOUT_S))
        .replace("@TOTAL@", str(TOTAL_TIMEOUT_S))
        .replace("@DEFAULT_HOLD@", str(DEFAULT_HOLD_S))
        .replace("@SLACK@", str(HOLD_SLACK_S))
    )


def install_hook_script(hooks_dir: Path) -> Path:
    """Write the script (0700) into ``hooks_dir`` (made private, 0700); rewritten only
    when its content or mode differs, atomically and durably (``orca.fsio``)."""
    ensure_private_dir(hooks_dir)
    path = hooks_dir / HOOK_SCRIPT_NAME
    data = render_hook_script(hooks_dir / ENDPOINT_FILE_NAME).encode()
    try:
        if path.read_bytes() == data and path.stat().st_mode & 0o777 == SCRIPT_MODE:
            return path
    except OSError:
        pass  # missing or unreadable: write it
    write_atomic(path, data, mode=SCRIPT_MODE)
    return path
