"""Seed rules only visible through the running store: a newer schemaVersion served
read-only (02-05), lineage fenced by instance ids (01-31), and what a restart brings back
(01-54, 01-70, 02-22)."""

from __future__ import annotations

import json
import sys
from pathlib import Path
from typing import Any

import pytest
import trio
from support.actors import actor_env as store_env
from support.actors import running_store

from orca.contracts import store as contract
from orca.contracts import sys as sys_contract
from orca.model.state import SCHEMA_VERSION
from orca.paths import resolve_paths
from orca.wire.errors import Conflict, Unavailable

WT = "r::/w/a"


def state_file(home: Path) -> Path:
    return resolve_paths({"ORCA_HOME": str(home)}).state_file


def write_state(home: Path, doc: dict[str, Any]) -> bytes:
    path = state_file(home)
    path.parent.mkdir(parents=True, exist_ok=True, mode=0o700)
    raw = json.dumps(doc, indent=1).encode()
    path.write_bytes(raw)
    return raw


async def orca(home: Path, *argv: str) -> tuple[int, str]:
    result = await trio.run_process(
        [sys.executable, "-m", "orca.cli.main", *argv],
        env={**store_env(home), "COLUMNS": "250"},
        capture_stdout=True,
        capture_stderr=True,
        check=False,
    )
    return result.returncode, result.stdout.decode()


async def test_file_from_a_newer_orca_is_served_read_only_and_never_rewritten(
    tmp_path: Path,
) -> None:
    """schemaVersion above ours: reads work, every change is refused naming the version,
    `orca state status` warns, and the file's bytes survive start, refusals and stop."""
    newer = SCHEMA_VERSION + 1
    raw = write_state(
        tmp_path,
        {
            "schemaVersion": newer,
            "repos": [{"id": "r", "path": "/src/r", "displayName": "r", "newField": [1]}],
            "workspaceSession": {"tabsByWorktree": {WT: [{"id": "t", "worktreeId": WT}]}},
        },
    )
    with trio.fail_after(60):
        async with running_store(tmp_path) as store:
            listed = await store.invoke(contract.REPO_LIST)
            assert [r.id for r in listed.repos] == ["r"]
            with pytest.raises(Unavailable, match=f"schemaVersion {newer}"):
                await store.invoke(contract.REPO_ADD, contract.RepoAddArgs(path="/src/b"))
            with pytest.raises(Unavailable, match="read-only"):
                await store.invoke(
                    contract.SESSION_FLUSH, contract.SessionFlushArgs(session={"activeRepoId": "r"})
                )
            load = (await store.call(sys_contract.STATS.name))["store"]["load"]
            assert load["readOnlySchemaVersion"] == newer
            assert any("newer Orca" in p for p in load["stateProblems"])
            code, out = await orca(tmp_path, "state", "status")
            assert code == 0 and f"schemaVersion {newer} was written by a newer Orca" in out
            assert await store.stop() == 0
    assert state_file(tmp_path).read_bytes() == raw
    assert not state_file(tmp_path).with_name("orca-data.json.bak.0").exists()


async def test_lineage_of_a_removed_worktree_is_not_inherited_by_a_new_one(
    tmp_path: Path,
) -> None:
    """rm the meta, reuse the path with a new instance: no parent, a stale set refused."""
    lineage = {
        "worktreeId": WT,
        "worktreeInstanceId": "i1",
        "parentWorktreeId": "r::/w/p",
        "parentWorktreeInstanceId": "p1",
    }
    with trio.fail_after(60):
        async with running_store(tmp_path) as store:
            meta = contract.MetaSetArgs(worktree_id=WT, meta={"instanceId": "i1"})
            await store.invoke(contract.WORKTREE_META_SET, meta)
            await store.invoke(
                contract.LINEAGE_SET, contract.LineageSetArgs(worktree_id=WT, lineage=lineage)
            )
            view = await store.invoke(contract.LINEAGE_GET, contract.WorktreeIdArgs(worktree_id=WT))
            assert view.verdict == "current" and view.lineage is not None
            await store.invoke(
                contract.WORKTREE_META_REMOVE, contract.WorktreeIdArgs(worktree_id=WT)
            )
            reused = contract.MetaSetArgs(worktree_id=WT, meta={"instanceId": "i2"})
            await store.invoke(contract.WORKTREE_META_SET, reused)
            view = await store.invoke(contract.LINEAGE_GET, contract.WorktreeIdArgs(worktree_id=WT))
            assert view.lineage is None and view.verdict == "none"
            with pytest.raises(Conflict, match="path was reused"):
                await store.invoke(
                    contract.LINEAGE_SET, contract.LineageSetArgs(worktree_id=WT, lineage=lineage)
                )


