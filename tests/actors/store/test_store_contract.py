"""The running store serves exactly its contract and publishes only its declared events."""

from __future__ import annotations

import uuid
from pathlib import Path
from typing import Any

import trio
from support.actors import running_store

from orca.actor.subscriber import Subscriber
from orca.contracts import store as contract
from orca.contracts import sys as sys_contract
from orca.paths import resolve_paths
from orca.wire.envelope import Event

U1, U2 = str(uuid.UUID(int=1)), str(uuid.UUID(int=2))
# Only a failing disk publishes these (tests/actors/store/test_store_actor.py mounts one).
SAVE_EVENTS = {contract.SAVE_FAILED.type, contract.SAVE_RECOVERED.type}


async def test_registered_ops_equal_the_contract(tmp_path: Path) -> None:
    """sys.hello's capabilities minus the built-in sys.* ops are exactly CONTRACT.ops."""
    with trio.fail_after(60):
        async with running_store(tmp_path) as store:
            hello = await store.invoke(sys_contract.HELLO)
    served = {name for name in hello.capabilities if name not in sys_contract.CONTRACT.ops}
    assert served == set(contract.CONTRACT.ops)
    assert set(sys_contract.CONTRACT.ops) <= set(hello.capabilities)


async def test_every_published_event_is_declared_and_decodes(tmp_path: Path) -> None:
    """One of each mutation: every event type of the contract (save events aside) goes out,
    each decodes with its spec (nothing malformed), and records keep unknown fields on the
    wire as top-level keys (as orca.model.codec writes them)."""
    pub = resolve_paths({"ORCA_HOME": str(tmp_path)}).ipc_endpoint("store", "pub")
    seen: list[tuple[Event, Any]] = []
    others: list[Event] = []
    live = trio.Event()
    done = trio.Event()

    def on_event(event: Event, typed: Any) -> None:
        seen.append((event, typed))
        if isinstance(typed, contract.RepoRemoved):
            done.set()

    def on_other(event: Event) -> None:
        others.append(event)
        if event.type == sys_contract.HEARTBEAT_TYPE:
            live.set()  # a heartbeat arrived: the subscription is connected

    sub = Subscriber(
        pub,
        contract.CONTRACT.events.values(),
        on_event,
        consumer="test<-store",
        on_other=on_other,
    )
    with trio.fail_after(60):
        async with running_store(tmp_path) as store, trio.open_nursery() as nursery:
            await nursery.start(sub.run)
            await live.wait()
            rid = await scenario(store)
            await done.wait()
            nursery.cancel_scope.cancel()
    assert sub.stats.malformed == 0
    types = {event.type for event, _ in seen}
    assert types == set(contract.CONTRACT.events) - SAVE_EVENTS
    for event, typed in seen:
        assert contract.CONTRACT.events[event.type].data is type(typed)
        assert event.src == "store"
    assert {e.type for e in others} == {sys_contract.HEARTBEAT_TYPE}
    (added,) = [(e, t) for e, t in seen if isinstance(t, contract.RepoAdded)]
    assert added[0].data["repo"]["futureField"] == [1, 2]  # top-level, not nested
    assert added[1].repo.path == "/src/a"
    retired = [t for _, t in seen if isinstance(t, contract.PaneRetired)]
    assert retired == [contract.PaneRetired(host_id="local", tab_id="t", leaf_id=U2, revision=1)]
    renamed = [t for _, t in seen if isinstance(t, contract.WorktreeRenamed)]
    assert renamed == [
        contract.WorktreeRenamed(old_id=f"{rid}::/src/a/w", new_id=f"{rid}::/src/a/w2")
    ]


