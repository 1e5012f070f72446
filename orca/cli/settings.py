"""``orca settings [--json]`` and ``orca settings set NAME VALUE``: the store's settings.

Two settings decide where ``orca worktree create`` makes a worktree (README "Where
worktrees go"): ``workspace-dir`` (the root, ``~/orca/workspaces`` unless set) and
``nest-workspaces`` (``true``: ``<root>/<repo>/<name>``; ``false``: ``<root>/<name>``).
A repo's own ``worktreeBasePath`` overrides the root for that repo. A change applies to
worktrees created after it; existing ones stay where they are.
"""

from __future__ import annotations

import os
from typing import TYPE_CHECKING

from orca.cli.output import EXIT_OK, EXIT_USAGE, fail, print_json, print_table

if TYPE_CHECKING:
    import argparse

# CLI name -> (the store's JSON key, GlobalSettings' field, what it is).
SETTINGS = {
    "workspace-dir": ("workspaceDir", "workspace_dir", "the folder new worktrees are made under"),
    "nest-workspaces": (
        "nestWorkspaces",
        "nest_workspaces",
        "true: <dir>/<repo>/<name>; false: <dir>/<name>",
    ),
}


def add_parser(sub: argparse._SubParsersAction[argparse.ArgumentParser]) -> None:
    p = sub.add_parser("settings", help="where worktrees are made (show, or `set NAME VALUE`)")
    p.add_argument("--json", action="store_true", help='print {"settings": {...}}')
    p.set_defaults(func=cmd_show)
    commands = p.add_subparsers(dest="settings_command", metavar="COMMAND")
    put = commands.add_parser("set", help="change a setting (applies to new worktrees)")
    put.add_argument("name", choices=sorted(SETTINGS), help="the setting")
    put.add_argument("value", help="a folder (workspace-dir) or true/false (nest-workspaces)")
    put.set_defaults(func=cmd_set)


def cmd_show(args: argparse.Namespace) -> int:
    from orca.client.sync import invoke
    from orca.contracts import store

    current = invoke(store.SETTINGS_GET)
    shown = {name: getattr(current, field) for name, (_, field, _) in SETTINGS.items()}
    if args.json:
        print_json("settings", shown)
        return EXIT_OK
    print_table(
        ("SETTING", "VALUE", "MEANING"),
        [(name, _text(shown[name]), what) for name, (_, _, what) in SETTINGS.items()],
    )
    return EXIT_OK


def cmd_set(args: argparse.Namespace) -> int:
    from orca.client.sync import invoke
    from orca.contracts import store

    key, field, _ = SETTINGS[args.name]
    value: object
    if args.name == "workspace-dir":
        folder = os.path.abspath(os.path.expanduser(args.value))
        if os.path.exists(folder) and not os.path.isdir(folder):
            return fail(f"{folder} is not a folder", EXIT_USAGE)
        value = folder
    else:
        words = {"true": True, "yes": True, "on": True, "false": False, "no": False, "off": False}
        if args.value.lower() not in words:
            return fail(f"nest-workspaces takes true or false, not {args.value!r}", EXIT_USAGE)
        value = words[args.value.lower()]
    changed = invoke(store.SETTINGS_PATCH, store.PatchArgs(patch={key: value}))
    print(f"{args.name} = {_text(getattr(changed, field))} (worktrees created from now on)")
    return EXIT_OK


def _text(value: object) -> str:
    if isinstance(value, bool):
        return "true" if value else "false"
    return str(value) if value not in (None, "") else "-"
