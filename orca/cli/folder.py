"""``orca folder add PATH | ls [--json] | rm FOLDER``: folder workspaces.

A folder workspace (seed 01 §4.5 and §5.1, route A) is a plain directory hung on a
project group of the sidebar, next to the repos: no git, no worktrees, but terminals,
agents and their lights as a worktree has them (its id is ``folder:<uuid>``, its
terminals' session ids ``folder:<uuid>@@<8 hex>``, ``orca.model.panes``). The store
owns the records (``folderWorkspace.*``, ``projectGroup.*``); this module only asks.

``add`` files the folder under the project group named by ``--group`` (made when no
group has that name; ``folders`` by default). ``rm`` refuses while a terminal runs in
the folder, as ``orca worktree rm`` does; ``--force`` closes them first, as ``orca term
close`` does (otherwise ptyd's GC would reap them only a grace after the record went).
References are what ``term new`` takes: the handle (``ls``'s first column, the one
``worktree ls`` and ``term ls`` show: the folder's directory name), ``folder:<id>``, the
bare id, a unique name or the folder's path.
"""

from __future__ import annotations

import os
from typing import TYPE_CHECKING

from orca.cli.lookup import WORKTREES_TIMEOUT_S
from orca.cli.output import EXIT_OK, EXIT_USAGE, fail, print_json, print_table
from orca.model.ids import FOLDER_WORKSPACE_KEY_PREFIX as FOLDER_PREFIX
from orca.wire.errors import BadRequest

if TYPE_CHECKING:
    import argparse

    from orca.model.types_repo import FolderWorkspace, ProjectGroup

DEFAULT_GROUP = "folders"


def _state() -> tuple[list[FolderWorkspace], list[ProjectGroup]]:
    """The store's folder workspaces and project groups (one snapshot: no op lists groups)."""
    from orca.client.sync import invoke
    from orca.contracts import store
    from orca.model.codec import from_builtins
    from orca.model.types_repo import FolderWorkspace, ProjectGroup

    state = invoke(store.STATE_SNAPSHOT).state
    folders = [from_builtins(FolderWorkspace, f) for f in state.get("folderWorkspaces") or ()]
    return folders, [from_builtins(ProjectGroup, g) for g in state.get("projectGroups") or ()]


def _group_for(name: str, groups: list[ProjectGroup]) -> str:
    """The id of the group called ``name``: the one there is, or a new one."""
    from orca.client.sync import invoke
    from orca.contracts import store

    named = [g for g in groups if g.name == name]
    if len(named) > 1:
        raise BadRequest(f"{len(named)} project groups are called {name!r}")
    if named:
        return named[0].id
    made = invoke(store.PROJECT_GROUP_UPSERT, store.ProjectGroupArgs(project_group={"name": name}))
    return made.id


def _add(args: argparse.Namespace) -> int:
    from orca.client.sync import invoke
    from orca.contracts import store

    path = os.path.abspath(os.path.expanduser(args.path))
    if not os.path.isdir(path):
        return fail(f"not a directory: {path}", EXIT_USAGE)
    name = args.name or os.path.basename(path.rstrip("/")) or path
    folders, groups = _state()
    if any(os.path.realpath(f.folder_path) == os.path.realpath(path) for f in folders):
        return fail(f"already a folder workspace: {path}", EXIT_USAGE)
    group_id = _group_for(args.group, groups)
    record = {"projectGroupId": group_id, "name": name, "folderPath": path}
    folder = invoke(
        store.FOLDER_WORKSPACE_UPSERT, store.FolderWorkspaceArgs(folder_workspace=record)
    )
    print(f"added {folder.name} ({FOLDER_PREFIX}{folder.id}) {folder.folder_path} in {args.group}")
    return EXIT_OK


