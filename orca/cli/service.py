"""``orca up | down | status | logs | service``: the service's lifecycle.

``orca down`` never ends an agent by surprise: with live terminals it refuses (exit 2,
a request the current state refuses), lists them by the handles ``orca term ls`` shows
and names the two ways on: ``--keep-terminals`` (every process stops but the fd keeper,
which holds the terminals for the next ``orca up``) or ``--kill-terminals`` (each
agent is ended first, as ``orca term kill`` ends it, then everything stops).

``orca restart`` lives in ``orca.cli.restart``.
"""

from __future__ import annotations

import os
import signal
import sys
import time
from collections import deque
from pathlib import Path
from typing import TYPE_CHECKING, Any

from orca.cli.output import (
    EXIT_FAILED,
    EXIT_NOT_RUNNING,
    EXIT_OK,
    EXIT_USAGE,
    fail,
    fail_from,
    human_bytes,
    human_duration,
    print_json,
    print_table,
)
from orca.pipes import read_ready_line
from orca.wire.errors import OrcaError, Unavailable

if TYPE_CHECKING:
    import argparse

    from orca.client.sync import Pending
    from orca.contracts import supervisor as sup
    from orca.contracts.supervisor import LockInfo
    from orca.paths import OrcaPaths

# The two processes that are no actor of the tree, as `orca logs` names them.
ORCAD = "orcad"
KEEPER = "keeper"
# How long `orca up` waits for the tree to report ready before giving up.
UP_TIMEOUT_S = 60.0
# How long `orca down` waits for orcad to stop everything and exit.
DOWN_TIMEOUT_S = 60.0
# How orcad is started (daemon and --foreground alike; the daemon through
# ``orca.contracts.supervisor.launch_orcad``, as the fd keeper starts it): its package,
# never imported here; -P keeps the current directory off sys.path (a folder named
# ``orca`` there would shadow the package).
ORCAD_ARGV = ("-P", "-m", "actors.supervisor")
# While another orcad that won the lock binds its socket: how often `orca up` asks.
OTHER_ORCAD_RETRY_S = 0.1


def _running(paths: OrcaPaths) -> LockInfo | None:
    from orca.contracts.supervisor import read_lock_info

    return read_lock_info(paths.lock_file)


def _tail(path: Path, lines: int, since: int = 0) -> list[str]:
    """The last ``lines`` lines of ``path`` written after byte ``since``."""
    try:
        with path.open("rb") as f:
            f.seek(since)
            return [b.decode(errors="replace").rstrip("\n") for b in deque(f, maxlen=lines)]
    except FileNotFoundError:
        return []


def cmd_up(args: argparse.Namespace) -> int:
    from orca.paths import resolve_paths

    paths = resolve_paths().ensure()
    info = _running(paths)
    if info is not None:
        print(
            f"orca is already running: orcad pid {info.pid}, endpoint {info.endpoint}"
            + (f", ORCA_HOME {info.home}" if info.home else "")
        )
        return EXIT_OK
    if args.foreground:
        # The same orcad as the daemon path, in this terminal: exec, not an import, so the
        # CLI depends on no actor package and `--foreground` cannot drift from `up`.
        sys.stdout.flush()
        os.execv(sys.executable, [sys.executable, *ORCAD_ARGV])
    asked_at = time.time()
    verdict, pid, elapsed, log_path, run_starts_at = _start_orcad(paths)
    if verdict == "ready":
        print(
            f"orca is up: every actor ready in {elapsed:.2f}s (orcad pid {pid}, logs in {paths.log_dir})"
        )
        from orca.cli.shim import ensure_shim

        said = ensure_shim(os.environ)
        if said is not None:
            print(said)
        resumable = _resumable(paths, asked_at)
        if resumable:
            print(resumable)
        return EXIT_OK
    reason = verdict or "orcad exited before the tree was ready"
    print(f"orca: up failed: {reason}", file=sys.stderr)
    for line in _tail(log_path, 15, since=run_starts_at):
        print(f"  {line}", file=sys.stderr)
    return EXIT_FAILED


