"""``orca worktree ps [--json]``: every worktree's agents and their shared summary.

A pure reader (seed 03 "worktree ps 变为读取器"): one ``agentStatus.snapshot`` from
the ``hooks`` actor and one ``term.list`` from ``ptyd``, projected with the shared
model rules (summary, 30-minute decay, ``restoredUnconfirmed`` never fresh, the
admission rule, the terminal's fate, unread). Nothing is re-decided here. ptyd's
facts decide what is shown live: a hook/OSC row whose pane has no running PTY is
listed as ``exited`` (with ptyd's exit code) or ``gone``, never as working; a PTY exit
ptyd reported is listed where the row was (``exited``, code, when). If ptyd does not
answer, the rows are shown as hooks holds them.

``--needs-me``: only agents that need the user (blocked, or a finished turn not yet
seen - unread until ``orca term attach`` or ``orca ack``).

The table leads with the handle of each agent's terminal (``orca term ls``'s:
``orca term attach`` and ``orca ack`` take it) and fits the terminal's width
(``output.print_table``); ``--json`` keeps the full worktree ids and pane keys and adds
each worktree's and each agent's ``handle`` (``orca.views.agent_handles.ps_handles``).

Kept import-light - the whole command must start, call and print within 300 ms
(issue 7; upstream users saw 7-10 s): no trio, no actor runtime, and a plain
fixed-width table (rich needs ~0.5 s to lay out 300 rows on a loaded 2-core box).
"""

from __future__ import annotations

import time
from typing import TYPE_CHECKING, Any

from orca.cli.output import EXIT_OK, print_json, print_table
from orca.views.agent_handles import ps_handles, with_ps_handles
from orca.views.ps import project_ps

if TYPE_CHECKING:
    import argparse

    from orca.client.sync import Pending
    from orca.contracts.hooks import PermissionSnapshot, Snapshot
    from orca.contracts.ptyd import SessionList
    from orca.contracts.store_core import SessionBindings

# The snapshot is served from memory; a second is ample and keeps a wedged actor from
# hanging the shell.
SNAPSHOT_TIMEOUT_S = 2.0
# ptyd's list is also in memory; a ptyd that does not answer soon only costs the
# admission check (rows are then shown as hooks holds them).
PTYD_TIMEOUT_S = 1.0


def topic_subparsers(
    sub: argparse._SubParsersAction[argparse.ArgumentParser], name: str, help_text: str
) -> argparse._SubParsersAction[argparse.ArgumentParser]:
    """The subcommand group of topic ``name``, created or shared with another module.

    Several modules may add commands to one topic (``orca worktree ...``); whichever
    runs first creates it, later ones attach to it.
    """
    import argparse

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
    ps.add_argument(
        "--needs-me", action="store_true", help="only agents blocked or with an unread result"
    )
    ps.set_defaults(func=cmd_ps)


def list_sessions(asked: Pending[SessionList] | None = None) -> list[Any] | None:
    """ptyd's sessions (``SessionRow``), None if ptyd is down: one listing per command,
    shared by the admission rule and the stale-binding footer. ``asked``: a
    :func:`begin_sessions` already sent."""
    from orca.wire.errors import OrcaError

    try:
        return (asked or begin_sessions()).result().sessions
    except OrcaError:
        return None


def begin_sessions() -> Pending[SessionList]:
    from orca.client.sync import begin
    from orca.contracts import ptyd

    # Every session ptyd knows, ended ones from before its start included: the handles
    # are those of `orca term ls` (computed over all of them); the terminals' facts come
    # from the sessions of this ptyd only (``fetch_worktrees``).
    return begin(ptyd.LIST, ptyd.ListArgs(history=True), timeout=PTYD_TIMEOUT_S)


def begin_permissions() -> Pending[PermissionSnapshot]:
    from orca.client.sync import begin
    from orca.contracts import hooks

    return begin(hooks.PERMISSION_SNAPSHOT, timeout=SNAPSHOT_TIMEOUT_S)


def begin_snapshot() -> Pending[Snapshot]:
    from orca.client.sync import begin
    from orca.contracts import hooks

    return begin(hooks.SNAPSHOT, timeout=SNAPSHOT_TIMEOUT_S)


