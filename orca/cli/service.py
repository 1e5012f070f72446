"""``orca up | down | status | restart | logs | service``: the service's lifecycle.

``orca down`` never ends an agent by surprise: with live terminals it refuses (exit 1),
lists them and names the two ways on: ``--keep-terminals`` (every process stops but the
fd keeper, which holds the terminals for the next ``orca up``) or ``--kill-terminals``
(each session is closed first, as ``orca term close`` does, then everything stops).

``orca restart --all`` replaces every Orca process with the code installed now while
every agent keeps running: (1) ``sup.hand_over`` (checked in orcad's ``sys.hello``
capabilities first) stops the old tree but the keeper; (2) a new keeper started with
``--take-over`` takes every PTY master from the old one (``hand_over``, or ``reclaim``
+ ``stop`` for a keeper that predates it) and the old one exits; (3) a new orcad starts,
whose ``ptyd`` reclaims every session from the new keeper. Output written meanwhile
waits in each PTY (the agent blocks when it is full): nothing is lost, it arrives late.
``orca status`` shows each process's version and build (``orca.contracts.sys.build_id``).
"""

from __future__ import annotations

import os
import select
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
from orca.wire.errors import OrcaError, Unavailable

if TYPE_CHECKING:
    import argparse

    from orca.client.sync import Pending
    from orca.contracts import supervisor as sup
    from orca.contracts.ptyd import SessionRow
    from orca.contracts.supervisor import LockInfo
    from orca.paths import OrcaPaths

# How long `orca up` waits for the tree to report ready before giving up.
UP_TIMEOUT_S = 60.0
# How long `orca down` waits for orcad to stop everything and exit.
DOWN_TIMEOUT_S = 60.0
# How orcad is started (daemon and --foreground alike): its package, never imported here;
# -P keeps the current directory off sys.path (a folder named ``orca`` there would
# shadow the package: ``orca up`` from ``~`` used to fail once ``~/orca/`` existed).
ORCAD_ARGV = ("-P", "-m", "actors.supervisor")


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
    verdict, pid, elapsed, log_path, run_starts_at = _start_orcad(paths)
    if verdict == "ready":
        print(
            f"orca is up: every actor ready in {elapsed:.2f}s (orcad pid {pid}, logs in {paths.log_dir})"
        )
        return EXIT_OK
    reason = verdict or "orcad exited before the tree was ready"
    print(f"orca: up failed: {reason}", file=sys.stderr)
    for line in _tail(log_path, 15, since=run_starts_at):
        print(f"  {line}", file=sys.stderr)
    return EXIT_FAILED


def _start_orcad(paths: OrcaPaths) -> tuple[str, int, float, Path, int]:
    """Start the orcad daemon and wait for its verdict: (verdict, pid, seconds, log, the
    log's size before this run)."""
    started = time.monotonic()
    read_fd, write_fd = os.pipe()
    log_path = paths.log_file("orcad")
    log_fd = os.open(log_path, os.O_WRONLY | os.O_APPEND | os.O_CREAT, 0o600)
    # orcad appends to the log of every earlier run: a failure shows only this run's lines.
    run_starts_at = os.fstat(log_fd).st_size
    try:
        # posix_spawn with setsid: the daemon leaves our session and terminal, and no
        # Popen object is left behind to be garbage-collected while it runs.
        pid = os.posix_spawn(
            sys.executable,
            [sys.executable, *ORCAD_ARGV, "--ready-fd", str(write_fd)],
            dict(os.environ),
            file_actions=[
                (os.POSIX_SPAWN_OPEN, 0, os.devnull, os.O_RDONLY, 0),
                (os.POSIX_SPAWN_DUP2, log_fd, 1),
                (os.POSIX_SPAWN_DUP2, log_fd, 2),
                (os.POSIX_SPAWN_DUP2, write_fd, write_fd),  # clears close-on-exec
            ],
            setsid=True,
        )
    finally:
        os.close(write_fd)
        os.close(log_fd)
    message = b""
    try:
        deadline = started + UP_TIMEOUT_S
        while not message.endswith(b"\n"):
            remaining = deadline - time.monotonic()
            if remaining <= 0 or not select.select([read_fd], [], [], remaining)[0]:
                message = b"timeout\n"
                break
            chunk = os.read(read_fd, 256)
            if not chunk:
                break
            message += chunk
    finally:
        os.close(read_fd)
    elapsed = time.monotonic() - started
    verdict = message.decode(errors="replace").strip()
    return verdict, pid, elapsed, log_path, run_starts_at


