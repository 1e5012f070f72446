"""``orca worktree ls|create|rm|mv|merge``: list and change worktrees through ``gitwatch``.

``ls [--json] [--all]``                   every repo's worktrees (``{"worktrees": [...]}``)
``create REPO [NAME] [--base B] [--setup run|skip]``
                                          REPO is a repo id, path or display name; the
                                          setup script's output streams under a spinner;
                                          without NAME a placeholder (``untitled-XXXXXX``)
                                          that the first prompt of an agent in it
                                          replaces (branch, name and folder; 01-23)
``rm WORKTREE [--force] [--delete-branch]``
``merge WORKTREE [--into B] [--squash|--rebase] [--preview] [-m MSG] [--commit] [--json]``
                                          its branch into B (default: its base branch);
                                          ``--preview`` shows ahead/behind, diffstat and
                                          conflicts, changing nothing
``mv WORKTREE NEW_NAME``                  WORKTREE is a handle (first column of ``ls``),
                                          an id, a path, a unique display name / branch /
                                          folder name, or a unique prefix of a handle

A listing that could not read some repo still prints the others, names each missing
repo on stderr and exits 0 (README "Exit codes").

``ps`` lives in ``orca.cli.worktree_ps``; both attach to the one ``worktree`` topic
(:func:`add_worktree_subcommands` adds these five to an existing subparsers object).
Import-light like every CLI module: pyzmq + msgspec through the sync client, rich only
to print.
"""

from __future__ import annotations

import argparse
import os
import sys
from typing import TYPE_CHECKING

from orca.cli.lookup import find_worktree, list_repos, list_worktrees
from orca.cli.output import EXIT_OK, fail, print_json, print_table
from orca.views.handles import resolve_repo, short_branch, worktree_handles
from orca.wire.errors import OrcaError

if TYPE_CHECKING:
    from orca.contracts.gitwatch import CreateArgs, Created

# git worktree add checks out every file: a big repo on a slow disk takes a while.
CREATE_TIMEOUT_S = 180.0
# With a setup script (dependency installs) the actor's own bound is 30 minutes.
CREATE_WITH_SETUP_TIMEOUT_S = 1800.0 + CREATE_TIMEOUT_S
MUTATE_TIMEOUT_S = 60.0
# ZeroMQ drops events published before a subscriber is connected: the create starts once
# a heartbeat (sent at once to a new subscription) proved it live, or after this bound.
SUBSCRIBE_LIVE_WAIT_S = 1.5
# The reply and the progress events travel on different sockets; after the reply, wait
# this long at most for the trailing "done" event so the last setup lines still print.
TAIL_WAIT_S = 1.0
# How often the progress loop looks whether the create's reply has arrived.
PROGRESS_POLL_S = 0.05
PROGRESS_CONSUMER = "cli<-gitwatch"
# `create REPO` without NAME: the placeholder's prefix (then 6 hex digits).
PLACEHOLDER_PREFIX = "untitled"


def add_worktree_subcommands(worktree: argparse._SubParsersAction[argparse.ArgumentParser]) -> None:
    """Add ls/create/rm/mv/merge to an existing ``worktree`` subparsers object."""
    ls = worktree.add_parser("ls", help="list worktrees of every repo")
    ls.add_argument("--json", action="store_true", help='print {"worktrees": [...]}')
    ls.add_argument("--all", action="store_true", help="include hidden (external/scratch) rows")
    ls.add_argument("--repo", help="only this repo (id, path or display name)")
    ls.set_defaults(func=cmd_ls)

    create = worktree.add_parser("create", help="create a worktree on a new branch")
    create.add_argument("repo", help="repo id, path or display name")
    create.add_argument(
        "name",
        nargs="?",
        help="worktree (and branch) name; sanitized (default: a placeholder that the first"
        " prompt of an agent in it replaces)",
    )
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

    mv_help = (
        "rename a worktree: its folder and its branch (keeps its terminals and notes;"
        " a shell running there keeps its old $PWD until it cds)"
    )
    mv = worktree.add_parser("mv", help=mv_help, description=mv_help)
    mv.add_argument("worktree", help="worktree id, path or unique name")
    mv.add_argument(
        "new_name", help="new name of the folder and the branch (sanitized; same parent directory)"
    )
    mv.set_defaults(func=cmd_mv)

    merge = worktree.add_parser(
        "merge", help="merge a worktree's branch into its base (refuses conflicts, dirty)"
    )
    merge.add_argument("worktree", help="worktree: handle, name, path or id")
    merge.add_argument("--into", help="branch to merge into (default: the worktree's base)")
    how = merge.add_mutually_exclusive_group()
    how.add_argument("--squash", action="store_true", help="one commit with the whole change")
    how.add_argument("--rebase", action="store_true", help="replay its commits, fast-forward")
    merge.add_argument("--preview", action="store_true", help="show what it would do; no change")
    merge.add_argument("-m", "--message", help="the merge or squash commit's message")
    merge.add_argument(
        "--commit", action="store_true", help="commit the worktree's uncommitted changes first"
    )
    merge.add_argument("--json", action="store_true", help="print the result as JSON")
    merge.set_defaults(func=cmd_merge)


