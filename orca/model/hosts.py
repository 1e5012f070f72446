"""ExecutionHostId: which machine a repo, worktree or session runs on (seed 01 §4.6).

Three shapes::

    'local'                                this machine
    'ssh:<encodeURIComponent(targetId)>'   an SSH target
    'runtime:<encodeURIComponent(envId)>'  a remote Orca runtime (incl. ephemeral VMs)

The same ``repoId::path`` may exist on two servers, so the host is part of a
workspace's identity. A value whose percent-decoding fails (a stray ``%``, a
bad hex pair, bytes that are not UTF-8) is *invalid*, not "local".

Host precedence for a worktree (:func:`worktree_execution_host_id`) is one
function because every sidebar decision must use the same order: the
worktree's own host (runtime/SSH snapshots know better than the repo
fallback) > ``repo.executionHostId`` > ``repo.connectionId`` (an SSH target) >
``'local'``. ``executionHostId`` exists on Repo because a runtime-host repo has
``connectionId: null`` and would otherwise look local.
"""

from __future__ import annotations

import re
from typing import Final, Literal, TypeGuard

import msgspec

__all__ = [
    "LOCAL_HOST_ID",
    "BadExecutionHostId",
    "ParsedHostId",
    "format_execution_host_id",
    "is_execution_host_id",
    "parse_execution_host_id",
    "repo_execution_host_id",
    "runtime_host_id",
    "ssh_host_id",
    "worktree_execution_host_id",
]

LOCAL_HOST_ID: Final = "local"
_SSH_PREFIX: Final = "ssh:"
_RUNTIME_PREFIX: Final = "runtime:"

HostKind = Literal["local", "ssh", "runtime"]

# encodeURIComponent leaves exactly these ASCII characters unescaped.
_UNRESERVED: Final = frozenset(
    "ABCDEFGHIJKLMNOPQRSTUVWXYZabcdefghijklmnopqrstuvwxyz0123456789-_.!~*'()"
)
_PCT_RE: Final = re.compile(r"%([0-9A-Fa-f]{2})")


class BadExecutionHostId(ValueError):
    """A value that should be an ExecutionHostId is not one (the caller is at fault)."""


class ParsedHostId(msgspec.Struct, frozen=True):
    """A parsed ExecutionHostId: ``target`` is the decoded SSH target / runtime env id."""

    kind: HostKind
    target: str | None = None


def _encode_component(value: str) -> str:
    """Percent-encode like JavaScript's encodeURIComponent (UTF-8, upper-case hex)."""
    out: list[str] = []
    for ch in value:
        if ch in _UNRESERVED:
            out.append(ch)
        else:
            out.extend(f"%{b:02X}" for b in ch.encode("utf-8", "surrogatepass"))
    return "".join(out)


def _decode_component(value: str) -> str | None:
    """Strict decodeURIComponent: None on a malformed escape or non-UTF-8 bytes."""
    buf = bytearray()
    i = 0
    while i < len(value):
        ch = value[i]
        if ch == "%":
            m = _PCT_RE.match(value, i)
            if m is None:
                return None
            buf.append(int(m.group(1), 16))
            i += 3
        else:
            buf.extend(ch.encode("utf-8", "surrogatepass"))
            i += 1
    try:
        return buf.decode("utf-8")
    except UnicodeDecodeError:
        return None


def ssh_host_id(target_id: str) -> str:
    """``ssh:<urlenc(target_id)>``; raises BadExecutionHostId for an empty target."""
    if not target_id:
        raise BadExecutionHostId("SSH target id must be non-empty")
    return _SSH_PREFIX + _encode_component(target_id)


def runtime_host_id(environment_id: str) -> str:
    """``runtime:<urlenc(environment_id)>``; raises BadExecutionHostId for an empty id."""
    if not environment_id:
        raise BadExecutionHostId("runtime environment id must be non-empty")
    return _RUNTIME_PREFIX + _encode_component(environment_id)


def parse_execution_host_id(value: str | None) -> ParsedHostId | None:
    """Parse a host id; None when it is not one (including failed percent-decoding)."""
    if value is None:
        return None
    if value == LOCAL_HOST_ID:
        return ParsedHostId("local")
    for prefix, kind in ((_SSH_PREFIX, "ssh"), (_RUNTIME_PREFIX, "runtime")):
        if value.startswith(prefix):
            target = _decode_component(value[len(prefix) :])
            if not target:
                return None
            return ParsedHostId(kind, target)  # type: ignore[arg-type]
    return None


def is_execution_host_id(value: str | None) -> TypeGuard[str]:
    """True when ``value`` parses as an ExecutionHostId."""
    return parse_execution_host_id(value) is not None


def format_execution_host_id(parsed: ParsedHostId) -> str:
    """Inverse of :func:`parse_execution_host_id` (canonical encoding)."""
    if parsed.kind == "local":
        return LOCAL_HOST_ID
    if parsed.target is None:
        raise BadExecutionHostId(f"{parsed.kind} host id needs a target")
    return ssh_host_id(parsed.target) if parsed.kind == "ssh" else runtime_host_id(parsed.target)


def repo_execution_host_id(execution_host_id: str | None, connection_id: str | None) -> str:
    """A repo's host: a valid explicit ``executionHostId`` > ``ssh:<connectionId>`` > ``'local'``."""
    if is_execution_host_id(execution_host_id):
        return execution_host_id
    if connection_id:
        return ssh_host_id(connection_id)
    return LOCAL_HOST_ID


def worktree_execution_host_id(
    worktree_host_id: str | None,
    repo_host_id: str | None,
    repo_connection_id: str | None,
) -> str:
    """A worktree's host: its own valid host id, else the repo's (see module docstring)."""
    if is_execution_host_id(worktree_host_id):
        return worktree_host_id
    return repo_execution_host_id(repo_host_id, repo_connection_id)
