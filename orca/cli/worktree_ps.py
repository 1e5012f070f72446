"""``orca worktree ps [--json]``: every worktree's agents and their shared summary.

A pure reader (seed 03 "worktree ps 变为读取器"): one ``agentStatus.snapshot`` from
the ``hooks`` actor, projected with the shared model rules (summary, 30-minute decay,
``restoredUnconfirmed`` never fresh). Nothing is re-decided here.

Kept import-light - the whole command must start, call and print within 300 ms
(issue 7; upstream users saw 7-10 s): no trio, no actor runtime, and a plain
fixed-width table (rich needs ~0.5 s to lay out 300 rows on a loaded 2-core box).
"""

from __future__ import annotations

import argparse
import time
from typing import Any

from orca.cli.output import EXIT_OK, human_duration, print_json

# The snapshot is served from memory; a second is ample and keeps a wedged actor from
# hanging the shell.
SNAPSHOT_TIMEOUT_S = 2.0


def topic_subparsers(
    sub: argparse._SubParsersAction[argparse.ArgumentParser], name: str, help_text: str
) -> argparse._SubParsersAction[argparse.ArgumentParser]:
    """The subcommand group of topic ``name``, created or shared with another module.

    Several modules may add commands to one topic (``orca worktree ...``); whichever
    runs first creates it, later ones attach to it.
    """
    parser = sub.choices.get(name)
    if parser is None:
        parser = sub.add_parser(name, help=help_text)
    for action in parser._actions:
        if isinstance(action, argparse._SubParsersAction):
            return action
    return parser.add_subparsers(dest=f"{name}_command", metavar="COMMAND")


def add_parser(sub: argparse._SubParsersAction[argparse.ArgumentParser]) -> None:
    worktree = topic_subparsers(sub, "worktree", "worktrees and their agents")
    ps = worktree.add_parser("ps", help="agents per worktree, with state, age and summary")
    ps.add_argument("--json", action="store_true", help='print {"worktrees": [...]}')
    ps.set_defaults(func=cmd_ps)


def fetch_worktrees(now_ms: int | None = None) -> list[dict[str, object]]:
    """The projected worktree list from one snapshot (raises OrcaError when down)."""
    from orca.client.sync import invoke
    from orca.contracts import hooks
    from orca.model.agent_status import project_worktrees

    snapshot = invoke(hooks.SNAPSHOT, timeout=SNAPSHOT_TIMEOUT_S)
    now = time.time_ns() // 1_000_000 if now_ms is None else now_ms
    return project_worktrees(snapshot.rows, now)


def _table_rows(worktrees: list[dict[str, Any]]) -> list[list[object]]:
    table: list[list[object]] = []
    for worktree in worktrees:
        summary = worktree["summary"]["state"]
        for agent in worktree["agents"]:
            state = agent["displayState"]
            if agent["restoredUnconfirmed"]:
                state = f"{state} (restored: {agent['state']})"
            table.append(
                [
                    worktree["worktreeId"],
                    summary,
                    agent["agent"],
                    agent["paneKey"],
                    state,
                    human_duration(agent["ageMs"] / 1000),
                    agent["source"],
                    agent["detail"] or None,
                ]
            )
    return table


def cmd_ps(args: argparse.Namespace) -> int:
    worktrees = fetch_worktrees()
    if args.json:
        print_json("worktrees", worktrees)
        return EXIT_OK
    if not worktrees:
        print("no agents reporting")
        return EXIT_OK
    columns = ["WORKTREE", "SUMMARY", "AGENT", "PANE", "STATE", "AGE", "SOURCE", "DETAIL"]
    print(format_columns(columns, _table_rows(worktrees)))
    return EXIT_OK


def format_columns(columns: list[str], rows: list[list[object]]) -> str:
    """A left-aligned table, two spaces between columns, ``-`` for empty cells."""
    cells = [columns] + [["-" if v is None else str(v) for v in row] for row in rows]
    widths = [max(len(line[i]) for line in cells) for i in range(len(columns))]
    return "\n".join(
        "  ".join(cell.ljust(width) for cell, width in zip(line, widths, strict=True)).rstrip()
        for line in cells
    )
