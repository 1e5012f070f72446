"""``orca watch [--json] [--notify]``: one line per agent status change, as it happens.

A stream, like ``kubectl get -w``: the current rows first (from one
``agentStatus.snapshot``), then every ``agentStatus.set`` / ``agentStatus.clear`` the
hooks actor publishes - the same fan-out every reader mirrors (seed 03 "每个读取者都
订阅它"), so a line is exactly what a mirror applies. Subscribed before the snapshot
and waiting for the publisher's heartbeat first, so no change between the two is
lost; events at or before the snapshot's ``seq`` are skipped. No polling: the process
sleeps in the socket until an event arrives.

Each line names its agent by its terminal's handle, the one ``orca worktree ps`` shows
(what ``orca term attach`` and ``orca ack`` take; the worktree's for an agent no Orca
terminal runs): ``orca.views.agent_handles.LineHandles``, which lists ptyd's terminals
again when a line names a pane of a terminal started after the watch began.

``--json``: one JSON object a line - for a row ``{"event": "set", "handle", "paneKey",
"worktreeId", "terminalHandle", "agent", "state", "displayState", "unread", "source",
"detail", "rev"}``; for a removal ``{"event": "clear", "handle", "paneKey",
"worktreeId", "reason", "exitCode"?}``; for an automation's firing (issue 38; orch's
``auto.fired``) ``{"event": "automation", "name", "status": started|skipped|failed,
"trigger", "scheduledFor", "automationRunId", "runId", "error"}``. After the current rows,
one ``{"event": "live"}`` line: a script that starts an agent once it has read it misses
none of its changes.

Remote hosts (``orca host add``): their rows too, each line labelled with its host,
and ``unverifiable`` when a host's link is lost (``orca.cli.remote.watch``; without a
known host nothing of it is imported).

``--notify``: when an agent becomes ``blocked`` or ``done``, run ``--notify-command``
(or ``$ORCA_NOTIFY_COMMAND``; the title and body are appended as two arguments), else
``notify-send`` where a session bus exists; also when an automation's run failed to
start (its reason in the body). Never waits for the command.
"""

from __future__ import annotations

import argparse
import os
import shlex
import shutil
import subprocess
import sys
import time
from typing import Any

from orca.cli.output import EXIT_OK
from orca.cli.watch_lines import (
    answered_line,
    ask_line,
    automation_line,
    clear_line,
    set_line,
)
from orca.views.agent_handles import LineHandles

WATCH_CONSUMER = "orca watch"
# The publisher answers a new subscription with a heartbeat at once: none in this, it
# is not there.
LIVE_TIMEOUT_S = 3.0
# How long one receive sleeps in the socket (not a poll of any state: an event wakes
# it at once; the bound only lets Ctrl-C and reaping notifiers happen).
RECEIVE_TIMEOUT_S = 3600.0
SNAPSHOT_TIMEOUT_S = 2.0
NOTIFY_STATES = frozenset({"blocked", "done"})


def add_parser(sub: argparse._SubParsersAction[argparse.ArgumentParser]) -> None:
    watch = sub.add_parser("watch", help="stream agent status changes as they happen")
    watch.add_argument("--json", action="store_true", help="one JSON object per line")
    watch.add_argument(
        "--notify", action="store_true", help="desktop notification when an agent is blocked/done"
    )
    watch.add_argument(
        "--notify-command", help="run this instead of notify-send (title, body appended)"
    )
    watch.set_defaults(func=cmd_watch)


