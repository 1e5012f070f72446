"""``orca restart NAME | --all``: restart one actor, or replace every Orca process.

``orca restart NAME`` (an actor of the supervision tree: what ``orca status`` lists)
clears a ``failed`` state and restarts it, then waits, as ``orca up`` does, until the
new process reports ready (``actor.started`` from orcad: "requests will be served",
``orca.actor.app``), so the next command finds it answering. It says how long that
took, or why it did not happen (the actor failed again, or not within
``UP_TIMEOUT_S``), with the last lines of its log. orcad and the fd keeper are no
actors: ``--all`` replaces them.

``orca restart --all`` replaces every Orca process with the code installed now while
every agent keeps running: (1) ``sup.hand_over`` (checked in orcad's ``sys.hello``
capabilities first) stops the old tree but the keeper; (2) a new keeper started with
``--take-over`` takes every PTY master from the old one (``hand_over``, or ``reclaim``
+ ``stop`` for a keeper that predates it) and the old one exits; (3) a new orcad starts,
whose ``ptyd`` reclaims every session from the new keeper. Output written meanwhile
waits in each PTY (the agent blocks when it is full): nothing is lost, it arrives late.
``orca status`` shows each process's version and build (``orca.build.build_id``).
"""

from __future__ import annotations

import os
import signal
import sys
import time
from typing import TYPE_CHECKING

from orca.cli.output import (
    EXIT_FAILED,
    EXIT_NOT_RUNNING,
    EXIT_OK,
    EXIT_USAGE,
    fail,
    fail_from,
    print_table,
)
from orca.cli.service import (
    DOWN_TIMEOUT_S,
    UP_TIMEOUT_S,
    _running,
    _start_orcad,
    _tail,
    _version,
)
from orca.wire.errors import OrcaError, Unavailable

if TYPE_CHECKING:
    import argparse

    from orca.paths import OrcaPaths

# orcad answers a new subscription with a heartbeat at once: none in this, it is not publishing.
EVENTS_LIVE_TIMEOUT_S = 3.0
RESTART_CONSUMER = "orca restart"


def add_parser(sub: argparse._SubParsersAction[argparse.ArgumentParser]) -> None:
    restart = sub.add_parser(
        "restart",
        help="restart one actor (clears a failed state) and wait until it is ready, or --all:"
        " every Orca process, orcad and the fd keeper included, on the installed code;"
        " the terminals keep running",
    )
    restart.add_argument("actor", nargs="?", help="an actor `orca status` lists")
    restart.add_argument(
        "--all",
        action="store_true",
        help="replace every Orca process (an upgrade); running agents are kept",
    )
    restart.set_defaults(func=cmd_restart)


def cmd_restart(args: argparse.Namespace) -> int:
    if args.all:
        if args.actor:
            return fail("name an actor or give --all, not both", EXIT_USAGE)
        return cmd_restart_all(args)
    if not args.actor:
        return fail("name the actor to restart, or --all for every Orca process", EXIT_USAGE)
    from orca.paths import resolve_paths

    return restart_actor(resolve_paths(), args.actor)


def restart_actor(paths: OrcaPaths, name: str) -> int:
    """Restart ``name`` and wait until its new process is ready (module docstring)."""
    from orca.client.sync import invoke, subscribe
    from orca.contracts import supervisor as sup

    if _running(paths) is None:
        raise Unavailable("orca is not running (start it with `orca up`)")
    before = {a.name: a.pid for a in invoke(sup.STATUS, paths=paths).actors}
    events = subscribe(
        sup.CONTRACT.actor, [sup.STARTED, sup.FAILED], consumer=RESTART_CONSUMER, paths=paths
    )
    with events:
        # Subscribed (and the subscription proven live) before the restart: the new
        # process's ready report cannot be published unseen.
        live = events.wait_live(EVENTS_LIVE_TIMEOUT_S)
        started = time.monotonic()
        invoke(sup.RESTART, sup.RestartArgs(name=name), paths=paths)
        if not live:
            return fail(
                f"restarting {name}, but orcad publishes no events to wait on:"
                " `orca status` says when it runs"
            )
        for _, event in events.until(started + UP_TIMEOUT_S):
            if event.name != name:
                continue
            if isinstance(event, sup.ActorStarted) and event.pid != before.get(name):
                print(
                    f"{name} restarted: ready in {time.monotonic() - started:.2f}s (pid {event.pid})"
                )
                return EXIT_OK
            if isinstance(event, sup.ActorFailed):
                return _not_ready(paths, name, f"it failed again ({event.last_exit.reason})")
    return _not_ready(paths, name, f"it was not ready within {UP_TIMEOUT_S:g}s")


