"""``orca worktree ls|create|rm|mv``: list and change worktrees through ``gitwatch``.

``ls [--json] [--all]``                   every repo's worktrees (``{"worktrees": [...]}``)
``create REPO NAME [--base B] [--setup run|skip]``
                                          REPO is a repo id, path or display name; the
                                          setup script's output streams under a spinner
``rm WORKTREE [--force] [--delete-branch]``
``mv WORKTREE NEW_NAME``                  WORKTREE is an id, a path, or a unique display
                                          name / branch / folder name

``ps`` lives in ``orca.cli.worktree_ps``; both attach to the one ``worktree`` topic
(:func:`add_worktree_subcommands` adds these four to an existing subparsers object).
Import-light like every CLI module: pyzmq + msgspec through the sync client, rich only
to print.
"""

from __future__ import annotations

import argparse
import os
import secrets
import sys
import threading
from typing import Any

from orca.cli.output import EXIT_OK, EXIT_USAGE, fail, fail_from, print_json, print_table
from orca.wire.errors import OrcaError

# Listing is served from memory: two seconds keeps a wedged actor from hanging the shell.
LIST_TIMEOUT_S = 5.0
# git worktree add checks out every file: a big repo on a slow disk takes a while.
CREATE_TIMEOUT_S = 180.0
# With a setup script (dependency installs) the actor's own bound is 30 minutes.
CREATE_WITH_SETUP_TIMEOUT_S = 1800.0 + CREATE_TIMEOUT_S
MUTATE_TIMEOUT_S = 60.0
# Time for the progress SUB socket to connect before the create starts (ZeroMQ drops
# events published before a subscriber is connected).
SUBSCRIBE_SETTLE_S = 0.2
# The reply and the progress events travel on different sockets; after the reply, wait
# this long at most for the trailing "done" event so the last setup lines still print.
TAIL_WAIT_S = 1.0
_HEADS = "refs/heads/"


class AmbiguousReference(Exception):
    """The name given matches none or several worktrees/repos (the caller's input)."""


def add_worktree_subcommands(worktree: argparse._SubParsersAction[argparse.ArgumentParser]) -> None:
    """Add ls/create/rm/mv to an existing ``worktree`` subparsers object."""
    ls = worktree.add_parser("ls", help="list worktrees of every repo")
    ls.add_argument("--json", action="store_true", help='print {"worktrees": [...]}')
    ls.add_argument("--all", action="store_true", help="include hidden (external/scratch) rows")
    ls.add_argument("--repo", help="only this repo (id, path or display name)")
    ls.set_defaults(func=cmd_ls)

    create = worktree.add_parser("create", help="create a worktree on a new branch")
    create.add_argument("repo", help="repo id, path or display name")
    create.add_argument("name", help="worktree (and branch) name; sanitized")
    create.add_argument("--base", help="start point of the new branch (default: repo base/HEAD)")
    create.add_argument("--setup", choices=("run", "skip"), default="run",
                        help="run the setup script of orca.yaml (default: run)")  # fmt: skip
    create.add_argument("--json", action="store_true", help="print the result as JSON")
    create.set_defaults(func=cmd_create)

    rm = worktree.add_parser("rm", help="remove a worktree (refuses dirty/locked ones)")
    rm.add_argument("worktree", help="worktree id, path or unique name")
    rm.add_argument("--force", action="store_true", help="remove even if dirty or locked")
    rm.add_argument("--delete-branch", action="store_true", help="also delete its branch")
    rm.set_defaults(func=cmd_rm)

    mv = worktree.add_parser("mv", help="rename a worktree's folder (keeps its sessions/meta)")
    mv.add_argument("worktree", help="worktree id, path or unique name")
    mv.add_argument("new_name", help="new folder name (sanitized; same parent directory)")
    mv.set_defaults(func=cmd_mv)


def add_parser(sub: argparse._SubParsersAction[argparse.ArgumentParser]) -> None:
    from orca.cli.worktree_ps import topic_subparsers

    add_worktree_subcommands(topic_subparsers(sub, "worktree", "worktrees and their agents"))


def _call(actor: str, op: str, args: dict[str, Any], timeout: float) -> Any:
    from orca.client.sync import call

    return call(actor, op, args, timeout=timeout)


# -- reference resolution (pure) ------------------------------------------------------


def _norm(path: str) -> str:
    return os.path.realpath(os.path.expanduser(path))


