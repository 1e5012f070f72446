"""The store's trio shell in-process (real publisher, real files): ordering at stop."""

from __future__ import annotations

import json
from pathlib import Path

import pytest
import trio

from actors.store import entities
from actors.store.actor import StoreActor
from actors.store.core import new_uuid
from actors.store.startup import compact_at_start, load_store
from orca.actor import ActorContext, EventPublisher, RpcServer
from orca.paths import resolve_paths
from orca.wire.errors import Unavailable


async def test_mutation_after_the_stop_flush_began_is_refused_not_lost(tmp_path: Path) -> None:
    """Once stop fenced the saver, a change is refused instead of acknowledged and dropped."""
    paths = resolve_paths({"ORCA_HOME": str(tmp_path)}).ensure()
    loaded = load_store(paths.state_file, "/h", new_uuid)
    compact_at_start(loaded)
    core = loaded.core
    rpc, events = RpcServer("store"), EventPublisher("store")
    with trio.fail_after(10):
        async with trio.open_nursery() as nursery:
            ctx = ActorContext(name="store", paths=paths, rpc=rpc, events=events, nursery=nursery)
            actor = StoreActor(ctx, loaded)
            await nursery.start(actor.journal.run)
            await nursery.start(actor.saver.run)
            await actor.apply(entities.add_repo(core.state, "/a", new_id="r1", now_ms=1))
            await actor.saver.close()
            with pytest.raises(Unavailable):
                await actor.apply(entities.add_repo(core.state, "/b", new_id="r2", now_ms=1))
            nursery.cancel_scope.cancel()
    rpc.close()
    events.close()
    loaded.journal.close()
    assert [r["path"] for r in json.loads(paths.state_file.read_bytes())["repos"]] == ["/a"]
    assert [r.path for r in core.state.repos] == ["/a"]
