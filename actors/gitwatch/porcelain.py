"""Parse ``git worktree list --porcelain -z`` (pure, no I/O).

The format (git's ``builtin/worktree.c``, stable since 2.36): one record per worktree;
every field is ``<label>`` or ``<label> <value>`` terminated by NUL, and a record ends
with one extra NUL (an empty field). Labels in use::

    worktree <path>          always first
    bare                     the main worktree of a bare repository (no HEAD line)
    HEAD <40 or 64 hex>
    branch <full ref>        e.g. refs/heads/main; absent when detached
    detached
    locked [<reason>]        the reason may contain newlines (-z leaves it raw)
    prunable [<reason>]

Why ``-z``: without it git C-quotes reasons and paths that contain newlines, and an
unquoting parser is one more place to be wrong. Paths are bytes on disk; we decode them
with :func:`os.fsdecode` (surrogateescape), so an undecodable byte survives a round trip
to the filesystem.

Unknown labels are skipped, not rejected: a newer git may add fields (upstream's own
compatibility rule), and one new label must not blank out the whole listing.
"""

from __future__ import annotations

import os
from dataclasses import dataclass

from actors.gitwatch.errors import GitOutputMalformed

_FIELD_END = b"\0"
# git prints the all-zero id for an unborn branch; we report it as "no commit".
_UNBORN = frozenset({"0" * 40, "0" * 64})


@dataclass(frozen=True, slots=True)
class PorcelainWorktree:
    """One worktree as git lists it."""

    path: str
    head: str | None  # hex commit id; None for bare or unborn
    branch: str | None  # full ref ("refs/heads/x"); None when detached or bare
    is_bare: bool = False
    is_detached: bool = False
    is_locked: bool = False
    lock_reason: str | None = None  # None when unlocked or locked without a reason
    is_prunable: bool = False
    prune_reason: str | None = None


def parse_worktree_list_z(output: bytes) -> list[PorcelainWorktree]:
    """Parse the stdout of ``git worktree list --porcelain -z``.

    Raises :class:`GitOutputMalformed` when a record does not start with ``worktree``.
    """
    records: list[list[bytes]] = []
    current: list[bytes] = []
    fields = output.split(_FIELD_END)
    # A well-formed output ends "...\0\0", which split() turns into trailing empty
    # strings; the empty field is the record separator.
    for field in fields:
        if field:
            current.append(field)
        elif current:
            records.append(current)
            current = []
    if current:
        # Truncated output (git killed mid-write): keep what is complete only if the
        # record at least has its path; a partial record is still a real worktree.
        records.append(current)
    return [_parse_record(record) for record in records]


def _parse_record(fields: list[bytes]) -> PorcelainWorktree:
    label, value = _split_field(fields[0])
    if label != "worktree" or value is None:
        raise GitOutputMalformed(f"worktree record starts with {fields[0][:40]!r}")
    path = os.fsdecode(value)
    head: str | None = None
    branch: str | None = None
    flags: dict[str, bool] = {"bare": False, "detached": False, "locked": False, "prunable": False}
    reasons: dict[str, str | None] = {"locked": None, "prunable": None}
    for raw in fields[1:]:
        label, value = _split_field(raw)
        if label == "HEAD" and value is not None:
            text = value.decode("ascii", "replace")
            head = None if text in _UNBORN else text
        elif label == "branch" and value is not None:
            branch = os.fsdecode(value)
        elif label in flags:
            flags[label] = True
            if label in reasons and value:
                reasons[label] = os.fsdecode(value)  # shown escaped at the wire (wiretext)
    return PorcelainWorktree(
        path=path,
        head=head,
        branch=branch,
        is_bare=flags["bare"],
        is_detached=flags["detached"],
        is_locked=flags["locked"],
        lock_reason=reasons["locked"],
        is_prunable=flags["prunable"],
        prune_reason=reasons["prunable"],
    )


def _split_field(field: bytes) -> tuple[str, bytes | None]:
    label, sep, value = field.partition(b" ")
    return label.decode("ascii", "replace"), (value if sep else None)


def format_worktree_list_z(worktrees: list[PorcelainWorktree]) -> bytes:
    """Render records the way git does (the inverse of the parser; used by tests)."""
    out = bytearray()
    for wt in worktrees:
        out += b"worktree " + os.fsencode(wt.path) + _FIELD_END
        if wt.is_bare:
            out += b"bare" + _FIELD_END
        else:
            out += b"HEAD " + (wt.head or "0" * 40).encode() + _FIELD_END
            if wt.is_detached:
                out += b"detached" + _FIELD_END
            elif wt.branch is not None:
                out += b"branch " + os.fsencode(wt.branch) + _FIELD_END
        for label, flag, reason in (
            (b"locked", wt.is_locked, wt.lock_reason),
            (b"prunable", wt.is_prunable, wt.prune_reason),
        ):
            if flag:
                out += label + (b" " + os.fsencode(reason) if reason else b"") + _FIELD_END
        out += _FIELD_END
    return bytes(out)