def resolve_worktree(rows: list[dict[str, Any]], ref: str) -> dict[str, Any]:
    """The row ``ref`` names: an exact id, a unique name/branch/folder, or a path."""
    for row in rows:
        if row["id"] == ref:
            return row
    names = [
        r
        for r in rows
        if ref in (r.get("displayName"), os.path.basename(r["path"]), _short(r.get("branch") or ""))
    ]
    if names or not _looks_like_path(ref):
        return _unique(names, ref, "worktree")
    target = _norm(ref)
    matches = [r for r in rows if _norm(r["path"]) == target]
    return _unique(matches, ref, "worktree")


def resolve_repo(repos: list[dict[str, Any]], ref: str) -> dict[str, Any]:
    """The repo ``ref`` names: its id, a unique display name, or its path."""
    for repo in repos:
        if repo["id"] == ref:
            return repo
    names = [r for r in repos if r.get("displayName") == ref]
    if names or not _looks_like_path(ref):
        return _unique(names, ref, "repo")
    target = _norm(ref)
    return _unique([r for r in repos if _norm(r["path"]) == target], ref, "repo")


def _looks_like_path(ref: str) -> bool:
    return os.sep in ref or ref.startswith(("~", "."))


def _unique(matches: list[dict[str, Any]], ref: str, what: str) -> dict[str, Any]:
    if len(matches) == 1:
        return matches[0]
    if not matches:
        raise AmbiguousReference(f"no {what} matches {ref!r}")
    ids = ", ".join(m["id"] for m in matches)
    raise AmbiguousReference(f"{ref!r} matches several {what}s ({ids}); use the id")


def _short(branch: str) -> str:
    return branch[len(_HEADS) :] if branch.startswith(_HEADS) else branch


# -- commands -------------------------------------------------------------------------


def _listing(repo_id: str | None = None) -> dict[str, Any]:
    args = {} if repo_id is None else {"repoId": repo_id}
    result: dict[str, Any] = _call("gitwatch", "worktree.list", args, LIST_TIMEOUT_S)
    return result


def cmd_ls(args: argparse.Namespace) -> int:
    try:
        repo_id = None
        if args.repo:
            repos = _call("store", "repo.list", {}, LIST_TIMEOUT_S)["repos"]
            repo_id = resolve_repo(repos, args.repo)["id"]
        listing = _listing(repo_id)
    except OrcaError as exc:
        return fail_from(exc)
    except AmbiguousReference as exc:
        return fail(str(exc), EXIT_USAGE)
    rows = listing["worktrees"]
    for gone in listing.get("unavailableRepos", []):
        print(f"orca: repo {gone['path']} is unavailable: {gone['reason']}", file=sys.stderr)
    if args.json:
        print_json("worktrees", rows)
        return EXIT_OK
    shown = rows if args.all else [r for r in rows if r.get("visible", True)]
    table = [
        [
            r.get("displayName"),
            _short(r.get("branch") or "") or ("(detached)" if r.get("head") else "-"),
            (r.get("head") or "")[:8] or None,
            _dirty_text(r.get("gitStatus")),
            ("main" if r.get("isMainWorktree") else r.get("ownership"))
            + (" locked" if r.get("locked") else ""),
            r["path"],
        ]
        for r in shown
    ]
    print_table(["NAME", "BRANCH", "HEAD", "DIRTY", "OWNER", "PATH"], table)
    if len(shown) < len(rows):
        print(f"({len(rows) - len(shown)} hidden; --all shows them)", file=sys.stderr)
    return EXIT_OK


def _dirty_text(status: dict[str, int] | None) -> str | None:
    if status is None:
        return None
    if not status["total"]:
        return "clean"
    parts = [f"{status[k]}{k[0]}" for k in ("staged", "unstaged", "untracked", "conflicted")]
    return " ".join(p for p in parts if not p.startswith("0"))


def cmd_create(args: argparse.Namespace) -> int:
    try:
        repos = _call("store", "repo.list", {}, LIST_TIMEOUT_S)["repos"]
        repo = resolve_repo(repos, args.repo)
    except OrcaError as exc:
        return fail_from(exc)
    except AmbiguousReference as exc:
        return fail(str(exc), EXIT_USAGE)
    request_id = secrets.token_hex(8)
    request = {
        "repoId": repo["id"],
        "name": args.name,
        "base": args.base,
        "setup": args.setup,
        "requestId": request_id,
        "source": "cli",
    }
    timeout = CREATE_WITH_SETUP_TIMEOUT_S if args.setup == "run" else CREATE_TIMEOUT_S
    try:
        result = _create_with_progress(request, request_id, timeout, quiet=args.json)
    except OrcaError as exc:
        return fail_from(exc)
    if args.json:
        print_json("worktree", result)
    else:
        print(f"created {result['path']} on {_short(result['branch'])}")
    setup = result.get("setup") or {}
    if setup.get("ran") and setup.get("exitCode"):
        return fail(f"setup script exited with {setup['exitCode']} (the worktree was kept)")
    return EXIT_OK