def _human(line: dict[str, object]) -> str:
    stamp = time.strftime("%H:%M:%S")
    if "host" in line:  # a remote host is known: every line is labelled (orca.cli.remote.watch)
        stamp = f"{stamp}  {line['host']}"
    if line["event"] == "ask":
        what = f"{line['toolName']}: {line['summary']}" if line["summary"] else line["toolName"]
        handle = line["handle"]
        return (
            f"{stamp}  {handle}  {line['agent']}  asks {what}"
            f"  (orca approve {handle} | orca deny {handle})"
        )
    if line["event"] == "answered":
        by = f" by {line['by']}" if line["by"] else ""
        return f"{stamp}  {line['handle']}  answered: {line['outcome']}{by}"
    if line["event"] == "automation":
        what = f"run {line['runId']}" if line["status"] == "started" else line["error"]
        return f"{stamp}  auto {line['name']}  {line['status']}: {what}"
    if line["event"] == "link":
        return f"{stamp}  {line['text']} ({line['rows']} rows)"
    if line["event"] == "clear":
        code = f" (exit {line['exitCode']})" if "exitCode" in line else ""
        return f"{stamp}  {line['handle']}  gone: {line['reason']}{code}"
    unread = " (unread)" if line["unread"] else ""
    detail = f"  {line['detail']}" if line["detail"] else ""
    state = line["displayState"]
    if "lastSeen" in line:
        state = f"{line['unverifiableDetail']} (last seen {line['lastSeen']})"  # as worktree ps
    return f"{stamp}  {line['handle']}  {line['agent']}  {state}{unread}{detail}"


def _terminals() -> list[Any] | None:
    """ptyd's sessions (every one it knows: the handles of ``orca term ls``), or None
    when it does not answer (lines then keep the handles they had)."""
    from orca.client.sync import invoke
    from orca.contracts import ptyd
    from orca.wire.errors import OrcaError

    try:
        return invoke(ptyd.LIST, ptyd.ListArgs(history=True), timeout=SNAPSHOT_TIMEOUT_S).sessions
    except OrcaError:
        return None


class Notifier:
    """Runs the notification command on a transition into blocked/done (never waits)."""

    def __init__(self, command: str | None) -> None:
        command = command or os.environ.get("ORCA_NOTIFY_COMMAND")
        if command:
            self.argv: list[str] | None = shlex.split(command)
        elif os.environ.get("DBUS_SESSION_BUS_ADDRESS") and shutil.which("notify-send"):
            self.argv = ["notify-send", "--app-name=orca"]
        else:
            self.argv = None
            print("orca watch: no session bus or notify-send; --notify is off", file=sys.stderr)
        self.states: dict[str, str] = {}
        self.children: list[subprocess.Popen[bytes]] = []

    def prime(self, pane_key: str, state: str, host: object = "") -> None:
        self.states[f"{host}/{pane_key}"] = state

    def observe(self, line: dict[str, object]) -> None:
        if line["event"] == "automation":
            if line["status"] == "failed" and self.argv is not None:
                self._run(
                    [*self.argv, f"automation {line['name']} failed to start", str(line["error"])]
                )
            return
        if line["event"] in ("link", "ask", "answered") or "lastSeen" in line:
            return  # a link's state, a permission (its row's blocked notifies), a row no one can confirm
        pane = f"{line.get('host', '')}/{line['paneKey']}"
        if line["event"] == "clear":
            self.states.pop(pane, None)
            return
        state = str(line["state"])
        before = self.states.get(pane)
        self.states[pane] = state
        if state in NOTIFY_STATES and before != state and self.argv is not None:
            title = f"{line['agent']} {'needs you' if state == 'blocked' else 'is done'}"
            body = f"{line['handle']}  {line['detail']}".strip()
            self._run([*self.argv, title, body])

    def _run(self, argv: list[str]) -> None:
        self.children = [c for c in self.children if c.poll() is None]
        try:
            child = subprocess.Popen(
                argv, stdin=subprocess.DEVNULL, stdout=subprocess.DEVNULL, start_new_session=True
            )
        except OSError as exc:
            print(f"orca watch: notify command failed: {exc}", file=sys.stderr)
            return
        self.children.append(child)


