"""``orca auto``: orchestration runs on a schedule (issue 38).

    orca auto add NAME REPO "PROMPT" --agents claude:1 [--base BRANCH] [--check CMD]
                  (--cron "0 3 * * 1-5" | --every 6h) [--tz Europe/Paris] [--overlap]
    orca auto ls [--json]
    orca auto show NAME [--json]
    orca auto rm NAME
    orca auto pause NAME / orca auto resume NAME
    orca auto run-now NAME [--json]

``--every``: a number and a unit, s m h d w, or several (``1h30m``). ``--tz``: the zone a
cron expression is read in (an IANA name), by default this machine's (``TZ``,
``/etc/localtime``), else UTC. ``ls``/``show`` take ``--host H`` (a remote host's
automations, read-only). orch answers (``orca/contracts/orch.py``); bad input is one
line on stderr and exit 2, and nothing is written.
"""

from __future__ import annotations

import argparse
import os
import re
import sys
import time
from typing import TYPE_CHECKING, Any, Final

from orca.cli.output import EXIT_OK, EXIT_USAGE, fail, print_json, print_table

if TYPE_CHECKING:
    from orca.contracts.orch import AutomationInfo
    from orca.model.automations import AutomationRun

_UNITS: Final = {"s": 1, "m": 60, "h": 3600, "d": 86400, "w": 7 * 86400}
_EVERY: Final = re.compile(r"(\d{1,9})([smhdw])")
ZONEINFO_DIR: Final = "/usr/share/zoneinfo/"


def parse_every(text: str) -> int:
    """``6h`` → 21600; ``1h30m`` → 5400. ValueError for anything else (or zero)."""
    spec = text.strip().lower()
    parts = _EVERY.findall(spec)
    if not spec or "".join(n + u for n, u in parts) != spec:
        raise ValueError(f"--every: {text!r} is not an interval (30s, 5m, 6h, 1d, 1h30m)")
    seconds = sum(int(n) * _UNITS[u] for n, u in parts)
    if seconds <= 0:
        raise ValueError(f"--every: {text!r} is no time at all")
    return seconds


def local_zone_name(environ: dict[str, str] | None = None) -> str:
    """This machine's IANA zone: ``TZ`` if it names one, the ``/etc/localtime`` link, else UTC."""
    env = os.environ if environ is None else environ
    tz = env.get("TZ", "").lstrip(":")
    if tz and "/" in tz and not tz.startswith("/"):
        return tz
    try:
        target = os.path.realpath("/etc/localtime")
    except OSError:
        return "UTC"
    if target.startswith(ZONEINFO_DIR):
        return target[len(ZONEINFO_DIR) :]
    return "UTC"


def add_parser(sub: argparse._SubParsersAction[argparse.ArgumentParser]) -> None:
    auto = sub.add_parser("auto", help="automations: orchestration runs on a schedule")
    cmds = auto.add_subparsers(dest="auto_command", metavar="COMMAND")

    add = cmds.add_parser("add", help="run agents on a schedule (cron or an interval)")
    add.add_argument("name", metavar="NAME")
    add.add_argument("repo", metavar="REPO", help="the repo (name, id or path)")
    add.add_argument("prompt", metavar="PROMPT", help="the task, typed to every agent")
    add.add_argument("--agents", required=True, help="agents and counts: claude:1,codex:1")
    add.add_argument("--base", help="branch the worktrees start from")
    add.add_argument("--check", help="command run in each worktree when its agent goes idle")
    when = add.add_mutually_exclusive_group(required=True)
    when.add_argument("--cron", help='five fields: minute hour day month weekday ("0 3 * * 1-5")')
    when.add_argument("--every", help="an interval: 30s, 5m, 6h, 1d, 1h30m")
    add.add_argument("--tz", help="the zone --cron is read in (default: this machine's)")
    add.add_argument(
        "--overlap", action="store_true", help="fire even while the last run still works"
    )
    add.add_argument("--json", action="store_true", help="print JSON")
    add.set_defaults(func=cmd_add)

    ls = cmds.add_parser("ls", help="every automation, its next due time and last firing")
    ls.add_argument("--host", help="a remote host's automations (read-only)")
    ls.add_argument("--json", action="store_true", help="print JSON")
    ls.set_defaults(func=cmd_ls)

    show = cmds.add_parser("show", help="one automation and its firings")
    show.add_argument("automation", metavar="NAME")
    show.add_argument("--host", help="a remote host's automation (read-only)")
    show.add_argument("--json", action="store_true", help="print JSON")
    show.set_defaults(func=cmd_show)

    for name, text in (
        ("rm", "forget an automation and its record"),
        ("pause", "stop firing until resumed"),
        ("resume", "fire again (times missed while paused are not caught up)"),
        ("run-now", "fire once now"),
    ):
        cmd = cmds.add_parser(name, help=text)
        cmd.add_argument("automation", metavar="NAME")
        cmd.add_argument("--json", action="store_true", help="print JSON")
        cmd.set_defaults(func=cmd_act, action=name)


def _ask(op: Any, args: Any, host: str | None = None, timeout: float = 30.0) -> Any:
    from orca.cli.run import _ask as ask

    return ask(op, args, host, timeout)


