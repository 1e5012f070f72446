"""``orca repo add PATH | ls [--json] | rm REPO``: the repos the store knows.

A repo is imported by absolute path and gets a fresh id from the store (seed 01 §4.1);
``kind`` is ``git`` when the directory has a ``.git`` entry, else ``folder``. ``rm``
takes what every other command takes for a repo (``orca.views.handles.resolve_repo``):
its handle, display name, folder name, path, id or a unique prefix.
"""

from __future__ import annotations

import argparse
import os
from typing import TYPE_CHECKING

from orca.cli.output import EXIT_OK, EXIT_USAGE, fail, print_json, print_table

if TYPE_CHECKING:
    from orca.model.types_repo import Repo


def _add(args: argparse.Namespace) -> int:
    from orca.client.sync import invoke
    from orca.contracts import store

    path = os.path.abspath(os.path.expanduser(args.path))
    if not os.path.isdir(path):
        return fail(f"not a directory: {path}", EXIT_USAGE)
    is_git = os.path.exists(os.path.join(path, ".git"))
    request = store.RepoAddArgs(
        path=path, kind="git" if is_git else "folder", display_name=args.name or None
    )
    repo = invoke(store.REPO_ADD, request)
    print(f"added {repo.display_name} ({repo.id}) {repo.path}")
    return EXIT_OK


def _host(repo: Repo) -> str:
    from orca.model.hosts import repo_execution_host_id

    return repo_execution_host_id(repo.execution_host_id, repo.connection_id)


def _repos() -> list[Repo]:
    from orca.client.sync import invoke
    from orca.contracts import store

    return invoke(store.REPO_LIST).repos


def _ls(args: argparse.Namespace) -> int:
    from orca.views.handles import repo_handles

    repos = _repos()
    handles = repo_handles((r.id, r.display_name) for r in repos)
    if args.json:
        from orca.model.codec import to_builtins

        print_json("repos", [{"handle": handles[r.id], **to_builtins(r)} for r in repos])
        return EXIT_OK
    rows = [(handles[r.id], r.kind or "git", _host(r), r.path) for r in repos]
    print_table(("REPO", "KIND", "HOST", "PATH"), rows)
    return EXIT_OK


def _rm(args: argparse.Namespace) -> int:
    from orca.client.sync import invoke
    from orca.contracts import store
    from orca.views.handles import resolve_repo

    repo = resolve_repo(_repos(), args.id)
    result = invoke(store.REPO_REMOVE, store.IdArgs(id=repo.id))
    print(
        f"removed {repo.display_name} ({result.id}; {result.removed_worktree_meta}"
        " worktree notes dropped)"
    )
    return EXIT_OK


def add_parser(sub: argparse._SubParsersAction[argparse.ArgumentParser]) -> None:
    parser = sub.add_parser("repo", help="repos Orca knows (add, ls, rm)")
    commands = parser.add_subparsers(dest="repo_command", metavar="COMMAND", required=True)
    add = commands.add_parser("add", help="import a git checkout or a folder by path")
    add.add_argument("path")
    add.add_argument("--name", help="display name (default: the folder name)")
    add.set_defaults(func=_add)
    ls = commands.add_parser("ls", help="list repos")
    ls.add_argument("--json", action="store_true", help='print {"repos": [...]}')
    ls.set_defaults(func=_ls)
    rm = commands.add_parser("rm", help="forget a repo (its files are not touched)")
    rm.add_argument("id", help="repo: handle, display name, path or id")
    rm.set_defaults(func=_rm)
