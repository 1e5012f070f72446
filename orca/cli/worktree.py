"""``orca worktree ls|create|rm|mv``: list and change worktrees through ``gitwatch``.

``ls [--json] [--all]``                   every repo's worktrees (``{"worktrees": [...]}``)
``create REPO NAME [--base B] [--setup run|skip]``
                                          REPO is a repo id, path or display name; the
                                          setup script's output streams under a spinner
``rm WORKTREE [--force] [--delete-branch]``
``mv WORKTREE NEW_NAME``                  WORKTREE is a handle (first column of ``ls``),
                                          an id, a path, a unique display name / branch /
                                          folder name, or a unique prefix of a handle

A listing that could not read some repo still prints the others, names each missing
repo on stderr and exits 0 (README "Exit codes").

``ps`` lives in ``orca.cli.worktree_ps``; both attach to the one ``worktree`` topic
(:func:`add_worktree_subcommands` adds these four to an existing subparsers object).
Import-light like every CLI module: pyzmq + msgspec through the sync client, rich only
to print.
"""

from __future__ import annotations

import argparse
import os
import sys
from collections.abc import Sequence
from typing import TYPE_CHECKING

from orca.cli.handles import AmbiguousReference
from orca.cli.output import EXIT_OK, fail, print_json, print_table
from orca.wire.errors import OrcaError

__all__ = ["AmbiguousReference", "list_worktrees", "resolve_repo", "resolve_worktree"]

if TYPE_CHECKING:
    from orca.cli.handles import Target
    from orca.contracts.gitwatch import (
        AheadBehind,
        CreateArgs,
        Created,
        GitStatus,
        WorktreeList,
        WorktreeRow,
    )
    from orca.model.types_repo import Repo

# Listing is served from memory: five seconds keeps a wedged actor from hanging the shell.
LIST_TIMEOUT_S = 5.0
# git worktree add checks out every file: a big repo on a slow disk takes a while.
CREATE_TIMEOUT_S = 180.0
# With a setup script (dependency installs) the actor's own bound is 30 minutes.
CREATE_WITH_SETUP_TIMEOUT_S = 1800.0 + CREATE_TIMEOUT_S
MUTATE_TIMEOUT_S = 60.0
# ZeroMQ drops events published before a subscriber is connected: the create starts once
# a heartbeat (one a second) proved the progress subscription live, or after this bound.
SUBSCRIBE_LIVE_WAIT_S = 1.5
# The reply and the progress events travel on different sockets; after the reply, wait
# this long at most for the trailing "done" event so the last setup lines still print.
TAIL_WAIT_S = 1.0
# How often the progress loop looks whether the create's reply has arrived.
PROGRESS_POLL_S = 0.05
PROGRESS_CONSUMER = "cli<-gitwatch"
_HEADS = "refs/heads/"


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
    rm.add_argument("worktree", help="worktree: handle, name, path or id")
    rm.add_argument(
        "--force",
        action="store_true",
        help="remove even if dirty, locked or with running terminals (ended first)",
    )
    rm.add_argument("--delete-branch", action="store_true", help="also delete its branch")
    rm.set_defaults(func=cmd_rm)

    mv = worktree.add_parser("mv", help="rename a worktree's folder (keeps its sessions/meta)")
    mv.add_argument("worktree", help="worktree id, path or unique name")
    mv.add_argument("new_name", help="new folder name (sanitized; same parent directory)")
    mv.set_defaults(func=cmd_mv)


def add_parser(sub: argparse._SubParsersAction[argparse.ArgumentParser]) -> None:
    from orca.cli.worktree_ps import topic_subparsers

    add_worktree_subcommands(topic_subparsers(sub, "worktree", "worktrees and their agents"))


# -- reference resolution (pure; the rules live in orca.cli.handles) ------------------


def worktree_targets(rows: Sequence[WorktreeRow]) -> list[Target]:
    from orca.cli.handles import worktree_handles, worktree_target

    handles = worktree_handles((r.id, r.path) for r in rows)
    return [worktree_target(r.id, handles[r.id], r.path, r.display_name, r.branch) for r in rows]


def resolve_worktree(rows: Sequence[WorktreeRow], ref: str) -> WorktreeRow:
    """The row ``ref`` names: an id, a handle, a unique name/branch/folder or path, or a
    unique prefix of a handle (orca.cli.handles.resolve)."""
    from orca.cli.handles import resolve

    chosen = resolve(worktree_targets(rows), ref, "worktree")
    return next(r for r in rows if r.id == chosen.id)


