"""gitwatch's read-only copy of what it needs from ``store``, and its one write seam.

gitwatch never writes ``orca-data.json``: it mirrors repos, settings and worktreeMeta
(the Clone pattern, :class:`orca.actor.Mirror` over ``state.snapshot`` + the store
events of :data:`FOLLOWED`, decoded by ``orca.contracts.store``) and asks ``store`` to
change meta (``worktreeMeta.set``/``remove``, ``worktree.migrate_identity``).
:func:`load_store_view` and :func:`apply_store_event` are the mirror's pure halves;
they only ever see typed events (a malformed one is logged and dropped by the mirror's
decoder before it gets here).

:class:`StorePort` is the seam lifecycle code talks to (read the view, patch meta,
migrate an identity); :class:`RpcStorePort` is the real one. Tests of lifecycle
ordering may swap the port, never the git side.

Every op that answers from the view (the listing, and the look-ups that start create,
remove, rename and merge) first awaits :meth:`StorePort.whole_view`: while the mirror
re-snapshots (store restarted, or events were lost) it waits up to
:data:`STORE_CATCH_UP_S`, then answers ``unavailable`` ("store is catching up"), never
from the copy being replaced (issue 33: a worktree just created was missing from the
listing after a store restart).
"""

from __future__ import annotations

from collections.abc import Callable, Mapping
from dataclasses import dataclass, field
from dataclasses import replace as dc_replace
from typing import Any, Protocol

import msgspec
import trio

from actors.gitwatch.aheadbehind import Bases
from actors.gitwatch.errors import PeerUnavailable, StoreCatchingUp
from orca.actor.client import RpcClient
from orca.actor.mirror import Mirror
from orca.contracts import store
from orca.model.codec import from_builtins, to_builtins
from orca.model.ids import split_worktree_id
from orca.model.state import GlobalSettings, PersistedState
from orca.model.types_repo import Repo
from orca.model.worktree import WorktreeMeta
from orca.wire.envelope import Event
from orca.wire.errors import NotFound

# A store call that saves before replying (migrate_identity flushes) can take a while
# on a slow disk; five seconds is the runtime's default for everything else.
STORE_WRITE_TIMEOUT_S = 10.0
MIGRATE_RETRIES = 2
# How long a write waits for its own event to reach the mirror. The write itself has
# succeeded either way; this only bounds how stale an immediate re-read can be.
MIRROR_SETTLE_S = 2.0
# How long a reader waits for the mirror to be whole again before it answers that store
# is catching up. A restarted store's snapshot loads in well under a second (1.4 s was
# seen under load); the CLI's listing gives up at 5 s, and the listing still asks store
# for folder workspaces (1 s at most) after this wait.
STORE_CATCH_UP_S = 2.5
NOT_LOADED = "store state not loaded yet (is store running?)"
CATCHING_UP = "store is catching up (reloading its state); try again in a moment"


@dataclass(frozen=True, slots=True)
class StoreView:
    repos: Mapping[str, Repo] = field(default_factory=dict)
    settings: GlobalSettings = field(default_factory=GlobalSettings)
    meta: Mapping[str, WorktreeMeta] = field(default_factory=dict)


# The store events that change what gitwatch mirrors; every other store event is
# none of its business (the mirror still counts its seq).
FOLLOWED = (
    store.REPO_ADDED,
    store.REPO_UPDATED,
    store.REPO_REMOVED,
    store.SETTINGS_CHANGED,
    store.WORKTREE_META_CHANGED,
    store.WORKTREE_META_REMOVED,
    store.WORKTREE_RENAMED,
)
MIRROR_CONSUMER = "gitwatch<-store"


def load_store_view(snapshot: store.StateSnapshot) -> StoreView:
    """Build the view from a ``state.snapshot`` result."""
    state = from_builtins(PersistedState, snapshot.state)
    return StoreView(
        repos={repo.id: repo for repo in state.repos},
        settings=state.settings,
        meta=dict(state.worktree_meta),
    )


def apply_store_event(view: StoreView, event: Event, typed: Any) -> StoreView:
    """Fold one typed store event (one of :data:`FOLLOWED`) into the view."""
    if isinstance(typed, (store.RepoAdded, store.RepoUpdated)):
        return dc_replace(view, repos={**view.repos, typed.repo.id: typed.repo})
    if isinstance(typed, store.RepoRemoved):
        return dc_replace(view, repos={k: v for k, v in view.repos.items() if k != typed.id})
    if isinstance(typed, store.SettingsChanged):
        return dc_replace(view, settings=typed.settings)
    if isinstance(typed, store.WorktreeMetaChanged):
        return dc_replace(view, meta={**view.meta, typed.worktree_id: typed.meta})
    if isinstance(typed, store.WorktreeMetaRemoved):
        gone = set(typed.worktree_ids)
        return dc_replace(view, meta={k: v for k, v in view.meta.items() if k not in gone})
    if isinstance(typed, store.WorktreeRenamed):
        return _renamed(view, typed.old_id, typed.new_id)
    return view


def store_mirror(client: RpcClient, pub_endpoint: str) -> Mirror[StoreView]:
    """gitwatch's mirror of store (the actor runs it; a test may run it against any
    publisher that speaks store's contract)."""
    return Mirror(
        client=client,
        pub_endpoint=pub_endpoint,
        snapshot=store.STATE_SNAPSHOT,
        events=FOLLOWED,
        load=load_store_view,
        apply=apply_store_event,
        consumer=MIRROR_CONSUMER,
    )