def _not_ready(paths: OrcaPaths, name: str, why: str) -> int:
    print(f"orca: {name} did not come back: {why}; see `orca status`", file=sys.stderr)
    for line in _tail(paths.log_file(name), 15):
        print(f"  {line}", file=sys.stderr)
    return EXIT_FAILED


# How long the new keeper may take to take every terminal over from the old one.
TAKE_OVER_TIMEOUT_S = 30.0


def cmd_restart_all(args: argparse.Namespace) -> int:
    """Replace orcad, every actor and the keeper with the installed code; agents stay."""
    import psutil

    from orca.client.keeper import launch_keeper, wait_keeper_ready
    from orca.client.sync import endpoint_for, invoke
    from orca.contracts import supervisor as sup
    from orca.contracts import sys as sys_contract
    from orca.paths import resolve_paths

    paths = resolve_paths().ensure()
    info = _running(paths)
    if info is None:
        return fail("orca is not running: `orca up` starts the installed code", EXIT_NOT_RUNNING)
    try:
        before = invoke(sup.STATUS, paths=paths)
        hello = invoke(sys_contract.HELLO, endpoint=endpoint_for("supervisor", paths))
    except OrcaError as exc:
        return fail_from(exc)
    if sup.HAND_OVER.name not in hello.capabilities:
        return fail(
            f"orcad pid {hello.pid} ({_version(hello.version, hello.build)}) predates"
            f" `orca restart --all` (it offers no {sup.HAND_OVER.name}); nothing was stopped."
            " `orca down --keep-terminals` then `orca up` restarts it, the terminals kept"
        )
    checked = time.monotonic()
    broken = _installed_code_fails(
        ["actors.supervisor", "actors.keeper", *(a.module for a in before.actors)]
    )
    if broken:
        return fail(f"the installed code does not start, so nothing was stopped:\n{broken}")
    print(f"installed code checked in {time.monotonic() - checked:.2f}s")
    started = time.monotonic()
    # The new keeper starts now (its imports overlap the old tree's stop) and takes the
    # terminals over once no orcad runs any more.
    try:
        keeper_pid, ready_fd = launch_keeper(
            sys.executable,
            dict(os.environ),
            paths.log_file("keeper"),
            ["--take-over", "--after-orcad", f"{DOWN_TIMEOUT_S + TAKE_OVER_TIMEOUT_S:g}"],
        )
    except OSError as exc:
        return fail(f"cannot start a new fd keeper ({exc}); nothing was stopped")
    try:
        handed = invoke(sup.HAND_OVER, paths=paths, timeout=DOWN_TIMEOUT_S)
    except OrcaError as exc:
        _end_process(keeper_pid)
        os.close(ready_fd)
        return fail(f"orcad did not hand over: {exc.message}")
    if isinstance(info.pid, int):
        try:
            psutil.Process(info.pid).wait(timeout=DOWN_TIMEOUT_S)
        except psutil.NoSuchProcess:
            pass
        except psutil.TimeoutExpired:
            return fail(f"orcad (pid {info.pid}) did not exit within {DOWN_TIMEOUT_S:g}s")
    print(f"old tree stopped in {time.monotonic() - started:.2f}s; the keeper holds every terminal")
    problems: list[str] = []
    step = time.monotonic()
    verdict = wait_keeper_ready(ready_fd, TAKE_OVER_TIMEOUT_S)
    if verdict != "ready":
        problems.append(
            f"the fd keeper was not replaced ({verdict}); keeper pid {handed.keeper_pid}"
            " still holds every terminal"
        )
    else:
        print(f"fd keeper replaced in {time.monotonic() - step:.2f}s (every terminal handed over)")
    restarted_by = _running(paths)
    if restarted_by is not None:
        # The service manager restarted orcad itself (Restart=always): wait for that one.
        up = time.monotonic()
        try:
            invoke(
                sup.WAIT_READY,
                sup.WaitReadyArgs(timeout=UP_TIMEOUT_S),
                paths=paths,
                timeout=UP_TIMEOUT_S + 5,
            )
            up_verdict = "ready"
        except OrcaError as exc:
            up_verdict = exc.message
        pid, up_s, log_path = restarted_by.pid or 0, time.monotonic() - up, paths.log_file("orcad")
        run_starts_at = 0
    else:
        up_verdict, pid, up_s, log_path, run_starts_at = _start_orcad(paths)
    if up_verdict != "ready":
        print(f"orca: restart failed: {up_verdict or 'orcad exited'}", file=sys.stderr)
        for line in _tail(log_path, 15, since=run_starts_at):
            print(f"  {line}", file=sys.stderr)
        for problem in problems:
            print(f"orca: {problem}", file=sys.stderr)
        return EXIT_FAILED
    try:
        after = invoke(sup.STATUS, paths=paths)
    except OrcaError as exc:
        return fail_from(exc)
    old = {a.name: a.pid for a in before.actors}
    old["orcad"], old["fd keeper"] = before.supervisor.pid, before.supervisor.keeper_pid
    new = {a.name: (a.pid, _version(a.version, a.build)) for a in after.actors}
    new["orcad"] = (
        after.supervisor.pid,
        _version(after.supervisor.version, after.supervisor.build),
    )
    new["fd keeper"] = (
        after.supervisor.keeper_pid,
        _version(after.supervisor.keeper_version, after.supervisor.keeper_build),
    )
    rows = [(name, old.get(name), pid_now, version) for name, (pid_now, version) in new.items()]
    print_table(("PROCESS", "OLD PID", "NEW PID", "VERSION"), rows)
    # A dormant actor (no pid before or after: not started until asked) is no problem.
    unchanged = [
        name for name, (pid_now, _) in new.items() if pid_now is not None and pid_now == old.get(name)
    ]
    if unchanged:
        problems.append(f"not replaced: {', '.join(unchanged)}")
    for problem in problems:
        print(f"orca: {problem}", file=sys.stderr)
    print(f"new tree ready in {up_s:.2f}s")
    print(f"orca restarted in {time.monotonic() - started:.2f}s (orcad pid {pid})")
    return EXIT_FAILED if problems else EXIT_OK


# How long importing every process's code may take in the pre-flight check.
PREFLIGHT_TIMEOUT_S = 60.0
_PREFLIGHT = (
    "import importlib, sys\nfor m in sys.argv[1:]: importlib.import_module(m + '.__main__')"
)


def _installed_code_fails(modules: list[str]) -> str | None:
    """Import every process's ``__main__`` as it would start (``-P``, a fresh
    interpreter); the tail of the traceback if one fails, None if all import."""
    import subprocess

    try:
        done = subprocess.run(
            [sys.executable, "-P", "-c", _PREFLIGHT, *dict.fromkeys(modules)],
            capture_output=True,
            text=True,
            timeout=PREFLIGHT_TIMEOUT_S,
            stdin=subprocess.DEVNULL,
        )
    except (OSError, subprocess.TimeoutExpired) as exc:
        return f"  {exc}"
    if done.returncode == 0:
        return None
    return "\n".join(f"  {line}" for line in done.stderr.strip().splitlines()[-6:])


def _end_process(pid: int) -> None:
    """SIGTERM a process we started (the waiting keeper of a refused hand-over)."""
    try:
        os.kill(pid, signal.SIGTERM)
        os.waitpid(pid, 0)
    except (ProcessLookupError, ChildProcessError):
        pass