def resolve_repo(repos: Sequence[Repo], ref: str) -> Repo:
    """The repo ``ref`` names: its id, handle, a unique display name, folder or path."""
    from orca.cli.handles import repo_handles, repo_target, resolve

    handles = repo_handles((r.id, r.display_name) for r in repos)
    targets = [repo_target(r.id, handles[r.id], r.path, r.display_name) for r in repos]
    chosen = resolve(targets, ref, "repo")
    return next(r for r in repos if r.id == chosen.id)


def _short(branch: str) -> str:
    return branch[len(_HEADS) :] if branch.startswith(_HEADS) else branch


# -- commands -------------------------------------------------------------------------


def _repos() -> list[Repo]:
    from orca.client.sync import invoke
    from orca.contracts import store

    return invoke(store.REPO_LIST, timeout=LIST_TIMEOUT_S).repos


def list_worktrees(repo_id: str | None = None, *, timeout: float = LIST_TIMEOUT_S) -> WorktreeList:
    """gitwatch's rows (of one repo, or every repo); raises OrcaError when it is down."""
    from orca.client.sync import invoke
    from orca.contracts import gitwatch

    return invoke(gitwatch.WORKTREE_LIST, gitwatch.ListArgs(repo_id=repo_id), timeout=timeout)


def cmd_ls(args: argparse.Namespace) -> int:
    repo_id = resolve_repo(_repos(), args.repo).id if args.repo else None
    listing = list_worktrees(repo_id)
    rows = listing.worktrees
    for gone in listing.unavailable_repos:
        print(f"orca: repo {gone.path} is unavailable: {gone.reason}", file=sys.stderr)
    # Handles are computed over every row, hidden ones included: --all must not rename.
    handles = {t.id: t.handle for t in worktree_targets(rows)}
    shown = rows if args.all else [r for r in rows if r.visible]
    from orca.remote import any_known_host

    if any_known_host():
        from orca.remote.readers import worktrees_with_remotes  # remote hosts' rows, labelled

        if worktrees_with_remotes(args, shown, handles):
            return EXIT_OK
    if args.json:
        from orca.model.codec import to_builtins

        print_json("worktrees", [{"handle": handles[r.id], **to_builtins(r)} for r in shown])
        return EXIT_OK
    table = [
        [
            handles[r.id],
            _short(r.branch) or ("(detached)" if r.head else "-"),
            ahead_behind_text(r.ahead_behind),
            _dirty_text(r.git_status),
            owner_text(r),
            r.path,
        ]
        for r in shown
    ]
    print_table(["WORKTREE", "BRANCH", "AHEAD/BEHIND", "DIRTY", "OWNER", "PATH"], table)
    if len(shown) < len(rows):
        print(f"({len(rows) - len(shown)} hidden; --all shows them)", file=sys.stderr)
    return EXIT_OK


def owner_text(row: WorktreeRow) -> str:
    """The JSON's ``ownership`` word, then ``main`` / ``locked`` when they apply."""
    flags: list[str] = [row.ownership]
    if row.is_main_worktree:
        flags.append("main")
    if row.locked:
        flags.append("locked")
    return " ".join(flags)


def ahead_behind_text(counts: AheadBehind | None) -> str | None:
    """``+ahead/-behind`` against the comparison ref (``--json`` names it); None (shown
    ``-``) when there is none."""
    if counts is None:
        return None
    return f"+{counts.ahead}/-{counts.behind}"


def _dirty_text(status: GitStatus | None) -> str | None:
    if status is None:
        return None
    if not status.total:
        return "clean"
    counts = (
        ("staged", status.staged),
        ("unstaged", status.unstaged),
        ("untracked", status.untracked),
        ("conflicted", status.conflicted),
    )
    return " ".join(f"{n}{name[0]}" for name, n in counts if n)


def cmd_create(args: argparse.Namespace) -> int:
    from orca.contracts import gitwatch
    from orca.remote.worktrees import remote_worktree  # HOST:REPO of a known host

    if (remote := remote_worktree("create", args)) is not None:
        return remote

    repo = resolve_repo(_repos(), args.repo)
    request = gitwatch.CreateArgs(
        repo_id=repo.id,
        name=args.name,
        base=args.base,
        setup=args.setup,
        request_id=os.urandom(8).hex(),  # not secrets: its import costs every command
        source="cli",
    )
    timeout = CREATE_WITH_SETUP_TIMEOUT_S if args.setup == "run" else CREATE_TIMEOUT_S
    result = _create_with_progress(request, timeout, quiet=args.json)
    if args.json:
        from orca.model.codec import to_builtins

        # ``id`` as in `worktree ls --json` (one vocabulary); ``worktreeId`` kept for scripts.
        print_json("worktree", {"id": result.worktree_id, **to_builtins(result)})
    else:
        print(f"created {result.path} on {_short(result.branch)}")
    if result.setup.ran and result.setup.exit_code:
        return fail(f"setup script exited with {result.setup.exit_code} (the worktree was kept)")
    return EXIT_OK


