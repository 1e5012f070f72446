"""``orca ack [PANE_KEY | --all]``: mark a finished or blocked agent as seen.

Seed 03 reader-side fact, kept in the one store so every reader agrees: a ``done``
or ``blocked`` row is *unread* from the moment it entered that state until the user
attaches to the pane (``orca term attach``) or acknowledges it here. ``orca worktree
ps --needs-me`` lists what is still unread.
"""

from __future__ import annotations

import argparse

from orca.cli.output import EXIT_OK, EXIT_USAGE, fail, print_json

ACK_TIMEOUT_S = 2.0


def add_parser(sub: argparse._SubParsersAction[argparse.ArgumentParser]) -> None:
    ack = sub.add_parser("ack", help="mark an agent's result or prompt as seen")
    ack.add_argument("pane_key", nargs="?", help="the pane (tabId:leafId) to acknowledge")
    ack.add_argument("--all", action="store_true", help="acknowledge every agent")
    ack.add_argument("--json", action="store_true", help='print {"acked": N}')
    ack.set_defaults(func=cmd_ack)


def cmd_ack(args: argparse.Namespace) -> int:
    from orca.client.sync import invoke
    from orca.contracts import hooks

    if (args.pane_key is None) == (not args.all):
        return fail("give a pane key or --all (not both)", EXIT_USAGE)
    result = invoke(hooks.ACK, hooks.AckArgs(pane_key=args.pane_key), timeout=ACK_TIMEOUT_S)
    if args.json:
        print_json("acked", result.acked)
    else:
        print(f"acknowledged {result.acked} agent{'s' if result.acked != 1 else ''}")
    return EXIT_OK