def cmd_add(args: argparse.Namespace) -> int:
    from orca.cli.run import _parse_agents
    from orca.contracts import orch
    from orca.wire.errors import BadRequest

    try:
        agents = _parse_agents(args.agents)
        every = parse_every(args.every) if args.every is not None else None
    except BadRequest as exc:
        return fail(exc.message, EXIT_USAGE)
    except ValueError as exc:
        return fail(str(exc), EXIT_USAGE)
    if args.tz is not None and every is not None:
        return fail("--tz applies to --cron only", EXIT_USAGE)
    request = orch.AutoAddArgs(
        name=args.name, repo=args.repo, prompt=args.prompt, agents=agents, base=args.base,
        check=args.check, cron=args.cron, every_seconds=every,
        tz=args.tz or local_zone_name(), overlap=args.overlap,
    )  # fmt: skip
    info: AutomationInfo = _ask(orch.AUTO_ADD, request)
    if args.json:
        from msgspec import to_builtins

        print_json("automation", to_builtins(info))
        return EXIT_OK
    print(f"added {info.automation.name} ({info.automation.id}): {describe(info)}")
    return EXIT_OK


def cmd_ls(args: argparse.Namespace) -> int:
    from orca.contracts import orch

    listing: orch.AutoList = _ask(orch.AUTO_LIST, None, args.host)
    if args.json:
        from msgspec import to_builtins

        print_json("automations", to_builtins(listing.automations))
        return EXIT_OK
    if not listing.automations:
        print('no automations (`orca auto add NAME REPO "PROMPT" --agents claude --every 1d`)')
        return EXIT_OK
    rows = [
        (
            i.automation.name,
            i.automation.target.repo_label or i.automation.target.repo_id,
            schedule_text(i),
            _when(i.next_due_ms) if i.next_due_ms is not None else "paused",
            run_text(i.last_run) if i.last_run is not None else "-",
        )
        for i in listing.automations
    ]
    print_table(("NAME", "REPO", "SCHEDULE", "NEXT", "LAST"), rows)
    return EXIT_OK


def cmd_show(args: argparse.Namespace) -> int:
    from orca.contracts import orch

    info: AutomationInfo = _ask(
        orch.AUTO_SHOW, orch.AutoArgs(automation=args.automation), args.host
    )
    if args.json:
        from msgspec import to_builtins

        print_json("automation", to_builtins(info))
        return EXIT_OK
    a = info.automation
    print(f"{a.name} ({a.id}): {describe(info)}")
    print(
        f"  repo {a.target.repo_label or a.target.repo_id}"
        + (f", base {a.target.base}" if a.target.base else "")
    )
    print("  agents " + ", ".join(f"{g.agent}:{g.count}" for g in a.agents))
    if a.check:
        print(f"  check {a.check}")
    print(f"  prompt {a.prompt}")
    summaries = {s.run: s for s in info.run_summaries}
    for r in info.runs:
        summary = summaries.get(r.output.run_id) if r.output is not None else None
        states = ""
        if summary is not None:
            counts = ", ".join(f"{n} {state}" for state, n in sorted(summary.states.items()))
            states = f" ({summary.state}: {counts})"
        print(f"  {_when(r.scheduled_for)} {r.trigger:<8} {run_text(r)}{states}")
    return EXIT_OK


def cmd_act(args: argparse.Namespace) -> int:
    from orca.contracts import orch

    op = {
        "rm": orch.AUTO_REMOVE,
        "pause": orch.AUTO_PAUSE,
        "resume": orch.AUTO_RESUME,
        "run-now": orch.AUTO_RUN_NOW,
    }[args.action]
    timeout = 60.0 if args.action == "run-now" else 30.0
    result = _ask(op, orch.AutoArgs(automation=args.automation), timeout=timeout)
    if args.json:
        from msgspec import to_builtins

        print_json("result", to_builtins(result))
        return EXIT_OK
    if args.action == "rm":
        print(f"removed {result.id}")
    elif args.action == "run-now":
        print(run_text(result))
        return EXIT_OK if result.status == "started" else _exit_for(result)
    else:
        print(f"{result.automation.name}: {describe(result)}")
    return EXIT_OK


def _exit_for(run: AutomationRun) -> int:
    """A run-now that started nothing: skipped is the current state's refusal (2)."""
    print(f"{run.status}: {run.error or ''}", file=sys.stderr)
    return EXIT_USAGE if run.status == "skipped" else 1


def schedule_text(info: AutomationInfo) -> str:
    s = info.automation.schedule
    if s.kind == "cron":
        return f"cron {s.cron} ({s.tz})"
    return "every " + _interval(s.every_seconds)


def describe(info: AutomationInfo) -> str:
    due = "paused" if info.next_due_ms is None else f"next {_when(info.next_due_ms)}"
    overlap = ", overlap" if info.automation.overlap else ""
    return f"{schedule_text(info)}, {due}{overlap}"


def run_text(run: AutomationRun) -> str:
    if run.status == "started" and run.output is not None:
        return f"started run {run.output.run_id}"
    if run.status in ("failed", "skipped"):
        return f"{run.status}: {run.error or ''}"
    return run.status


def _interval(seconds: int) -> str:
    for unit in ("w", "d", "h", "m"):
        if seconds % _UNITS[unit] == 0:
            return f"{seconds // _UNITS[unit]}{unit}"
    return f"{seconds}s"


def _when(ms: int) -> str:
    return time.strftime("%Y-%m-%d %H:%M:%S", time.localtime(ms / 1000))