def _create_with_progress(request: CreateArgs, timeout: float, *, quiet: bool) -> Created:
    """Run worktree.create in a thread while this thread renders its progress events."""
    import time

    from rich.console import Console
    from rich.progress import Progress, SpinnerColumn, TextColumn, TimeElapsedColumn

    from orca.client.sync import invoke, subscribe
    from orca.contracts import gitwatch

    outcome: dict[str, Created | OrcaError] = {}

    def run() -> None:
        try:
            outcome["result"] = invoke(gitwatch.WORKTREE_CREATE, request, timeout=timeout)
        except OrcaError as exc:
            outcome["error"] = exc

    progress = subscribe(
        gitwatch.CONTRACT.actor,
        [gitwatch.CREATE_PROGRESS],
        consumer=PROGRESS_CONSUMER,
        topics=[gitwatch.progress_topic(request.request_id)],
    )
    console = Console(stderr=True)
    with progress:
        if os.path.exists(progress.endpoint.removeprefix("ipc://")):
            progress.wait_live(SUBSCRIBE_LIVE_WAIT_S)  # else gitwatch is down: the call says so
        import threading  # here: only `create` needs a thread

        worker = threading.Thread(target=run, daemon=True)
        worker.start()
        columns = (SpinnerColumn(), TextColumn("{task.description}"), TimeElapsedColumn())
        # A live display only on a terminal: rich's refresh thread and its redirection of
        # stdout/stderr have no business in a pipe or a test's capture.
        live = not quiet and sys.stderr.isatty()
        with Progress(*columns, console=console, transient=True, disable=not live) as bar:
            task = bar.add_task(f"creating {request.name}", total=None)
            done_at: float | None = None  # when the reply arrived
            while True:
                if done_at is None and not worker.is_alive():
                    done_at = time.monotonic()
                if done_at is not None and (
                    "error" in outcome or time.monotonic() - done_at > TAIL_WAIT_S
                ):
                    break  # a failed create sends no "done"
                received = progress.receive(PROGRESS_POLL_S)
                if received is None:
                    continue
                step: gitwatch.CreateProgress = received[1]
                if step.stage == "done":
                    break  # the last progress event: every setup line is printed
                if step.stage == "setup":
                    if not quiet:
                        console.print(step.text, markup=False, highlight=False)
                    bar.update(task, description=f"setup: {step.text[:60]}")
                else:
                    bar.update(task, description=step.text)
            worker.join()
    found = outcome.get("error") or outcome["result"]
    if isinstance(found, OrcaError):
        raise found
    return found


def cmd_rm(args: argparse.Namespace) -> int:
    from orca.cli.output import EXIT_USAGE
    from orca.cli.service import end_terminals_or_refuse
    from orca.client.sync import invoke
    from orca.contracts import gitwatch
    from orca.paths import resolve_paths
    from orca.remote.worktrees import remote_worktree  # HOST:WORKTREE of a known host

    if (remote := remote_worktree("rm", args)) is not None:
        return remote
    row = resolve_worktree(list_worktrees().worktrees, args.worktree)
    # Issue 13: removing a worktree under a running agent refuses unless --force,
    # which ends its terminals first, as `orca term close` does.
    paths = resolve_paths()
    if not end_terminals_or_refuse(paths, row.id, row.path, "orca worktree rm", force=args.force):
        return EXIT_USAGE
    request = gitwatch.RemoveArgs(
        worktree_id=row.id, force=args.force, delete_branch=args.delete_branch
    )
    result = invoke(gitwatch.WORKTREE_REMOVE, request, timeout=MUTATE_TIMEOUT_S)
    print(f"removed {row.path}")
    if args.delete_branch and not result.branch_deleted:
        return fail(f"branch kept: {result.branch_error or 'not a local branch'}")
    return EXIT_OK


def cmd_mv(args: argparse.Namespace) -> int:
    from orca.client.sync import invoke
    from orca.contracts import gitwatch
    from orca.remote.worktrees import remote_worktree  # HOST:WORKTREE of a known host

    if (remote := remote_worktree("mv", args)) is not None:
        return remote

    row = resolve_worktree(list_worktrees().worktrees, args.worktree)
    request = gitwatch.RenameArgs(worktree_id=row.id, new_name=args.new_name)
    # Branch, display name and folder are renamed together (seed 01 §4.3).
    result = invoke(gitwatch.WORKTREE_RENAME, request, timeout=MUTATE_TIMEOUT_S)
    branch = f" on {_short(result.branch)}" if result.branch else ""
    print(f"renamed {row.display_name!r} -> {result.display_name!r}: {result.path}{branch}")
    return EXIT_OK
