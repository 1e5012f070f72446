"""``orca ack [TERMINAL | WORKTREE | PANE_KEY | --all]``: mark agents' results as seen.

Seed 03 reader-side fact, kept in the one store so every reader agrees: a ``done``
or ``blocked`` row is *unread* from the moment it entered that state until the user
attaches to the pane (``orca term attach``) or acknowledges it here. ``orca worktree
ps --needs-me`` lists what is still unread.

What is acknowledged, by what is named (``orca.cli.lookup`` resolves it):

* a full pane key (``tabId:leafId``, ``worktree ps --json``'s ``paneKey``): that pane;
* a worktree (its handle, name, path or id: what ``orca worktree`` takes): every
  agent of that worktree - "I have seen fix-login" - one or many;
* otherwise a terminal (its handle, hex or id: what ``orca term`` takes): the agent of
  that terminal's pane (ptyd's ``term.list`` row carries the pane key);
* ``--all``: every agent.

A worktree's whole name is looked for before a terminal, so it means all its agents
even when a terminal alias (``fix-login`` naming its only terminal) would also match;
a prefix is tried as a terminal's first (``3f2a`` is a terminal's hex, not the start of
a worktree id), then as a worktree's.
"""

from __future__ import annotations

import argparse
from typing import TYPE_CHECKING

from orca.cli.output import EXIT_OK, EXIT_USAGE, fail, print_json

if TYPE_CHECKING:
    from orca.contracts.gitwatch import WorktreeRow

ACK_TIMEOUT_S = 2.0


def add_parser(sub: argparse._SubParsersAction[argparse.ArgumentParser]) -> None:
    ack = sub.add_parser("ack", help="mark an agent's result or prompt as seen")
    ack.add_argument(
        "target",
        nargs="?",
        metavar="TERMINAL|WORKTREE",
        help="a terminal (its agent), a worktree (all its agents) or a pane key",
    )
    ack.add_argument("--all", action="store_true", help="acknowledge every agent")
    ack.add_argument("--json", action="store_true", help='print {"acked": N}')
    ack.set_defaults(func=cmd_ack)


def pane_keys(ref: str) -> list[str]:
    """The pane keys of the agents ``ref`` names (module docstring); raises
    AmbiguousReference when it names nothing, or several worktrees or terminals."""
    from orca.cli.lookup import find_terminal, list_worktrees
    from orca.model.panes import parse_pane_key
    from orca.views.handles import NothingMatches
    from orca.wire.errors import Unavailable

    if parse_pane_key(ref) is not None:
        return [ref]
    try:
        worktrees = list_worktrees().worktrees
    except Unavailable:
        worktrees = []  # gitwatch down: a terminal may still be named
    worktree = _worktree_named(worktrees, ref, prefixes=False)
    if worktree is not None:
        return _agents_of(worktree.id)
    try:
        return [find_terminal(ref).pane_key]
    except NothingMatches:
        pass
    worktree = _worktree_named(worktrees, ref, prefixes=True)
    if worktree is not None:
        return _agents_of(worktree.id)
    raise NothingMatches(f"no worktree or terminal matches {ref!r} (see `orca worktree ps`)")


def _worktree_named(rows: list[WorktreeRow], ref: str, *, prefixes: bool) -> WorktreeRow | None:
    """The worktree ``ref`` names, None if none does (several: AmbiguousReference)."""
    from orca.views.handles import NothingMatches, resolve_worktree

    try:
        return resolve_worktree(rows, ref, prefixes=prefixes)
    except NothingMatches:
        return None


def _agents_of(worktree_id: str) -> list[str]:
    """The pane keys of every agent row hooks holds for the worktree."""
    from orca.client.sync import invoke
    from orca.contracts import hooks

    rows = invoke(hooks.SNAPSHOT, timeout=ACK_TIMEOUT_S).rows
    return [r.pane_key for r in rows if r.worktree_id == worktree_id]


def cmd_ack(args: argparse.Namespace) -> int:
    from orca.client.sync import invoke
    from orca.contracts import hooks

    if (args.target is None) == (not args.all):
        return fail("name a terminal, a worktree or a pane key, or give --all", EXIT_USAGE)
    keys: list[str | None] = [None] if args.all else [*pane_keys(args.target)]
    acked = sum(
        invoke(hooks.ACK, hooks.AckArgs(pane_key=key), timeout=ACK_TIMEOUT_S).acked for key in keys
    )
    if args.json:
        print_json("acked", acked)
    else:
        print(f"acknowledged {acked} agent{'s' if acked != 1 else ''}")
    return EXIT_OK