def fetch_worktrees(
    now_ms: int | None = None,
    needs_me: bool = False,
    sessions: list[Any] | None = None,
    asked: Pending[Snapshot] | None = None,
) -> list[dict[str, object]]:
    """The projected worktree list from one snapshot (raises OrcaError when down);
    ``sessions``: ptyd's listing when the caller has it (else listed here); ``asked``:
    a :func:`begin_snapshot` already sent."""
    from orca.model.agent_status import needs_user

    snapshot = (asked or begin_snapshot()).result()
    now = time.time_ns() // 1_000_000 if now_ms is None else now_ms
    if sessions is None:
        sessions = list_sessions()
    worktrees = project_ps(snapshot, sessions, now)
    if not needs_me:
        return worktrees
    kept = []
    for worktree in worktrees:
        agents = [a for a in worktree["agents"] if needs_user(a)]  # type: ignore[attr-defined]
        if agents:
            kept.append({**worktree, "agents": agents})
    return kept


def cmd_ps(args: argparse.Namespace) -> int:
    import contextlib

    # ptyd, hooks and store are asked at once: their replies overlap (bench/cli.py).
    with contextlib.ExitStack() as calls:
        asked_sessions = calls.enter_context(begin_sessions())
        asked_snapshot = calls.enter_context(begin_snapshot())
        asked_permissions = calls.enter_context(begin_permissions())
        asked_bindings = None
        if not args.needs_me and not args.json:  # the stale-binding footer's
            from orca.cli.pty_bindings import begin_bindings

            asked_bindings = calls.enter_context(begin_bindings())
        return _ps(args, asked_sessions, asked_snapshot, asked_bindings, asked_permissions)


def _ps(
    args: argparse.Namespace,
    asked_sessions: Pending[SessionList],
    asked_snapshot: Pending[Snapshot],
    asked_bindings: Pending[SessionBindings] | None,
    asked_permissions: Pending[PermissionSnapshot] | None = None,
) -> int:
    sessions = list_sessions(asked_sessions)
    worktrees = fetch_worktrees(needs_me=args.needs_me, sessions=sessions, asked=asked_snapshot)
    if asked_permissions is not None:  # what each blocked agent asks (`orca approve`)
        from orca.cli.approve import with_asks
        from orca.wire.errors import OrcaError

        try:
            worktrees = with_asks(worktrees, asked_permissions.result().pending)
        except OrcaError:
            pass
    from orca.remote import any_known_host

    if any_known_host():
        from orca.cli.remote.readers import ps_with_remotes  # remote hosts' rows, labelled

        if ps_with_remotes(worktrees, args, sessions):
            return EXIT_OK
    handles = ps_handles(worktrees, sessions)
    from orca.cli.tables import PS_COLUMNS, ps_rows, silent_rows, silent_terminals

    # Terminals no agent reports from: listed, state unknown (not "no agents").
    silent = [] if args.needs_me else silent_terminals(worktrees, sessions)
    if args.json:
        also = {
            "silentTerminals": [
                {
                    "handle": handles.sessions[s.session_id],
                    "sessionId": s.session_id,
                    "worktreeId": s.worktree_id,
                    "pid": s.pid,
                    "argv": s.argv,
                }
                for s in silent
            ]
        }
        print_json("worktrees", with_ps_handles(worktrees, handles), also)
        return EXIT_OK
    if not worktrees and not silent:
        print("nothing needs you" if args.needs_me else "no agents reporting, no terminals running")
    else:
        import time

        rows = ps_rows(worktrees, handles.terminals)
        print_table(PS_COLUMNS, rows + silent_rows(silent, handles.sessions, time.time()))
    if silent:
        print(
            f"({len(silent)} terminal{'s' if len(silent) != 1 else ''} report no agent state:"
            " an agent reports once `orca hooks install` set up its hooks; a shell never does)"
        )
    if asked_bindings is not None and sessions is not None:  # issue 13: a saved binding
        from orca.cli.pty_bindings import stale_binding_summary  # is never shown live

        running = {s.session_id for s in sessions if s.running}
        summary = stale_binding_summary(running, asked_bindings)
        if summary:
            print(summary)
    return EXIT_OK
