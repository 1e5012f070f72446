"""``orca repo add PATH | ls [--json] | rm ID``: the repos the store knows.

A repo is imported by absolute path and gets a fresh id from the store (seed 01 §4.1);
``kind`` is ``git`` when the directory has a ``.git`` entry, else ``folder``.
"""

from __future__ import annotations

import argparse
import os
from typing import Any

from orca.cli.output import EXIT_OK, EXIT_USAGE, fail, fail_from, print_json, print_table
from orca.wire.errors import OrcaError


def _call(op: str, args: dict[str, Any] | None = None) -> Any:
    from orca.client.sync import call

    return call("store", op, args or {})


def _add(args: argparse.Namespace) -> int:
    path = os.path.abspath(os.path.expanduser(args.path))
    if not os.path.isdir(path):
        return fail(f"not a directory: {path}", EXIT_USAGE)
    kind = "git" if os.path.exists(os.path.join(path, ".git")) else "folder"
    request: dict[str, Any] = {"path": path, "kind": kind}
    if args.name:
        request["displayName"] = args.name
    try:
        repo = _call("repo.add", request)
    except OrcaError as exc:
        return fail_from(exc)
    print(f"added {repo['displayName']} ({repo['id']}) {repo['path']}")
    return EXIT_OK


def _host(repo: dict[str, Any]) -> str:
    from orca.model.hosts import repo_execution_host_id

    return repo_execution_host_id(repo.get("executionHostId"), repo.get("connectionId"))


def _ls(args: argparse.Namespace) -> int:
    try:
        repos: list[dict[str, Any]] = _call("repo.list")["repos"]
    except OrcaError as exc:
        return fail_from(exc)
    if args.json:
        print_json("repos", repos)
        return EXIT_OK
    rows = [
        (r["id"], r.get("displayName"), r.get("kind") or "git", _host(r), r["path"]) for r in repos
    ]
    print_table(("ID", "NAME", "KIND", "HOST", "PATH"), rows)
    return EXIT_OK


def _rm(args: argparse.Namespace) -> int:
    try:
        repos: list[dict[str, Any]] = _call("repo.list")["repos"]
        target = args.id
        by_path = [r for r in repos if r["path"] == os.path.abspath(os.path.expanduser(target))]
        if not any(r["id"] == target for r in repos) and len(by_path) == 1:
            target = by_path[0]["id"]  # a path is accepted when it names one repo
        result = _call("repo.remove", {"id": target})
    except OrcaError as exc:
        return fail_from(exc)
    print(f"removed {result['id']} ({result['removedWorktreeMeta']} worktree notes dropped)")
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
    rm.add_argument("id", help="repo id (or its path)")
    rm.set_defaults(func=_rm)
