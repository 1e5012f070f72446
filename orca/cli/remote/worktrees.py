"""``orca worktree create|rm|mv HOST:...``: worktree mutations run on the remote host.

The remote gitwatch does the git work (through the gateway, with a full key); nothing
is written locally. ``rm`` keeps the local rule (issue 13): a worktree with running
terminals is refused unless ``--force``, which closes them first, on that host.
"""

from __future__ import annotations

import argparse
import os
import sys

from orca.cli.remote.terminal import RemoteLink
from orca.contracts import gitwatch, ptyd, store
from orca.paths import resolve_paths
from orca.remote.hosts import split_remote_ref

# git worktree add may fetch and run a setup script; the gateway allows 120 s.
MUTATE_TIMEOUT_S = 125.0


def remote_worktree(command: str, args: argparse.Namespace) -> int | None:
    """Run ``orca worktree <command>`` remotely if its reference is ``HOST:...``."""
    ref = args.repo if command == "create" else args.worktree
    found = split_remote_ref(resolve_paths(), ref)
    if found is None:
        return None
    host, rest = found
    from orca.views.handles import resolve_repo, resolve_worktree

    link = RemoteLink(host)
    try:
        if command == "create":
            repo = resolve_repo(link.invoke(store.REPO_LIST).repos, rest)
            request = gitwatch.CreateArgs(
                repo_id=repo.id,
                name=args.name,
                base=args.base,
                setup=args.setup,
                request_id=os.urandom(8).hex(),
                source="cli",
                pending_first_agent_message_rename=args.pending_first_agent_message_rename,
            )
            created = link.invoke(gitwatch.WORKTREE_CREATE, request, timeout=MUTATE_TIMEOUT_S)
            print(f"created {host.name}:{created.path} on {created.branch}")
            return 0
        row = resolve_worktree(
            link.invoke(gitwatch.WORKTREE_LIST, gitwatch.ListArgs()).worktrees, rest
        )
        if command == "rm":
            live = [
                s
                for s in link.invoke(ptyd.LIST, ptyd.ListArgs(worktree_id=row.id)).sessions
                if s.running
            ]
            if live and not args.force:
                print(
                    f"orca: {len(live)} terminal(s) still running in {host.name}:{row.path};"
                    " `orca worktree rm --force` ends them first",
                    file=sys.stderr,
                )
                return 2
            for session in live:
                link.invoke(ptyd.CLOSE, ptyd.SessionArgs(session_id=session.session_id))
            request_rm = gitwatch.RemoveArgs(
                worktree_id=row.id, force=args.force, delete_branch=args.delete_branch
            )
            link.invoke(gitwatch.WORKTREE_REMOVE, request_rm, timeout=MUTATE_TIMEOUT_S)
            print(f"removed {host.name}:{row.path}")
            return 0
        renamed = link.invoke(
            gitwatch.WORKTREE_RENAME,
            gitwatch.RenameArgs(worktree_id=row.id, new_name=args.new_name),
            timeout=MUTATE_TIMEOUT_S,
        )
        print(
            f"renamed {host.name}:{row.display_name!r} -> {renamed.display_name!r}: {renamed.path}"
        )
        return 0
    finally:
        link.close()