def add_parser(sub: argparse._SubParsersAction[argparse.ArgumentParser]) -> None:
    from orca.cli.worktree_ps import topic_subparsers

    add_worktree_subcommands(topic_subparsers(sub, "worktree", "worktrees and their agents"))


# -- commands -------------------------------------------------------------------------


def cmd_ls(args: argparse.Namespace) -> int:
    repo_id = resolve_repo(list_repos(), args.repo).id if args.repo else None
    listing = list_worktrees(repo_id)
    rows = listing.worktrees
    for gone in listing.unavailable_repos:
        print(f"orca: repo {gone.path} is unavailable: {gone.reason}", file=sys.stderr)
    # Handles are computed over every row, hidden ones included: --all must not rename.
    handles = worktree_handles((r.id, r.path) for r in rows)
    shown = rows if args.all else [r for r in rows if r.visible]
    from orca.remote import any_known_host

    if any_known_host():
        from orca.cli.remote.readers import worktrees_with_remotes  # remote hosts' rows, labelled

        if worktrees_with_remotes(args, shown, handles):
            return EXIT_OK
    if args.json:
        from orca.model.codec import to_builtins

        print_json("worktrees", [{"handle": handles[r.id], **to_builtins(r)} for r in shown])
        return EXIT_OK
    from orca.cli.tables import WORKTREE_COLUMNS, worktree_cells

    print_table(WORKTREE_COLUMNS, [worktree_cells(r, handles[r.id]) for r in shown])
    if len(shown) < len(rows):
        print(f"({len(rows) - len(shown)} hidden; --all shows them)", file=sys.stderr)
    return EXIT_OK


def cmd_create(args: argparse.Namespace) -> int:
    from orca.cli.remote.worktrees import remote_worktree  # HOST:REPO of a known host
    from orca.contracts import gitwatch

    # No NAME: a placeholder, replaced by the first prompt of an agent in the worktree
    # (hooks → gitwatch worktree.renameFromFirstMessage; `worktree mv` first keeps yours).
    args.pending_first_agent_message_rename = args.name is None
    if args.name is None:
        args.name = placeholder_worktree_name()
    if (remote := remote_worktree("create", args)) is not None:
        return remote

    repo = resolve_repo(list_repos(), args.repo)
    request = gitwatch.CreateArgs(
        repo_id=repo.id,
        name=args.name,
        base=args.base,
        setup=args.setup,
        request_id=os.urandom(8).hex(),  # not secrets: its import costs every command
        source="cli",
        pending_first_agent_message_rename=args.pending_first_agent_message_rename,
    )
    timeout = CREATE_WITH_SETUP_TIMEOUT_S if args.setup == "run" else CREATE_TIMEOUT_S
    result = _create_with_progress(request, timeout, quiet=args.json)
    if args.json:
        from orca.model.codec import to_builtins

        # ``id`` as in `worktree ls --json` (one vocabulary); ``worktreeId`` kept for scripts.
        print_json("worktree", {"id": result.worktree_id, **to_builtins(result)})
    else:
        made = os.path.basename(result.path)
        branch = short_branch(result.branch)
        if args.pending_first_agent_message_rename:
            print(
                f"created {result.path} on {branch} (the first prompt of an agent in it names it)"
            )
        elif made != args.name:  # sanitised: say the name it has now (it finds either)
            print(f"created {made!r} (from {args.name!r}): {result.path} on {branch}")
        else:
            print(f"created {result.path} on {branch}")
    if result.setup.ran and result.setup.exit_code:
        return fail(f"setup script exited with {result.setup.exit_code} (the worktree was kept)")
    return EXIT_OK


