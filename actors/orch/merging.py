"""gitwatch's merge ops, as orch calls them (``worktree.mergePreview``, ``worktree.merge``).

They are being added to gitwatch's contract on another branch (``gitmerge``); until it
lands, the descriptors and shapes orch needs are declared here, with gitwatch's names
and fields, so the calls are typed all the same. Once ``orca.contracts.gitwatch``
declares them, this module imports them instead.
"""

from __future__ import annotations

from typing import Literal

import msgspec

from orca.contracts.base import Args, Op, Payload
from orca.wire.errors import BadRequest, Conflict, Internal, NotFound, Unavailable

MergeMode = Literal["merge", "squash", "rebase"]


class MergePreviewArgs(Args, frozen=True, kw_only=True):
    worktree: str
    into: str | None = None
    mode: MergeMode = "merge"


class MergeArgs(Args, frozen=True, kw_only=True):
    worktree: str
    into: str | None = None
    mode: MergeMode = "merge"
    message: str | None = None


class Diffstat(Payload, frozen=True, kw_only=True):
    files: int
    insertions: int
    deletions: int


class MergePreview(Payload, frozen=True, kw_only=True):
    into: str
    branch: str
    mode: MergeMode
    ahead: int
    behind: int
    diffstat: Diffstat
    conflicts: list[str]
    dirty: bool
    uncommitted: list[str] = msgspec.field(default_factory=list)


class MergeResult(Payload, frozen=True, kw_only=True):
    into: str
    commit: str
    mode: MergeMode
    previous: str = ""
    changed: bool = True
    checkout_updated: bool = False


_PREVIEW_NAME = "worktree" + ".mergePreview"
_MERGE_NAME = "worktree" + ".merge"
WORKTREE_MERGE_PREVIEW: Op[MergePreviewArgs, MergePreview] = Op(
    "gitwatch", _PREVIEW_NAME, MergePreviewArgs, MergePreview,
    (BadRequest, NotFound, Unavailable, Internal),
)  # fmt: skip
WORKTREE_MERGE: Op[MergeArgs, MergeResult] = Op(
    "gitwatch", _MERGE_NAME, MergeArgs, MergeResult,
    (BadRequest, NotFound, Conflict, Unavailable, Internal),
)  # fmt: skip
