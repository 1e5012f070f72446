"""The ``gitwatch`` contract's object, and the op a reader bound by start-up time needs.

``orca.contracts.gitwatch`` declares gitwatch's ops and events on :data:`CONTRACT`,
made here; this module holds only what ``orca term ls`` asks gitwatch on every run
(``worktree.paths``: the worktrees its handles must be unique against). It imports no
model record (the full contract pulls in the worktree records for a reply of two
strings per worktree, bench/cli.py). Importing ``orca.contracts.gitwatch`` imports this
module, so every op is declared whichever a program imports first; a program that
iterates ``CONTRACT.ops`` (the actor, the gateway, tests) imports the full contract.

Ops (args → result)
-------------------
worktree.paths      {} → {worktrees: [{id, path}]}   worktree.list's rows, ids and paths
                    alone (every repo, folder workspaces included)
"""

from __future__ import annotations

from orca.contracts.base import Contract, NoArgs, Payload
from orca.wire.errors import Internal, Unavailable

CONTRACT = Contract("gitwatch")


class WorktreePath(Payload, frozen=True, kw_only=True):
    id: str
    path: str


class WorktreePaths(Payload, frozen=True, kw_only=True):
    """The ids and paths of ``worktree.list``'s rows (every repo), and nothing else."""

    worktrees: list[WorktreePath]


WORKTREE_PATHS = CONTRACT.op(
    "worktree.paths", NoArgs, WorktreePaths, Unavailable, Internal,
    doc="worktree.list's ids and paths alone: what a reader computing handles needs"
    " (`orca term ls`), without decoding every row (bench/cli.py).",
)  # fmt: skip
