"""``orca run``: one task to N agents in N worktrees, compared, the best one merged.

    orca run new REPO "PROMPT" --agents claude:2,codex:1 [--base BRANCH] [--check CMD]
                 [--name NAME] [--key KEY] [--json]
    orca run ls [--json]
    orca run show RUN [--json]
    orca run check RUN [VARIANT]
    orca run merge RUN VARIANT [--squash | --rebase]
    orca run rm RUN [--force]
    orca run send RUN TO MESSAGE [--from VARIANT] [--key KEY]
    orca run inbox [RUN VARIANT] [--after SEQ] [--ack] [--json]
    orca run report working|done|failed [SUMMARY] [--key KEY]

Every command takes ``--host H`` (a remote host's orch, through its gateway). Inside an
agent's pane, ``inbox``, ``report`` and ``send`` need no RUN/VARIANT: the pane's own
environment (``ORCA_PANE_KEY``, ``ORCA_AGENT_LAUNCH_TOKEN``) names the caller.
The orch actor answers (``orca/contracts/orch.py``); import-light as every topic.
"""

from __future__ import annotations

import argparse
import os
import sys
import time
from typing import TYPE_CHECKING, Any

from orca.cli.output import EXIT_FAILED, EXIT_OK, EXIT_USAGE, fail, print_json, print_table

if TYPE_CHECKING:
    from orca.contracts.base import Op
    from orca.contracts.orch import Caller, RunInfo

# A create resolves the repo and writes the run; the spawns go on in the background.
CREATE_TIMEOUT_S = 30.0
# A merge previews, then merges; a check runs the check command in every worktree.
MERGE_TIMEOUT_S = 120.0
CHECK_TIMEOUT_S = 1000.0
STATES_ORDER = (
    "working",
    "needs-you",
    "starting",
    "idle",
    "exited",
    "failed",
    "archived",
    "merged",
)


def add_parser(sub: argparse._SubParsersAction[argparse.ArgumentParser]) -> None:
    run = sub.add_parser("run", help="one task to several agents; compare; merge the best")
    cmds = run.add_subparsers(dest="run_command", metavar="COMMAND")

    def common(parser: argparse.ArgumentParser, *, json_flag: bool = True) -> None:
        parser.add_argument("--host", help="ask this remote host (`orca host add`)")
        if json_flag:
            parser.add_argument("--json", action="store_true", help="print JSON")

    new = cmds.add_parser("new", help="start a run: a worktree and an agent per variant")
    new.add_argument("repo", metavar="REPO", help="the repo (name, id or path)")
    new.add_argument("prompt", metavar="PROMPT", help="the task, typed to every agent")
    new.add_argument(
        "--agents",
        required=True,
        help="agents and counts: claude:2,codex:1 (claude, codex, gemini)",
    )
    new.add_argument("--base", help="branch the worktrees start from and merge into")
    new.add_argument("--check", help="command run in each worktree when its agent goes idle")
    new.add_argument("--name", help="the run's name (worktrees are named after it)")
    new.add_argument("--key", help="idempotency key: the same key gives the same run")
    common(new)
    new.set_defaults(func=cmd_new)

    ls = cmds.add_parser("ls", help="every run")
    common(ls)
    ls.set_defaults(func=cmd_ls)

    show = cmds.add_parser("show", help="one run, variant by variant")
    show.add_argument("run", metavar="RUN")
    common(show)
    show.set_defaults(func=cmd_show)

    check = cmds.add_parser("check", help="run the check command now")
    check.add_argument("run", metavar="RUN")
    check.add_argument("variant", metavar="VARIANT", nargs="?", help="only this variant")
    common(check)
    check.set_defaults(func=cmd_check)

    merge = cmds.add_parser("merge", help="merge one variant; archive the others")
    merge.add_argument("run", metavar="RUN")
    merge.add_argument("variant", metavar="VARIANT")
    how = merge.add_mutually_exclusive_group()
    how.add_argument("--squash", action="store_true", help="one commit with the whole change")
    how.add_argument("--rebase", action="store_true", help="replay the commits onto the base")
    merge.add_argument(
        "--commit",
        action="store_true",
        help="commit the variant's uncommitted changes first (a message naming the run)",
    )
    common(merge)
    merge.set_defaults(func=cmd_merge)

    rm = cmds.add_parser("rm", help="remove the run's worktrees no terminal lives in")
    rm.add_argument("run", metavar="RUN")
    rm.add_argument("--force", action="store_true", help="also worktrees with changes")
    common(rm)
    rm.set_defaults(func=cmd_rm)

    send = cmds.add_parser("send", help="a message to a variant's inbox (or all)")
    send.add_argument("run", metavar="RUN")
    send.add_argument("to", metavar="TO", help="a variant, or all")
    send.add_argument("message", metavar="MESSAGE")
    send.add_argument("--from", dest="sender", help="the sending variant (default: operator)")
    send.add_argument("--key", help="idempotency key: the same key sends once")
    common(send)
    send.set_defaults(func=cmd_send)

    inbox = cmds.add_parser("inbox", help="a variant's messages (in its pane: its own)")
    inbox.add_argument("run", metavar="RUN", nargs="?")
    inbox.add_argument("variant", metavar="VARIANT", nargs="?")
    inbox.add_argument("--after", type=int, help="from this seq on (default: after the acked)")
    inbox.add_argument("--ack", action="store_true", help="acknowledge what was shown")
    common(inbox)
    inbox.set_defaults(func=cmd_inbox)

    report = cmds.add_parser("report", help="(in a variant's pane) report progress or the result")
    report.add_argument("status", choices=("working", "done", "failed"))
    report.add_argument("summary", nargs="?", default="")
    report.add_argument("--key", help="idempotency key: the same key reports once")
    common(report, json_flag=False)
    report.set_defaults(func=cmd_report)


