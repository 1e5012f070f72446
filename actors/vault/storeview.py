"""The vault's read-only copy of what it needs from ``store``: repos and worktree names.

Worktree -> repo is in the worktree id itself (``<repoId>::<path>``); the store adds
what a report shows and what an unbound transcript is matched by: repos' paths and
display names, every worktree with notes (its path is in its id), the ids a renamed
worktree had (``priorWorktreeIds``). Mirrored with :class:`orca.actor.Mirror` over
``state.snapshot`` and the store events of :data:`FOLLOWED`; both halves pure.
"""

from __future__ import annotations

from dataclasses import dataclass, field
from dataclasses import replace as dc_replace
from typing import Any

from actors.vault.attribution import Workspaces
from orca.contracts import store
from orca.model.codec import from_builtins
from orca.model.state import PersistedState
from orca.wire.envelope import Event

FOLLOWED = (
    store.REPO_ADDED,
    store.REPO_UPDATED,
    store.REPO_REMOVED,
    store.WORKTREE_META_CHANGED,
    store.WORKTREE_META_REMOVED,
    store.WORKTREE_RENAMED,
)


@dataclass(frozen=True)
class StoreFacts:
    repos: dict[str, tuple[str, str]] = field(default_factory=dict)  # id -> (path, name)
    worktrees: dict[str, tuple[str, tuple[str, ...]]] = field(
        default_factory=dict
    )  # id -> (name, prior ids)

    def workspaces(self) -> Workspaces:
        return Workspaces.build(
            ((rid, path, name) for rid, (path, name) in self.repos.items()),
            ((wid, name, prior) for wid, (name, prior) in self.worktrees.items()),
        )


def load_store_facts(snapshot: store.StateSnapshot) -> StoreFacts:
    state = from_builtins(PersistedState, snapshot.state)
    return StoreFacts(
        repos={r.id: (r.path, r.display_name) for r in state.repos},
        worktrees={
            wid: (meta.display_name, tuple(meta.prior_worktree_ids))
            for wid, meta in state.worktree_meta.items()
        },
    )


def apply_store_event(facts: StoreFacts, _event: Event, typed: Any) -> StoreFacts:
    if isinstance(typed, (store.RepoAdded, store.RepoUpdated)):
        repo = typed.repo
        return dc_replace(facts, repos={**facts.repos, repo.id: (repo.path, repo.display_name)})
    if isinstance(typed, store.RepoRemoved):
        return dc_replace(facts, repos={k: v for k, v in facts.repos.items() if k != typed.id})
    if isinstance(typed, store.WorktreeMetaChanged):
        meta = typed.meta
        entry = (meta.display_name, tuple(meta.prior_worktree_ids))
        return dc_replace(facts, worktrees={**facts.worktrees, typed.worktree_id: entry})
    if isinstance(typed, store.WorktreeMetaRemoved):
        gone = set(typed.worktree_ids)
        return dc_replace(
            facts, worktrees={k: v for k, v in facts.worktrees.items() if k not in gone}
        )
    if isinstance(typed, store.WorktreeRenamed):
        worktrees = dict(facts.worktrees)
        name, prior = worktrees.pop(typed.old_id, ("", ()))
        worktrees[typed.new_id] = (
            name,
            (*prior, typed.old_id) if typed.old_id not in prior else prior,
        )
        return dc_replace(facts, worktrees=worktrees)
    return facts