def live_sessions(paths: OrcaPaths, worktree_id: str | None = None) -> list[SessionRow]:
    """ptyd's running sessions (of one worktree, if given); raises OrcaError if ptyd
    cannot answer (then nobody can tell whether an agent is live)."""
    from orca.client.sync import invoke
    from orca.contracts import ptyd

    rows = invoke(ptyd.LIST, ptyd.ListArgs(worktree_id=worktree_id), paths=paths).sessions
    return [r for r in rows if r.running]


def print_sessions(rows: list[SessionRow]) -> None:
    """One ``handle  pid  argv`` line per session on stderr (handles as ``term ls``)."""
    from orca.cli.handles import session_handles

    handles = session_handles([(r.session_id, r.worktree_id) for r in rows])
    for r in rows:
        handle = handles.get(r.session_id, r.session_id)
        print(f"  {handle}  pid {r.pid}  {' '.join(r.argv)}", file=sys.stderr)


def end_terminals_or_refuse(
    paths: OrcaPaths, owner_id: str, place: str, command: str, *, force: bool
) -> bool:
    """Before removing a workspace (issue 13): with terminals running in it, refuse
    (listing them, and how ``command --force`` ends them; False) unless ``force``,
    which closes them first as ``orca term close`` does. A ptyd that cannot answer
    leaves them unchecked, said on stderr."""
    try:
        live = live_sessions(paths, owner_id)
    except OrcaError as exc:
        print(
            f"orca: note: ptyd did not answer ({exc.message}): terminals unchecked", file=sys.stderr
        )
        live = []
    if live and not force:
        print(f"orca: {len(live)} terminal(s) still running in {place}:", file=sys.stderr)
        print_sessions(live)
        print(f"  `{command} --force` ends them first", file=sys.stderr)
        return False
    close_sessions(live, paths)
    return True


def close_sessions(rows: list[SessionRow], paths: OrcaPaths) -> None:
    """Close each session as ``orca term close`` does (the pane is retired and fenced)."""
    from orca.cli.term import CLOSE_TIMEOUT_S
    from orca.client.sync import invoke
    from orca.contracts import ptyd

    for r in rows:
        args = ptyd.SessionArgs(session_id=r.session_id)
        invoke(ptyd.CLOSE, args, paths=paths, timeout=CLOSE_TIMEOUT_S)


# How long `down --kill-terminals` waits for the agents to exit after term.kill (its
# SIGHUP/SIGTERM, then ptyd's SIGKILL after a grace) before stopping the tree anyway.
END_TIMEOUT_S = 15.0


def end_sessions(rows: list[SessionRow], paths: OrcaPaths) -> None:
    """End each session's agent as ``orca term kill`` does and wait for the exits (ptyd's
    ``term.exit`` events); the panes, their layout and their output history stay (unlike
    ``close_sessions``)."""
    from orca.client.sync import invoke, subscribe
    from orca.contracts import ptyd

    ending = {r.session_id for r in rows}
    if not ending:
        return
    exits = subscribe(
        ptyd.CONTRACT.actor,
        [ptyd.EXIT],
        consumer="orca down",
        topics=[ptyd.exit_topic(sid) for sid in ending],
        paths=paths,
    )
    try:
        exits.wait_live(timeout=2.0)  # subscribed before the kills: no exit is missed
        for sid in ending:
            invoke(ptyd.KILL, ptyd.SessionArgs(session_id=sid), paths=paths)
        for _, exited in exits.until(time.monotonic() + END_TIMEOUT_S):
            ending.discard(exited.session_id)
            if not ending:
                break
    finally:
        exits.close()


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
        try:
            live = live_sessions(paths)
        except OrcaError as exc:
            if not args.kill_terminals:
                return fail(
                    f"cannot tell whether agents are running (ptyd: {exc.message}); "
                    "`orca down --keep-terminals` keeps whatever runs, "
                    "`orca down --kill-terminals` ends it"
                )
            live = []  # ptyd is down: stopping the keeper below ends what it holds
        if live and not args.kill_terminals:
            print(f"orca: {len(live)} terminal(s) still running:", file=sys.stderr)
            print_sessions(live)
            print(
                "  `orca down --keep-terminals` stops Orca but keeps them running"
                " (the next `orca up` re-adopts them);\n"
                "  `orca down --kill-terminals` ends them first.",
                file=sys.stderr,
            )
            return EXIT_FAILED
        end_sessions(live, paths)
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
                print_json("actors", [])
            return fail_from(exc)
        return _print_status(args, status, store_asked)