def _ask(op: Op[Any, Any], args: Any, host: str | None, timeout: float = 10.0) -> Any:
    if host is None:
        from orca.client.sync import invoke

        return invoke(op, args, timeout=timeout)
    from orca.paths import resolve_paths
    from orca.remote.client import remote_invoke
    from orca.remote.hosts import load_hosts
    from orca.wire.errors import NotFound

    paths = resolve_paths()
    known = load_hosts(paths)
    if host not in known:
        raise NotFound(f"no remote host named {host!r} (see `orca host ls`)")
    return remote_invoke(known[host], op, args, timeout=timeout, paths=paths)


def _key(given: str | None) -> str:
    """The idempotency key of this one command: the user's, or one made here, so that a
    retry of the same request by any hop (the relay of a remote host, a lost reply) is
    one message, not two (seed 02-49)."""
    return given or "cli-" + os.urandom(8).hex()


def pane_caller() -> Caller | None:
    """The variant this process runs in, from its pane's environment (or None)."""
    from orca.contracts.orch import Caller

    pane, token = os.environ.get("ORCA_PANE_KEY"), os.environ.get("ORCA_AGENT_LAUNCH_TOKEN")
    if not pane or not token:
        return None
    return Caller(pane_key=pane, launch_token=token)


def cmd_new(args: argparse.Namespace) -> int:
    from orca.contracts import orch
    from orca.wire.errors import BadRequest

    try:
        agents = _parse_agents(args.agents)
    except BadRequest as exc:
        return fail(exc.message, EXIT_USAGE)
    from orca.user_env import user_environment

    request = orch.CreateArgs(
        repo=args.repo, prompt=args.prompt, agents=agents, base=args.base, check=args.check,
        name=args.name, key=args.key,
        # The agents start in this shell's environment, on its PATH (issue 40); a remote
        # host's run, in that host's own.
        user_env=user_environment(os.environ) if args.host is None else None,
    )  # fmt: skip
    info: RunInfo = _ask(orch.CREATE, request, args.host, CREATE_TIMEOUT_S)
    if args.host is None:
        _warn_unhooked({a.agent for a in agents})
    if args.json:
        from msgspec import to_builtins

        print_json("run", to_builtins(info))
        return EXIT_OK
    print(f"run {info.run} ({info.name}): {len(info.variants)} variants in {info.repo}")
    print(", ".join(v.variant for v in info.variants))
    print(f"follow it with `orca run show {info.run}`")
    return EXIT_OK


def _warn_unhooked(agents: set[str]) -> None:
    """The prompt waits for the agent's SessionStart hook: say so when it is not installed."""
    from pathlib import Path

    from orca import integrations

    for agent in sorted(agents):
        try:
            installed = integrations.status(agent, Path.home()).installed
        except (integrations.UnreadableConfig, KeyError, OSError):
            continue
        if not installed:
            print(
                f"orca: warning: {agent}'s hooks are not installed: its variants wait for a"
                f" SessionStart hook before the prompt (`orca hooks install {agent}`)",
                file=sys.stderr,
            )