def cmd_watch(args: argparse.Namespace) -> int:
    import json

    from orca.client.sync import endpoint_for, invoke, subscribe
    from orca.contracts import hooks, orch
    from orca.wire.errors import Unavailable

    notifier = Notifier(args.notify_command) if args.notify else None
    from orca.remote import any_known_host

    remote: Any = None
    if any_known_host():  # remote hosts' rows too, labelled (orca.cli.remote.watch)
        from orca.cli.remote.watch import RemoteWatch

        remote = RemoteWatch()

    local = LineHandles(_terminals(), relist=_terminals)

    def named(line: dict[str, object]) -> dict[str, object]:
        """A local line with its handle (a remote one has its own: orca.cli.remote.watch)."""
        if line["event"] in ("set", "clear", "ask", "answered") and "handle" not in line:
            line = {"event": line["event"], "handle": local.name(line), **line}
        return line if remote is None else remote.label_local(line)

    def emit(line: dict[str, object]) -> None:
        print(json.dumps(line) if args.json else _human(line), flush=True)
        if notifier is not None:
            notifier.observe(line)

    events = (*hooks.EVENTS, *hooks.PERMISSION_EVENTS)
    with subscribe(hooks.CONTRACT.actor, events, consumer=WATCH_CONSUMER) as sub:
        # Automations' firings from orch, on the same socket (no snapshot: only news).
        sub.follow_also(endpoint_for(orch.CONTRACT.actor, None, "pub"), [orch.AUTO_FIRED])
        if not sub.wait_live(LIVE_TIMEOUT_S):
            raise Unavailable("the hooks actor is not publishing (is orca running?)")
        snapshot = invoke(hooks.SNAPSHOT, timeout=SNAPSHOT_TIMEOUT_S)
        asks = invoke(hooks.PERMISSION_SNAPSHOT, timeout=SNAPSHOT_TIMEOUT_S)
        now_ms = time.time_ns() // 1_000_000
        for row in snapshot.rows:
            line = named(set_line(row, now_ms))
            print(json.dumps(line) if args.json else _human(line), flush=True)
            if notifier is not None:
                notifier.prime(row.pane_key, row.state, line.get("host", ""))
        for request in asks.pending:  # what is asked now: each answerable with approve/deny
            line = named(ask_line(request))
            print(json.dumps(line) if args.json else _human(line), flush=True)
        if remote is not None:

            def show(line: dict[str, object]) -> None:  # the current rows: primed, not news
                print(json.dumps(line) if args.json else _human(line), flush=True)
                if notifier is not None and line["event"] == "set" and "lastSeen" not in line:
                    notifier.prime(str(line["paneKey"]), str(line["state"]), line["host"])

            remote.refresh(show)
        if args.json:  # the current rows end here: every line after it is a change
            print(json.dumps({"event": "live"}), flush=True)
        try:
            while True:
                if remote is not None:
                    got = remote.receive(sub, RECEIVE_TIMEOUT_S, emit)
                else:
                    got = sub.receive(RECEIVE_TIMEOUT_S)
                if got is None:
                    continue
                envelope, event = got
                if isinstance(event, orch.AutoFired):
                    emit(automation_line(event))
                    continue
                if isinstance(event, hooks.PermissionRequested | hooks.PermissionSettled):
                    if envelope.epoch == asks.epoch and envelope.seq <= asks.seq:
                        continue  # already in the permission snapshot
                    if isinstance(event, hooks.PermissionRequested):
                        emit(named(ask_line(event.request)))
                    else:
                        emit(named(answered_line(event.settlement)))
                    continue
                if envelope.epoch == snapshot.epoch and envelope.seq <= snapshot.seq:
                    continue  # already in the snapshot
                line = (
                    set_line(event.row, time.time_ns() // 1_000_000)
                    if isinstance(event, hooks.StatusSet)
                    else clear_line(event)
                )
                emit(named(line))
        except KeyboardInterrupt:
            return EXIT_OK
        finally:
            if remote is not None:
                remote.close()