def folder_handles(
    folders: list[FolderWorkspace], timeout: float = WORKTREES_TIMEOUT_S
) -> dict[str, str]:
    """Each folder workspace's handle by its id: the one ``orca worktree ls`` and ``orca
    term ls`` show for it (gitwatch lists folder workspaces among the worktrees, under
    ``folder:<id>``), unique against every worktree; without gitwatch, against the
    folders alone."""
    from orca.client.sync import invoke
    from orca.contracts import gitwatch_core
    from orca.views.handles import worktree_handles
    from orca.wire.errors import OrcaError

    try:
        listed = invoke(gitwatch_core.WORKTREE_PATHS, timeout=timeout).worktrees
        every = {r.id: r.path for r in listed}
    except OrcaError:
        every = {}
    for f in folders:
        every[FOLDER_PREFIX + f.id] = f.folder_path  # the store's record is the truth here
    handles = worktree_handles(every.items())
    return {f.id: handles[FOLDER_PREFIX + f.id] for f in folders}


def _ls(args: argparse.Namespace) -> int:
    folders, groups = _state()
    group_names = {g.id: g.name for g in groups}
    handles = folder_handles(folders)
    if args.json:
        from orca.model.codec import to_builtins

        rows = [
            {
                "handle": handles[f.id],
                "worktreeId": FOLDER_PREFIX + f.id,
                "group": group_names.get(f.project_group_id, ""),
                **to_builtins(f),
            }
            for f in folders
        ]
        print_json("folders", rows)
        return EXIT_OK
    table = [
        (handles[f.id], f.name, group_names.get(f.project_group_id, "?"), f.folder_path)
        for f in sorted(folders, key=lambda f: (handles[f.id], f.id))
    ]
    print_table(("FOLDER", "NAME", "GROUP", "PATH"), table)
    return EXIT_OK


def resolve_folder(folders: list[FolderWorkspace], ref: str) -> FolderWorkspace:
    """The folder workspace ``ref`` names (see the module's docstring); raises BadRequest."""
    from orca.views.handles import Target, resolve

    handles = folder_handles(folders)
    targets = [
        Target(
            id=f.id,
            handle=handles[f.id],
            aliases=frozenset(
                {
                    FOLDER_PREFIX + f.id,
                    f.name,
                    f.folder_path,
                    os.path.realpath(f.folder_path),
                }
                - {""}
            ),
        )
        for f in folders
    ]
    chosen = resolve(targets, ref, "folder workspace")
    return next(f for f in folders if f.id == chosen.id)


def _rm(args: argparse.Namespace) -> int:
    from orca.cli.live_terminals import end_terminals_or_refuse
    from orca.client.sync import invoke
    from orca.contracts import store
    from orca.paths import resolve_paths

    folders, _groups = _state()
    folder = resolve_folder(folders, args.folder)
    owner = FOLDER_PREFIX + folder.id
    if not end_terminals_or_refuse(
        resolve_paths(), owner, folder.name, "orca folder rm", force=args.force
    ):
        return EXIT_USAGE
    invoke(store.FOLDER_WORKSPACE_REMOVE, store.IdArgs(id=folder.id))
    print(f"removed {folder.name} ({folder.folder_path} is left as it is)")
    return EXIT_OK


def add_parser(sub: argparse._SubParsersAction[argparse.ArgumentParser]) -> None:
    parser = sub.add_parser("folder", help="folder workspaces: plain directories (add, ls, rm)")
    commands = parser.add_subparsers(dest="folder_command", required=True, metavar="COMMAND")
    add = commands.add_parser("add", help="show a directory in the sidebar, for terminals")
    add.add_argument("path", help="the directory")
    add.add_argument("--name", help="its name (default: the directory's name)")
    add.add_argument(
        "--group",
        default=DEFAULT_GROUP,
        help=f"project group (made if new; default {DEFAULT_GROUP})",
    )
    add.set_defaults(func=_add)
    ls = commands.add_parser("ls", help="list folder workspaces")
    ls.add_argument("--json", action="store_true", help='print {"folders": [...]}')
    ls.set_defaults(func=_ls)
    rm = commands.add_parser("rm", help="forget a folder workspace (the directory stays)")
    rm.add_argument("folder", help="folder: handle, name, path, folder:<id> or id")
    rm.add_argument("--force", action="store_true", help="end the terminals running in it first")
    rm.set_defaults(func=_rm)