def _parse_agents(spec: str) -> list[Any]:
    from orca.contracts.orch import AGENTS, AgentCount
    from orca.wire.errors import BadRequest

    out = []
    for part in spec.split(","):
        name, sep, count = part.strip().partition(":")
        if name not in AGENTS:
            raise BadRequest(f"--agents: unknown agent {name!r} (known: {', '.join(AGENTS)})")
        try:
            n = int(count) if sep else 1
        except ValueError:
            raise BadRequest(f"--agents: {count!r} is not a count (in {part!r})") from None
        if n < 1:
            raise BadRequest(f"--agents: {part!r}: the count must be at least 1")
        out.append(AgentCount(agent=name, count=n))
    return out


def _when(ms: int) -> str:
    return time.strftime("%Y-%m-%d %H:%M", time.localtime(ms / 1000))


def cmd_ls(args: argparse.Namespace) -> int:
    from orca.contracts import orch

    listing: orch.RunList = _ask(orch.LIST, None, args.host)
    if args.json:
        from msgspec import to_builtins

        print_json("runs", to_builtins(listing.runs))
        return EXIT_OK
    if not listing.runs:
        print("no runs (`orca run new REPO PROMPT --agents claude:2`)")
        return EXIT_OK
    rows = []
    for r in listing.runs:
        states = ", ".join(f"{r.states[s]} {s}" for s in sorted(r.states, key=_state_order))
        merged = f" ({r.merged_variant})" if r.merged_variant else ""
        rows.append(
            (
                r.run,
                r.name,
                r.repo,
                f"{r.state}{merged}",
                r.variants,
                states,
                _when(r.created_at_ms),
            )
        )
    print_table(("RUN", "NAME", "REPO", "STATE", "VARIANTS", "AGENTS", "CREATED"), rows)
    return EXIT_OK


def _state_order(state: str) -> int:
    return STATES_ORDER.index(state) if state in STATES_ORDER else len(STATES_ORDER)


def _print_run(info: RunInfo) -> None:
    merged = (
        f", merged {info.merged_variant} ({info.merge_commit[:10]})" if info.merged_variant else ""
    )
    print(f"run {info.run} ({info.name}) in {info.repo}: {info.state}{merged}")
    if info.check:
        print(f"check: {info.check}")
    rows = []
    for v in info.variants:
        diff = (
            f"{v.diffstat.files}f +{v.diffstat.insertions} -{v.diffstat.deletions}"
            if v.diffstat is not None
            else None
        )
        if v.uncommitted is not None and v.uncommitted.files:
            diff = f"{diff} ({v.uncommitted.files}f uncommitted)"
        if v.conflicts:
            diff = f"{diff} ({len(v.conflicts)} conflicting)"
        check = (
            None
            if v.check is None
            else ("ok" if v.check.exit_code == 0 else f"exit {v.check.exit_code}")
        )
        elapsed = None if v.elapsed_s is None else f"{v.elapsed_s:.0f}s"
        cost = None if v.cost_usd is None else f"${v.cost_usd:.2f}"
        state = f"{v.state}: {v.error}" if v.error else v.state
        rows.append(
            (
                v.variant,
                state,
                v.handle or None,
                v.worktree_path or None,
                diff,
                check,
                elapsed,
                v.tokens,
                cost,
            )
        )
    print_table(
        ("VARIANT", "STATE", "TERMINAL", "WORKTREE", "DIFF", "CHECK", "TIME", "TOKENS", "COST"),
        rows,
    )


def cmd_show(args: argparse.Namespace) -> int:
    from orca.contracts import orch

    info: orch.RunInfo = _ask(orch.SHOW, orch.RunArgs(run=args.run), args.host)
    if args.json:
        from msgspec import to_builtins

        print_json("run", to_builtins(info))
        return EXIT_OK
    _print_run(info)
    return EXIT_OK


def cmd_check(args: argparse.Namespace) -> int:
    from orca.contracts import orch

    request = orch.CheckArgs(run=args.run, variant=args.variant)
    info: orch.RunInfo = _ask(orch.CHECK, request, args.host, CHECK_TIMEOUT_S)
    if args.json:
        from msgspec import to_builtins

        print_json("run", to_builtins(info))
        return EXIT_OK
    for v in info.variants:
        if v.check is not None and args.variant in (None, v.variant):
            print(f"== {v.variant}: exit {v.check.exit_code} ({v.check.duration_ms} ms)")
            print(v.check.tail.rstrip())
    failed = any(v.check is not None and v.check.exit_code != 0 for v in info.variants)
    return EXIT_FAILED if failed else EXIT_OK