def _resumable(paths: OrcaPaths, since: float) -> str | None:
    """After a reboot: the agents that were running then, and how to resume them (issue
    34; ``orca.views.resume``). Only those this start found lost (``lostAt`` from
    ``since`` on): named once, not at every `orca up` of the history's 30 days. None
    when there are none, when ptyd resumes them itself (``resume_on_start``: it logs
    each one) or when ptyd or hooks did not say."""
    if _resume_on_start(paths):
        return None
    from orca.cli.lookup import list_terminals
    from orca.client.sync import invoke
    from orca.contracts import hooks
    from orca.views.resume import panes_to_resume, plans

    try:
        terminals = list_terminals(paths)
        sessions = terminals.sessions
        lost = [
            row
            for row in panes_to_resume(
                [s for s in sessions if not s.archived], [s for s in sessions if s.archived]
            )
            if row.lost_at is not None and row.lost_at >= since
        ]
        if not lost:
            return None
        bindings = invoke(hooks.SESSION_BINDINGS, paths=paths).bindings
    except OrcaError:
        return None
    can = [
        terminals.handles.get(row.session_id, row.session_id)
        for row, _argv, refusal in plans(lost, bindings)
        if not refusal
    ]
    if not can:
        return None
    agents = f"{len(can)} agent{'s' if len(can) != 1 else ''}"
    return (
        f"{agents} running when the machine went down can resume: {', '.join(can)} "
        "(`orca term resume HANDLE`; resume_on_start = true in ptyd.toml does it at start)"
    )


def _resume_on_start(paths: OrcaPaths) -> bool:
    """The user's ``resume_on_start`` (``ptyd.toml``; ptyd reads it, and logs a bad one)."""
    import tomllib

    try:
        with (paths.config_dir / "ptyd.toml").open("rb") as f:
            return tomllib.load(f).get("resume_on_start") is True
    except (OSError, tomllib.TOMLDecodeError, UnicodeDecodeError):
        return False


def _start_orcad(paths: OrcaPaths) -> tuple[str, int, float, Path, int]:
    """Start the orcad daemon and wait for its verdict: (verdict, pid, seconds, log, the
    log's size before this run).

    If another orcad took the lock first (ours exits 3: the fd keeper bringing orcad back
    after a crash, or a service manager), that one's readiness is the verdict."""
    from orca.contracts.supervisor import EXIT_ALREADY_RUNNING, launch_orcad

    started = time.monotonic()
    deadline = started + UP_TIMEOUT_S
    log_path = paths.log_file("orcad")
    pid, read_fd, run_starts_at = launch_orcad(sys.executable, os.environ, log_path)
    verdict = read_ready_line(read_fd, max(0.0, deadline - time.monotonic()))
    if not verdict:
        # It exited before its verdict (its own child: reaped here, for its code).
        _, status = os.waitpid(pid, 0)
        other = _running(paths)
        if os.waitstatus_to_exitcode(status) == EXIT_ALREADY_RUNNING and other is not None:
            verdict = _wait_ready(paths, deadline)
            pid = other.pid or pid
    return verdict, pid, time.monotonic() - started, log_path, run_starts_at


def _wait_ready(paths: OrcaPaths, deadline: float) -> str:
    """``ready`` once the running orcad's tree is, else why not (by ``deadline``)."""
    from orca.client.sync import invoke
    from orca.contracts import supervisor as sup
    from orca.wire.errors import Timeout

    while True:
        remaining = deadline - time.monotonic()
        try:
            invoke(
                sup.WAIT_READY,
                sup.WaitReadyArgs(timeout=max(remaining, 0.1)),
                paths=paths,
                timeout=max(remaining, 0.1) + 5,
            )
            return "ready"
        except Timeout as exc:
            return exc.message
        except Unavailable as exc:  # it has the lock, not yet its socket
            if time.monotonic() + OTHER_ORCAD_RETRY_S >= deadline:
                return exc.message
            time.sleep(OTHER_ORCAD_RETRY_S)
        except OrcaError as exc:
            return exc.message