async def scenario(store: Any) -> str:
    """One call of every mutation that publishes; the repo removal comes last.
    Returns the repo id."""
    c = contract
    repo = await store.invoke(
        c.REPO_ADD, c.RepoAddArgs(path="/src/a", fields={"futureField": [1, 2]})
    )
    assert repo.id  # a fresh UUID
    rid = repo.id
    listed = await store.call(c.REPO_LIST.name)  # raw: unknown fields stay top-level keys
    assert [r["futureField"] for r in listed["repos"]] == [[1, 2]]
    await store.invoke(c.REPO_UPDATE, c.PatchByIdArgs(id=rid, patch={"displayName": "A"}))
    project = await store.invoke(c.PROJECT_UPSERT, c.ProjectArgs(project={"displayName": "P"}))
    await store.invoke(c.PROJECT_REMOVE, c.IdArgs(id=project.id))
    group = await store.invoke(
        c.PROJECT_GROUP_UPSERT, c.ProjectGroupArgs(project_group={"id": "g", "name": "G"})
    )
    folder = await store.invoke(
        c.FOLDER_WORKSPACE_UPSERT,
        c.FolderWorkspaceArgs(
            folder_workspace={"projectGroupId": group.id, "name": "d", "folderPath": "/d"}
        ),
    )
    await store.invoke(c.FOLDER_WORKSPACE_REMOVE, c.IdArgs(id=folder.id))
    await store.invoke(c.PROJECT_GROUP_REMOVE, c.IdArgs(id=group.id))
    target = await store.invoke(
        c.SSH_TARGET_UPSERT,
        c.SshTargetArgs(ssh_target={"id": "buildbox", "destination": "me@box", "port": 2222}),
    )
    assert (await store.invoke(c.SSH_TARGET_LIST)).ssh_targets == [target]
    await store.invoke(c.SSH_TARGET_REMOVE, c.IdArgs(id=target.id))
    wt, wt2 = f"{rid}::/src/a/w", f"{rid}::/src/a/w2"
    await store.invoke(c.WORKTREE_META_PATCH, c.MetaPatchArgs(worktree_id=wt, patch={}))
    lineage = {
        "worktreeId": wt,
        "worktreeInstanceId": "i1",
        "parentWorktreeId": f"{rid}::/src/a",
        "parentWorktreeInstanceId": "i0",
    }
    set_lineage = await store.invoke(
        c.LINEAGE_SET, c.LineageSetArgs(worktree_id=wt, lineage=lineage)
    )
    assert set_lineage is not None and set_lineage.worktree_id == wt
    assert await store.invoke(c.LINEAGE_SET, c.LineageSetArgs(worktree_id=wt, lineage=None)) is None
    await store.invoke(
        c.WORKSPACE_LINEAGE_SET,
        c.WorkspaceLineageSetArgs(
            child_workspace_key="folder:x",
            lineage={
                "childWorkspaceKey": "folder:x",
                "childInstanceId": "i2",
                "parentWorkspaceKey": "folder:y",
                "parentInstanceId": "i3",
            },
        ),
    )
    await store.invoke(c.SETTINGS_PATCH, c.PatchArgs(patch={"theme": "dark"}))
    await store.invoke(c.UI_PATCH, c.PatchArgs(patch={"sidebarWidth": 300}))
    layout = {
        "t": {
            "root": {
                "type": "split",
                "direction": "vertical",
                "first": {"type": "leaf", "leafId": U1},
                "second": {"type": "leaf", "leafId": U2},
            }
        }
    }
    await store.invoke(
        c.SESSION_SET, c.SessionSetArgs(session={"terminalLayoutsByTabId": layout}, revision=0)
    )
    await store.invoke(c.SESSION_RETIRE_PANE, c.RetirePaneArgs(tab_id="t", leaf_id=U2))
    await store.invoke(c.WORKTREE_MIGRATE_IDENTITY, c.MigrateIdentityArgs(old_id=wt, new_id=wt2))
    await store.invoke(c.WORKTREE_META_PATCH, c.MetaPatchArgs(worktree_id=wt, patch={}))
    await store.invoke(c.WORKTREE_META_REMOVE, c.WorktreeIdArgs(worktree_id=wt))
    automation = {
        "id": "a1", "name": "nightly", "target": {"repoId": rid}, "prompt": "p",
        "agents": [{"agent": "claude"}], "schedule": {"kind": "every", "everySeconds": 60},
    }  # fmt: skip
    await store.invoke(c.AUTOMATION_PUT, c.AutomationPutArgs(automation=automation))
    intent = {"id": "a1@60000", "automationId": "a1", "scheduledFor": 60000,
              "trigger": "schedule", "status": "starting"}  # fmt: skip
    await store.invoke(c.AUTOMATION_RUN_BEGIN, c.AutomationRunBeginArgs(run=intent))
    await store.invoke(c.AUTOMATION_REMOVE, c.IdArgs(id="a1"))
    removed = await store.invoke(c.REPO_REMOVE, c.IdArgs(id=rid))
    assert removed.id == rid and removed.removed_worktree_meta == 1
    return rid
