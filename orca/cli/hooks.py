"""``orca hooks install|uninstall|status [claude|codex|gemini]``: agent integrations.

``install`` writes the hook script into Orca's ``agent-hooks/`` directory and adds
one handler per documented event to the agent's own config file (backing the file up
first, keeping the user's hooks); running it again changes nothing. ``uninstall``
removes only Orca's handlers. ``status`` shows, per agent, which events are wired and
whether the hooks actor is serving; an agent whose config file cannot be read is shown
as that agent's ``error`` row, and the others as they are (exit 0, as any listing). The agent configs live under ``$HOME``; Orca's
own files under ``ORCA_HOME`` (or the platform dirs).
"""

from __future__ import annotations

import argparse
from pathlib import Path

from orca.cli.output import EXIT_OK, EXIT_USAGE, fail, print_json, print_table
from orca.paths import resolve_paths
from orca.wire.errors import OrcaError

AGENTS = ("claude", "codex", "gemini")


def add_parser(sub: argparse._SubParsersAction[argparse.ArgumentParser]) -> None:
    hooks = sub.add_parser("hooks", help="agent status hooks (Claude Code, Codex, Gemini CLI)")
    commands = hooks.add_subparsers(dest="hooks_command", metavar="COMMAND")
    install = commands.add_parser("install", help="add Orca's hooks to an agent's config")
    install.add_argument("agent", choices=AGENTS)
    install.set_defaults(func=cmd_install)
    uninstall = commands.add_parser("uninstall", help="remove Orca's hooks from the config")
    uninstall.add_argument("agent", choices=AGENTS)
    uninstall.set_defaults(func=cmd_uninstall)
    status = commands.add_parser("status", help="which agents have Orca's hooks")
    status.add_argument("agent", nargs="?", choices=AGENTS)
    status.add_argument("--json", action="store_true", help='print {"integrations": [...]}')
    status.set_defaults(func=cmd_status)


def cmd_install(args: argparse.Namespace) -> int:
    from orca import integrations
    from orca.cli.integrations import install
    from orca.hook_script import install_hook_script

    script = install_hook_script(resolve_paths().hooks_dir)
    try:
        changed = install(args.agent, Path.home(), script)
    except integrations.UnreadableConfig as exc:
        return fail(str(exc), EXIT_USAGE)
    path = integrations.INTEGRATIONS[args.agent].config_path(Path.home())
    print(f"{args.agent}: {'installed into' if changed else 'already installed in'} {path}")
    return EXIT_OK


def cmd_uninstall(args: argparse.Namespace) -> int:
    from orca import integrations
    from orca.cli.integrations import uninstall

    try:
        changed = uninstall(args.agent, Path.home())
    except integrations.UnreadableConfig as exc:
        return fail(str(exc), EXIT_USAGE)
    path = integrations.INTEGRATIONS[args.agent].config_path(Path.home())
    print(f"{args.agent}: {'removed from' if changed else 'nothing to remove in'} {path}")
    return EXIT_OK


def _server_port() -> int | None:
    """The hooks actor's HTTP port, or None when it does not answer (status still works)."""
    from orca.client.sync import invoke
    from orca.contracts import hooks

    try:
        return invoke(hooks.ENDPOINT, timeout=1.0).port
    except OrcaError:
        return None


def cmd_status(args: argparse.Namespace) -> int:
    """One row per agent; an agent whose config cannot be read is an ``error`` row (its
    ``error`` in ``--json``, the reason on stderr), the others print as they are."""
    import sys

    from orca import integrations

    port = _server_port()
    report: list[dict[str, object]] = []
    rows: list[list[object]] = []
    for agent in (args.agent,) if args.agent else AGENTS:
        path = integrations.INTEGRATIONS[agent].config_path(Path.home())
        try:
            status = integrations.status(agent, Path.home())
        except integrations.UnreadableConfig as exc:
            print(f"orca: {agent}: {exc}", file=sys.stderr)
            report.append(
                {"handle": agent, "agent": agent, "configPath": str(path), "installed": False,
                 "error": str(exc), "serverPort": port}
            )  # fmt: skip
            rows.append([agent, "error", str(path), f"unreadable config: {exc}"])
            continue
        report.append(
            {
                "handle": agent,
                "agent": agent,
                "configPath": str(status.config_path),
                "installed": status.installed,
                "installedEvents": list(status.installed_events),
                "missingEvents": list(status.missing_events),
                "untrustedEvents": list(status.untrusted_events),
                "error": None,
                "serverPort": port,
            }
        )
        wired = "yes" if status.installed else "partial" if status.installed_events else "no"
        missing = (", ".join(status.missing_events) if status.installed_events else "all") or None
        if status.untrusted_events:
            wired = "untrusted"
            missing = "not trusted by Codex: " + ", ".join(status.untrusted_events)
        rows.append([agent, wired, str(status.config_path), missing])
    if args.json:
        print_json("integrations", report)
        return EXIT_OK
    print_table(["AGENT", "INSTALLED", "CONFIG", "MISSING EVENTS"], rows)
    print(f"hooks server: {'127.0.0.1:' + str(port) if port else 'not running'}")
    return EXIT_OK