def cmd_down(args: argparse.Namespace) -> int:
    import psutil

    from orca.contracts import supervisor as sup
    from orca.paths import resolve_paths

    paths = resolve_paths()
    info = _running(paths)
    if info is None:
        print("orca is not running")
        return EXIT_NOT_RUNNING
    pid = info.pid
    from orca.client.sync import invoke

    if not args.keep_terminals:
        from orca.cli.live_terminals import (
            END_TIMEOUT_S,
            end_sessions,
            print_running,
            running_terminals,
        )

        try:
            live = running_terminals(paths)
        except OrcaError as exc:
            if not args.kill_terminals:
                return fail(
                    f"cannot tell whether agents are running (ptyd: {exc.message}); "
                    "`orca down --keep-terminals` keeps whatever runs, "
                    "`orca down --kill-terminals` ends it"
                )
            # ptyd is down: stopping the keeper below ends what it holds, uncounted
            print(
                f"orca: note: ptyd did not answer ({exc.message}): its terminals end,"
                " uncounted, as the service stops",
                file=sys.stderr,
            )
            live = None
        if live is not None and live.sessions and not args.kill_terminals:
            print(f"orca: {len(live.sessions)} terminal(s) still running:", file=sys.stderr)
            print_running(live)
            print(
                "  `orca down --keep-terminals` stops Orca but keeps them running"
                " (the next `orca up` re-adopts them);\n"
                "  `orca down --kill-terminals` ends them first.",
                file=sys.stderr,
            )
            return EXIT_USAGE  # a request the current state refuses (README "Exit codes")
        if live is not None and args.kill_terminals:
            ended = end_sessions(live.sessions, paths)
            print(f"ended {_terminals(ended)}")
            if ended < len(live.sessions):
                print(
                    f"orca: {_terminals(len(live.sessions) - ended)} did not exit within"
                    f" {END_TIMEOUT_S:g}s; stopping the service hangs them up",
                    file=sys.stderr,
                )
    try:
        invoke(
            sup.STOP,
            sup.StopArgs(keep_terminals=args.keep_terminals),
            paths=paths,
            timeout=DOWN_TIMEOUT_S,
        )
    except OrcaError as exc:
        print(f"orca: orderly stop failed ({exc.message}); signalling orcad", file=sys.stderr)
        if isinstance(pid, int):
            try:
                os.kill(pid, signal.SIGTERM)
            except ProcessLookupError:
                pass
    if isinstance(pid, int):
        try:
            psutil.Process(pid).wait(timeout=DOWN_TIMEOUT_S)
        except psutil.NoSuchProcess:
            pass
        except psutil.TimeoutExpired:
            return fail(f"orcad (pid {pid}) did not exit within {DOWN_TIMEOUT_S:g}s")
    if args.keep_terminals:
        print("orca stopped; the terminals keep running (`orca up` re-adopts them)")
    else:
        print("orca stopped")
    return EXIT_OK


def _terminals(count: int) -> str:
    return f"{count} terminal{'' if count == 1 else 's'}"


def cmd_status(args: argparse.Namespace) -> int:
    import contextlib

    from orca.client.sync import begin
    from orca.contracts import supervisor as sup
    from orca.paths import resolve_paths

    paths = resolve_paths()
    with contextlib.ExitStack() as calls:
        try:
            if _running(paths) is None:
                raise Unavailable("orca is not running (start it with `orca up`)")
            asked = calls.enter_context(begin(sup.STATUS, paths=paths))
            # The store's own report is asked at once: the replies overlap (bench/cli.py).
            store_asked = None if args.json else calls.enter_context(begin_store_stats())
            status = asked.result()
        except OrcaError as exc:
            if args.json:
                print_json("actors", [], {"orcad": None, "keeper": None})
            return fail_from(exc)
        return _print_status(args, status, store_asked)


def _print_status(
    args: argparse.Namespace, status: sup.Status, store_asked: Pending[dict[str, Any]] | None
) -> int:
    if args.json:
        print_json("actors", *status_json(status))
        return EXIT_OK
    rows = [
        (
            a.name,
            a.pid,
            a.state,
            a.restarts,
            human_duration(a.uptime),
            human_bytes(a.pss if a.pss is not None else a.rss),
            _version(a.version, a.build) if a.pid is not None else None,
            None if a.last_exit is None else a.last_exit.reason,
        )
        for a in status.actors
    ]
    orcad = status.supervisor
    print_table(
        ("ACTOR", "PID", "STATE", "RESTARTS", "UPTIME", "MEMORY", "VERSION", "LAST EXIT"),
        rows,
        title=f"orcad pid {orcad.pid} {_version(orcad.version, orcad.build)},"
        f" up {human_duration(orcad.uptime)}"
        + (
            f", fd keeper pid {orcad.keeper_pid}"
            f" {_version(orcad.keeper_version, orcad.keeper_build)}"
            if orcad.keeper_pid
            else ", no fd keeper"
        ),
    )
    for line in [
        *_version_warnings(status),
        *_log_warnings(status),
        *_store_warnings(status.actors, store_asked),
    ]:
        print(f"warning: {line}")
    return EXIT_OK


def status_json(status: sup.Status) -> tuple[list[dict[str, Any]], dict[str, Any]]:
    """``status --json``: the actors' rows (``handle``: the name ``orca restart`` and
    ``orca logs`` take), then what the table's header line says - ``orcad`` (the
    supervisor's own report) and ``keeper`` (the fd keeper; null while none answers)."""
    from orca.model.codec import to_builtins

    actors = [{"handle": a.name, **to_builtins(a)} for a in status.actors]
    orcad = status.supervisor
    keeper = None
    if orcad.keeper_pid:
        keeper = {
            "handle": KEEPER,
            "pid": orcad.keeper_pid,
            "version": orcad.keeper_version,
            "build": orcad.keeper_build,
        }
    own = {k: v for k, v in to_builtins(orcad).items() if not k.startswith("keeper")}
    return actors, {"orcad": {"handle": ORCAD, **own}, "keeper": keeper}


def _version(version: str | None, build: str | None) -> str:
    """``0.1.0+<build>``; ``?`` parts for a process too old to say."""
    return f"{version or '?'}+{build or '?'}"