def _create_with_progress(
    request: dict[str, Any], request_id: str, timeout: float, *, quiet: bool
) -> dict[str, Any]:
    """Run worktree.create in a thread while this thread renders its progress events."""
    import time

    import zmq
    from rich.console import Console
    from rich.progress import Progress, SpinnerColumn, TextColumn, TimeElapsedColumn

    from orca.paths import resolve_paths
    from orca.wire.envelope import decode_event

    outcome: dict[str, Any] = {}

    def run() -> None:
        try:
            outcome["result"] = _call("gitwatch", "worktree.create", request, timeout)
        except OrcaError as exc:
            outcome["error"] = exc

    ctx: zmq.Context[zmq.Socket[bytes]] = zmq.Context.instance()
    sock = ctx.socket(zmq.SUB)
    sock.setsockopt(zmq.LINGER, 0)
    sock.setsockopt(zmq.SUBSCRIBE, f"worktree.create.progress:{request_id}".encode())
    sock.connect(resolve_paths().ipc_endpoint("gitwatch", "pub"))
    console = Console(stderr=True)
    try:
        time.sleep(SUBSCRIBE_SETTLE_S)
        worker = threading.Thread(target=run, daemon=True)
        worker.start()
        columns = (SpinnerColumn(), TextColumn("{task.description}"), TimeElapsedColumn())
        # A live display only on a terminal: rich's refresh thread and its redirection of
        # stdout/stderr have no business in a pipe or a test's capture.
        live = not quiet and sys.stderr.isatty()
        with Progress(*columns, console=console, transient=True, disable=not live) as bar:
            task = bar.add_task(f"creating {request['name']}", total=None)
            done_at: float | None = None  # when the reply arrived
            while True:
                if done_at is None and not worker.is_alive():
                    done_at = time.monotonic()
                if done_at is not None and (
                    "error" in outcome or time.monotonic() - done_at > TAIL_WAIT_S
                ):
                    break  # a failed create sends no "done"
                if not sock.poll(50, zmq.POLLIN):
                    continue
                event = decode_event(sock.recv_multipart()[-1])
                data = event.data if isinstance(event.data, dict) else {}
                text = str(data.get("text", ""))
                if data.get("stage") == "done":
                    break  # the last progress event: every setup line is printed
                if data.get("stage") == "setup":
                    if not quiet:
                        console.print(text, markup=False, highlight=False)
                    bar.update(task, description=f"setup: {text[:60]}")
                elif data.get("stage") == "git":
                    bar.update(task, description=text)
            worker.join()
    finally:
        sock.close()
    if "error" in outcome:
        raise outcome["error"]
    result: dict[str, Any] = outcome["result"]
    return result


def cmd_rm(args: argparse.Namespace) -> int:
    try:
        row = resolve_worktree(_listing()["worktrees"], args.worktree)
        result = _call(
            "gitwatch",
            "worktree.remove",
            {"worktreeId": row["id"], "force": args.force, "deleteBranch": args.delete_branch},
            MUTATE_TIMEOUT_S,
        )
    except OrcaError as exc:
        return fail_from(exc)
    except AmbiguousReference as exc:
        return fail(str(exc), EXIT_USAGE)
    print(f"removed {row['path']}")
    if args.delete_branch and not result.get("branchDeleted"):
        return fail(f"branch kept: {result.get('branchError') or 'not a local branch'}")
    return EXIT_OK


def cmd_mv(args: argparse.Namespace) -> int:
    try:
        row = resolve_worktree(_listing()["worktrees"], args.worktree)
        result = _call(
            "gitwatch",
            "worktree.rename",
            {"worktreeId": row["id"], "newName": args.new_name},
            MUTATE_TIMEOUT_S,
        )
    except OrcaError as exc:
        return fail_from(exc)
    except AmbiguousReference as exc:
        return fail(str(exc), EXIT_USAGE)
    print(f"moved {row['path']} -> {result['path']}")
    return EXIT_OK