def _renamed(view: StoreView, old_id: str, new_id: str) -> StoreView:
    # store moved the meta and recorded the old id in priorWorktreeIds (seed 01 §4.3).
    meta = dict(view.meta)
    moved = meta.pop(old_id, None)
    if moved is not None:
        prior = moved.prior_worktree_ids
        if old_id not in prior:
            moved = msgspec.structs.replace(moved, prior_worktree_ids=(*prior, old_id))
        meta[new_id] = moved
    return dc_replace(view, meta=meta)


class StorePort(Protocol):
    """What lifecycle needs from ``store``."""

    def view(self) -> StoreView:
        """The view as it is now (after :meth:`whole_view`, within the same op)."""
        ...

    async def whole_view(self) -> StoreView:
        """The view once the mirror is whole (a bounded wait); PeerUnavailable
        (StoreCatchingUp while it re-snapshots) if it is not whole in time."""
        ...

    async def lookup_repo(self, repo_id: str) -> Repo | None:
        """The repo with this id (from a whole view), asking store itself if the mirror
        has not seen it yet."""
        ...

    async def replace_meta(self, worktree_id: str, meta: WorktreeMeta) -> None:
        """Set the whole meta of a worktree (a fresh worktree must not inherit old notes)."""
        ...

    async def forget_meta(self, worktree_id: str) -> None:
        """Drop a removed worktree's meta (absent meta is not an error)."""
        ...

    async def patch_meta(self, worktree_id: str, patch: dict[str, Any]) -> None:
        """Merge camelCase fields into a worktree's meta (created when absent)."""
        ...

    async def migrate_identity(self, old_id: str, new_id: str) -> None: ...


class RpcStorePort:
    """The real port: the mirror for reads, RPC for writes.

    Read-your-writes: after a write is acknowledged, wait (briefly) until the mirror has
    applied the store's event for it, so a listing right after ``create`` or ``rename``
    already shows the new meta under the new id.
    """

    def __init__(self, client: RpcClient, mirror: Mirror[StoreView]) -> None:
        self._client = client
        self._mirror = mirror

    def view(self) -> StoreView:
        if self._mirror.state is None:
            raise PeerUnavailable(NOT_LOADED)
        return self._mirror.state

    async def whole_view(self) -> StoreView:
        with trio.move_on_after(STORE_CATCH_UP_S):
            await self._mirror.wait_whole()
        if not self._mirror.whole:
            if self._mirror.state is None:
                raise PeerUnavailable(NOT_LOADED)
            raise StoreCatchingUp(CATCHING_UP)
        return self.view()

    async def lookup_repo(self, repo_id: str) -> Repo | None:
        repo = (await self.whole_view()).repos.get(repo_id)
        if repo is not None:
            return repo
        # A client may add a repo and use it at once; our mirror lags by one event.
        listed = await self._client.invoke(store.REPO_LIST, timeout=STORE_WRITE_TIMEOUT_S)
        return next((r for r in listed.repos if r.id == repo_id), None)

    async def replace_meta(self, worktree_id: str, meta: WorktreeMeta) -> None:
        await self._client.invoke(
            store.WORKTREE_META_SET,
            store.MetaSetArgs(worktree_id=worktree_id, meta=to_builtins(meta)),
            timeout=STORE_WRITE_TIMEOUT_S,
        )
        await self._settle(lambda view: worktree_id in view.meta)

    async def patch_meta(self, worktree_id: str, patch: dict[str, Any]) -> None:
        written = await self._client.invoke(
            store.WORKTREE_META_PATCH,
            store.MetaPatchArgs(worktree_id=worktree_id, patch=patch),
            timeout=STORE_WRITE_TIMEOUT_S,
        )
        await self._settle(lambda view: view.meta.get(worktree_id) == written)

    async def forget_meta(self, worktree_id: str) -> None:
        try:
            await self._client.invoke(
                store.WORKTREE_META_REMOVE,
                store.WorktreeIdArgs(worktree_id=worktree_id),
                timeout=STORE_WRITE_TIMEOUT_S,
            )
        except NotFound:
            return
        await self._settle(lambda view: worktree_id not in view.meta)

    async def migrate_identity(self, old_id: str, new_id: str) -> None:
        await self._client.invoke(
            store.WORKTREE_MIGRATE_IDENTITY,
            store.MigrateIdentityArgs(old_id=old_id, new_id=new_id),
            timeout=STORE_WRITE_TIMEOUT_S,
            # The move already happened: the migration must land. One idem key makes
            # the resends safe (store applies it once).
            retries=MIGRATE_RETRIES,
        )
        await self._settle(lambda view: old_id not in view.meta)

    async def _settle(self, done: Callable[[StoreView], bool]) -> None:
        with trio.move_on_after(MIRROR_SETTLE_S):
            await self._mirror.wait_until(lambda m: m.state is not None and done(m.state))


def bases_of(view: StoreView | None, repo_id: str) -> Bases:
    """A repo's bases as store knows them: each of its worktrees' recorded ``baseRef``
    (set by ``worktree.create`` when it made the branch) by path, and the repo's
    ``worktreeBaseRef`` setting. Empty before the first store snapshot."""
    if view is None:
        return Bases()
    by_path: dict[str, str] = {}
    for worktree_id, meta in view.meta.items():
        base = meta.base_ref
        if not base or not isinstance(base, str):
            continue
        parts = split_worktree_id(worktree_id)
        if parts is not None and parts.repo_id == repo_id:
            by_path[parts.path] = base
    repo = view.repos.get(repo_id)
    repo_base = repo.worktree_base_ref if repo is not None else None
    return Bases(by_path=by_path, repo_base=repo_base if isinstance(repo_base, str) else None)