def _version_warnings(status: sup.Status) -> list[str]:
    """Processes that run another build than the code installed now."""
    from orca.build import build_id, build_stamp

    orcad = status.supervisor
    # The same files as when orcad hashed them: its build is the installed one.
    same_files = bool(orcad.build) and orcad.build_stamp == build_stamp()
    installed = orcad.build if same_files else build_id()
    running = [("orcad", orcad.build), *((a.name, a.build) for a in status.actors if a.pid)]
    if orcad.keeper_pid:
        running.append(("fd keeper", orcad.keeper_build))
    stale = [name for name, build in running if build != installed]
    if not stale:
        return []
    return [
        f"{', '.join(stale)} run(s) another build than the installed one ({installed}):"
        " `orca restart --all` replaces every process, the terminals kept"
    ]


def _log_warnings(status: sup.Status) -> list[str]:
    """Actor output orcad could not write to the logs (a full disk), and orcad's pauses."""
    lines = []
    for a in status.actors:
        if a.log is None:
            continue
        state = f"failing: {a.log.error}" if a.log.error else "writing again"
        lines.append(
            f"log of {a.name} {state}; {a.log.dropped_lines} lines"
            f" ({human_bytes(a.log.dropped_bytes)}) dropped"
        )
    if status.supervisor.pauses:
        lines.append(
            f"orcad was not scheduled {status.supervisor.pauses} time(s)"
            f" ({status.supervisor.paused_s:.1f}s in all); no actor was judged hung for it"
        )
    return lines


def begin_store_stats() -> Pending[dict[str, Any]]:
    from orca.cli.state import begin_store_stats

    return begin_store_stats(timeout=2.0)


def _store_warnings(
    actors: list[sup.ActorStatus], asked: Pending[dict[str, Any]] | None
) -> list[str]:
    """What the store reports about its file (loaded from a backup, saves failing)."""
    if asked is None or not any(a.name == "store" and a.state == "running" for a in actors):
        return []
    from orca.cli.state import store_warnings

    try:
        return store_warnings(asked.result())
    except OrcaError:
        return []


def known_actors(paths: OrcaPaths) -> list[str]:
    """orcad and every actor it has started at least once (orcad opens an actor's log
    when it spawns it), read from the log dir: no need to parse the supervision tree."""
    try:
        logs = sorted(p.stem for p in paths.log_dir.glob("*.log"))
    except OSError:
        logs = []
    return ["orcad", *(name for name in logs if name != "orcad")]


def cmd_logs(args: argparse.Namespace) -> int:
    from orca.paths import resolve_paths

    paths = resolve_paths()
    known = known_actors(paths)
    if args.actor not in known:
        return fail(f"unknown actor {args.actor!r} (known: {', '.join(known)})", EXIT_USAGE)
    path = paths.log_file(args.actor)
    if not path.exists():
        return fail(f"no log for {args.actor} yet ({path})")
    for line in _tail(path, args.lines):
        print(line)
    if not args.follow:
        return EXIT_OK
    with path.open("rb") as f:
        f.seek(0, os.SEEK_END)
        while True:
            chunk = f.read()
            if chunk:
                sys.stdout.write(chunk.decode(errors="replace"))
                sys.stdout.flush()
            else:
                time.sleep(0.25)


def add_parser(sub: argparse._SubParsersAction[argparse.ArgumentParser]) -> None:
    up = sub.add_parser("up", help="start the service (every actor) and wait until it is ready")
    up.add_argument("--foreground", action="store_true", help="run orcad in this terminal")
    up.set_defaults(func=cmd_up)

    down = sub.add_parser(
        "down", help="stop every actor and orcad (refuses while terminals run, see flags)"
    )
    keep = down.add_mutually_exclusive_group()
    keep.add_argument(
        "--keep-terminals",
        action="store_true",
        help="keep running terminals alive (only the fd keeper stays; `orca up` re-adopts)",
    )
    keep.add_argument(
        "--kill-terminals",
        action="store_true",
        help="end every terminal's agent first (layout and history are kept), then stop",
    )
    down.set_defaults(func=cmd_down)

    status = sub.add_parser("status", help="each actor's pid, state, restarts, uptime and RSS")
    status.add_argument("--json", action="store_true", help='print {"actors": [...]}')
    status.set_defaults(func=cmd_status)

    logs = sub.add_parser("logs", help="show an actor's log (orcad for the supervisor)")
    logs.add_argument("actor")
    logs.add_argument("-n", "--lines", type=int, default=50, help="lines to show (default 50)")
    logs.add_argument("-f", "--follow", action="store_true", help="keep printing new lines")
    logs.set_defaults(func=cmd_logs)

    from orca.cli.service_unit import add_service_parser

    add_service_parser(sub)