def placeholder_worktree_name() -> str:
    """A name for a worktree whose agent's first prompt will name it: unlikely to be
    taken (24 random bits), and plainly not a name anyone chose."""
    return f"{PLACEHOLDER_PREFIX}-{os.urandom(3).hex()}"


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
    from orca.cli.live_terminals import end_terminals_or_refuse
    from orca.cli.output import EXIT_USAGE
    from orca.cli.remote.worktrees import remote_worktree  # HOST:WORKTREE of a known host
    from orca.client.sync import invoke
    from orca.contracts import gitwatch
    from orca.paths import resolve_paths

    if (remote := remote_worktree("rm", args)) is not None:
        return remote
    row = find_worktree(args.worktree)
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
    from orca.cli.remote.worktrees import remote_worktree  # HOST:WORKTREE of a known host
    from orca.client.sync import invoke
    from orca.contracts import gitwatch

    if (remote := remote_worktree("mv", args)) is not None:
        return remote

    row = find_worktree(args.worktree)
    running = _running_in(row.id)
    request = gitwatch.RenameArgs(worktree_id=row.id, new_name=args.new_name)
    # Branch, display name and folder are renamed together (seed 01 §4.3).
    result = invoke(gitwatch.WORKTREE_RENAME, request, timeout=MUTATE_TIMEOUT_S)
    branch = f" on {short_branch(result.branch)}" if result.branch else ""
    print(f"renamed {row.display_name!r} -> {result.display_name!r}: {result.path}{branch}")
    if running:
        # Their cwd moved with the folder; a shell's $PWD (and its prompt) did not.
        print(
            f"orca: {running} terminal{'s' if running != 1 else ''} running there"
            f" {'keep' if running != 1 else 'keeps'} {row.path} as $PWD until"
            f" {'they cd' if running != 1 else 'it cds'} (`cd {result.path}`)",
            file=sys.stderr,
        )
    return EXIT_OK


def _running_in(worktree_id: str) -> int:
    """How many terminals run in the worktree (0 when ptyd cannot say)."""
    from orca.cli.live_terminals import running_terminals
    from orca.paths import resolve_paths

    try:
        return len(running_terminals(resolve_paths(), worktree_id).sessions)
    except OrcaError:
        return 0


def cmd_merge(args: argparse.Namespace) -> int:
    from orca.client.sync import invoke
    from orca.contracts import gitwatch

    row = find_worktree(args.worktree)
    mode: gitwatch.MergeMode = "squash" if args.squash else "rebase" if args.rebase else "merge"
    if args.preview:
        ask = gitwatch.MergePreviewArgs(worktree=row.id, into=args.into, mode=mode)
        preview = invoke(gitwatch.WORKTREE_MERGE_PREVIEW, ask, timeout=MUTATE_TIMEOUT_S)
        if args.json:
            import msgspec

            print_json("preview", msgspec.to_builtins(preview))
            return EXIT_OK
        stat = preview.diffstat
        print(
            f"{mode} {preview.branch} into {preview.into}: {preview.ahead} ahead, "
            f"{preview.behind} behind; {stat.files} files, +{stat.insertions} -{stat.deletions}"
        )
        for line in preview.uncommitted:
            print(f"  uncommitted: {line}")
        for path in preview.conflicts:
            print(f"  conflict: {path}")
        if preview.conflicts or preview.dirty:
            return fail("it would be refused: " + (
                "conflicts" if preview.conflicts else "uncommitted changes"
            ))  # fmt: skip
        return EXIT_OK
    request = gitwatch.MergeArgs(
        worktree=row.id, into=args.into, mode=mode, message=args.message, commit_first=args.commit
    )
    result = invoke(gitwatch.WORKTREE_MERGE, request, timeout=MUTATE_TIMEOUT_S)
    if args.json:
        import msgspec

        print_json("merge", msgspec.to_builtins(result))
    elif result.changed:
        print(f"merged {row.display_name!r} into {result.into} ({mode}): {result.commit[:12]}")
    else:
        print(f"nothing to merge: {row.display_name!r} is in {result.into} already")
    return EXIT_OK
