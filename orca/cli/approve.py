"""``orca approve TARGET`` / ``orca deny TARGET [--reason TEXT]``: answer a held
permission request from the command line (issue 40 item 5).

The web dashboard and ``orca ui`` answer an agent's PermissionRequest through hooks'
``permission.answer``; this is the same op, so the same rules hold: the first answer
wins, from whichever face or the agent's own terminal, and a later one is told who
answered first.

``TARGET`` names what ``orca ack`` takes (a terminal, a worktree, a pane key); the
request is the one pending for that agent. A worktree whose agents ask several things
at once is refused with the list, each by its terminal, so the answer goes where it is
meant. ``orca worktree ps`` and ``orca watch`` show what is being asked.

Exit codes: 0 the answer was taken; 1 another answer was first (it is printed); 2 the
target names no agent, nothing is asked there, or several things are.
"""

from __future__ import annotations

from typing import TYPE_CHECKING

from orca.cli.output import EXIT_FAILED, EXIT_OK, EXIT_USAGE, fail, print_json

if TYPE_CHECKING:
    import argparse

    from orca.contracts.hooks import PermissionRequest

ANSWER_TIMEOUT_S = 5.0


def add_parser(sub: argparse._SubParsersAction[argparse.ArgumentParser]) -> None:
    for name, behavior, text in (
        ("approve", "allow", "allow what an agent asks permission for (its held request)"),
        ("deny", "deny", "refuse what an agent asks permission for (its held request)"),
    ):
        p = sub.add_parser(name, help=text)
        p.add_argument(
            "target",
            metavar="TERMINAL|WORKTREE",
            help="the asking agent's terminal, its worktree, or a pane key",
        )
        if behavior == "deny":
            p.add_argument("--reason", default="", help="told to the agent with the refusal")
        p.add_argument("--json", action="store_true", help='print {"answer": {...}}')
        p.set_defaults(func=cmd_answer, behavior=behavior)


def describe(request: PermissionRequest) -> str:
    """One line a person can judge a request by: the tool and what it would do."""
    summary = request.summary.strip()
    return f"{request.tool_name}: {summary}" if summary else request.tool_name


def with_asks(
    worktrees: list[dict[str, object]], pending: list[PermissionRequest]
) -> list[dict[str, object]]:
    """``orca worktree ps``'s worktrees with each agent's pending request, if any, as
    ``asking`` {requestId, toolName, summary, expiresAtMs} (null when it asks nothing)."""
    by_pane = {r.pane_key: r for r in sorted(pending, key=lambda r: r.created_at_ms)}
    out = []
    for worktree in worktrees:
        agents = []
        for agent in worktree["agents"]:  # type: ignore[attr-defined]
            request = by_pane.get(agent["paneKey"])
            asking = None
            if request is not None:
                asking = {
                    "requestId": request.request_id,
                    "toolName": request.tool_name,
                    "summary": request.summary,
                    "expiresAtMs": request.expires_at_ms,
                }
            agents.append({**agent, "asking": asking})
        out.append({**worktree, "agents": agents})
    return out


def cmd_answer(args: argparse.Namespace) -> int:
    from orca.cli.ack import pane_keys
    from orca.client.sync import invoke
    from orca.contracts import hooks
    from orca.model.codec import to_builtins

    keys = set(pane_keys(args.target))
    pending = invoke(hooks.PERMISSION_SNAPSHOT, timeout=ANSWER_TIMEOUT_S).pending
    asked = sorted((r for r in pending if r.pane_key in keys), key=lambda r: r.created_at_ms)
    if not asked:
        blocked = [
            r for r in invoke(hooks.SNAPSHOT, timeout=ANSWER_TIMEOUT_S).rows
            if r.pane_key in keys and r.state == "blocked"
        ]  # fmt: skip
        if blocked:  # asking in its own terminal only (Gemini CLI's hooks hold nothing)
            agent = blocked[0].agent
            return fail(
                f"{agent} asks in its own terminal, which Orca cannot answer for it: "
                f"answer there (`orca term attach {args.target}`)",
                EXIT_USAGE,
            )
        return fail(f"no agent of {args.target!r} is asking for a permission now", EXIT_USAGE)
    if len(asked) > 1:
        names = _terminal_names()
        listing = "; ".join(f"{names.get(r.pane_key, r.pane_key)} ({describe(r)})" for r in asked)
        return fail(
            f"{len(asked)} agents of {args.target!r} are asking: name one: {listing}", EXIT_USAGE
        )
    [request] = asked
    answer = hooks.AnswerPermissionArgs(
        request_id=request.request_id,
        behavior=args.behavior,
        message=getattr(args, "reason", "") or "",
        by="cli",
    )
    answered: hooks.PermissionAnswered = invoke(
        hooks.ANSWER_PERMISSION, answer, timeout=ANSWER_TIMEOUT_S
    )
    settlement = answered.settlement
    if args.json:
        print_json("answer", {"request": to_builtins(request), **to_builtins(answered)})
    elif answered.outcome == "decided":
        verb = "allowed" if args.behavior == "allow" else "denied"
        print(f"{verb}: {describe(request)}")
    else:
        print(
            f"already answered ({settlement.outcome}"
            f"{' by ' + settlement.by if settlement.by else ''}): {describe(request)}"
        )
    return EXIT_OK if answered.outcome == "decided" else EXIT_FAILED


def _terminal_names() -> dict[str, str]:
    """Pane key → the handle of the terminal running there (``orca term ls``'s)."""
    from orca.cli.lookup import list_terminals
    from orca.wire.errors import OrcaError

    try:
        listed = list_terminals()
    except OrcaError:
        return {}
    return {
        s.pane_key: listed.handles.get(s.session_id, s.session_id)
        for s in listed.sessions
        if s.running
    }