def _print_status(
    args: argparse.Namespace, status: sup.Status, store_asked: Pending[dict[str, Any]] | None
) -> int:
    if args.json:
        from orca.model.codec import to_builtins

        print_json("actors", [to_builtins(a) for a in status.actors])
        return EXIT_OK
    rows = [
        (
            a.name,
            a.pid,
            a.state,
            a.restarts,
            human_duration(a.uptime),
            human_bytes(a.rss),
            _version(a.version, a.build) if a.pid is not None else None,
            None if a.last_exit is None else a.last_exit.reason,
        )
        for a in status.actors
    ]
    orcad = status.supervisor
    print_table(
        ("ACTOR", "PID", "STATE", "RESTARTS", "UPTIME", "RSS", "VERSION", "LAST EXIT"),
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


def _version(version: str | None, build: str | None) -> str:
    """``0.1.0+<build>``; ``?`` parts for a process too old to say."""
    return f"{version or '?'}+{build or '?'}"


def _version_warnings(status: sup.Status) -> list[str]:
    """Processes that run another build than the code installed now."""
    from orca.contracts.sys import build_id, build_stamp

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


def cmd_restart(args: argparse.Namespace) -> int:
    from orca.client.sync import invoke
    from orca.contracts import supervisor as sup

    if args.all:
        if args.actor:
            return fail("name an actor or give --all, not both", EXIT_USAGE)
        return cmd_restart_all(args)
    if not args.actor:
        return fail("name the actor to restart, or --all for every Orca process", EXIT_USAGE)
    invoke(sup.RESTART, sup.RestartArgs(name=args.actor))
    print(f"restarting {args.actor}")
    return EXIT_OK


# How long the new keeper may take to take every terminal over from the old one.
TAKE_OVER_TIMEOUT_S = 30.0


def cmd_restart_all(args: argparse.Namespace) -> int:
    """Replace orcad, every actor and the keeper with the installed code; agents stay."""
    import psutil

    from orca.client.sync import endpoint_for, invoke
    from orca.contracts import supervisor as sup
    from orca.contracts import sys as sys_contract
    from orca.contracts.fd_keeper import launch_keeper, wait_keeper_ready
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
    unchanged = [name for name, (pid_now, _) in new.items() if pid_now == old.get(name)]
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

    restart = sub.add_parser(
        "restart",
        help="restart one actor (clears a failed state), or --all: every Orca process,"
        " orcad and the fd keeper included, on the installed code; the terminals keep running",
    )
    restart.add_argument("actor", nargs="?")
    restart.add_argument(
        "--all",
        action="store_true",
        help="replace every Orca process (an upgrade); running agents are kept",
    )
    restart.set_defaults(func=cmd_restart)

    logs = sub.add_parser("logs", help="show an actor's log (orcad for the supervisor)")
    logs.add_argument("actor")
    logs.add_argument("-n", "--lines", type=int, default=50, help="lines to show (default 50)")
    logs.add_argument("-f", "--follow", action="store_true", help="keep printing new lines")
    logs.set_defaults(func=cmd_logs)

    from orca.cli.service_unit import add_service_parser

    add_service_parser(sub)