async def test_restart_brings_back_visible_tabs_unified_and_marks_unmigratable_ptys(
    tmp_path: Path,
) -> None:
    """An old file: legacy tabs come back unified, a diff tab does not, and the PTY of a
    duplicated leaf is marked unsupported instead of re-bound."""
    write_state(
        tmp_path,
        {
            "schemaVersion": SCHEMA_VERSION,
            "_localSessionPartitionMigrated": True,
            "workspaceSession": {
                "tabsByWorktree": {WT: [{"id": "t", "worktreeId": WT}]},
                "terminalLayoutsByTabId": {
                    "t": {
                        "root": {
                            "type": "split",
                            "direction": "vertical",
                            "first": {"type": "leaf", "leafId": "1"},
                            "second": {"type": "leaf", "leafId": "1"},
                        },
                        "ptyIdsByLeafId": {"1": "r::/w/a@@0000abcd"},
                    }
                },
                "acknowledgedAgentsByPaneKey": {"t:1": 7},
            },
            "workspaceSessionsByHostId": {
                "ssh:box": {
                    "unifiedTabs": {
                        WT: [
                            {
                                "id": d,
                                "entityId": d,
                                "groupId": "g",
                                "worktreeId": WT,
                                "contentType": d,
                            }
                            for d in ("diff", "editor")
                        ]
                    },
                    "tabGroups": {
                        WT: [{"id": "g", "worktreeId": WT, "tabOrder": ["diff", "editor"]}]
                    },
                }
            },
        },
    )
    with trio.fail_after(60):
        async with running_store(tmp_path) as store:
            local = (await store.invoke(contract.SESSION_GET, contract.SessionGetArgs())).session
            assert [t.id for t in (local.unified_tabs or {})[WT]] == ["t"]
            layout = local.terminal_layouts_by_tab_id["t"]
            assert layout.pty_ids_by_leaf_id == {}
            assert local.unsupported_pty_ids_by_tab_id == {"t": ("r::/w/a@@0000abcd",)}
            remote = await store.invoke(
                contract.SESSION_GET, contract.SessionGetArgs(host_id="ssh:box")
            )
            assert [t.id for t in (remote.session.unified_tabs or {})[WT]] == ["editor"]
            assert await store.stop() == 0
    on_disk = json.loads(state_file(tmp_path).read_bytes())
    assert on_disk["_legacyUnifiedTabsMigrated"] is True
    assert on_disk["workspaceSession"]["tabsByWorktree"][WT][0]["id"] == "t"


async def test_folder_workspace_is_listed_by_gitwatch_like_a_worktree(tmp_path: Path) -> None:
    """Route A (seed 01 §5.1): a group's folder workspace comes back from worktree.list as
    a ``folder:<uuid>`` row, alone when its ``folder-workspace:<group>`` repo id is asked."""
    from support.gitwatch_harness import running_actors

    from orca.contracts import gitwatch as gw

    plain = tmp_path / "plain"
    plain.mkdir()
    notes = tmp_path / "notes"
    notes.mkdir()
    with trio.fail_after(60):
        async with running_actors(tmp_path / "home") as running:
            # A folder repo's first row tells us gitwatch has store's snapshot.
            await running.store.invoke(
                contract.REPO_ADD, contract.RepoAddArgs(path=str(plain), kind="folder")
            )
            await running.events.next_of(
                gw.WORKTREE_ADDED, lambda e: bool(e.git.path == str(plain))
            )
            group = await running.store.invoke(
                contract.PROJECT_GROUP_UPSERT,
                contract.ProjectGroupArgs(project_group={"name": "research"}),
            )
            folder = await running.store.invoke(
                contract.FOLDER_WORKSPACE_UPSERT,
                contract.FolderWorkspaceArgs(
                    folder_workspace={
                        "projectGroupId": group.id,
                        "folderPath": str(notes),
                        "name": "Notes",
                    }
                ),
            )
            listing = await running.gitwatch.invoke(gw.WORKTREE_LIST, gw.ListArgs())
            rows = {r.id: r for r in listing.worktrees}
            row = rows[f"folder:{folder.id}"]
            assert (row.path, row.display_name) == (str(notes), "Notes")
            assert row.repo_id == f"folder-workspace:{group.id}" and row.visible
            assert any(r.path == str(plain) for r in listing.worktrees)
            only = await running.gitwatch.invoke(
                gw.WORKTREE_LIST, gw.ListArgs(repo_id=f"folder-workspace:{group.id}")
            )
            assert [r.id for r in only.worktrees] == [f"folder:{folder.id}"]
            assert only.unavailable_repos == []