def cmd_merge(args: argparse.Namespace) -> int:
    from orca.contracts import orch

    mode: orch.MergeMode = "squash" if args.squash else "rebase" if args.rebase else "merge"
    request = orch.MergeArgs(run=args.run, variant=args.variant, mode=mode, commit=args.commit)
    merged: orch.Merged = _ask(orch.MERGE, request, args.host, MERGE_TIMEOUT_S)
    if args.json:
        from msgspec import to_builtins

        print_json("merge", to_builtins(merged))
        return EXIT_OK
    print(f"merged {merged.variant} into {merged.into}: {merged.commit[:12]}")
    if merged.archived:
        print(f"archived (worktrees kept): {', '.join(merged.archived)}")
    return EXIT_OK


def cmd_rm(args: argparse.Namespace) -> int:
    from orca.contracts import orch

    removed: orch.Removed = _ask(
        orch.REMOVE, orch.RemoveArgs(run=args.run, force=args.force), args.host, MERGE_TIMEOUT_S
    )
    # A variant kept (a terminal runs there, a dirty worktree without --force) is a
    # request the current state refuses: exit 2 (README "Exit codes"), JSON or not.
    refused = EXIT_USAGE if removed.kept else EXIT_OK
    if args.json:
        from msgspec import to_builtins

        print_json("removed", to_builtins(removed))
        return refused
    if removed.removed:
        print(f"removed: {', '.join(removed.removed)}")
    for k in removed.kept:
        print(f"kept {k.variant}: {k.reason}", file=sys.stderr)
    return refused


def cmd_send(args: argparse.Namespace) -> int:
    from orca.contracts import orch

    request = orch.SendArgs(
        run=args.run, to=args.to, body=args.message, sender=args.sender, key=_key(args.key),
        caller=pane_caller() if args.sender is None and args.host is None else None,
    )  # fmt: skip
    receipt: orch.Receipt = _ask(orch.SEND, request, args.host)
    if args.json:
        from msgspec import to_builtins

        print_json("receipt", to_builtins(receipt))
        return EXIT_OK
    again = " (already sent: the same key)" if receipt.duplicate else ""
    print(f"sent #{receipt.seq} to {', '.join(receipt.recipients) or 'nobody'}{again}")
    return EXIT_OK


def cmd_inbox(args: argparse.Namespace) -> int:
    from orca.contracts import orch

    caller = None
    if args.run is None or args.variant is None:
        if args.run is not None:
            return fail(
                "give both RUN and VARIANT (or neither, inside a variant's pane)", EXIT_USAGE
            )
        caller = pane_caller()
        if caller is None:
            return fail("not in a variant's pane: give RUN and VARIANT", EXIT_USAGE)
    request = orch.InboxArgs(run=args.run, variant=args.variant, after=args.after, caller=caller)
    inbox: orch.Inbox = _ask(orch.INBOX, request, args.host)
    if args.ack and inbox.messages:
        upto = inbox.messages[-1].seq
        ack = orch.AckArgs(run=inbox.run, variant=inbox.variant, upto=upto, caller=caller)
        _ask(orch.ACK, ack, args.host)
    if args.json:
        from msgspec import to_builtins

        print_json(
            "messages",
            to_builtins(inbox.messages),
            {"run": inbox.run, "variant": inbox.variant, "cursor": inbox.cursor},
        )
        return EXIT_OK
    if not inbox.messages:
        print(f"no new messages for {inbox.variant} in run {inbox.run}")
    for m in inbox.messages:
        print(f"#{m.seq} from {m.sender} ({_when(m.created_at_ms)}):")
        print(m.body)
    return EXIT_OK


def cmd_report(args: argparse.Namespace) -> int:
    from orca.contracts import orch

    caller = pane_caller()
    if caller is None:
        return fail("`orca run report` works inside a variant's pane only", EXIT_USAGE)
    request = orch.ReportArgs(
        status=args.status, summary=args.summary, key=_key(args.key), caller=caller
    )
    receipt: orch.Receipt = _ask(orch.REPORT, request, args.host)
    print("reported" + (" (already: the same key)" if receipt.duplicate else ""))
    return EXIT_OK
